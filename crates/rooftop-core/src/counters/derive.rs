//! What a dispatch's counters say, vendor-neutral: bytes per memory level, FLOPs per
//! precision, hit rates, occupancy. The vendor formulas are in [`super::amd`] and
//! [`super::nvidia`]; a quantity the counters cannot give is `None` and listed in
//! [`Derived::missing`] with the counters it would need.

use super::{DeviceInfo, Dispatch, GpuVendor};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// FLOPs by precision (`fp64`, `fp32`, `fp16`, `bf16`, `fp8`, `int8` ...), split by the
/// unit that executes them.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct FlopCounts {
    /// Vector / scalar pipes: AMD VALU, NVIDIA FMA pipes (SASS thread instructions).
    pub vector: BTreeMap<String, f64>,
    /// Matrix units: AMD MFMA, NVIDIA tensor cores.
    pub matrix: BTreeMap<String, f64>,
}

impl FlopCounts {
    /// True when no precision was counted at all (not the same as zero FLOPs).
    pub fn is_empty(&self) -> bool {
        self.vector.is_empty() && self.matrix.is_empty()
    }

    /// All FLOPs, both units, every precision.
    pub fn total(&self) -> f64 {
        self.vector.values().chain(self.matrix.values()).sum()
    }

    /// FLOPs by precision, both units added (`"fp32" -> 1.2e9`).
    pub fn by_precision(&self) -> BTreeMap<String, f64> {
        let mut m = self.vector.clone();
        for (k, v) in &self.matrix {
            *m.entry(k.clone()).or_insert(0.0) += v;
        }
        m
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &FlopCounts) {
        for (dst, src) in [(&mut self.vector, &other.vector), (&mut self.matrix, &other.matrix)] {
            for (k, v) in src {
                *dst.entry(k.clone()).or_insert(0.0) += v;
            }
        }
    }

    /// Every count multiplied by `f`.
    #[must_use]
    pub fn scaled(&self, f: f64) -> FlopCounts {
        let s = |m: &BTreeMap<String, f64>| m.iter().map(|(k, v)| (k.clone(), v * f)).collect();
        FlopCounts { vector: s(&self.vector), matrix: s(&self.matrix) }
    }

    /// The (unit, precision) with the most FLOPs: `("matrix", "bf16")`.
    pub fn dominant(&self) -> Option<(&'static str, &str)> {
        let v = self.vector.iter().map(|(k, v)| ("vector", k.as_str(), *v));
        let m = self.matrix.iter().map(|(k, v)| ("matrix", k.as_str(), *v));
        v.chain(m)
            .filter(|(_, _, v)| *v > 0.0)
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(u, p, _)| (u, p))
    }
}

/// A quantity the counters present could not give, and what would.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// The output field (`dram_bytes_read`, `l2_hit_rate_pct`, `flops`).
    pub quantity: Cow<'static, str>,
    /// The counters or metrics that would give it (`TCC_HIT_sum, TCC_MISS_sum`). Fixed
    /// texts are borrowed, not copied: every dispatch of a trace lists them.
    pub needs: Cow<'static, str>,
}

/// Memory access efficiency at one level: bytes moved per request against the minimum
/// a fully coalesced access needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coalescing {
    /// `l1` (global loads and stores through L1TEX / vL1D).
    pub level: String,
    /// Measured bytes (or sectors × 32) per request.
    pub bytes_per_request: f64,
    /// The minimum for a fully coalesced 4-byte-per-thread warp/wave access.
    pub ideal_bytes_per_request: f64,
}

/// Speed-of-Light throughputs as the profiler prints them: each unit's achieved
/// throughput as a percentage of its own peak (Nsight Compute's "GPU Speed Of Light
/// Throughput" section). They say which unit is busiest when FLOPs or bytes are not
/// counted.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct SpeedOfLight {
    /// "Compute (SM) Throughput" / "SOL SM" / "SM [%]".
    pub sm_pct: Option<f64>,
    /// "Memory Throughput" (%) / "SOL Memory" / "Memory [%]": the busiest memory unit.
    pub memory_pct: Option<f64>,
    /// "DRAM Throughput" / "SOL DRAM".
    pub dram_pct: Option<f64>,
    /// "L1/TEX Cache Throughput" / "SOL L1/TEX Cache".
    pub l1_pct: Option<f64>,
    /// "L2 Cache Throughput" / "SOL L2 Cache".
    pub l2_pct: Option<f64>,
}

impl SpeedOfLight {
    /// Whether any figure is known.
    pub fn is_empty(&self) -> bool {
        self.sm_pct.is_none() && self.memory_pct.is_none() && self.busiest_memory().is_none()
    }

    /// The busiest memory unit by its own throughput: (`DRAM` | `L1/TEX` | `L2`,
    /// percent), or the overall memory figure when no unit's is known.
    pub fn busiest_memory(&self) -> Option<(&'static str, f64)> {
        let units = [("DRAM", self.dram_pct), ("L1/TEX", self.l1_pct), ("L2", self.l2_pct)];
        units
            .into_iter()
            .filter_map(|(n, v)| v.filter(|v| v.is_finite()).map(|v| (n, v)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .or_else(|| self.memory_pct.filter(|v| v.is_finite()).map(|v| ("memory", v)))
    }
}

/// Where a byte count comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ByteSource {
    /// A byte or sector counter.
    Counter,
    /// The profiler's throughput (bytes per second) times the duration: the counter
    /// itself was not collected.
    Derived,
}

/// Everything derived from one dispatch (or a sum of dispatches).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Derived {
    pub duration_ns: Option<f64>,
    /// Device memory (HBM / GDDR) traffic.
    pub dram_bytes_read: Option<f64>,
    pub dram_bytes_written: Option<f64>,
    /// Total device-memory traffic when only the total is counted (ncu
    /// `dram__bytes.sum` without the read/write split); `None` when the split is known.
    pub dram_bytes_total: Option<f64>,
    /// Traffic at L2 (requests from L1 × bytes per request), reads and writes.
    pub l2_bytes: Option<f64>,
    /// Traffic at L1 (vL1D / L1TEX).
    pub l1_bytes: Option<f64>,
    /// Traffic at LDS / shared memory.
    pub lds_bytes: Option<f64>,
    pub flops: FlopCounts,
    pub l1_hit_rate_pct: Option<f64>,
    pub l2_hit_rate_pct: Option<f64>,
    /// Share of LDS / shared-memory cycles (AMD) or wavefronts (NVIDIA) lost to bank
    /// conflicts, percent.
    pub lds_bank_conflict_pct: Option<f64>,
    /// Achieved occupancy: active warps/waves per SM/CU over the maximum, percent.
    pub achieved_occupancy_pct: Option<f64>,
    /// Theoretical occupancy of the launch, percent.
    pub theoretical_occupancy_pct: Option<f64>,
    /// Waves / warps launched (AMD `SQ_WAVES`; NVIDIA blocks × warps per block).
    pub waves_launched: Option<f64>,
    /// Full waves of blocks over the GPU (NVIDIA `launch__waves_per_multiprocessor`, or
    /// blocks / (units × blocks per unit)); a fractional last wave is the tail effect.
    pub grid_waves: Option<f64>,
    pub coalescing: Option<Coalescing>,
    /// The profiler's Speed-of-Light throughputs.
    pub speed_of_light: SpeedOfLight,
    /// How each byte count was obtained (`dram`, `l2`, `l1`), when it is known.
    pub byte_sources: BTreeMap<crate::device::MemLevel, ByteSource>,
    pub missing: Vec<Missing>,
    /// The formulas used, with their sources, for the report's provenance.
    pub formulas: Vec<String>,
}

impl Derived {
    /// DRAM bytes read + written, when both are known, else the counted total.
    pub fn dram_bytes(&self) -> Option<f64> {
        match (self.dram_bytes_read, self.dram_bytes_written) {
            (Some(r), Some(w)) => Some(r + w),
            _ => self.dram_bytes_total,
        }
    }

    /// Why the FLOP total is known to be incomplete (the counters show work that no FLOP
    /// count covers), when it is: the total is then missing, never the partial sum.
    pub fn flops_incomplete(&self) -> Option<&str> {
        self.missing.iter().find(|m| m.quantity == FLOPS_INCOMPLETE).map(|m| &*m.needs)
    }

    /// All FLOPs, both units, every precision; `None` when none was counted or the
    /// count is known to be incomplete ([`Derived::flops_incomplete`]).
    pub fn flops_total(&self) -> Option<f64> {
        (!self.flops.is_empty() && self.flops_incomplete().is_none()).then(|| self.flops.total())
    }

    /// Records that `quantity` needs `needs`.
    pub fn miss(
        &mut self,
        quantity: impl Into<Cow<'static, str>>,
        needs: impl Into<Cow<'static, str>>,
    ) {
        self.missing.push(Missing { quantity: quantity.into(), needs: needs.into() });
    }

    /// Records a formula used.
    pub fn formula(&mut self, text: impl Into<String>) {
        let t = text.into();
        if !self.formulas.contains(&t) {
            self.formulas.push(t);
        }
    }
}

/// The `missing` quantity of a FLOP total the counters show to be incomplete (work
/// that no FLOP count covers, such as tensor-pipe instructions without the tensor op
/// counters): the vendor formulas withdraw the partial counts and list it.
pub const FLOPS_INCOMPLETE: &str = "flops";

/// What a dispatch without any counter (a system trace: nsys, rocpd without `--pmc`)
/// lacks, said once instead of once per counter-derived quantity.
pub const NO_COUNTERS: &str = "dram_bytes_read, dram_bytes_written, flops, hit rates, \
     occupancy";

/// Derives everything the dispatch's counters allow, with the formulas of `vendor`.
///
/// A dispatch with no counters at all keeps its duration and one `missing` entry: the
/// per-quantity list of the counters each formula needs would be the same for every
/// dispatch of a trace (millions in an nsys export) and says nothing more.
pub fn derive(vendor: GpuVendor, d: &Dispatch, device: &DeviceInfo) -> Derived {
    if d.counters.is_empty() {
        let mut x = Derived { duration_ns: d.duration_ns, ..Derived::default() };
        x.miss(
            NO_COUNTERS,
            match vendor {
                GpuVendor::Nvidia => {
                    "hardware counters: this launch has none (a trace); profile it with Nsight \
                     Compute"
                }
                GpuVendor::Amd => {
                    "hardware counters: this dispatch has none (a trace); collect them with \
                     rocprofv3 --pmc"
                }
            },
        );
        return x;
    }
    match vendor {
        GpuVendor::Amd => super::amd::derive(d, device),
        GpuVendor::Nvidia => super::nvidia::derive(d, device),
    }
}
