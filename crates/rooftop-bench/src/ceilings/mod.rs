//! A machine's measured roofs: bandwidth per memory level and access pattern (from a
//! working-set sweep) and peak FLOP/s per precision (from FMA kernels), beside the
//! theoretical figures. Measured with the suite's own kernels through the harness, so
//! every backend gets ceilings for free; written as a device file (`-o FILE`) that every
//! command accepts with `--device-file`.

mod measure;

pub use measure::{device_file_toml, measure, CeilingOptions};

use rooftop_core::device::MemLevel;
use rooftop_core::units::Precision;
use serde::Serialize;

/// Memory access pattern of a bandwidth kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Read-only (a sum).
    Read,
    /// Write-only (a fill).
    Write,
    /// `b = a`.
    Copy,
    /// `a = b + s * c` (STREAM triad).
    Triad,
}

impl Pattern {
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Read => "read",
            Pattern::Write => "write",
            Pattern::Copy => "copy",
            Pattern::Triad => "triad",
        }
    }
}

/// One point of the working-set sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPoint {
    pub pattern: Pattern,
    pub working_set_bytes: u64,
    /// Median achieved GB/s (decimal).
    pub gbs: f64,
}

/// The bandwidth of one memory level with one pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthCeiling {
    pub level: MemLevel,
    pub pattern: Pattern,
    /// Decimal GB/s.
    pub gbs: f64,
    /// The working set it was measured at.
    pub working_set_bytes: u64,
}

/// Peak FLOP/s of one precision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComputeCeiling {
    pub precision: Precision,
    /// `vector` (widest SIMD) or `scalar` (one lane) on CPUs; `vector`/`matrix` on GPUs.
    pub variant: String,
    /// Measured GFLOP/s (median).
    pub gflops: f64,
    /// Theoretical GFLOP/s of the same units, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theoretical_gflops: Option<f64>,
    /// How the theoretical figure is computed
    /// (`2 cores x 3.7 GHz x 16 lanes x 2 FLOP x 2 FMA pipes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theoretical_formula: Option<String>,
}

/// Measured ceilings of one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceilings {
    pub backend: String,
    pub device_name: String,
    /// `quick` (DRAM bandwidth and FMA peaks only, as `bench` measures them) or `full`.
    pub method: String,
    /// Threads / workers used.
    pub parallelism: u32,
    pub bandwidth: Vec<BandwidthCeiling>,
    pub sweep: Vec<SweepPoint>,
    pub compute: Vec<ComputeCeiling>,
    pub notes: Vec<String>,
}

impl Ceilings {
    /// The best bandwidth measured at `level` over all patterns, GB/s.
    pub fn best_gbs(&self, level: MemLevel) -> Option<f64> {
        self.bandwidth.iter().filter(|b| b.level == level).map(|b| b.gbs).reduce(f64::max)
    }

    /// The measured vector peak of `precision`, GFLOP/s (fp16/bf16 fall back to nothing:
    /// the CPU suite has no half-precision FMA kernel).
    pub fn vector_gflops(&self, precision: Precision) -> Option<f64> {
        self.compute
            .iter()
            .filter(|c| c.precision == precision && c.variant != "scalar")
            .map(|c| c.gflops)
            .reduce(f64::max)
    }
}
