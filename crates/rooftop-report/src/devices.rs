//! The device-list record shared by every renderer of `rooftop devices`.

use rooftop_core::device::DeviceSpec;
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

/// One row of `rooftop devices`.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceRow {
    pub id: String,
    pub name: String,
    pub vendor: &'static str,
    /// Dense FP16 (or BF16) matrix peak, TFLOP/s.
    pub half_matrix_tflops: Option<f64>,
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
            vendor: d.vendor.as_str(),
            half_matrix_tflops: half,
            fp32_tflops: d.peak(Precision::Fp32, ExecUnit::Vector).map(|p| p.tflops),
            bandwidth_gbs: d.peak_bw_gbs,
            ridge_flop_per_byte: headline_peak(d).and_then(|(p, u)| d.ridge_point(p, u)),
            confidence: d.meta.confidence.as_str(),
        }
    }
}
