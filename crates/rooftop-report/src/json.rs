//! JSON output: the stable analysis record (`docs/json-schema.md`) and device specs.

use crate::devices::DeviceRow;
use rooftop_core::analysis::Analysis;
use rooftop_core::device::DeviceSpec;
use rooftop_core::schema::analysis::AnalysisRecord;

fn pretty<T: serde::Serialize>(v: &T) -> String {
    // Serialising our own plain structs cannot fail (no maps with non-string keys, no
    // non-finite floats: those are mapped to null before).
    let mut s =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

/// One analysis as an object, several as an array.
pub fn analyses(items: &[Analysis]) -> String {
    let records: Vec<AnalysisRecord> = items.iter().map(AnalysisRecord::from_analysis).collect();
    match records.as_slice() {
        [one] => pretty(one),
        many => pretty(&many),
    }
}

/// The device list.
pub fn devices(devs: &[DeviceSpec]) -> String {
    let rows: Vec<DeviceRow> = devs.iter().map(DeviceRow::of).collect();
    pretty(&rows)
}

/// One device with every figure and its source: the whole spec, plus `figures`, the
/// lines `rooftop devices ID` prints, each with its own source, confidence and provenance.
pub fn device(d: &DeviceSpec) -> String {
    #[derive(serde::Serialize)]
    struct Detail<'a> {
        #[serde(flatten)]
        spec: &'a DeviceSpec,
        figures: Vec<crate::rows::DeviceFigure>,
    }
    pretty(&Detail { spec: d, figures: crate::rows::device_figures(d) })
}
