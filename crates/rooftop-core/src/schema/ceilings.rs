//! A machine's measured roofs: bandwidth per memory level and access pattern (from a
//! working-set sweep) and peak FLOP/s per precision (from FMA kernels), as `rooftop
//! ceilings` and `rooftop bench` measure them (`rooftop-bench`'s `ceilings` module).
//!
//! Also the rule that picks the measured roof a result is compared with
//! ([`Ceilings::memory_roof`]): a memory-bound result whose buffers fit in half the
//! last-level cache is compared with that cache's roof, one within 4x the cache (STREAM's
//! rule for "DRAM resident") is partly cache-resident and compared with DRAM's; and the
//! record of a roof changed after a result beat it ([`Adjustment`]).

use crate::device::MemLevel;
use crate::units::{sig3, Precision};
use serde::{Deserialize, Serialize};

/// Memory access pattern of a bandwidth kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub pattern: Pattern,
    pub working_set_bytes: u64,
    /// Median achieved GB/s (decimal).
    pub gbs: f64,
}

/// The bandwidth of one memory level with one pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthCeiling {
    pub level: MemLevel,
    pub pattern: Pattern,
    /// Decimal GB/s.
    pub gbs: f64,
    /// The working set it was measured at.
    pub working_set_bytes: u64,
}

/// Peak FLOP/s of one precision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputeCeiling {
    pub precision: Precision,
    /// `vector` (widest SIMD) or `scalar` (one lane) on CPUs; `vector`/`matrix` on GPUs.
    pub variant: String,
    /// Measured GFLOP/s (median).
    pub gflops: f64,
    /// Theoretical GFLOP/s of the same units, when known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub theoretical_gflops: Option<f64>,
    /// How the theoretical figure is computed
    /// (`2 cores x 3.7 GHz x 16 lanes x 2 FLOP x 2 FMA pipes`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub theoretical_formula: Option<String>,
}

/// The capacity of a cache level as the kernels see it (all their threads together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheCapacity {
    pub level: MemLevel,
    pub bytes: u64,
}

/// A measured roof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RoofKind {
    /// Bandwidth of a memory level (GB/s), best pattern.
    Bandwidth { level: MemLevel },
    /// Vector FMA peak of a precision (GFLOP/s).
    Fma { precision: Precision },
}

impl RoofKind {
    /// `dram bandwidth`, `llc bandwidth`, `fp32 FMA`.
    pub fn label(&self) -> String {
        match self {
            RoofKind::Bandwidth { level } => format!("{} bandwidth", level.as_str()),
            RoofKind::Fma { precision } => format!("{} FMA", precision.as_str()),
        }
    }

    pub fn unit(&self) -> &'static str {
        match self {
            RoofKind::Bandwidth { .. } => "GB/s",
            RoofKind::Fma { .. } => "GFLOP/s",
        }
    }
}

/// Where a result's buffers live relative to the caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Residency {
    /// At least 4x the last-level cache, or no cache known: DRAM's roof applies.
    Dram,
    /// Within half the last-level cache: the cache's roof applies.
    Cached,
    /// Between: DRAM's roof, which the result may exceed.
    PartlyCached,
}

/// What was done to a ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdjustmentKind {
    /// Measured again after a result beat it; the better measurement kept.
    Remeasured,
    /// Set to a result's rate: the ceiling kernels do not reach what that kernel does.
    Raised,
}

/// One change to a ceiling after the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Adjustment {
    pub roof: RoofKind,
    pub kind: AdjustmentKind,
    pub before: f64,
    pub after: f64,
    /// The result that beat the ceiling (`scale n=33554432 fp32 [rooftop]`).
    pub by: String,
}

impl Adjustment {
    /// `DRAM bandwidth re-measured: 19.1 → 20.3 GB/s (scale n=… beat it)`.
    pub fn describe(&self) -> String {
        let what = match self.kind {
            AdjustmentKind::Remeasured => "re-measured after the suite",
            AdjustmentKind::Raised => "raised to a result's rate",
        };
        format!(
            "{} {what}: {} -> {} {} ({} ran above it)",
            self.roof.label(),
            sig3(self.before),
            sig3(self.after),
            self.roof.unit(),
            self.by
        )
    }
}

/// Version of the `rooftop ceilings --format json` output.
pub const SCHEMA_VERSION: u32 = 1;

/// `rooftop ceilings --format json`: the ceilings and the schema version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CeilingsExport {
    pub schema_version: u32,
    #[serde(flatten)]
    pub ceilings: Ceilings,
}

/// Measured ceilings of one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The cache capacities levels were assigned from (empty when unknown).
    pub caches: Vec<CacheCapacity>,
    /// Ceilings re-measured or raised after a result beat them (`rooftop bench`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub adjustments: Vec<Adjustment>,
}

impl Ceilings {
    /// The best bandwidth measured at `level` over all patterns, GB/s.
    pub fn best_gbs(&self, level: MemLevel) -> Option<f64> {
        self.bandwidth.iter().filter(|b| b.level == level).map(|b| b.gbs).reduce(f64::max)
    }

    /// The measured vector peak of `precision`, GFLOP/s (fp16/bf16 fall back to nothing:
    /// the CPU suite has no half-precision FMA kernel; matrix-unit peaks never count).
    pub fn vector_gflops(&self, precision: Precision) -> Option<f64> {
        self.compute
            .iter()
            .filter(|c| c.precision == precision && is_vector(c))
            .map(|c| c.gflops)
            .reduce(f64::max)
    }

    /// Where buffers of `bytes` live, from the cache capacities the ceilings know.
    pub fn residency(&self, bytes: u64) -> Residency {
        let Some(last) = self.caches.iter().map(|c| c.bytes).max() else {
            return Residency::Dram;
        };
        if bytes.saturating_mul(2) <= last {
            Residency::Cached
        } else if bytes < last.saturating_mul(4) {
            Residency::PartlyCached
        } else {
            Residency::Dram
        }
    }

    /// The roof a memory-bound result with `bytes` of buffers is compared with, and its
    /// residency: the last-level cache's roof when the buffers fit in it and it was
    /// measured, else DRAM's.
    pub fn memory_roof(&self, bytes: u64) -> (RoofKind, Residency) {
        let residency = self.residency(bytes);
        let llc = RoofKind::Bandwidth { level: MemLevel::Llc };
        if residency == Residency::Cached && self.value(llc).is_some() {
            (llc, residency)
        } else {
            (RoofKind::Bandwidth { level: MemLevel::Dram }, residency)
        }
    }

    /// The measured value of a roof (best pattern for bandwidths, vector FMA for peaks).
    pub fn value(&self, roof: RoofKind) -> Option<f64> {
        match roof {
            RoofKind::Bandwidth { level } => self.best_gbs(level),
            RoofKind::Fma { precision } => self.vector_gflops(precision),
        }
    }

    /// Sets a roof's value (its best entry's) to `after` and records why in
    /// [`Ceilings::adjustments`]; nothing when the roof was not measured.
    pub fn adjust(&mut self, roof: RoofKind, after: f64, kind: AdjustmentKind, by: &str) {
        let Some(before) = self.value(roof) else { return };
        match roof {
            RoofKind::Bandwidth { level } => {
                if let Some(b) = self
                    .bandwidth
                    .iter_mut()
                    .filter(|b| b.level == level)
                    .max_by(|a, b| a.gbs.total_cmp(&b.gbs))
                {
                    b.gbs = after;
                }
            }
            RoofKind::Fma { precision } => {
                if let Some(c) = self
                    .compute
                    .iter_mut()
                    .filter(|c| c.precision == precision && is_vector(c))
                    .max_by(|a, b| a.gflops.total_cmp(&b.gflops))
                {
                    c.gflops = after;
                }
            }
        }
        self.adjustments.push(Adjustment { roof, kind, before, after, by: by.to_string() });
    }
}

/// A vector-unit peak (not the one-lane `scalar` one, nor a matrix unit's).
fn is_vector(c: &ComputeCeiling) -> bool {
    c.variant != "scalar" && c.variant != "matrix"
}
