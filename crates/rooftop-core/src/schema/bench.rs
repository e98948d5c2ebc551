//! `rooftop bench` results in the documented schema (`docs/bench-schema.md`): each timed
//! case with its check, raw samples, statistics, work, achieved rates, % of the measured
//! ceiling and of the theoretical peak, floor, bound, attainment and findings.
//!
//! `rooftop-bench` fills these records (its `export` module); `rooftop-report` renders
//! them and `rooftop diff` reads them back.

use super::ceilings::{Ceilings, Residency, RoofKind};
use super::finding::FindingRecord;
use super::nullable;
use crate::roofline::Bound;
use crate::units::Provenance;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the bench JSON schema.
pub const SCHEMA_VERSION: u32 = 1;

/// A roof a result is compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoofRef {
    /// `dram bandwidth`, `fp32 vector FMA`.
    pub what: String,
    pub value: f64,
    /// `GB/s` or `GFLOP/s`.
    pub unit: String,
    pub provenance: Provenance,
    pub source: String,
}

/// Launch parameters. The CPU backend reads `threads` (rayon pool size) and `tile`
/// (a kernel-specific chunk or tile size); GPU backends read `block` and `grid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Launch {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub threads: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tile: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub block: Option<[u32; 3]>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub grid: Option<[u32; 3]>,
}

impl Launch {
    /// A short label: `threads=2 tile=256`, or `default`.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.threads {
            parts.push(format!("threads={t}"));
        }
        if let Some(t) = self.tile {
            parts.push(format!("tile={t}"));
        }
        if let Some([x, y, z]) = self.block {
            parts.push(format!("block={x}x{y}x{z}"));
        }
        if let Some([x, y, z]) = self.grid {
            parts.push(format!("grid={x}x{y}x{z}"));
        }
        if parts.is_empty() {
            "default".to_string()
        } else {
            parts.join(" ")
        }
    }
}

/// One implementation of a kernel on a backend: ours, or a library's built-in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Implementation {
    /// `rooftop` for our kernels; the library's short name for built-ins
    /// (`matrixmultiply`, `cublas`).
    pub id: String,
    pub builtin: bool,
    /// Human-readable description (`matrixmultiply 0.3 sgemm, threaded`).
    pub label: String,
}

/// What one launch of a call uses, and its theoretical occupancy from the core's
/// calculator, for backends that know (CUDA: the function's registers and static shared
/// memory from the driver).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchInfo {
    /// `gemm [rooftop] rt_gemm_t64_f32 grid=16x16x1 block=256x1x1`.
    pub label: String,
    pub threads_per_block: u32,
    #[serde(deserialize_with = "nullable")]
    pub regs_per_thread: Option<u32>,
    #[serde(deserialize_with = "nullable")]
    pub static_shared_bytes: Option<u32>,
    /// Theoretical occupancy, percent of the SM's warp slots.
    #[serde(deserialize_with = "nullable")]
    pub occupancy_pct: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub blocks_per_unit: Option<u32>,
    /// What limits the blocks per SM/CU (`registers`, `shared memory`, `warps`, `blocks`).
    #[serde(deserialize_with = "nullable")]
    pub limiter: Option<String>,
}

/// What a backend says about itself and its device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// `cpu`, `mock`, `cuda`, `wgpu`.
    pub backend: String,
    /// The device as the backend sees it (`AMD EPYC 9R14 (2 cores)`).
    pub device_name: String,
    /// How time is measured (`wall clock (std::time::Instant) around the run loop`).
    pub timer: String,
    /// Parallel workers available by default (CPU threads, SMs, ...).
    pub parallelism: u32,
    /// True when timings are not real (mock backend, a software rasteriser).
    pub simulated: bool,
    /// Anything a reader of the results should know.
    pub notes: Vec<String>,
}

/// Pass when `|got - want| <= abs + rel * |want|` for every element.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

impl Tolerance {
    /// Exact equality (integer outputs, copies).
    pub const EXACT: Tolerance = Tolerance { abs: 0.0, rel: 0.0 };

    pub fn new(abs: f64, rel: f64) -> Tolerance {
        Tolerance { abs, rel }
    }
}

/// The outcome of a check of a kernel's outputs against the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    pub passed: bool,
    pub max_abs_error: f64,
    pub max_rel_error: f64,
    pub tolerance: Tolerance,
    /// Elements compared (all outputs).
    pub elements: u64,
    /// The first failing element, as `buffer[index]: got X, want Y`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub first_failure: Option<String>,
}

/// Cache state during sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheState {
    /// Buffers stay in whatever caches they fit (repeated runs).
    Warm,
    /// Caches evicted before every sample (`--flush-cache`).
    Flushed,
}

/// Where one case's wall time went (seconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseTime {
    /// Everything, from the first allocation to the last sample.
    pub total_s: f64,
    /// Buffers: allocating, filling with random inputs, uploading, preparing the kernel
    /// (near zero when the workspace already holds the case's buffers).
    pub setup_s: f64,
    /// Downloading the checked run's outputs, computing the reference, comparing.
    pub check_s: f64,
    /// Runs before sampling, the checked run included (wall clock around each run).
    pub warmup_s: f64,
    /// The timed samples (wall clock around each, cache flushes included).
    pub sampling_s: f64,
}

impl CaseTime {
    /// Warm-up and sampling: the time spent running the kernel.
    pub fn runs_s(&self) -> f64 {
        self.warmup_s + self.sampling_s
    }

    /// Adds `o` to `self`.
    pub fn add(&mut self, o: &CaseTime) {
        self.total_s += o.total_s;
        self.setup_s += o.setup_s;
        self.check_s += o.check_s;
        self.warmup_s += o.warmup_s;
        self.sampling_s += o.sampling_s;
    }
}

/// The configuration of a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Size parameters by name.
    pub sizes: BTreeMap<String, u64>,
    pub dtype: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub weights: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub variant: Option<String>,
    pub launch: Launch,
    /// `Launch::label()`.
    pub launch_label: String,
    /// The case as a user types it, sizes in the kernel's order (`m=128 n=4096 k=4096
    /// fp32 int4-g128`).
    pub label: String,
}

/// One result row of the export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    pub kernel: String,
    pub implementation: Implementation,
    pub config: Config,
    pub check: CheckResult,
    /// Raw per-run seconds, one per sample.
    pub times_s: Vec<f64>,
    pub iters_per_sample: u32,
    pub warmup_runs: u32,
    #[serde(deserialize_with = "nullable")]
    pub cache: Option<CacheState>,
    #[serde(deserialize_with = "nullable")]
    pub median_s: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub mean_s: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub stddev_s: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub min_s: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub max_s: Option<f64>,
    /// FLOPs of one run (work model).
    pub flops: f64,
    /// Bytes of one run at device memory (work model).
    pub bytes: f64,
    pub flops_formula: String,
    pub bytes_formula: String,
    /// FLOP/byte; `null` when no bytes move (JSON has no infinity).
    #[serde(deserialize_with = "nullable")]
    pub arithmetic_intensity: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub achieved_gbs: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub achieved_gflops: Option<f64>,
    /// The roof of the kernel's bound measured on this machine (`ceilings`): for
    /// memory-bound results the roof of where its buffers live (DRAM, or the last-level
    /// cache when they fit in half of it).
    #[serde(deserialize_with = "nullable")]
    pub measured_ceiling: Option<RoofRef>,
    #[serde(deserialize_with = "nullable")]
    pub pct_of_measured_ceiling: Option<f64>,
    /// Memory-bound results: where the buffers live relative to the caches.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub residency: Option<Residency>,
    /// Why `pct_of_measured_ceiling` may exceed 100% or what it is relative to, when that
    /// is not plain DRAM or FMA peak.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ceiling_note: Option<String>,
    /// Which measured roof `measured_ceiling` is (for the adjustments after a run); not
    /// exported.
    #[serde(skip)]
    pub roof: Option<RoofKind>,
    /// The theoretical (catalog / datasheet / CPU-report) roof of the kernel's bound.
    #[serde(deserialize_with = "nullable")]
    pub theoretical_peak: Option<RoofRef>,
    #[serde(deserialize_with = "nullable")]
    pub pct_of_theoretical_peak: Option<f64>,
    /// Roofline floor time on the roofs the analysis used, seconds.
    pub floor_s: f64,
    pub bound: Bound,
    /// floor / median × 100.
    #[serde(deserialize_with = "nullable")]
    pub attainment_pct: Option<f64>,
    /// Median of the built-in implementation / our median (> 1: we are faster), on the
    /// results of the same case.
    #[serde(deserialize_with = "nullable")]
    pub speedup_vs_builtin: Option<f64>,
    /// Nanoseconds per dependent access (latency kernels such as `chase`).
    #[serde(deserialize_with = "nullable")]
    pub ns_per_access: Option<f64>,
    pub findings: Vec<FindingRecord>,
    pub warnings: Vec<String>,
    pub interrupted: bool,
    /// Resources and theoretical occupancy of each launch (CUDA), next to the time.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub launches: Vec<LaunchInfo>,
    /// Where the case's wall time went (setup, check, warm-up, sampling).
    pub time_spent: CaseTime,
}

impl ResultRecord {
    /// `kernel config [implementation]`, as notes and adjustments name the result.
    pub fn label(&self) -> String {
        result_label(&self.kernel, &self.config.label, &self.implementation.id)
    }
}

/// `kernel config [implementation]`: how a result is named in notes and adjustments.
pub fn result_label(kernel: &str, config: &str, implementation: &str) -> String {
    format!("{kernel} {config} [{implementation}]")
}

/// The device part of the export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceRecord {
    pub id: String,
    pub name: String,
    /// Roofs the analysis used (after calibration, when ceilings were measured).
    pub roofs: Vec<RoofRef>,
}

/// How cases were timed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingRecord {
    pub warmup_runs: u32,
    pub warmup_time_s: f64,
    pub min_runs: u32,
    pub max_runs: u32,
    pub min_time_s: f64,
    pub min_sample_s: f64,
    pub cache: CacheState,
    pub timer: String,
}

/// Where a run's wall time went: what the harness accounts for itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RunTime {
    /// Seconds from the start of the command to the end of the last case.
    pub wall_s: f64,
    /// The cases' times summed, the quick ceilings' cases included.
    pub cases: CaseTime,
    /// The quick ceilings' part of `cases.total_s`.
    pub ceilings_s: f64,
    /// Timed runs and warm-up (`cases.warmup_s + cases.sampling_s`) as a percentage of
    /// `wall_s`.
    pub in_runs_pct: f64,
}

impl RunTime {
    /// The account of a run that has taken `wall_s` so far.
    pub fn of(wall_s: f64, cases: CaseTime, ceilings_s: f64) -> RunTime {
        let in_runs_pct = if wall_s > 0.0 { cases.runs_s() / wall_s * 100.0 } else { 0.0 };
        RunTime { wall_s, cases, ceilings_s, in_runs_pct }
    }
}

/// The whole export (`--export-json`, `--format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub schema_version: u32,
    pub tool: String,
    pub backend: BackendInfo,
    pub device: DeviceRecord,
    #[serde(deserialize_with = "nullable")]
    pub ceilings: Option<Ceilings>,
    pub timing: TimingRecord,
    pub results: Vec<ResultRecord>,
    pub warnings: Vec<String>,
    /// Ctrl-C stopped the run; `results` holds what finished.
    pub interrupted: bool,
    /// Where the wall time went, so far.
    pub time_spent: RunTime,
}
