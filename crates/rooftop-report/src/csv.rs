//! CSV output: one row per analysis (the scalar fields of the JSON record) or device.

use crate::devices::DeviceRow;
use crate::RenderError;
use rooftop_core::analysis::Analysis;
use rooftop_core::device::DeviceSpec;
use rooftop_core::schema::analysis::AnalysisRecord;

const ANALYSIS_HEADER: [&str; 26] = [
    "device_id",
    "op",
    "shape",
    "kernel_name",
    "flops",
    "bytes",
    "arithmetic_intensity",
    "ridge_point",
    "peak_tflops",
    "peak_bandwidth_gbs",
    "attainable_tflops",
    "floor_time_us",
    "bound",
    "time_us",
    "achieved_tflops",
    "achieved_gbs",
    "compute_utilization_pct",
    "memory_utilization_pct",
    "roofline_attainment_pct",
    "tile_efficiency",
    "wave_efficiency",
    "dim_efficiency",
    "occupancy_pct",
    "findings",
    "flops_formula",
    "bytes_formula",
];

fn num(v: Option<f64>) -> String {
    v.map_or_else(String::new, |v| format!("{v}"))
}

/// A CSV document: `header`, then `rows` (each as long as the header). Every renderer's
/// CSV goes through here, so that a row of another length (a renderer's bug) is an error
/// that reaches the user, never an empty or truncated file.
///
/// ```
/// use rooftop_report::csv::text;
/// let row = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>();
/// assert_eq!(text(&["a", "b"], vec![row(&["1", "x,y"])]).unwrap(), "a,b\n1,\"x,y\"\n");
/// assert!(text(&["a", "b"], vec![row(&["1"])]).is_err());
/// ```
pub fn text(header: &[&str], rows: Vec<Vec<String>>) -> Result<String, RenderError> {
    let err = |e: &dyn std::fmt::Display| RenderError::Csv(e.to_string());
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).map_err(|e| err(&e))?;
    for r in rows {
        w.write_record(&r).map_err(|e| err(&e))?;
    }
    let bytes = w.into_inner().map_err(|e| err(e.error()))?;
    String::from_utf8(bytes).map_err(|e| err(&e))
}

/// Analyses as CSV.
pub fn analyses(items: &[Analysis]) -> Result<String, RenderError> {
    let rows = items
        .iter()
        .map(|a| {
            let r = AnalysisRecord::from_analysis(a);
            vec![
                r.device_id,
                r.op.clone(),
                r.shape,
                r.kernel_name.unwrap_or_default(),
                format!("{}", r.flops),
                format!("{}", r.bytes),
                num(r.arithmetic_intensity),
                num(r.ridge_point),
                num(r.peak_tflops),
                format!("{}", r.peak_bandwidth_gbs),
                format!("{}", r.attainable_tflops),
                format!("{}", r.floor_time_us),
                r.bound.as_str().to_string(),
                num(r.time_us),
                num(r.achieved_tflops),
                num(r.achieved_gbs),
                num(r.compute_utilization_pct),
                num(r.memory_utilization_pct),
                num(r.roofline_attainment_pct),
                num(r.tile_efficiency),
                num(r.wave_efficiency),
                num(r.dim_efficiency),
                num(r.occupancy_pct),
                r.findings.iter().map(|f| f.id.as_str()).collect::<Vec<_>>().join(";"),
                r.flops_formula,
                r.bytes_formula,
            ]
        })
        .collect();
    text(&ANALYSIS_HEADER, rows)
}

/// One device as CSV: one line per figure with its own source, confidence and
/// provenance (empty for a line that is not a catalogued figure, whose `note` says what
/// it is).
pub fn device_detail(d: &DeviceSpec) -> Result<String, RenderError> {
    let rows = crate::rows::device_figures(d)
        .into_iter()
        .map(|f| {
            let (source, confidence, provenance) = match &f.meta {
                Some(m) => (m.source.clone(), m.confidence.to_string(), m.provenance.to_string()),
                None => (String::new(), String::new(), String::new()),
            };
            vec![d.id.clone(), f.metric, f.value, source, confidence, provenance, f.note]
        })
        .collect();
    text(&["id", "metric", "value", "source", "confidence", "provenance", "note"], rows)
}

/// Devices as CSV: the header is the JSON's keys ([`crate::devices::COLUMNS`]), the
/// vendor as JSON writes it; numbers are the catalog's figures, unrounded, as in JSON.
pub fn devices(devs: &[DeviceSpec]) -> Result<String, RenderError> {
    let rows = devs
        .iter()
        .map(|d| {
            let r = DeviceRow::of(d);
            let vendor = r.vendor.key().to_string();
            vec![
                r.id,
                r.name,
                vendor,
                num(r.fp16_matrix_tflops),
                num(r.fp32_tflops),
                format!("{}", r.bandwidth_gbs),
                num(r.ridge_flop_per_byte),
                r.confidence.to_string(),
            ]
        })
        .collect();
    let header: Vec<&str> = crate::devices::COLUMNS.iter().map(|c| c.key).collect();
    text(&header, rows)
}

#[cfg(test)]
mod tests {
    use rooftop_core::device::Catalog;

    /// `devices --format csv` and `--format json` name every column alike and write the
    /// same values (the vendor as the device's JSON spells it).
    #[test]
    fn device_list_csv_and_json_agree() {
        let cat = Catalog::builtin();
        let devs = vec![cat.lookup("h100-sxm").unwrap().clone()];
        let csv = super::devices(&devs).unwrap();
        let json: serde_json::Value = serde_json::from_str(&crate::json::devices(&devs)).unwrap();
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        let obj = json[0].as_object().unwrap();
        assert_eq!(header.len(), obj.len());
        for (key, cell) in header.iter().zip(&row) {
            let v = &obj[*key];
            let want = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            // JSON writes 3350.0 where CSV writes 3350: the same number.
            match (cell.parse::<f64>(), want.parse::<f64>()) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{key}"),
                _ => assert_eq!(*cell, want, "{key}"),
            }
        }
        // NVIDIA H100 SXM datasheet: 989.4 dense FP16 tensor TFLOP/s.
        assert_eq!(header[3], "fp16_matrix_tflops");
        assert_eq!(row[2], "nvidia");
        assert_eq!(row[3], "989.4");
    }
}
