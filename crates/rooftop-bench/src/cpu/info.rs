//! What the CPU reports about itself: model, cores, clocks, SIMD width, FMA units,
//! caches, memory — and the theoretical peaks and device spec that follow from them.
//!
//! Sources, in order: `/proc/cpuinfo` (model, vendor, CPUID family/model, flags),
//! `/proc/self/status` `Cpus_allowed_list` (the CPUs this process may run on),
//! `/sys/devices/system/cpu/cpuN/topology` (physical cores among those CPUs),
//! `/sys/devices/system/cpu/cpuN/cpufreq/{cpuinfo_max_freq,base_frequency}` (clocks),
//! `/sys/devices/system/cpu/cpuN/cache/index*` (caches), `/proc/meminfo` (memory) and
//! `is_x86_feature_detected!` (SIMD). Every figure is `None` when unknown and
//! [`CpuInfo::sources`] says where each known one came from.
//!
//! **Clock.** Virtual machines often have no cpufreq directory, and their `/proc/cpuinfo`
//! MHz is the nominal TSC rate, not the clock the cores run at. Without cpufreq, the
//! clock is measured: a chain of dependent integer operations (xor then add, each one
//! cycle of latency on every x86-64 and Arm core) timed with `Instant`, the best of many
//! short runs (release builds only: unoptimised code would time memory round trips).
//! Failing both, the base clock (cpufreq, or the `@ 2.50GHz` of an Intel model name).
//!
//! **FMA units.** Peak FLOP/s need the number and width of the FMA pipes, which no OS
//! interface reports; they come from the micro-architecture, found by CPUID
//! family/model (x86) or implementer/part (Arm) in [`UARCH_TABLE`], whose rows cite the
//! vendor documents. Models not in the table are "unknown" (no theoretical peak) rather
//! than guessed.
//!
//! Theoretical peak = cores x clock x (FMA pipes x pipe width / element width) lanes x
//! 2 FLOP; the scalar peak uses one lane per pipe. Cores are physical cores (SMT
//! siblings share the FMA pipes) among the CPUs this process may use.

use crate::ceilings::device_file::{best_bandwidth, slug};
use crate::ceilings::Ceilings;
use rooftop_core::device::{unplaced, Catalog, DeviceEntry, DeviceSpec, Figure, MemLevel};
use rooftop_core::units::{Confidence, Precision, Provenance};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

/// The local CPU as rooftop sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuInfo {
    pub model_name: String,
    pub vendor: String,
    /// Threads the OS lets us use (affinity/cgroup aware).
    pub logical_cpus: u32,
    /// Physical cores among the CPUs we may use, when the OS says.
    pub physical_cores: Option<u32>,
    /// Base clock (cpufreq `base_frequency`), MHz.
    pub base_mhz: Option<f64>,
    /// Maximum (boost) clock (cpufreq `cpuinfo_max_freq`), MHz.
    pub max_mhz: Option<f64>,
    /// `/proc/cpuinfo` "cpu MHz" of the first CPU: the current clock on bare metal, often
    /// the nominal TSC rate on a virtual machine.
    pub reported_mhz: Option<f64>,
    /// Clock measured with a dependent integer chain (only when cpufreq has no maximum).
    pub measured_mhz: Option<f64>,
    /// Widest vector ISA the CPU has (`avx512`, `avx2`, `avx`, `sse2`, `neon`, `scalar`).
    pub simd: String,
    /// f32 lanes per vector register of `simd`.
    pub fp32_lanes: u32,
    /// ISA of rooftop's own FMA/GEMM kernels on this CPU (`avx2+fma`, `portable`).
    pub kernel_isa: String,
    /// CPUID family and model (x86), or implementer and part (Arm).
    pub cpu_family: Option<u32>,
    pub cpu_model: Option<u32>,
    /// Micro-architecture from [`UARCH_TABLE`].
    pub uarch: Option<String>,
    /// FMA pipes per core (from the micro-architecture).
    pub fma_units: Option<u32>,
    /// Width of one FMA pipe, bits.
    pub fma_width_bits: Option<u32>,
    /// The document the FMA figures come from.
    pub fma_source: Option<String>,
    /// Per core (L1d, L2) or per instance (L3) sizes.
    pub l1d_bytes: Option<u64>,
    pub l2_bytes: Option<u64>,
    pub l3_bytes: Option<u64>,
    /// Distinct L3 instances among the CPUs we may use.
    pub l3_instances: Option<u32>,
    pub mem_total_bytes: Option<u64>,
    pub mem_available_bytes: Option<u64>,
    /// Where each figure came from (`model_name: /proc/cpuinfo`, ...).
    pub sources: Vec<String>,
}

/// The clock the theoretical peaks use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clock {
    pub mhz: f64,
    /// `cpufreq cpuinfo_max_freq` or `measured (dependent integer chain)`.
    pub source: &'static str,
}

/// A theoretical FLOP rate and how it was computed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TheoreticalPeak {
    pub precision: Precision,
    /// `vector` or `scalar`.
    pub variant: &'static str,
    pub gflops: f64,
    /// `2 cores x 3.70 GHz (measured ...) x 16 lanes (2 FMA pipes x 256 bit / 32) x 2 FLOP`.
    pub formula: String,
}

/// Why a device spec cannot be built from what the CPU reports.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CpuSpecError {
    /// No DRAM bandwidth: CPUs do not report one, and no ceilings were measured.
    #[error(
        "the CPU does not report its memory bandwidth: measure it with `rooftop ceilings` \
         (or pass --device-file with `memory.bandwidth_gbs`)"
    )]
    NoDramBandwidth,
    /// No compute peak: unknown FMA units or clock, and no measured FMA ceilings.
    #[error(
        "no compute peak for {model}: {reason}; measure it with `rooftop ceilings` (or pass \
         --device-file with `peak_tflops`)"
    )]
    NoPeak { model: String, reason: String },
    /// The generated device text did not parse (a bug).
    #[error("internal error: the CPU device description does not parse: {0}")]
    Invalid(String),
}

/// One row of the micro-architecture table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uarch {
    /// `AuthenticAMD`, `GenuineIntel`, or `arm:0x41` (Arm implementer code).
    pub vendor: &'static str,
    /// CPUID family (x86) or 0 (Arm).
    pub family: u32,
    /// Inclusive model (x86) or part (Arm) range.
    pub models: (u32, u32),
    /// When set, the model name must contain one of these (SKU-dependent FMA counts).
    pub name_contains: &'static [&'static str],
    pub name: &'static str,
    pub fma_units: u32,
    pub fma_width_bits: u32,
    pub source: &'static str,
}

const AMD_17H: &str =
    "AMD Software Optimization Guide for AMD Family 17h Processors (pub. 55723), \
                       2.11: four 128-bit FP pipes, FMA on FP0 and FP1";
const AMD_ZEN2: &str = "AMD Software Optimization Guide for AMD Family 17h Models 30h and Greater \
                        (pub. 56305), 2.11: two 256-bit FMA pipes";
const AMD_ZEN3: &str =
    "AMD Software Optimization Guide for AMD Family 19h Processors (pub. 56665), \
                        2.11: two 256-bit FMA pipes (FP0, FP1)";
const AMD_ZEN4: &str = "AMD Software Optimization Guide for AMD Family 19h Models 10h-1Fh/60h-7Fh/\
                        A0h-AFh (Zen 4, pub. 57647), 2.11: two 256-bit FMA pipes; 512-bit ops are \
                        issued as two 256-bit halves";
const AMD_ZEN5: &str =
    "AMD Software Optimization Guide for AMD Family 1Ah Processors (Zen 5, pub. \
                        58455): two FMA pipes with a full 512-bit data path (server/desktop)";
const AMD_ZEN5_MOBILE: &str = "AMD Zen 5 mobile (Strix Point, family 1Ah models 20h-2Fh): 512-bit \
                               ops on a 256-bit data path (AMD Tech Day 2024), two FMA pipes";
const INTEL_HSW: &str = "Intel 64 and IA-32 Architectures Optimization Reference Manual, \
                         Haswell/Skylake microarchitecture: two 256-bit FMA units (ports 0, 1)";
const INTEL_ICL: &str = "Intel Optimization Reference Manual, Ice Lake/Tiger Lake client: two \
                         256-bit FMA units (ports 0, 1; fused into one for 512-bit ops)";
const INTEL_SERVER: &str =
    "Intel Optimization Reference Manual and ARK \"# of AVX-512 FMA Units\" = 2: \
                            512-bit FMA on ports 0+1 and 5";
const INTEL_SKX_ONE: &str = "Intel ARK \"# of AVX-512 FMA Units\" = 1 (Xeon Silver/Bronze): one \
                             512-bit FMA (ports 0+1)";
const ARM_N1: &str = "Arm Neoverse N1 Software Optimization Guide: two 128-bit FP/ASIMD pipes, \
                      FMA on both";
const ARM_V1: &str = "Arm Neoverse V1 Software Optimization Guide: four 128-bit FP/ASIMD pipes \
                      with FMA";
const ARM_N2: &str = "Arm Neoverse N2 Software Optimization Guide: two 128-bit FP/ASIMD pipes \
                      with FMA";
const ARM_V2: &str = "Arm Neoverse V2 Software Optimization Guide: four 128-bit FP/ASIMD pipes \
                      with FMA";

/// FMA pipes by micro-architecture. Hybrid client parts (Alder Lake and later: P- and
/// E-cores with different FMA widths) are deliberately absent.
pub const UARCH_TABLE: &[Uarch] = &[
    row("AuthenticAMD", 0x17, (0x00, 0x2F), &[], "Zen/Zen+", 2, 128, AMD_17H),
    row("AuthenticAMD", 0x17, (0x30, 0xFF), &[], "Zen 2", 2, 256, AMD_ZEN2),
    row("AuthenticAMD", 0x19, (0x10, 0x1F), &[], "Zen 4", 2, 256, AMD_ZEN4),
    row("AuthenticAMD", 0x19, (0x60, 0x7F), &[], "Zen 4", 2, 256, AMD_ZEN4),
    row("AuthenticAMD", 0x19, (0xA0, 0xAF), &[], "Zen 4", 2, 256, AMD_ZEN4),
    row("AuthenticAMD", 0x19, (0x00, 0x0F), &[], "Zen 3", 2, 256, AMD_ZEN3),
    row("AuthenticAMD", 0x19, (0x20, 0x5F), &[], "Zen 3", 2, 256, AMD_ZEN3),
    row("AuthenticAMD", 0x1A, (0x00, 0x1F), &[], "Zen 5", 2, 512, AMD_ZEN5),
    row("AuthenticAMD", 0x1A, (0x40, 0x4F), &[], "Zen 5", 2, 512, AMD_ZEN5),
    row("AuthenticAMD", 0x1A, (0x20, 0x2F), &[], "Zen 5 (mobile)", 2, 256, AMD_ZEN5_MOBILE),
    row("GenuineIntel", 6, (0x3C, 0x3C), &[], "Haswell", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x3F, 0x3F), &[], "Haswell", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x45, 0x46), &[], "Haswell", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x3D, 0x3D), &[], "Broadwell", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x47, 0x47), &[], "Broadwell", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x4F, 0x4F), &[], "Broadwell", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x56, 0x56), &[], "Broadwell", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x4E, 0x4E), &[], "Skylake", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x5E, 0x5E), &[], "Skylake", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x8E, 0x8E), &[], "Kaby/Coffee Lake", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x9E, 0x9E), &[], "Kaby/Coffee Lake", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0xA5, 0xA6), &[], "Comet Lake", 2, 256, INTEL_HSW),
    row("GenuineIntel", 6, (0x7D, 0x7E), &[], "Ice Lake", 2, 256, INTEL_ICL),
    row("GenuineIntel", 6, (0x8C, 0x8D), &[], "Tiger Lake", 2, 256, INTEL_ICL),
    row("GenuineIntel", 6, (0xA7, 0xA7), &[], "Rocket Lake", 2, 256, INTEL_ICL),
    row(
        "GenuineIntel",
        6,
        (0x55, 0x55),
        &["Platinum", "Gold 6"],
        "Skylake-SP/Cascade Lake",
        2,
        512,
        INTEL_SERVER,
    ),
    row(
        "GenuineIntel",
        6,
        (0x55, 0x55),
        &["Silver", "Bronze"],
        "Skylake-SP/Cascade Lake",
        1,
        512,
        INTEL_SKX_ONE,
    ),
    row("GenuineIntel", 6, (0x6A, 0x6A), &[], "Ice Lake-SP", 2, 512, INTEL_SERVER),
    row("GenuineIntel", 6, (0x6C, 0x6C), &[], "Ice Lake-SP", 2, 512, INTEL_SERVER),
    row("GenuineIntel", 6, (0x8F, 0x8F), &[], "Sapphire Rapids", 2, 512, INTEL_SERVER),
    row("GenuineIntel", 6, (0xCF, 0xCF), &[], "Emerald Rapids", 2, 512, INTEL_SERVER),
    row("GenuineIntel", 6, (0xAD, 0xAE), &[], "Granite Rapids", 2, 512, INTEL_SERVER),
    row("arm:0x41", 0, (0xD0C, 0xD0C), &[], "Neoverse N1", 2, 128, ARM_N1),
    row("arm:0x41", 0, (0xD40, 0xD40), &[], "Neoverse V1", 4, 128, ARM_V1),
    row("arm:0x41", 0, (0xD49, 0xD49), &[], "Neoverse N2", 2, 128, ARM_N2),
    row("arm:0x41", 0, (0xD4F, 0xD4F), &[], "Neoverse V2", 4, 128, ARM_V2),
];

#[allow(clippy::too_many_arguments)]
const fn row(
    vendor: &'static str,
    family: u32,
    models: (u32, u32),
    name_contains: &'static [&'static str],
    name: &'static str,
    fma_units: u32,
    fma_width_bits: u32,
    source: &'static str,
) -> Uarch {
    Uarch { vendor, family, models, name_contains, name, fma_units, fma_width_bits, source }
}

/// The table row of a CPU, if any.
pub fn lookup_uarch(
    vendor: &str,
    family: u32,
    model: u32,
    model_name: &str,
) -> Option<&'static Uarch> {
    UARCH_TABLE.iter().find(|u| {
        u.vendor == vendor
            && u.family == family
            && (u.models.0..=u.models.1).contains(&model)
            && (u.name_contains.is_empty()
                || u.name_contains.iter().any(|s| model_name.contains(s)))
    })
}

impl CpuInfo {
    /// Reads the local machine. Never fails: unknown figures are `None`. Measures the
    /// clock (at most ~60 ms) when cpufreq does not give the maximum.
    pub fn detect() -> CpuInfo {
        let root = Path::new("/");
        let mut info = CpuInfo::from_files(root);
        info.logical_cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        info.sources.push(
            "logical_cpus: std::thread::available_parallelism (affinity, cgroup quota)".into(),
        );
        // An unoptimised build keeps the chain's variables in memory, so the loop would
        // time store-to-load forwarding, not the ALU: no measurement there.
        if info.max_mhz.is_none() && !cfg!(debug_assertions) {
            info.measured_mhz = measure_clock_mhz();
            if info.measured_mhz.is_some() {
                info.sources.push(
                    "measured_mhz: dependent xor+add chain timed with Instant (no cpufreq maximum)"
                        .into(),
                );
            }
        }
        info.detect_simd();
        info
    }

    /// Everything that comes from files under `root` (`/` for the machine; a fixture
    /// directory in tests). `logical_cpus` is the number of allowed CPUs.
    pub fn from_files(root: &Path) -> CpuInfo {
        let read = |p: &str| std::fs::read_to_string(root.join(p)).ok();
        let cpuinfo = read("proc/cpuinfo").unwrap_or_default();
        let field = |key: &str| {
            cpuinfo.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        let mut sources = Vec::new();
        let mut src = |s: &str| sources.push(s.to_string());

        let arm_part = field("CPU part").and_then(|s| parse_int(&s));
        let arm_impl = field("CPU implementer").and_then(|s| parse_int(&s));
        let (vendor, family, model) = if let Some(v) = field("vendor_id") {
            (
                v,
                field("cpu family").and_then(|s| s.parse().ok()),
                field("model").and_then(|s| s.parse().ok()),
            )
        } else if let Some(imp) = arm_impl {
            (format!("arm:{imp:#x}"), Some(0), arm_part)
        } else {
            (String::new(), None, None)
        };
        let model_name = field("model name")
            .or_else(|| field("Model"))
            .unwrap_or_else(|| "unknown CPU".to_string());
        src("model_name, vendor, cpu_family, cpu_model, reported_mhz: /proc/cpuinfo");

        let allowed: Vec<u32> = read("proc/self/status")
            .and_then(|s| {
                s.lines().find_map(|l| {
                    l.strip_prefix("Cpus_allowed_list:").map(|v| parse_cpu_list(v.trim()))
                })
            })
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| {
                read("sys/devices/system/cpu/online")
                    .map(|s| parse_cpu_list(s.trim()))
                    .unwrap_or_default()
            });
        let cpu_dir = |c: u32, rest: &str| format!("sys/devices/system/cpu/cpu{c}/{rest}");
        let cores: BTreeSet<(String, String)> = allowed
            .iter()
            .filter_map(|&c| {
                let pkg = read(&cpu_dir(c, "topology/physical_package_id"))?;
                let core = read(&cpu_dir(c, "topology/core_id"))?;
                Some((pkg.trim().to_string(), core.trim().to_string()))
            })
            .collect();
        let physical_cores = (!cores.is_empty()).then_some(cores.len() as u32);
        if physical_cores.is_some() {
            src("physical_cores: /sys/devices/system/cpu/cpuN/topology (allowed CPUs)");
        }
        let first = allowed.first().copied().unwrap_or(0);
        let khz = |p: &str| {
            read(&cpu_dir(first, p)).and_then(|s| s.trim().parse::<f64>().ok()).map(|k| k / 1e3)
        };
        let max_mhz = khz("cpufreq/cpuinfo_max_freq");
        let base_mhz = khz("cpufreq/base_frequency");
        if max_mhz.is_some() {
            src("max_mhz: cpufreq cpuinfo_max_freq");
        }
        if base_mhz.is_some() {
            src("base_mhz: cpufreq base_frequency");
        }
        let base_mhz = base_mhz.or_else(|| {
            let ghz = ghz_in_name(&model_name)?;
            src("base_mhz: the model name's \"@ x.xxGHz\"");
            Some(ghz * 1e3)
        });

        // Caches of the first allowed CPU; L3 instances by distinct shared_cpu_list.
        let (mut l1d, mut l2, mut l3) = (None, None, None);
        for i in 0..8 {
            let idx = |f: &str| read(&cpu_dir(first, &format!("cache/index{i}/{f}")));
            let (Some(level), Some(kind), Some(size)) = (idx("level"), idx("type"), idx("size"))
            else {
                continue;
            };
            let size = parse_size(size.trim());
            match (level.trim(), kind.trim()) {
                ("1", "Data") => l1d = size,
                ("2", "Data" | "Unified") => l2 = size,
                ("3", "Data" | "Unified") => l3 = size,
                _ => {}
            }
        }
        let l3_lists: BTreeSet<String> = allowed
            .iter()
            .filter_map(|&c| {
                (0..8).find_map(|i| {
                    let level = read(&cpu_dir(c, &format!("cache/index{i}/level")))?;
                    (level.trim() == "3")
                        .then(|| read(&cpu_dir(c, &format!("cache/index{i}/shared_cpu_list"))))
                        .flatten()
                        .map(|s| s.trim().to_string())
                })
            })
            .collect();
        let l3_instances = (l3.is_some() && !l3_lists.is_empty()).then_some(l3_lists.len() as u32);
        if l1d.is_some() || l2.is_some() || l3.is_some() {
            src("caches: /sys/devices/system/cpu/cpuN/cache/index*");
        }

        let uarch = match (family, model) {
            (Some(f), Some(m)) => lookup_uarch(&vendor, f, m, &model_name),
            _ => None,
        };
        if let Some(u) = uarch {
            src(&format!("fma_units, fma_width_bits: {} ({})", u.name, u.source));
        }
        let HostMemory { total_bytes: mem_total_bytes, available_bytes: mem_available_bytes } =
            HostMemory::read(root);
        if mem_total_bytes.is_some() {
            src("memory: /proc/meminfo");
        }
        CpuInfo {
            model_name,
            vendor,
            logical_cpus: (allowed.len() as u32).max(1),
            physical_cores,
            base_mhz,
            max_mhz,
            reported_mhz: field("cpu MHz").and_then(|s| s.parse().ok()),
            measured_mhz: None,
            simd: "scalar".to_string(),
            fp32_lanes: 1,
            kernel_isa: kernel_isa().to_string(),
            cpu_family: family,
            cpu_model: model,
            uarch: uarch.map(|u| u.name.to_string()),
            fma_units: uarch.map(|u| u.fma_units),
            fma_width_bits: uarch.map(|u| u.fma_width_bits),
            fma_source: uarch.map(|u| u.source.to_string()),
            l1d_bytes: l1d,
            l2_bytes: l2,
            l3_bytes: l3,
            l3_instances,
            mem_total_bytes,
            mem_available_bytes,
            sources,
        }
    }

    fn detect_simd(&mut self) {
        let (simd, lanes) = detect_simd();
        self.simd = simd.to_string();
        self.fp32_lanes = lanes;
        self.sources.push("simd: is_x86_feature_detected! (NEON is baseline on aarch64)".into());
    }

    /// `AMD EPYC 9R14 (2 threads)`.
    pub fn display_name(&self) -> String {
        format!("{} ({} threads)", self.model_name, self.logical_cpus)
    }

    /// Cores whose FMA pipes the kernels use: physical cores among the allowed CPUs,
    /// at most the allowed thread count.
    pub fn cores_used(&self) -> u32 {
        self.physical_cores.map_or(self.logical_cpus, |p| p.min(self.logical_cpus)).max(1)
    }

    /// The clock for theoretical peaks: cpufreq's maximum, else the measured clock, else
    /// the base clock (cpufreq or the model name; below the boost clock, so the peak it
    /// gives is a lower bound of the real one).
    pub fn clock(&self) -> Option<Clock> {
        if let Some(mhz) = self.max_mhz {
            return Some(Clock { mhz, source: "cpufreq cpuinfo_max_freq" });
        }
        if let Some(mhz) = self.measured_mhz {
            return Some(Clock { mhz, source: "measured: dependent integer chain" });
        }
        self.base_mhz.map(|mhz| Clock { mhz, source: "base clock, not boost" })
    }

    /// The theoretical peak of `precision` (fp32 or fp64) for vector or scalar FMAs.
    pub fn theoretical_peak(&self, precision: Precision, scalar: bool) -> Option<TheoreticalPeak> {
        let bits = match precision {
            Precision::Fp32 => 32,
            Precision::Fp64 => 64,
            _ => return None,
        };
        let (units, width) = (self.fma_units?, self.fma_width_bits?);
        let clock = self.clock()?;
        let cores = self.cores_used();
        let ghz = clock.mhz / 1e3;
        let uarch = self.uarch.as_deref().unwrap_or("?");
        let (lanes, lanes_text) = if scalar {
            (units, format!("{units} lanes (1 per FMA pipe, {uarch})"))
        } else {
            let l = units * width / bits;
            (l, format!("{l} lanes ({units} FMA pipes x {width} bit / {bits}, {uarch})"))
        };
        let gflops = f64::from(cores) * ghz * f64::from(lanes) * 2.0;
        Some(TheoreticalPeak {
            precision,
            variant: if scalar { "scalar" } else { "vector" },
            gflops,
            formula: format!(
                "{cores} cores x {ghz:.2} GHz ({}) x {lanes_text} x 2 FLOP = {gflops:.1} GFLOP/s",
                clock.source
            ),
        })
    }

    /// Capacities that bound each memory level for a kernel running on all the cores we
    /// use: L1d and L2 per core times cores, the L3 per instance times instances. Sorted
    /// from L1 out.
    pub fn cache_levels(&self) -> Vec<(MemLevel, u64)> {
        let cores = u64::from(self.cores_used());
        let mut v = Vec::new();
        if let Some(b) = self.l1d_bytes {
            v.push((MemLevel::L1, b * cores));
        }
        if let Some(b) = self.l2_bytes {
            v.push((MemLevel::L2, b * cores));
        }
        if let Some(b) = self.l3_bytes {
            v.push((MemLevel::Llc, b * u64::from(self.l3_instances.unwrap_or(1))));
        }
        v
    }

    /// A device spec of this CPU (docs/device-format.md, `vendor = "cpu"`), for the
    /// roofline analysis of CPU results: [`CpuInfo::device_entry`], checked.
    ///
    /// # Errors
    /// No DRAM bandwidth or no compute peak ([`CpuInfo::device_entry`]).
    pub fn device_spec(&self, ceilings: Option<&Ceilings>) -> Result<DeviceSpec, CpuSpecError> {
        let entry = self.device_entry(ceilings)?;
        Catalog::builtin()
            .resolve_entry(entry, "<local CPU>")
            .map_err(|e| CpuSpecError::Invalid(e.to_string()))
    }

    /// The device-file entry behind [`CpuInfo::device_spec`]. Counts, clock and sizes
    /// come from the OS (provenance `driver`; a measured clock `measured`). Peaks: the
    /// theoretical FMA peaks (`datasheet`: the FMA pipes of the micro-architecture table
    /// times the cores and clock, the formula as source); where those are unknown, the
    /// measured FMA ceilings (`calibrated`). DRAM bandwidth: CPUs do not report a
    /// theoretical one, so it is the best measured DRAM ceiling (`calibrated`); without
    /// ceilings this is an error, never a placeholder. LLC/L2/L1 bandwidths come from the
    /// ceilings where measured.
    ///
    /// # Errors
    /// No measured DRAM bandwidth, or neither a theoretical nor a measured FMA peak.
    pub fn device_entry(&self, ceilings: Option<&Ceilings>) -> Result<DeviceEntry, CpuSpecError> {
        let method = ceilings.map_or("", |c| c.method.as_str());
        let dram = ceilings
            .and_then(|c| best_bandwidth(c, MemLevel::Dram))
            .ok_or(CpuSpecError::NoDramBandwidth)?;
        let source = format!(
            "measured by rooftop ceilings ({method}): {} at {} bytes",
            dram.pattern.as_str(),
            dram.working_set_bytes
        );
        self.entry_with(ceilings, calibrated(dram.gbs, source))
    }

    /// This CPU's compute peaks with no memory roof, for a run of compute-side cases only
    /// (`bench --no-ceilings --kernel gemm`): CPUs report no DRAM bandwidth, and such a
    /// run needs none. The DRAM bandwidth is infinite (no memory floor: the floor is the
    /// compute floor alone) and its figure says why. `None` when the CPU has no known
    /// compute peak either.
    pub fn compute_only_spec(&self) -> Option<DeviceSpec> {
        // The device format needs a finite bandwidth; the resolved spec's is replaced below.
        let entry = self.entry_with(None, Figure::new(1.0).with_source("not measured")).ok()?;
        let mut d = Catalog::builtin().resolve_entry(entry, "<local CPU>").ok()?;
        d.peak_bw_gbs = f64::INFINITY;
        if let Some(m) = d.figure_meta.get_mut("memory.bandwidth_gbs") {
            m.source = "not measured (--no-ceilings; CPUs do not report it): no memory roof, \
                        the floor is the compute floor"
                .to_string();
            m.confidence = rooftop_core::units::Confidence::Low;
        }
        Some(d)
    }

    /// The device-file entry with `dram` as its DRAM bandwidth.
    fn entry_with(
        &self,
        ceilings: Option<&Ceilings>,
        dram: Figure,
    ) -> Result<DeviceEntry, CpuSpecError> {
        let method = ceilings.map_or("", |c| c.method.as_str());
        let cores = self.cores_used();
        let mut e = DeviceEntry::new(&format!("cpu-{}", slug(&self.model_name)));
        e.name = Some(unplaced(format!("{} ({cores} cores)", self.model_name)));
        e.aliases = Some(vec![self.model_name.clone()]);
        e.vendor = Some(unplaced("cpu".to_string()));
        e.family = Some(unplaced("cpu".to_string()));
        e.arch.clone_from(&self.uarch);
        e.set_defaults(
            "this machine's CPU reports (/proc/cpuinfo, sysfs, CPUID)",
            Confidence::Medium,
            Provenance::Driver,
        );
        for p in [Precision::Fp32, Precision::Fp64] {
            let key = format!("{}_vector", p.as_str());
            if let Some(t) = self.theoretical_peak(p, false) {
                let f = Figure::new(t.gflops / 1e3)
                    .with_source(t.formula)
                    .with_provenance(Provenance::Datasheet);
                e.set_peak(&key, f);
            } else if let Some(g) = ceilings.and_then(|c| c.vector_gflops(p)) {
                let source =
                    format!("measured by rooftop ceilings ({method}): {} vector FMA", p.as_str());
                e.set_peak(&key, calibrated(g / 1e3, source));
            }
        }
        if e.peak_tflops.is_none() {
            let reason = if self.fma_units.is_none() {
                format!(
                    "its FMA units are unknown (micro-architecture not in rooftop's table: {} \
                     family {:?} model {:?})",
                    self.vendor, self.cpu_family, self.cpu_model
                )
            } else {
                "its clock is unknown".to_string()
            };
            return Err(CpuSpecError::NoPeak { model: self.model_name.clone(), reason });
        }
        let compute = e.compute_mut();
        compute.num_cu = Some(unplaced(Figure::new(f64::from(cores))));
        compute.cu_kind = Some("core".to_string());
        compute.warp_size = Some(unplaced(Figure::new(1.0)));
        compute.boost_clock_mhz = self.clock().map(|clock| {
            let f = Figure::new(clock.mhz).with_source(clock.source);
            unplaced(if self.max_mhz.is_none() && self.measured_mhz.is_some() {
                f.with_provenance(Provenance::Measured)
            } else {
                f
            })
        });
        let mem = e.memory_mut();
        mem.size_gb = self.mem_total_bytes.map(|b| unplaced(Figure::new(b as f64 / 1e9)));
        mem.bandwidth_gbs = Some(unplaced(dram));
        for (level, bytes) in self.cache_levels() {
            let kib = Some(unplaced(Figure::new(bytes as f64 / 1024.0)));
            match level {
                MemLevel::L2 => mem.l2_kib = kib,
                MemLevel::Llc => mem.llc_kib = kib,
                _ => {}
            }
        }
        for level in [MemLevel::Llc, MemLevel::L2, MemLevel::L1] {
            let Some(b) = ceilings.and_then(|c| best_bandwidth(c, level)) else { continue };
            let source = format!(
                "measured by rooftop ceilings: {} at {} bytes",
                b.pattern.as_str(),
                b.working_set_bytes
            );
            let f = Some(unplaced(calibrated(b.gbs, source)));
            match level {
                MemLevel::Llc => mem.llc_bandwidth_gbs = f,
                MemLevel::L2 => mem.l2_bandwidth_gbs = f,
                _ => mem.l1_bandwidth_gbs = f,
            }
        }
        Ok(e)
    }
}

/// A figure measured by `rooftop ceilings` on this machine.
fn calibrated(value: f64, source: String) -> Figure {
    Figure::new(value).with_source(source).with_provenance(Provenance::Calibrated)
}

/// The `2.50` of `Intel(R) Xeon(R) Platinum 8175M CPU @ 2.50GHz`.
fn ghz_in_name(name: &str) -> Option<f64> {
    let rest = name.rsplit_once('@')?.1.trim();
    let ghz: f64 = rest.strip_suffix("GHz")?.trim().parse().ok()?;
    (ghz > 0.1 && ghz < 10.0).then_some(ghz)
}

/// `0x41` or `65`.
fn parse_int(s: &str) -> Option<u32> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Host memory as `/proc/meminfo` gives it (Linux; `None` elsewhere): the one reader of
/// that file, for the CPU's description and for every backend whose buffers live in host
/// memory (CPU, mock, software GPU adapters, Rust closures).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostMemory {
    /// `MemTotal`, bytes.
    pub total_bytes: Option<u64>,
    /// `MemAvailable` (what can be allocated without swapping), bytes.
    pub available_bytes: Option<u64>,
}

impl HostMemory {
    /// `proc/meminfo` under `root` (`/` for this machine, a fixture directory in tests).
    pub fn read(root: &Path) -> HostMemory {
        let text = std::fs::read_to_string(root.join("proc/meminfo")).unwrap_or_default();
        HostMemory {
            total_bytes: meminfo_bytes(&text, "MemTotal"),
            available_bytes: meminfo_bytes(&text, "MemAvailable"),
        }
    }

    /// This machine's memory now.
    pub fn now() -> HostMemory {
        HostMemory::read(Path::new("/"))
    }
}

/// A `/proc/meminfo` field (`MemAvailable`, in kB there) in bytes.
pub fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|k| k * 1024)
    })
}

/// A kernel CPU list (`0-3,8,10-11`); malformed parts are skipped.
pub fn parse_cpu_list(s: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    if b >= a && b - a < 1 << 16 {
                        v.extend(a..=b);
                    }
                }
            }
            None => v.extend(part.parse::<u32>().ok()),
        }
    }
    v
}

/// A sysfs cache size (`32K`, `1024K`, `32M`, `512`), bytes.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().and_then(|n| n.checked_mul(mult))
}

/// The ISA of rooftop's FMA probe and vectorised kernels: the widest level of
/// `cpu::simd` (`avx512`, `avx2+fma`, or `portable`).
fn kernel_isa() -> &'static str {
    match crate::cpu::simd::Level::detect() {
        crate::cpu::simd::Level::Avx512 => "avx512",
        crate::cpu::simd::Level::Avx2 => "avx2+fma",
        crate::cpu::simd::Level::Base => "portable",
    }
}

/// The widest vector ISA and its f32 lanes.
fn detect_simd() -> (&'static str, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected;
        if is_x86_feature_detected!("avx512f") {
            return ("avx512", 16);
        }
        if is_x86_feature_detected!("avx2") {
            return ("avx2", 8);
        }
        if is_x86_feature_detected!("avx") {
            return ("avx", 8);
        }
        ("sse2", 4)
    }
    #[cfg(target_arch = "aarch64")]
    {
        ("neon", 4)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        ("scalar", 1)
    }
}

/// The clock of the core this thread runs on, MHz: a chain of dependent `xor` and `add`
/// (one cycle of latency each on every x86-64 and Arm core; the loop counter runs on
/// other ALUs in parallel), 2 cycles per step, timed with `Instant`. The best of many
/// short runs (~0.3 ms each, at most ~60 ms in all): preemption or a busy sibling
/// thread only ever makes a run slower, and on a busy machine some short run still
/// gets the core to itself.
pub fn measure_clock_mhz() -> Option<f64> {
    const STEPS: u64 = 500_000;
    let mut best = f64::INFINITY;
    let budget = Instant::now();
    for _ in 0..200 {
        let (y, z) = (std::hint::black_box(0x9E37_79B9_7F4A_7C15u64), std::hint::black_box(3u64));
        let steps = std::hint::black_box(STEPS);
        let start = Instant::now();
        let mut x = std::hint::black_box(1u64);
        for _ in 0..steps {
            x = (x ^ y).wrapping_add(z);
        }
        std::hint::black_box(x);
        best = best.min(start.elapsed().as_secs_f64());
        if budget.elapsed().as_secs_f64() > 0.06 {
            break;
        }
    }
    let mhz = 2.0 * STEPS as f64 / best / 1e6;
    (mhz.is_finite() && mhz > 100.0 && mhz < 10_000.0).then_some(mhz)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceilings::{BandwidthCeiling, Pattern};

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A fixture machine: a 2-vCPU Zen 4 VM as this project's CI runs on (no cpufreq), in a
    /// scratch directory removed when the returned guard drops (bind it to a name, not `_`).
    fn fixture(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp =
            tempfile::Builder::new().prefix(&format!("rooftop-cpuinfo-{name}-")).tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let cpu = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\
                   model name\t: AMD EPYC 9R14\ncpu MHz\t\t: 2596.152\n\n\
                   processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n";
        write(&root, "proc/cpuinfo", cpu);
        write(&root, "proc/meminfo", "MemTotal:       24684092 kB\nMemAvailable:   24299840 kB\n");
        write(&root, "proc/self/status", "Name:\tx\nCpus_allowed_list:\t0-1\n");
        for c in 0..2 {
            let d = format!("sys/devices/system/cpu/cpu{c}");
            write(&root, &format!("{d}/topology/physical_package_id"), "0\n");
            write(&root, &format!("{d}/topology/core_id"), &format!("{c}\n"));
            for (i, (level, kind, size, shared)) in [
                ("1", "Data", "32K", format!("{c}")),
                ("1", "Instruction", "32K", format!("{c}")),
                ("2", "Unified", "1024K", format!("{c}")),
                ("3", "Unified", "32768K", "0-1".to_string()),
            ]
            .into_iter()
            .enumerate()
            {
                write(&root, &format!("{d}/cache/index{i}/level"), level);
                write(&root, &format!("{d}/cache/index{i}/type"), kind);
                write(&root, &format!("{d}/cache/index{i}/size"), size);
                write(&root, &format!("{d}/cache/index{i}/shared_cpu_list"), &shared);
            }
        }
        (tmp, root)
    }

    #[test]
    fn reads_a_zen4_vm_from_files() {
        let (_root_guard, root) = fixture("zen4");
        let info = CpuInfo::from_files(&root);
        assert_eq!(info.model_name, "AMD EPYC 9R14");
        assert_eq!(info.vendor, "AuthenticAMD");
        assert_eq!((info.cpu_family, info.cpu_model), (Some(25), Some(17)));
        assert_eq!(info.logical_cpus, 2);
        assert_eq!(info.physical_cores, Some(2));
        assert_eq!(info.uarch.as_deref(), Some("Zen 4"));
        assert_eq!((info.fma_units, info.fma_width_bits), (Some(2), Some(256)));
        assert_eq!(info.l1d_bytes, Some(32 << 10));
        assert_eq!(info.l2_bytes, Some(1 << 20));
        assert_eq!(info.l3_bytes, Some(32 << 20));
        assert_eq!(info.l3_instances, Some(1));
        assert_eq!(info.max_mhz, None);
        assert_eq!(info.reported_mhz, Some(2596.152));
        assert_eq!(info.mem_total_bytes, Some(24_684_092 * 1024));
        assert_eq!(
            info.cache_levels(),
            vec![(MemLevel::L1, 64 << 10), (MemLevel::L2, 2 << 20), (MemLevel::Llc, 32 << 20)]
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    /// `bench --no-ceilings --kernel gemm`: the peaks of the CPU's reports, no memory
    /// roof (2 cores x 3.7 GHz x 16 lanes x 2 = 236.8 GFLOP/s fp32, as below).
    #[test]
    fn compute_only_spec_has_the_peaks_and_no_memory_roof() {
        let (root_guard, root) = fixture("compute-only");
        let mut info = CpuInfo::from_files(&root);
        drop(root_guard);
        assert!(info.compute_only_spec().is_none(), "no clock: no peak, no spec");
        info.measured_mhz = Some(3700.0);
        let d = info.compute_only_spec().unwrap();
        assert!(d.peak_bw_gbs.is_infinite());
        assert!(d.figure("memory.bandwidth_gbs").source.contains("not measured"));
        let p = d.peak(Precision::Fp32, rooftop_core::units::ExecUnit::Vector).unwrap();
        assert!((p.tflops - 0.2368).abs() < 1e-12, "{p:?}");
        // With a DRAM ceiling the full spec still needs one.
        assert_eq!(info.device_spec(None).unwrap_err(), CpuSpecError::NoDramBandwidth);
    }

    #[test]
    fn theoretical_peak_by_hand() {
        let (root_guard, root) = fixture("peak");
        let mut info = CpuInfo::from_files(&root);
        drop(root_guard);
        assert!(info.theoretical_peak(Precision::Fp32, false).is_none(), "no clock yet");
        info.measured_mhz = Some(3700.0);
        // 2 cores x 3.7 GHz x (2 x 256/32 = 16 lanes) x 2 = 236.8 GFLOP/s.
        let p = info.theoretical_peak(Precision::Fp32, false).unwrap();
        assert!((p.gflops - 236.8).abs() < 1e-9, "{p:?}");
        assert!(p.formula.contains("2 cores x 3.70 GHz"), "{}", p.formula);
        let p = info.theoretical_peak(Precision::Fp64, false).unwrap();
        assert!((p.gflops - 118.4).abs() < 1e-9);
        // Scalar: 2 cores x 3.7 x 2 pipes x 2 = 29.6.
        let p = info.theoretical_peak(Precision::Fp32, true).unwrap();
        assert!((p.gflops - 29.6).abs() < 1e-9);
        // cpufreq's maximum wins over a measurement.
        info.max_mhz = Some(4000.0);
        let p = info.theoretical_peak(Precision::Fp32, false).unwrap();
        assert!((p.gflops - 256.0).abs() < 1e-9);
        assert!(info.theoretical_peak(Precision::Fp16, false).is_none());
    }

    #[test]
    fn uarch_table_rows() {
        let zen4 = lookup_uarch("AuthenticAMD", 0x19, 0x11, "AMD EPYC 9R14").unwrap();
        assert_eq!(zen4.name, "Zen 4");
        assert_eq!(lookup_uarch("AuthenticAMD", 0x19, 0x21, "").unwrap().name, "Zen 3");
        assert_eq!(lookup_uarch("AuthenticAMD", 0x17, 0x31, "").unwrap().fma_width_bits, 256);
        assert_eq!(lookup_uarch("AuthenticAMD", 0x17, 0x01, "").unwrap().fma_width_bits, 128);
        let skx = |n: &str| lookup_uarch("GenuineIntel", 6, 0x55, n).map(|u| u.fma_units);
        assert_eq!(skx("Intel(R) Xeon(R) Platinum 8175M CPU"), Some(2));
        assert_eq!(skx("Intel(R) Xeon(R) Silver 4114 CPU"), Some(1));
        assert_eq!(skx("Intel(R) Xeon(R) Gold 5120 CPU"), None, "SKU-dependent: unknown");
        // Hybrid Alder Lake (model 0x97) is unknown on purpose.
        assert!(
            lookup_uarch("GenuineIntel", 6, 0x97, "12th Gen Intel(R) Core(TM) i9-12900K").is_none()
        );
        assert_eq!(lookup_uarch("arm:0x41", 0, 0xD40, "").unwrap().name, "Neoverse V1");
        for u in UARCH_TABLE {
            assert!(u.models.0 <= u.models.1 && u.fma_units >= 1 && !u.source.is_empty());
        }
    }

    #[test]
    fn parsers_handle_odd_input() {
        assert_eq!(parse_cpu_list("0-3,8,10-11"), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list(" 5 "), vec![5]);
        assert_eq!(parse_cpu_list("3-1,x,2-"), Vec::<u32>::new());
        assert_eq!(parse_size("32K"), Some(32768));
        assert_eq!(parse_size("1M"), Some(1 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_int("0xd0c"), Some(0xD0C));
        assert_eq!(ghz_in_name("Intel(R) Xeon(R) Platinum 8175M CPU @ 2.50GHz"), Some(2.5));
        assert_eq!(ghz_in_name("AMD EPYC 9R14 96-Core Processor"), None);
    }

    #[test]
    fn missing_files_give_unknowns_not_panics() {
        // A root that does not exist: a name inside an empty scratch directory.
        let tmp = tempfile::Builder::new().prefix("rooftop-cpuinfo-empty-").tempdir().unwrap();
        let info = CpuInfo::from_files(&tmp.path().join("none"));
        assert_eq!(info.model_name, "unknown CPU");
        assert_eq!(info.logical_cpus, 1);
        assert!(info.fma_units.is_none() && info.l3_bytes.is_none());
        assert!(matches!(info.device_spec(None), Err(CpuSpecError::NoDramBandwidth)));
    }

    fn ceilings_with_dram(gbs: f64) -> Ceilings {
        Ceilings {
            backend: "cpu".into(),
            device_name: "x".into(),
            method: "quick".into(),
            parallelism: 2,
            bandwidth: vec![BandwidthCeiling {
                level: MemLevel::Dram,
                pattern: Pattern::Triad,
                gbs,
                working_set_bytes: 128 << 20,
            }],
            sweep: Vec::new(),
            compute: Vec::new(),
            notes: Vec::new(),
            caches: Vec::new(),
            adjustments: Vec::new(),
        }
    }

    #[test]
    fn device_spec_needs_dram_and_uses_the_formula() {
        let (root_guard, root) = fixture("spec");
        let mut info = CpuInfo::from_files(&root);
        drop(root_guard);
        info.measured_mhz = Some(3700.0);
        assert_eq!(info.device_spec(None), Err(CpuSpecError::NoDramBandwidth));
        let d = info.device_spec(Some(&ceilings_with_dram(41.5))).unwrap();
        assert_eq!(d.vendor, rooftop_core::device::Vendor::Cpu);
        assert_eq!(d.num_cu, 2);
        assert_eq!(d.peak_bw_gbs, 41.5);
        assert_eq!(
            d.figure("memory.bandwidth_gbs").provenance,
            rooftop_core::units::Provenance::Calibrated
        );
        let p = d.peak(Precision::Fp32, rooftop_core::units::ExecUnit::Vector).unwrap();
        assert!((p.tflops - 0.2368).abs() < 1e-12);
        assert!(p.meta.source.contains("16 lanes"), "{}", p.meta.source);
        // The OS's figures are `driver`, the FMA peak `datasheet`, the clock measured.
        assert_eq!(p.meta.provenance, Provenance::Datasheet);
        assert_eq!(d.figure("compute.num_cu").provenance, Provenance::Driver);
        assert_eq!(d.figure("memory.llc_mib").provenance, Provenance::Driver);
        assert_eq!(d.figure("compute.boost_clock_mhz").provenance, Provenance::Measured);
        assert_eq!(d.llc_bytes, Some(32 << 20));
        assert_eq!(d.l2_bytes, Some(2 << 20));
        // Unknown FMA units and no measured peak: an error, not a guess.
        info.fma_units = None;
        assert!(matches!(
            info.device_spec(Some(&ceilings_with_dram(41.5))),
            Err(CpuSpecError::NoPeak { .. })
        ));
    }

    #[test]
    fn detect_on_this_machine_never_panics() {
        let info = CpuInfo::detect();
        assert!(info.logical_cpus >= 1);
        assert!(info.fp32_lanes >= 1);
        if let Some(c) = info.clock() {
            assert!(c.mhz > 100.0);
        }
    }
}
