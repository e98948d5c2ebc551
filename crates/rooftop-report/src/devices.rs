//! The device-list record shared by every renderer of `rooftop devices`, and the names
//! of its columns.
//!
//! Invariant: a column has one name in every format. JSON and CSV use its key (the
//! record's field name, unit suffix included: `fp16_matrix_tflops`, after the device
//! file's `peak_tflops.fp16_matrix`); the table, Markdown and HTML headers use its label,
//! the same words without the suffix (`FP16 matrix`), the table adding the unit its bare
//! numbers are in. The vendor is written as the device file and `rooftop devices ID
//! --format json` write it (`nvidia`) in JSON and CSV, by its display name (`NVIDIA`)
//! in the formats people read, as the device's own page does.
//!
//! The peaks and the bandwidth are datasheet figures, not computed ones: JSON and CSV
//! write them as the catalog holds them and the table keeps their whole digits; the
//! ridge point is computed from them and shown, like any computed number, with three
//! significant digits.

use rooftop_core::device::{DeviceSpec, Vendor};
use rooftop_core::units::{ExecUnit, Precision};
use serde::Serialize;

/// The compute roof a device list headlines: FP16 (else BF16) matrix, else FP32 vector.
pub fn headline_peak(d: &DeviceSpec) -> Option<(Precision, ExecUnit)> {
    [
        (Precision::Fp16, ExecUnit::Matrix),
        (Precision::Bf16, ExecUnit::Matrix),
        (Precision::Fp32, ExecUnit::Vector),
    ]
    .into_iter()
    .find(|(p, u)| d.peak(*p, *u).is_some())
}

/// One column of the device list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The JSON key and CSV header: [`DeviceRow`]'s field name.
    pub key: &'static str,
    /// The header in the table, Markdown and HTML.
    pub label: &'static str,
    /// The unit of the column's bare numbers, which the table's header adds to the label
    /// (Markdown and HTML write the unit in each cell).
    pub unit: &'static str,
}

const fn col(key: &'static str, label: &'static str, unit: &'static str) -> Column {
    Column { key, label, unit }
}

/// The device list's columns, in [`DeviceRow`]'s order.
pub const COLUMNS: [Column; 8] = [
    col("id", "id", ""),
    col("name", "name", ""),
    col("vendor", "vendor", ""),
    col("fp16_matrix_tflops", "FP16 matrix", "TFLOP/s"),
    col("fp32_tflops", "FP32", "TFLOP/s"),
    col("bandwidth_gbs", "bandwidth", "GB/s"),
    col("ridge_flop_per_byte", "ridge", "FLOP/B"),
    col("confidence", "confidence", ""),
];

impl Column {
    /// The table's header: the label, then the unit on a line of its own when there is
    /// one (`bandwidth` over `GB/s`), which keeps the numeric columns narrow.
    pub fn with_unit(&self) -> String {
        if self.unit.is_empty() {
            self.label.to_string()
        } else {
            format!("{}\n{}", self.label, self.unit)
        }
    }
}

/// One row of `rooftop devices`; its field names are the JSON keys, [`COLUMNS`]' keys.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceRow {
    pub id: String,
    pub name: String,
    /// Serialised in lower case (`nvidia`), as in the device's own JSON and device files.
    pub vendor: Vendor,
    /// Dense FP16 matrix peak (BF16 where the device has no FP16 matrix peak), TFLOP/s.
    pub fp16_matrix_tflops: Option<f64>,
    /// FP32 vector peak, TFLOP/s.
    pub fp32_tflops: Option<f64>,
    pub bandwidth_gbs: f64,
    /// Headline peak over DRAM bandwidth, FLOP/byte.
    pub ridge_flop_per_byte: Option<f64>,
    pub confidence: &'static str,
}

impl DeviceRow {
    pub fn of(d: &DeviceSpec) -> DeviceRow {
        let half = d
            .peak(Precision::Fp16, ExecUnit::Matrix)
            .or_else(|| d.peak(Precision::Bf16, ExecUnit::Matrix))
            .map(|p| p.tflops);
        DeviceRow {
            id: d.id.clone(),
            name: d.name.clone(),
            vendor: d.vendor,
            fp16_matrix_tflops: half,
            fp32_tflops: d.peak(Precision::Fp32, ExecUnit::Vector).map(|p| p.tflops),
            bandwidth_gbs: d.peak_bw_gbs,
            ridge_flop_per_byte: headline_peak(d).and_then(|(p, u)| d.ridge_point(p, u)),
            confidence: d.meta.confidence.as_str(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rooftop_core::device::Catalog;

    fn h100() -> DeviceRow {
        DeviceRow::of(Catalog::builtin().lookup("h100-sxm").unwrap())
    }

    /// The JSON keys are the columns' keys, in their order (a struct is written field by
    /// field, whatever map type serde_json is built with), so that JSON and CSV name each
    /// column alike.
    #[test]
    fn json_keys_are_the_column_keys_in_order() {
        let text = serde_json::to_string(&h100()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v.as_object().unwrap().len(), COLUMNS.len());
        let at: Vec<usize> = COLUMNS
            .iter()
            .map(|c| text.find(&format!("\"{}\":", c.key)).unwrap_or_else(|| panic!("{}", c.key)))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert_eq!(COLUMNS[3].with_unit(), "FP16 matrix\nTFLOP/s");
        assert_eq!(COLUMNS[0].with_unit(), "id");
    }

    /// The vendor is spelt as the device's own JSON spells it (serde of `Vendor`).
    #[test]
    fn vendor_is_written_as_the_device_json_writes_it() {
        let r = h100();
        assert_eq!(serde_json::to_value(&r).unwrap()["vendor"], "nvidia");
        assert_eq!(r.vendor.key(), "nvidia");
        for v in [Vendor::Nvidia, Vendor::Amd, Vendor::Apple, Vendor::Intel, Vendor::Cpu] {
            let row = DeviceRow { vendor: v, ..h100() };
            assert_eq!(serde_json::to_value(v).unwrap(), row.vendor.key());
        }
        let row = DeviceRow { vendor: Vendor::Other, ..h100() };
        assert_eq!(serde_json::to_value(Vendor::Other).unwrap(), row.vendor.key());
    }

    /// NVIDIA H100 SXM datasheet: 989.4 dense FP16 tensor TFLOP/s, 66.9 FP32, 3.35 TB/s.
    #[test]
    fn h100_row_holds_the_datasheet_figures() {
        let r = h100();
        assert_eq!(r.fp16_matrix_tflops, Some(989.4));
        assert_eq!(r.fp32_tflops, Some(66.9));
        assert_eq!(r.bandwidth_gbs, 3350.0);
        // 989.4e12 / 3350e9 = 295.34 FLOP/B.
        assert!((r.ridge_flop_per_byte.unwrap() - 295.34).abs() < 0.01);
    }
}
