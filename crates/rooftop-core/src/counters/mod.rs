//! Hardware-counter data from vendor profilers (rocprof, rocprofv3, rocprof-compute,
//! Nsight Compute, Nsight Systems), normalised: one [`Dispatch`] per kernel launch with
//! its raw counters in base units, plus what the tool says about the device and, for
//! rocprof-compute, its measured roofs.
//!
//! Readers live in `rooftop-ingest::counters` and only normalise (units, grid semantics,
//! names). Everything derived (bytes per memory level, FLOPs, hit rates, occupancy) is
//! computed here: [`amd`] and [`nvidia`] hold the vendor formulas and the per-architecture
//! constants with their sources, [`derive`](mod@derive) turns a dispatch into a [`Derived`] record,
//! [`analysis`] aggregates by kernel name, places points on the hierarchical roofline
//! against the [`roofs`] and decides the bound, and [`findings`] writes rooftop's
//! findings. [`rules`] keeps a profiler's own findings (Nsight Compute's
//! rules) beside rooftop's, and [`activity`] summarises what system traces hold besides
//! kernels (copies, API calls, kernel time per NVTX / ROCTX range).

pub mod activity;
pub mod amd;
pub mod analysis;
pub mod derive;
pub mod findings;
pub mod launch;
pub mod nvidia;
pub mod roofs;
pub mod rules;

pub use activity::Activity;
pub use analysis::{
    analyze, analyze_in, analyze_on, BoundBasis, CounterReport, DispatchRecords, KernelRecord,
    RooflinePoint,
};
pub use derive::{derive, ByteSource, Coalescing, Derived, FlopCounts, Missing, SpeedOfLight};
pub use roofs::{RoofSet, RoofSource};
pub use rules::{ToolFinding, ToolRule};

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The tool and layout a counter file was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterFormat {
    /// rocprof v1 / rocprofv2 file plugin: `results.csv` / counter CSV, one row per
    /// dispatch.
    RocprofV1,
    /// rocprof `results.stats.csv` (aggregated per kernel name, no dispatches).
    RocprofStats,
    /// rocprofv3 `kernel_trace.csv` and/or `counter_collection.csv`.
    Rocprofv3Csv,
    /// rocprofv3 `results.json`.
    Rocprofv3Json,
    /// rocprof-compute (Omniperf) workload folder.
    RocprofCompute,
    /// Nsight Compute `--csv --page raw`.
    NcuRaw,
    /// Nsight Compute `--csv --page details` or `--metrics` long format.
    NcuDetails,
    /// `nsys stats --report cuda_gpu_kern_sum --format csv` (aggregated).
    NsysKernSum,
    /// `nsys stats --report cuda_gpu_trace --format csv` (per launch).
    NsysGpuTrace,
    /// `nsys export --type sqlite` database (kernels, copies, CUDA API, NVTX).
    NsysSqlite,
    /// rocprofv3 rocpd SQLite database (`--output-format rocpd`, ROCm 7's default).
    Rocpd,
}

impl CounterFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            CounterFormat::RocprofV1 => "rocprof v1/v2 CSV",
            CounterFormat::RocprofStats => "rocprof results.stats.csv",
            CounterFormat::Rocprofv3Csv => "rocprofv3 CSV",
            CounterFormat::Rocprofv3Json => "rocprofv3 JSON",
            CounterFormat::RocprofCompute => "rocprof-compute workload",
            CounterFormat::NcuRaw => "Nsight Compute CSV (raw page)",
            CounterFormat::NcuDetails => "Nsight Compute CSV (details / --metrics)",
            CounterFormat::NsysKernSum => "nsys stats cuda_gpu_kern_sum",
            CounterFormat::NsysGpuTrace => "nsys stats cuda_gpu_trace",
            CounterFormat::NsysSqlite => "nsys SQLite export",
            CounterFormat::Rocpd => "rocprofv3 rocpd database",
        }
    }

    /// The GPU vendor whose tool writes this format.
    pub fn vendor(self) -> GpuVendor {
        match self {
            CounterFormat::RocprofV1
            | CounterFormat::RocprofStats
            | CounterFormat::Rocprofv3Csv
            | CounterFormat::Rocprofv3Json
            | CounterFormat::RocprofCompute
            | CounterFormat::Rocpd => GpuVendor::Amd,
            CounterFormat::NcuRaw
            | CounterFormat::NcuDetails
            | CounterFormat::NsysKernSum
            | CounterFormat::NsysGpuTrace
            | CounterFormat::NsysSqlite => GpuVendor::Nvidia,
        }
    }
}

/// Whose counter names a dispatch carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuVendor {
    Amd,
    Nvidia,
}

/// Where the data came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterSource {
    pub format: CounterFormat,
    /// Every file read, in reading order.
    pub files: Vec<String>,
    /// Tool version when the files say it (`rocprof-compute 2.0.1`, `ncu 2024.3`).
    pub tool_version: Option<String>,
    /// What the reader had to decide (units converted, passes joined, rows skipped).
    pub notes: Vec<String>,
}

/// A counter or metric name. Shared: a reader interns each name once, so that thousands
/// of dispatches with hundreds of counters do not each own a copy of every name.
pub type CounterName = Arc<str>;

/// Three launch dimensions.
pub type Dim3 = [u64; 3];

/// One kernel launch with its counters.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Dispatch {
    /// Dispatch index as the tool numbers it (rocprof `Index`, `Dispatch_ID`, ncu `ID`),
    /// or the row order when it has none.
    pub id: u64,
    /// Kernel name, with the AMD code-object suffixes (` [clone .kd]`, `.kd`) removed.
    /// Shared: a reader of a trace interns each name once (a kernel launched a million
    /// times is one string).
    pub name: Arc<str>,
    /// GPU / agent as the tool names it (shared like the name).
    pub gpu: Option<Arc<str>>,
    /// Stream / queue (shared like the name).
    pub stream: Option<Arc<str>>,
    /// Start and end timestamps (ns, the tool's clock).
    pub start_ns: Option<u64>,
    pub end_ns: Option<u64>,
    /// Duration in ns (end − start, or the tool's duration metric).
    pub duration_ns: Option<f64>,
    /// Grid in **blocks / workgroups** per dimension (AMD work-item grids are divided by
    /// the workgroup size at read time). When only the product is known: `[n, 1, 1]`.
    pub grid: Option<Dim3>,
    /// Threads per block / work-items per workgroup, per dimension.
    pub block: Option<Dim3>,
    /// Vector registers per thread (AMD arch VGPRs; NVIDIA registers per thread).
    pub vgprs: Option<u32>,
    /// AMD accumulation VGPRs (AGPRs) per thread.
    pub agprs: Option<u32>,
    /// AMD scalar registers per wave.
    pub sgprs: Option<u32>,
    /// Shared memory / LDS per block, bytes (static + dynamic).
    pub shared_bytes: Option<u64>,
    /// Scratch / local memory per thread, bytes.
    pub scratch_bytes: Option<u64>,
    /// Wave / warp size, when the file says it.
    pub wave_size: Option<u32>,
    /// Raw counters and metrics by the tool's own id (`TCC_HIT_sum`,
    /// `dram__bytes_read.sum`), converted to base units: bytes, ns, counts, percent,
    /// cycles, per-second rates.
    pub counters: BTreeMap<CounterName, f64>,
    /// The profiler's own rule results for this launch (Nsight Compute details page).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_rules: Vec<ToolRule>,
}

impl Dispatch {
    /// A counter's value, if present.
    pub fn counter(&self, name: &str) -> Option<f64> {
        self.counters.get(name).copied()
    }

    /// The value of the counter whose name is `parts` written one after another (the
    /// name is put together on the stack when it is short, as every vendor's is: the
    /// formulas look names up this way once per dispatch).
    pub fn counter_joined(&self, parts: &[&str]) -> Option<f64> {
        joined(parts, |name| self.counter(name))
    }

    /// Total blocks (workgroups) of the grid; `None` when the file's dimensions
    /// multiply past `u64` (no launch has that many: the row is damaged).
    pub fn blocks(&self) -> Option<u64> {
        self.grid.and_then(volume)
    }

    /// Threads per block (`None` past `u64`, as [`Dispatch::blocks`]).
    pub fn threads_per_block(&self) -> Option<u64> {
        self.block.and_then(volume)
    }
}

/// `f` of the name `parts` written one after another, put together on the stack when it
/// is short (as every vendor's counter names are), else in a `String`.
pub(crate) fn joined<R>(parts: &[&str], f: impl FnOnce(&str) -> R) -> R {
    let mut buf = [0u8; 128];
    let mut n = 0;
    for p in parts {
        let Some(dst) = buf.get_mut(n..n + p.len()) else {
            return f(&parts.concat());
        };
        dst.copy_from_slice(p.as_bytes());
        n += p.len();
    }
    // Whole `str`s one after another: always UTF-8.
    match std::str::from_utf8(buf.get(..n).unwrap_or_default()) {
        Ok(name) => f(name),
        Err(_) => f(&parts.concat()),
    }
}

/// The product of a launch's three dimensions, `None` when it overflows `u64`.
fn volume(d: Dim3) -> Option<u64> {
    d.iter().try_fold(1u64, |acc, &x| acc.checked_mul(x))
}

/// A per-kernel aggregate written by the tool itself (rocprof `results.stats.csv`,
/// `nsys stats cuda_gpu_kern_sum`), when there are no per-dispatch rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolAggregate {
    pub name: String,
    pub count: u64,
    pub total_ns: f64,
    pub mean_ns: Option<f64>,
    pub median_ns: Option<f64>,
    pub min_ns: Option<f64>,
    pub max_ns: Option<f64>,
    pub stddev_ns: Option<f64>,
}

/// What the files say about the device (rocprof-compute `sysinfo.csv`, ncu
/// `device__attribute_*`, rocprofv3 agents).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct DeviceInfo {
    /// Marketing or model name (`MI300X_A1`, `NVIDIA A100-PCIE-40GB`).
    pub name: Option<String>,
    /// AMD LLVM target (`gfx90a`) or NVIDIA compute capability (`8.0`).
    pub arch: Option<String>,
    /// CUs / SMs.
    pub compute_units: Option<u32>,
    pub simd_per_cu: Option<u32>,
    pub wave_size: Option<u32>,
    pub max_waves_per_cu: Option<u32>,
    /// Max and current core clock, MHz.
    pub max_sclk_mhz: Option<f64>,
    pub cur_sclk_mhz: Option<f64>,
    /// Memory clock, MHz.
    pub mclk_mhz: Option<f64>,
    pub l2_bytes: Option<u64>,
    pub l1_bytes: Option<u64>,
    /// LDS banks per CU (rocprof-compute's LDS byte formula needs it).
    pub lds_banks_per_cu: Option<u32>,
    /// Number of XCDs (MI300).
    pub num_xcd: Option<u32>,
    /// Device-memory bandwidth the tool states, GB/s (rocprof-compute 2.x `hbm_bw`).
    pub hbm_bw_gbs: Option<f64>,
    /// Every other field, as written.
    pub extra: BTreeMap<String, String>,
}

/// One measured roof from the tool's own micro-benchmark (rocprof-compute
/// `roofline.csv`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredRoof {
    /// The column it came from (`HBMBw`, `MFMAF16Flops`).
    pub name: String,
    /// `hbm`, `mall`, `l2`, `l1`, `lds` for bandwidths; `valu` or `mfma` for compute.
    pub kind: String,
    /// Precision for compute roofs (`fp32`, `bf16`, `int8`).
    pub precision: Option<String>,
    /// Mean; GB/s for bandwidths, GFLOP/s (GOP/s for integers) for compute.
    pub value: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// Everything read from one profiler output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CounterSet {
    pub source: CounterSource,
    pub device: DeviceInfo,
    /// Measured roofs, when the tool ran its own micro-benchmark (empty otherwise).
    pub measured_roofs: Vec<MeasuredRoof>,
    pub dispatches: Vec<Dispatch>,
    /// Tool-written aggregates (only for formats without dispatches).
    pub aggregates: Vec<ToolAggregate>,
    /// Copies, API calls and ranges of a system trace (nsys, rocpd); `None` for counter
    /// files.
    pub activity: Option<Activity>,
}

impl CounterSet {
    /// The GPU vendor of the tool that wrote the set.
    pub fn vendor(&self) -> GpuVendor {
        self.source.format.vendor()
    }

    /// Keeps only the kernels (dispatches and tool aggregates) whose name contains
    /// `text`; returns whether any is left.
    pub fn retain_kernels(&mut self, text: &str) -> bool {
        self.dispatches.retain(|d| d.name.contains(text));
        self.aggregates.retain(|a| a.name.contains(text));
        !(self.dispatches.is_empty() && self.aggregates.is_empty())
    }
}

/// Strips AMD code-object suffixes from a kernel name: ` [clone .kd]`, ` (.kd)`, `.kd`.
pub fn clean_kernel_name(name: &str) -> &str {
    let n = name.trim();
    for suffix in [" [clone .kd]", " (.kd)", ".kd"] {
        if let Some(s) = n.strip_suffix(suffix) {
            return s.trim_end();
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_sizes_that_overflow_are_missing() {
        let mut d =
            Dispatch { grid: Some([4, 2, 3]), block: Some([256, 1, 1]), ..Dispatch::default() };
        assert_eq!((d.blocks(), d.threads_per_block()), (Some(24), Some(256)));
        // 2^32 × 2^32 × 2 = 2^65: past u64, as a damaged nsys CSV row had it.
        d.grid = Some([1 << 32, 1 << 32, 2]);
        d.block = Some([u64::MAX, 2, 1]);
        assert_eq!((d.blocks(), d.threads_per_block()), (None, None));
        d.grid = None;
        assert_eq!(d.blocks(), None);
    }

    /// A joined name finds what the whole name finds, up to the stack buffer's 128 bytes
    /// and past it (on the heap), with a multi-byte character across the parts.
    #[test]
    fn joined_names_find_their_counters() {
        let long = "x".repeat(200);
        let names = ["TCC_HIT_sum".to_string(), format!("{long}_sum"), "é_sum".to_string()];
        let d = Dispatch {
            counters: names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str().into(), i as f64))
                .collect(),
            ..Dispatch::default()
        };
        assert_eq!(d.counter_joined(&["TCC_HIT", "_sum"]), Some(0.0));
        assert_eq!(d.counter_joined(&[&long, "_sum"]), Some(1.0));
        assert_eq!(d.counter_joined(&["é", "_", "sum"]), Some(2.0));
        assert_eq!(d.counter_joined(&["TCC_HIT"]), None);
        assert_eq!(d.counter_joined(&[&long]), None);
        let edge = "y".repeat(124);
        let d = Dispatch {
            counters: [(format!("{edge}_sum").as_str().into(), 7.0)].into_iter().collect(),
            ..Dispatch::default()
        };
        assert_eq!(d.counter_joined(&[&edge, "_sum"]), Some(7.0));
        assert_eq!(d.counter_joined(&[&edge, "_su"]), None);
    }

    #[test]
    fn kernel_name_suffixes() {
        assert_eq!(
            clean_kernel_name("vecCopy(double*, double*) [clone .kd]"),
            "vecCopy(double*, double*)"
        );
        assert_eq!(clean_kernel_name("k_read.kd"), "k_read");
        assert_eq!(clean_kernel_name("foo (.kd)"), "foo");
        assert_eq!(clean_kernel_name("ampere_sgemm"), "ampere_sgemm");
    }
}
