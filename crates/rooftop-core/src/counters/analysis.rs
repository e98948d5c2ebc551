//! Per-dispatch and per-kernel records with achieved rates, a hierarchical roofline and
//! findings.

use super::{CounterSet, Derived, Missing};
use crate::device::DeviceSpec;
use crate::diagnose::Finding;
use serde::Serialize;
use std::collections::BTreeMap;

/// Where the roofs came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoofSource {
    /// The profiler's own micro-benchmark on this machine (rocprof-compute
    /// `roofline.csv`).
    Measured,
    /// The device catalog (datasheet peaks).
    Catalog,
    /// A calibrated device file (`rooftop ceilings -o`).
    Calibrated,
    /// No device known: no roofs.
    None,
}

/// One bandwidth roof.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthRoof {
    /// `dram`, `llc`, `l2`, `l1`, `lds`.
    pub level: String,
    pub gbs: f64,
}

/// One compute roof.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComputeRoof {
    /// `vector` or `matrix`.
    pub unit: String,
    pub precision: String,
    pub tflops: f64,
}

/// The roofs kernels are judged against.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roofs {
    pub source: RoofSource,
    /// Catalog id or the tool's device name.
    pub device: Option<String>,
    pub bandwidth: Vec<BandwidthRoof>,
    pub compute: Vec<ComputeRoof>,
    pub notes: Vec<String>,
}

/// One point of the hierarchical roofline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RooflinePoint {
    pub level: String,
    pub bytes: f64,
    /// FLOP per byte at this level.
    pub arithmetic_intensity: Option<f64>,
    pub achieved_gbs: Option<f64>,
    /// Achieved over this level's roof, percent.
    pub pct_of_roof: Option<f64>,
}

/// A dispatch or a kernel (all dispatches of one name).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRecord {
    pub name: String,
    /// Dispatch id (dispatch records) or `None` (kernel aggregates).
    pub id: Option<u64>,
    pub count: u64,
    /// Mean duration per dispatch, ns.
    pub duration_ns: Option<f64>,
    pub total_duration_ns: Option<f64>,
    /// Per dispatch (mean for kernel aggregates).
    pub dram_bytes_read: Option<f64>,
    pub dram_bytes_written: Option<f64>,
    /// FLOPs per dispatch by precision; `null` when not counted.
    pub flops: Option<BTreeMap<String, f64>>,
    pub l1_hit_rate_pct: Option<f64>,
    pub l2_hit_rate_pct: Option<f64>,
    pub achieved_gbs: Option<f64>,
    pub achieved_tflops: Option<f64>,
    /// FLOP per DRAM byte.
    pub arithmetic_intensity: Option<f64>,
    /// `memory`, `compute`, or `unknown`.
    pub bound: String,
    pub roofline: Vec<RooflinePoint>,
    pub derived: Derived,
    pub findings: Vec<Finding>,
    pub missing: Vec<Missing>,
}

/// The whole analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterReport {
    pub set: CounterSet,
    pub roofs: Roofs,
    pub dispatches: Vec<KernelRecord>,
    pub kernels: Vec<KernelRecord>,
}

/// Analyses a counter set against `device` (the catalog entry the CLI resolved), or the
/// set's own measured roofs.
pub fn analyze(set: CounterSet, device: Option<&DeviceSpec>) -> CounterReport {
    let _ = device;
    CounterReport {
        roofs: Roofs {
            source: RoofSource::None,
            device: None,
            bandwidth: Vec::new(),
            compute: Vec::new(),
            notes: Vec::new(),
        },
        set,
        dispatches: Vec::new(),
        kernels: Vec::new(),
    }
}
