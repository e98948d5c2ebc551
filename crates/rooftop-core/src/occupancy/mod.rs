//! Theoretical occupancy: how many blocks (workgroups, threadgroups) of a kernel can be
//! resident on one SM / CU / WGP / GPU core at once, what limits that number, and the
//! resulting fraction of the hardware's warp (wave, SIMD-group) slots.
//!
//! One calculator per vendor, selected by [`DeviceSpec::family`]:
//!
//! - [`nvidia`] (CC 7.0, 7.5, 8.0, 8.6, 8.9, 9.0, 10.0, 12.0): the algorithm of NVIDIA's
//!   own `cuda_occupancy.h` (CUDA 12.6 toolkit, `include/`), as restated in
//!   docs/reference/occupancy.md#nvidia: warp slots, registers allocated per
//!   warp in units of 256 over 4 sub-partitions, shared memory with the 1 KiB
//!   per-block driver reserve (CC >= 8.0) inside the granule rounding and the
//!   carveout steps, hardware block slots, and (CC >= 9.0) block barriers.
//!   CC 10.0 and 12.0 postdate that header: their per-SM figures come from the CUDA
//!   C++ Programming Guide's compute capabilities table, the allocation rules are assumed
//!   equal to CC 9.0 / 8.6, and results say `confidence: medium`.
//! - [`amd`] (CDNA1-4, RDNA3): the LLVM AMDGPU backend's rules (llvm-project
//!   `llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp`: `getMaxWavesPerEU`, `getVGPRAllocGranule`,
//!   `getTotalNumVGPRs`, `getNumWavesPerEUWithNumVGPRs`, `getOccupancyWithNumSGPRs`,
//!   `getMaxWorkGroupsPerCU`, `getLdsDwGranularity`), as restated in
//!   docs/reference/occupancy.md#amd. Occupancy is
//!   waves per SIMD over the maximum waves per SIMD, the figure rocprof-compute reports.
//! - [`apple`]: Apple7/8 (M1, M2) get a labelled *estimate* (docs/reference/occupancy.md#apple;
//!   per-core figures measured by third parties in philipturner/metal-benchmarks, not
//!   published by Apple) plus two simpler rules in circulation as labelled notes. Apple9
//!   (M3, M4) has no occupancy model (Dynamic Caching); only the documented
//!   per-threadgroup limits (Apple's Metal feature set tables) are checked.
//! - Intel, CPUs and devices without a family: [`OccupancyError::Unsupported`].
//!
//! Figures of the device (resident warps, register file, shared memory per SM, block
//! slots, ...) are read from [`DeviceSpec::limits`]; for NVIDIA, a figure the device
//! lacks falls back to the per-CC table of docs/reference/occupancy.md and the result says so
//! in `notes`.
//! Rules of the architecture (allocation granules, sub-partitions, carveout steps,
//! the SGPR wave table, barrier caps) are constants of the vendor modules, each with
//! its source.
//!
//! Invariants of a returned [`Occupancy`]: `0 <= occupancy_pct <= 100`,
//! `active_warps_per_cu <= max_warps_per_cu`, `blocks_per_cu` is the minimum of the
//! finite entries of `limits`, and `limiter` names one entry that attains it. A launch
//! that cannot run at all because its per-block register demand exceeds the register
//! file gives `blocks_per_cu == 0` (as `cudaOccupancyMaxActiveBlocksPerMultiprocessor`
//! does) with a note; inputs that break a documented per-block limit (threads, shared
//! memory, registers per thread) are [`OccupancyError::Invalid`].

pub mod amd;
pub mod apple;
pub mod nvidia;

#[cfg(test)]
mod test_devices;

use crate::device::{ArchFamily, DeviceSpec};
use crate::units::Confidence;
use serde::Serialize;

/// What a kernel uses per block / workgroup / threadgroup.
///
/// `Default` is "nothing known": fill `threads_per_block` and whatever else the source
/// (profiler, compiler output, user) reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelResources {
    pub threads_per_block: u32,
    /// Registers per thread (NVIDIA) or architectural VGPRs per lane (AMD). `None` or
    /// `Some(0)` means unknown: the register limit is not applied.
    pub regs_per_thread: Option<u32>,
    /// AMD accumulation VGPRs (AGPRs).
    pub agprs: Option<u32>,
    /// AMD scalar registers per wave, as the code object counts them (VCC,
    /// FLAT_SCRATCH and XNACK included).
    pub sgprs: Option<u32>,
    /// Static + dynamic shared memory / LDS / threadgroup memory per block, bytes.
    pub smem_bytes: u64,
    /// Wave size when the device has two modes (RDNA wave32/wave64).
    pub wave_size: Option<u32>,
}

/// Launch settings that change occupancy but that traces rarely carry. `Default` is what
/// the driver does without them; [`occupancy`] uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OccupancyOptions {
    /// NVIDIA CC >= 9.0: named block barriers the kernel uses (`None` = 1, the
    /// `__syncthreads` barrier; `Some(0)` = none).
    pub barriers_per_block: Option<u32>,
    /// NVIDIA: the preferred shared-memory carveout in percent of the maximum
    /// (`cudaFuncAttributePreferredSharedMemoryCarveout`, 0..=100). `None` = no
    /// preference: the driver uses the maximum carveout of the CC.
    pub smem_carveout_pct: Option<u32>,
    /// RDNA: the kernel was compiled for CU mode (`-mcumode`), so its workgroups share
    /// one CU (2 SIMDs, 64 KiB LDS) instead of a WGP (the HIP default).
    pub rdna_cu_mode: bool,
    /// The kernel's own block-size limit when lower than the device's: Apple
    /// `MTLComputePipelineState.maxTotalThreadsPerThreadgroup` (it shrinks with register
    /// use), CUDA `cudaFuncAttributes.maxThreadsPerBlock` (`__launch_bounds__`).
    pub kernel_max_threads_per_block: Option<u32>,
}

/// What limited the number of resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    /// Warp / wave / SIMD-group slots.
    Warps,
    /// The register file (VGPRs or SGPRs on AMD).
    Registers,
    /// Shared memory / LDS / threadgroup memory.
    SharedMemory,
    /// The hardware's maximum resident blocks per SM.
    BlockSlots,
    /// Workgroup barriers (AMD: 16 per CU / 32 per WGP; NVIDIA CC >= 9.0: named
    /// barriers).
    Barriers,
}

impl Limiter {
    /// Lower-case words for tables and notes (`shared memory`).
    pub fn as_str(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::BlockSlots => "block slots",
            Limiter::Barriers => "barriers",
        }
    }
}

impl std::fmt::Display for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The hardware unit the per-unit counts of an [`Occupancy`] refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// NVIDIA streaming multiprocessor.
    Sm,
    /// AMD compute unit (CDNA, or RDNA in CU mode).
    Cu,
    /// AMD RDNA work-group processor (2 CUs) in WGP mode, the HIP default.
    Wgp,
    /// Apple GPU core.
    Core,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Sm => "SM",
            Scope::Cu => "CU",
            Scope::Wgp => "WGP",
            Scope::Core => "GPU core",
        }
    }
}

/// Result of an occupancy calculation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occupancy {
    /// Resident blocks per [`Scope`] unit (SM, CU, WGP or core).
    pub blocks_per_cu: u32,
    /// Resident warps / waves / SIMD-groups per [`Scope`] unit.
    pub active_warps_per_cu: u32,
    pub max_warps_per_cu: u32,
    /// 0..=100. NVIDIA and Apple: active / max warps. AMD: waves per SIMD / max waves
    /// per SIMD.
    pub occupancy_pct: f64,
    pub limiter: Limiter,
    /// Each limit considered: (limiter, blocks it allows; None = unlimited).
    pub limits: Vec<(Limiter, Option<u32>)>,
    /// True for heuristic results (Apple): printed as an estimate.
    pub estimate: bool,
    pub notes: Vec<String>,
    /// What the per-unit counts are per.
    pub scope: Scope,
    /// AMD: resident waves per SIMD, the numerator of `occupancy_pct`.
    pub waves_per_simd: Option<u32>,
    /// High where the rules come from the vendor's own calculator or compiler
    /// (`cuda_occupancy.h`, LLVM's AMDGPU backend),
    /// medium where they are assumed for a newer architecture, low for estimates.
    pub confidence: Confidence,
}

/// Why occupancy could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OccupancyError {
    /// The kernel's resources break a per-block limit of the device: it cannot launch.
    #[error("{0}")]
    Invalid(String),
    /// rooftop has no occupancy rules for this device.
    #[error("{0}")]
    Unsupported(String),
}

/// Theoretical occupancy of `res` on `device`, with the driver's defaults for the
/// launch settings of [`OccupancyOptions`].
pub fn occupancy(device: &DeviceSpec, res: &KernelResources) -> Result<Occupancy, OccupancyError> {
    occupancy_with(device, res, &OccupancyOptions::default())
}

/// Theoretical occupancy of `res` on `device` with explicit launch settings.
pub fn occupancy_with(
    device: &DeviceSpec,
    res: &KernelResources,
    opts: &OccupancyOptions,
) -> Result<Occupancy, OccupancyError> {
    match device.family {
        ArchFamily::NvidiaCc { major, minor } => nvidia::occupancy(device, major, minor, res, opts),
        ArchFamily::Cdna1
        | ArchFamily::Cdna2
        | ArchFamily::Cdna3
        | ArchFamily::Cdna4
        | ArchFamily::Rdna3 => amd::occupancy(device, res, opts),
        ArchFamily::Apple78 | ArchFamily::Apple9 => apple::occupancy(device, res, opts),
        ArchFamily::IntelXe => Err(OccupancyError::Unsupported(format!(
            "occupancy is not modelled for Intel Xe GPUs ({}): the published rules are too \
             incomplete to compute it",
            device.name
        ))),
        ArchFamily::Cpu => Err(OccupancyError::Unsupported(format!(
            "occupancy does not apply to CPUs ({})",
            device.name
        ))),
        ArchFamily::Unknown => Err(OccupancyError::Unsupported(format!(
            "device `{}` has no architecture family, so its occupancy rules are unknown; set \
             `family` in its device file",
            device.id
        ))),
    }
}

/// The order in which a tie between limits is reported as *the* limiter. Warp slots come
/// first: when the block size alone caps residency, registers or shared memory that
/// would allow exactly as many blocks are not what holds the kernel back (this also
/// keeps a register file that fits every wave slot from being named). Then the
/// resources a kernel author trims.
const TIE_ORDER: [Limiter; 5] = [
    Limiter::Warps,
    Limiter::Registers,
    Limiter::SharedMemory,
    Limiter::Barriers,
    Limiter::BlockSlots,
];

/// The resident block count (the minimum finite limit), the limiter, and a note naming
/// the other limits that tie with it. `limits` must hold at least one finite entry;
/// every calculator includes the warp-slot limit, which always is.
fn resolve(limits: &[(Limiter, Option<u32>)]) -> (u32, Limiter, Option<String>) {
    let blocks = limits.iter().filter_map(|(_, l)| *l).min().unwrap_or(0);
    let binding: Vec<Limiter> =
        TIE_ORDER.iter().copied().filter(|k| limits.contains(&(*k, Some(blocks)))).collect();
    let limiter = binding.first().copied().unwrap_or(Limiter::Warps);
    let note = (binding.len() > 1).then(|| {
        let others: Vec<&str> = binding[1..].iter().map(|l| l.as_str()).collect();
        format!(
            "{} also limit{} residency to {blocks} block{}",
            others.join(" and "),
            if others.len() == 1 && !others[0].ends_with('s') { "s" } else { "" },
            if blocks == 1 { "" } else { "s" }
        )
    });
    (blocks, limiter, note)
}

/// `ceil(a / b)` for `b > 0`.
fn div_ceil(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

/// `a` rounded up to a multiple of `b` (`b > 0`).
fn round_up(a: u64, b: u64) -> u64 {
    div_ceil(a, b) * b
}

/// Bytes as `12 KiB` when a whole number of KiB, else `12345 B`.
fn fmt_bytes(b: u64) -> String {
    if b >= 1024 && b.is_multiple_of(1024) {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

/// A limit as a `u32` block count (limits never exceed the few thousand warp slots of a
/// unit, but inputs are user data, so saturate instead of truncating).
fn to_blocks(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Percentage `num / den * 100`, clamped to 0..=100 (den > 0).
fn pct(num: u64, den: u64) -> f64 {
    if den == 0 {
        return 0.0;
    }
    (num as f64 / den as f64 * 100.0).clamp(0.0, 100.0)
}

/// Rejects a block size of 0 or above the device's (or the kernel's) maximum.
fn check_threads(
    device: &DeviceSpec,
    res: &KernelResources,
    opts: &OccupancyOptions,
    device_max: u32,
    block_word: &str,
) -> Result<(), OccupancyError> {
    let t = res.threads_per_block;
    if t == 0 {
        return Err(OccupancyError::Invalid(format!(
            "threads per {block_word} must be at least 1, got 0"
        )));
    }
    if t > device_max {
        return Err(OccupancyError::Invalid(format!(
            "{t} threads per {block_word} exceed the maximum of {device_max} on {}",
            device.name
        )));
    }
    if let Some(k) = opts.kernel_max_threads_per_block.filter(|k| *k > 0) {
        if t > k {
            return Err(OccupancyError::Invalid(format!(
                "{t} threads per {block_word} exceed this kernel's own maximum of {k} (its \
                 register use or launch bounds)"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
// Tests state their expectation with unwrap: a failure is the test's message.
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn resolve_breaks_ties_in_order_and_notes_the_others() {
        let limits = [
            (Limiter::Warps, Some(5)),
            (Limiter::Registers, Some(1)),
            (Limiter::SharedMemory, Some(1)),
            (Limiter::BlockSlots, Some(32)),
        ];
        let (blocks, limiter, note) = resolve(&limits);
        assert_eq!(blocks, 1);
        assert_eq!(limiter, Limiter::Registers);
        assert_eq!(note.as_deref(), Some("shared memory also limits residency to 1 block"));
        let limits = [(Limiter::Warps, Some(2)), (Limiter::Registers, Some(2))];
        let (_, limiter, note) = resolve(&limits);
        assert_eq!(limiter, Limiter::Warps);
        assert_eq!(note.as_deref(), Some("registers also limit residency to 2 blocks"));
    }

    #[test]
    fn resolve_ignores_unlimited_entries() {
        let limits = [(Limiter::Warps, Some(8)), (Limiter::Registers, None)];
        assert_eq!(resolve(&limits), (8, Limiter::Warps, None));
    }

    #[test]
    fn fmt_bytes_uses_kib_only_when_exact() {
        assert_eq!(fmt_bytes(13 * 1024), "13 KiB");
        assert_eq!(fmt_bytes(1000), "1000 B");
        assert_eq!(fmt_bytes(0), "0 B");
    }

    #[test]
    fn intel_cpu_and_unknown_are_unsupported_with_a_sentence() {
        for family in [ArchFamily::IntelXe, ArchFamily::Cpu, ArchFamily::Unknown] {
            let mut d = test_devices::a100();
            d.family = family;
            let res = KernelResources { threads_per_block: 256, ..Default::default() };
            match occupancy(&d, &res) {
                Err(OccupancyError::Unsupported(msg)) => assert!(msg.len() > 20, "{msg}"),
                other => panic!("expected Unsupported for {family:?}, got {other:?}"),
            }
        }
    }

    #[test]
    fn catalog_devices_reproduce_n1_and_a1() {
        let catalog = crate::device::Catalog::builtin();
        // N1: A100, 256 threads, 64 registers, no shared memory -> 4 blocks, 32 warps,
        // 50 % (registers).
        let a100 = catalog.get("a100-sxm-80gb").unwrap();
        let n1 = KernelResources {
            threads_per_block: 256,
            regs_per_thread: Some(64),
            ..KernelResources::default()
        };
        let o = occupancy(a100, &n1).unwrap();
        assert_eq!((o.blocks_per_cu, o.active_warps_per_cu, o.occupancy_pct), (4, 32, 50.0));
        assert_eq!(o.limiter, Limiter::Registers);
        // A1: MI300X, 256 threads, 128 VGPRs + 128 AGPRs, 80 SGPRs, 32 KiB LDS -> 2 WGs,
        // 2 waves per SIMD, 25 %.
        let mi300x = catalog.get("mi300x").unwrap();
        let a1 = KernelResources {
            threads_per_block: 256,
            regs_per_thread: Some(128),
            agprs: Some(128),
            sgprs: Some(80),
            smem_bytes: 32 * 1024,
            wave_size: None,
        };
        let o = occupancy(mi300x, &a1).unwrap();
        assert_eq!((o.blocks_per_cu, o.waves_per_simd, o.occupancy_pct), (2, Some(2), 25.0));
    }

    proptest::proptest! {
        /// For every modelled device and any launch within the documented per-block
        /// limits, the calculators return a result with occupancy in 0..=100 and
        /// consistent counts, and never panic.
        #[test]
        fn occupancy_is_a_percentage_and_never_panics(
            dev_idx in 0usize..12,
            threads in 1u32..=1024,
            regs in 0u32..=255,
            agprs in 0u32..=256,
            sgprs in proptest::option::of(0u32..=112),
            smem_frac in 0.0f64..=1.0,
            carveout in proptest::option::of(0u32..=100),
            barriers in proptest::option::of(0u32..=16),
            wave64 in proptest::bool::ANY,
            cu_mode in proptest::bool::ANY,
        ) {
            let devices = test_devices::all_modelled();
            let d = &devices[dev_idx % devices.len()];
            let smem_max = d.limits.smem_bytes_per_block_max.unwrap_or(0);
            let is_amd = matches!(
                d.family,
                ArchFamily::Cdna1 | ArchFamily::Cdna2 | ArchFamily::Cdna3 | ArchFamily::Cdna4
            );
            let res = KernelResources {
                threads_per_block: threads,
                regs_per_thread: Some(regs),
                agprs: is_amd.then_some(agprs),
                sgprs,
                smem_bytes: (smem_max as f64 * smem_frac) as u64,
                wave_size: (d.family == ArchFamily::Rdna3 && wave64).then_some(64),
            };
            let opts = OccupancyOptions {
                barriers_per_block: barriers,
                smem_carveout_pct: carveout,
                rdna_cu_mode: cu_mode,
                kernel_max_threads_per_block: None,
            };
            let o = occupancy_with(d, &res, &opts).map_err(|e| {
                proptest::test_runner::TestCaseError::fail(format!("{}: {e}", d.id))
            })?;
            proptest::prop_assert!((0.0..=100.0).contains(&o.occupancy_pct), "{o:?}");
            proptest::prop_assert!(o.active_warps_per_cu <= o.max_warps_per_cu, "{o:?}");
            let min = o.limits.iter().filter_map(|(_, l)| *l).min();
            proptest::prop_assert_eq!(Some(o.blocks_per_cu), min);
            proptest::prop_assert!(o.limits.contains(&(o.limiter, Some(o.blocks_per_cu))));
        }

        /// Arbitrary (also out-of-range) inputs never panic.
        #[test]
        fn arbitrary_inputs_never_panic(
            dev_idx in 0usize..13,
            threads in proptest::num::u32::ANY,
            regs in proptest::option::of(proptest::num::u32::ANY),
            agprs in proptest::option::of(proptest::num::u32::ANY),
            sgprs in proptest::option::of(proptest::num::u32::ANY),
            smem in proptest::num::u64::ANY,
            wave in proptest::option::of(proptest::num::u32::ANY),
            carveout in proptest::option::of(proptest::num::u32::ANY),
            barriers in proptest::option::of(proptest::num::u32::ANY),
            kernel_max in proptest::option::of(proptest::num::u32::ANY),
        ) {
            let mut devices = test_devices::all_modelled();
            devices.push(test_devices::m3_max());
            let d = &devices[dev_idx % devices.len()];
            let res = KernelResources {
                threads_per_block: threads,
                regs_per_thread: regs,
                agprs,
                sgprs,
                smem_bytes: smem,
                wave_size: wave,
            };
            let opts = OccupancyOptions {
                barriers_per_block: barriers,
                smem_carveout_pct: carveout,
                rdna_cu_mode: false,
                kernel_max_threads_per_block: kernel_max,
            };
            if let Ok(o) = occupancy_with(d, &res, &opts) {
                proptest::prop_assert!((0.0..=100.0).contains(&o.occupancy_pct));
            }
        }
    }
}
