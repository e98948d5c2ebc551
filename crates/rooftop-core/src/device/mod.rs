//! Device specifications: the peaks, memory system and per-SM/CU resource limits the
//! analysis needs, each figure with its source, confidence and provenance.
//!
//! The catalog is TOML of our own format (`data/devices.toml` and `data/catalog/*.toml`,
//! embedded in the binary and documented in `docs/device-format.md`); user device files in the same format
//! add devices or override catalog entries. `rooftop ceilings` writes that format too,
//! with `provenance = "calibrated"`.
//!
//! Invariants of a [`DeviceSpec`] that the rest of the core relies on:
//! - `peak_bw_gbs > 0` and finite; every peak in `peaks` is `> 0` and finite (dense, no
//!   2:4 sparsity);
//! - `num_cu > 0`, `warp_size > 0`;
//! - at most one entry per `(precision, unit)` in `peaks` and in `achievable`.

mod catalog;
#[cfg(test)]
mod catalog_checks;
mod file;
#[cfg(test)]
mod hostile_tests;
mod lookup;
mod resolve;
mod write;

pub use catalog::{parse_device_file, Catalog, DeviceFileError};
pub use file::{
    unplaced, ComputeSection, DeviceEntry, DeviceFile, Figure, FigureMap, LimitsSection,
    MemorySection,
};
pub use lookup::LookupError;
pub(crate) use resolve::memory_fits;
pub use resolve::{
    identify, lookup_with_facts, resolve_named, unknown_note, DeviceFacts, Identified,
    ProfileFacts, Resolved,
};

// A profile's device that the catalog lacks is never replaced by a sibling: see
// `resolve` (used by `rooftop counters`).

use crate::units::{Confidence, ExecUnit, Precision, Provenance};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The vendor of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Nvidia,
    Amd,
    Apple,
    Intel,
    Cpu,
    Other,
}

impl std::str::FromStr for Vendor {
    type Err = String;

    /// A vendor by its lowercase or capitalised name: nvidia, amd, apple, intel, cpu.
    fn from_str(v: &str) -> Result<Vendor, String> {
        match v.to_ascii_lowercase().as_str() {
            "nvidia" => Ok(Vendor::Nvidia),
            "amd" => Ok(Vendor::Amd),
            "apple" => Ok(Vendor::Apple),
            "intel" => Ok(Vendor::Intel),
            "cpu" => Ok(Vendor::Cpu),
            _ => Err(format!("unknown vendor `{v}`: expected nvidia, amd, apple, intel or cpu")),
        }
    }
}

impl Vendor {
    /// The vendor's key, as device files, `--vendor` and JSON spell it (`nvidia`, `amd`,
    /// ...: its serde name).
    pub fn key(self) -> &'static str {
        match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Amd => "amd",
            Vendor::Apple => "apple",
            Vendor::Intel => "intel",
            Vendor::Cpu => "cpu",
            Vendor::Other => "other",
        }
    }

    /// The vendor's display name (`NVIDIA`, `AMD`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Vendor::Nvidia => "NVIDIA",
            Vendor::Amd => "AMD",
            Vendor::Apple => "Apple",
            Vendor::Intel => "Intel",
            Vendor::Cpu => "CPU",
            Vendor::Other => "other",
        }
    }
}

/// The architecture family, which selects the occupancy rules
/// (docs/reference/occupancy.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArchFamily {
    /// NVIDIA, by compute capability (major, minor).
    NvidiaCc { major: u32, minor: u32 },
    /// AMD CDNA1 (gfx908): separate arch and accumulation VGPR files.
    Cdna1,
    /// AMD CDNA2 (gfx90a): unified 512-entry VGPR file.
    Cdna2,
    /// AMD CDNA3 (gfx940-942).
    Cdna3,
    /// AMD CDNA4 (gfx950): 160 KiB LDS.
    Cdna4,
    /// AMD RDNA3 (gfx110x) with the 1.5x VGPR file.
    Rdna3,
    /// Apple7/Apple8 GPU families (M1, M2): per-core limits measured by third parties.
    Apple78,
    /// Apple9 (M3, M4): Dynamic Caching; no occupancy model.
    Apple9,
    /// Intel Xe-HPC / Xe-HPG.
    IntelXe,
    /// A CPU.
    Cpu,
    /// Anything else (user devices without a family).
    Unknown,
}

/// Source, confidence and provenance of one figure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct FigureMeta {
    /// What was read to get the number (a public document with its address, as the
    /// catalog's `source` fields give it, or "measured by rooftop ceilings on `<date>`").
    pub source: String,
    pub confidence: Confidence,
    pub provenance: Provenance,
}

impl<'de> Deserialize<'de> for FigureMeta {
    /// Its three fields, or, inside the embedded catalog only, the index of a figure
    /// source in the catalog's table of them (`catalog::shared_meta`): its 1,536
    /// figures have 175 distinct sources, and writing each out where it is used made
    /// two thirds of the text to parse at every start.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename = "FigureMeta")]
        struct Fields {
            source: String,
            confidence: Confidence,
            provenance: Provenance,
        }
        struct Written;
        impl<'de> serde::de::Visitor<'de> for Written {
            type Value = FigureMeta;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a figure's source, confidence and provenance")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<FigureMeta, A::Error> {
                let d = serde::de::value::MapAccessDeserializer::new(map);
                let Fields { source, confidence, provenance } = Fields::deserialize(d)?;
                Ok(FigureMeta { source, confidence, provenance })
            }
            fn visit_u64<E: serde::de::Error>(self, i: u64) -> Result<FigureMeta, E> {
                u32::try_from(i).ok().and_then(catalog::shared_meta).ok_or_else(|| {
                    E::custom(format!("figure source {i} is not in the embedded catalog's table"))
                })
            }
        }
        d.deserialize_any(Written)
    }
}

/// One compute roof: a dense peak rate for one precision on one unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakRate {
    pub precision: Precision,
    pub unit: ExecUnit,
    /// Dense peak in TFLOP/s (TOP/s for integer precisions).
    pub tflops: f64,
    pub meta: FigureMeta,
}

/// A memory level that can carry a bandwidth roof.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum MemLevel {
    /// Device memory (HBM, GDDR, LPDDR, DRAM).
    Dram,
    /// Last-level cache (Infinity Cache / MALL, Apple SLC, CPU L3).
    Llc,
    L2,
    /// L1 / shared memory / LDS.
    L1,
    /// AMD LDS / NVIDIA shared memory, when a profiler counts it apart from L1
    /// (rocprof-compute's `LDSBw` roof, shared-memory bytes).
    Lds,
}

impl MemLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            MemLevel::Dram => "dram",
            MemLevel::Llc => "llc",
            MemLevel::L2 => "l2",
            MemLevel::L1 => "l1",
            MemLevel::Lds => "lds",
        }
    }
}

/// One bandwidth roof.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthRoof {
    pub level: MemLevel,
    /// Decimal GB/s (1e9 B/s).
    pub gbs: f64,
    pub meta: FigureMeta,
}

/// Per-SM/CU/core resource limits used by the occupancy calculators. Absent means "not
/// published" (the calculator then says which input it lacked).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ResourceLimits {
    pub smem_bytes_per_cu: Option<u64>,
    /// RDNA: LDS per WGP in WGP mode.
    pub smem_bytes_per_wgp: Option<u64>,
    pub smem_bytes_per_block_max: Option<u64>,
    /// NVIDIA: the default per-block limit without the opt-in attribute (48 KiB).
    pub smem_bytes_per_block_default: Option<u64>,
    pub smem_alloc_granularity_bytes: Option<u64>,
    /// NVIDIA CC >= 8.0: 1 KiB the driver reserves per resident block.
    pub smem_reserved_per_block_bytes: Option<u64>,
    pub max_threads_per_block: Option<u32>,
    pub max_threads_per_cu: Option<u32>,
    pub regs_32bit_per_cu: Option<u32>,
    pub reg_file_kib_per_cu: Option<u32>,
    pub max_regs_per_thread: Option<u32>,
    /// Resident warps / wavefronts / SIMD-groups per SM / CU / core.
    pub max_warps_per_cu: Option<u32>,
    pub max_blocks_per_cu: Option<u32>,
    pub simds_per_cu: Option<u32>,
    pub max_waves_per_simd: Option<u32>,
    pub vgpr_per_lane_per_simd: Option<u32>,
    pub agpr_per_lane_per_simd: Option<u32>,
    pub vgpr_alloc_granule: Option<u32>,
    pub sgpr_per_simd: Option<u32>,
}

/// Everything rooftop knows about one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceSpec {
    /// Short, stable id (`h100-sxm`, `mi300x`, `m4-max`).
    pub id: String,
    /// Full marketing name.
    pub name: String,
    pub vendor: Vendor,
    /// Architecture name as the vendor writes it (`Hopper`, `CDNA3`, `Apple9 (G16)`).
    pub arch: String,
    pub family: ArchFamily,
    pub chip: Option<String>,
    /// NVIDIA compute capability as written (`9.0`).
    pub compute_capability: Option<String>,
    /// AMD LLVM target (`gfx942`).
    pub llvm_target: Option<String>,
    /// Other names this device is found by (names real tools print, gfx names, ...).
    pub aliases: Vec<String>,
    /// SMs / CUs / GPU cores / Xe-cores / CPU cores.
    pub num_cu: u32,
    /// What a compute unit is called on this device (`SM`, `CU`, `GPU core`).
    pub cu_kind: String,
    /// Threads per warp / wavefront / SIMD-group (default mode).
    pub warp_size: u32,
    pub alt_warp_size: Option<u32>,
    pub boost_clock_mhz: Option<f64>,
    /// Dense datasheet peaks, one per (precision, unit).
    pub peaks: Vec<PeakRate>,
    /// Realistic ceilings (vendor "max achievable", or measured on this machine): a
    /// second set of roofs, never the default.
    pub achievable: Vec<PeakRate>,
    /// Peaks reachable only with a special issue mode, kept for advice: CDNA FP32
    /// without packed math, RDNA3 FP32 without dual issue, GeForce FP16-accumulate
    /// tensor rates.
    pub variant_peaks: Vec<(String, f64)>,
    pub mem_type: Option<String>,
    pub mem_gb: Option<f64>,
    /// Device-memory bandwidth in decimal GB/s.
    pub peak_bw_gbs: f64,
    /// Bandwidth roofs of other levels, when known (calibrated or published).
    pub bandwidths: Vec<BandwidthRoof>,
    pub l2_bytes: Option<u64>,
    pub llc_bytes: Option<u64>,
    pub limits: ResourceLimits,
    /// Precisions/features the hardware lacks natively (`fp8`, `tf32_matrix`, ...).
    pub unsupported: Vec<String>,
    /// Default meta for every figure without its own.
    pub meta: FigureMeta,
    /// Per-figure meta, keyed by the figure's name in the device file
    /// (`peak_tflops.fp16_matrix`, `memory.bandwidth_gbs`, ...).
    pub figure_meta: BTreeMap<String, FigureMeta>,
    pub note: Option<String>,
}

impl DeviceSpec {
    /// The dense peak for `precision` on `unit`, if the device has one.
    pub fn peak(&self, precision: Precision, unit: ExecUnit) -> Option<&PeakRate> {
        self.peaks.iter().find(|p| p.precision == precision && p.unit == unit)
    }

    /// The compute roof that applies to work of `precision` preferring `unit`.
    ///
    /// Fallbacks, in order, each stated by the returned [`RoofChoice::note`]:
    /// - matrix work on a device without a matrix peak for that precision runs on the
    ///   vector units (Apple's `simdgroup_matrix` is catalogued as matrix = vector);
    /// - vector FP16/BF16 without a published vector peak uses the FP32 vector peak
    ///   (conservative: packed half math is at least as fast);
    /// - TF32 matrix work on hardware without TF32 (MI355X, Volta) uses the FP32 roof.
    pub fn compute_roof(&self, precision: Precision, unit: ExecUnit) -> Option<RoofChoice<'_>> {
        if let Some(p) = self.peak(precision, unit) {
            return Some(RoofChoice { peak: p, note: None });
        }
        let fallbacks: &[(Precision, ExecUnit, &str)] = match (precision, unit) {
            (Precision::Tf32, ExecUnit::Matrix) => &[
                (Precision::Fp32, ExecUnit::Matrix, "no TF32 matrix peak: FP32 matrix roof"),
                (Precision::Fp32, ExecUnit::Vector, "no TF32 matrix peak: FP32 vector roof"),
            ],
            (Precision::Fp16 | Precision::Bf16, ExecUnit::Vector) => &[(
                Precision::Fp32,
                ExecUnit::Vector,
                "no half-precision vector peak: FP32 vector roof",
            )],
            // A device without a half-precision matrix unit (a CPU without AMX) runs half
            // GEMMs on its vector units, converting to FP32 for the FMAs where it has no
            // half-precision FMA (llama.cpp's and PyTorch's CPU kernels do).
            (Precision::Bf16, ExecUnit::Matrix) => &[
                (Precision::Fp16, ExecUnit::Matrix, "no BF16 matrix peak: FP16 matrix roof"),
                (Precision::Bf16, ExecUnit::Vector, "no BF16 matrix peak: BF16 vector roof"),
                (Precision::Fp32, ExecUnit::Vector, "no BF16 matrix peak: FP32 vector roof"),
            ],
            (Precision::Fp16, ExecUnit::Matrix) => &[
                (Precision::Fp16, ExecUnit::Vector, "no FP16 matrix peak: FP16 vector roof"),
                (Precision::Fp32, ExecUnit::Vector, "no FP16 matrix peak: FP32 vector roof"),
            ],
            (p, ExecUnit::Matrix) => {
                // Resolved below without a static table because the vector roof has the
                // same precision.
                return self
                    .peak(p, ExecUnit::Vector)
                    .map(|peak| RoofChoice { peak, note: Some("no matrix peak: vector roof") });
            }
            _ => &[],
        };
        fallbacks.iter().find_map(|(p, u, note)| {
            self.peak(*p, *u).map(|peak| RoofChoice { peak, note: Some(note) })
        })
    }

    /// The bandwidth roof of `level`; DRAM always exists.
    pub fn bandwidth(&self, level: MemLevel) -> Option<f64> {
        if level == MemLevel::Dram {
            return Some(self.peak_bw_gbs);
        }
        self.bandwidths.iter().find(|b| b.level == level).map(|b| b.gbs)
    }

    /// Meta of a named figure: its own if it has one, else the device default.
    pub fn figure(&self, key: &str) -> &FigureMeta {
        self.figure_meta.get(key).unwrap_or(&self.meta)
    }

    /// Ridge point in FLOP/byte for a compute roof against DRAM bandwidth.
    pub fn ridge_point(&self, precision: Precision, unit: ExecUnit) -> Option<f64> {
        self.compute_roof(precision, unit).map(|r| r.peak.tflops * 1e12 / (self.peak_bw_gbs * 1e9))
    }
}

/// The compute roof chosen for some work, with the reason when it is a fallback.
#[derive(Debug, Clone, Copy)]
pub struct RoofChoice<'a> {
    pub peak: &'a PeakRate,
    pub note: Option<&'static str>,
}
