//! What a ceilings measurement sweeps: [`CeilingOptions`] (quick or full mode, the
//! timing, the largest working set, the cache levels the backend knows, the theoretical
//! peaks to report beside the measured ones) and the matrix-unit probes ([`MatrixProbe`])
//! a GPU backend adds.

use crate::cpu::info::{CpuInfo, TheoreticalPeak};
use crate::harness::TimingOptions;
use rooftop_core::device::MemLevel;
use rooftop_core::units::Precision;

/// What `measure` sweeps.
#[derive(Debug, Clone, PartialEq)]
pub struct CeilingOptions {
    /// DRAM bandwidth and FMA peaks only (what `rooftop bench` measures first).
    pub quick: bool,
    pub timing: TimingOptions,
    /// Largest working set of the sweep, bytes (default: 4x the last-level cache, at
    /// least 256 MiB; 16 MiB on a simulated backend without caches).
    pub max_working_set: Option<u64>,
    /// Capacity of each cache level as the kernels use it (all threads together),
    /// from L1 out; empty when unknown, and then only DRAM is assigned.
    pub cache_levels: Vec<(MemLevel, u64)>,
    /// Theoretical FMA peaks to report beside the measured ones.
    pub theoretical: Vec<TheoreticalPeak>,
    /// Notes to keep with the ceilings (where the theoretical figures came from).
    pub notes: Vec<String>,
    /// Matrix-unit (tensor-core) peaks to measure with the suite's `gemm` kernel through
    /// a backend's implementation; empty on backends without matrix units (the CPU).
    pub matrix: Vec<MatrixProbe>,
    /// The FMA probe runs `iters` x this factor (1: the suite's default). GPUs finish the
    /// default in a few microseconds, where launch overhead still shows; their backends
    /// ask for more.
    pub fma_iters_factor: u64,
    /// Cache levels use only sweep points timed at least this many times the smallest
    /// working set's time (None: all points). For GPUs, whose kernel launch costs
    /// microseconds: without it a cache level's figure measures the launch.
    pub overhead_bound_factor: Option<f64>,
}

/// One matrix-unit peak to measure: `gemm` of `shape` in `precision` through
/// `implementation` (its own operand conversion, fp32 buffers in and out), checked
/// normwise against the suite's reference on random inputs in [-1, 1), then timed.
/// Recorded as a [`ComputeCeiling`](super::ComputeCeiling) with variant `matrix`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixProbe {
    pub implementation: String,
    pub precision: Precision,
    /// (m, n, k).
    pub shape: (u64, u64, u64),
    /// What runs, for the notes (`tensor cores: cuBLASLt bf16 8192x8192x8192`).
    pub label: String,
    pub theoretical_gflops: Option<f64>,
    pub theoretical_formula: Option<String>,
}

/// Smallest working set of the sweep.
pub const MIN_WORKING_SET: u64 = 16 << 10;
/// Working set without a known last-level cache.
const DEFAULT_WORKING_SET: u64 = 256 << 20;
/// Largest working set on a simulated backend (no caches to overflow; its times come
/// from the work model), unless the options say otherwise.
const SIMULATED_WORKING_SET: u64 = 16 << 20;

impl CeilingOptions {
    /// Options for a backend whose caches and theoretical peaks are unknown.
    pub fn new(quick: bool, timing: TimingOptions) -> CeilingOptions {
        CeilingOptions {
            quick,
            timing,
            max_working_set: None,
            cache_levels: Vec::new(),
            theoretical: Vec::new(),
            notes: Vec::new(),
            matrix: Vec::new(),
            fma_iters_factor: 1,
            overhead_bound_factor: None,
        }
    }

    /// The FMA ceiling case of `precision`, with [`Self::fma_iters_factor`] applied.
    pub fn fma_case(&self, precision: Precision, scalar: bool) -> crate::case::Case {
        let mut case = crate::suite::fma::ceiling_case(precision, scalar);
        for (name, v) in &mut case.sizes {
            if *name == "iters" {
                *v = v.saturating_mul(self.fma_iters_factor.max(1));
            }
        }
        case
    }

    /// Options for the CPU backend: its cache capacities and theoretical peaks.
    pub fn for_cpu(cpu: &CpuInfo, quick: bool, timing: TimingOptions) -> CeilingOptions {
        let mut theoretical = Vec::new();
        for p in [Precision::Fp32, Precision::Fp64] {
            for scalar in [false, true] {
                theoretical.extend(cpu.theoretical_peak(p, scalar));
            }
        }
        let mut notes = vec![format!(
            "the FMA probe and the vectorised kernels use {}; the fp32/fp64 GEMM micro-kernel \
             uses avx2+fma",
            cpu.kernel_isa
        )];
        match (&cpu.uarch, cpu.fma_width_bits) {
            (Some(u), Some(w)) if cpu.kernel_isa == "avx2+fma" && w > 256 => notes.push(format!(
                "{u} has {w}-bit FMA pipes but this CPU's kernels run 256-bit AVX2: expect at \
                 most {}% of the vector peak",
                100 * 256 / w
            )),
            (None, _) => notes.push(format!(
                "no theoretical FMA peak: {} family {:?} model {:?} is not in rooftop's \
                 micro-architecture table",
                cpu.vendor, cpu.cpu_family, cpu.cpu_model
            )),
            _ => {}
        }
        if cpu.clock().is_none() {
            notes.push("no theoretical FMA peak: the clock is unknown".to_string());
        }
        CeilingOptions {
            cache_levels: cpu.cache_levels(),
            theoretical,
            notes,
            ..CeilingOptions::new(quick, timing)
        }
    }

    pub(crate) fn last_cache(&self) -> Option<u64> {
        self.cache_levels.iter().map(|&(_, b)| b).max()
    }

    /// The sweep's largest working set.
    pub(crate) fn max_ws(&self, simulated: bool) -> u64 {
        self.max_working_set.unwrap_or_else(|| match self.last_cache() {
            Some(c) => (4 * c).max(DEFAULT_WORKING_SET),
            None if simulated => SIMULATED_WORKING_SET,
            None => DEFAULT_WORKING_SET,
        })
    }

    /// Quick mode's DRAM working set.
    pub(crate) fn quick_ws(&self, simulated: bool) -> u64 {
        let ws = match self.last_cache() {
            Some(c) => 4 * c,
            None if simulated => SIMULATED_WORKING_SET,
            None => DEFAULT_WORKING_SET,
        };
        self.max_working_set.map_or(ws, |m| ws.min(m))
    }
}
