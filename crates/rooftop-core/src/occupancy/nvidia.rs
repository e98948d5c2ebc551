//! NVIDIA theoretical occupancy, CC 7.0 to 10.0 (and 12.0 at medium confidence).
//!
//! The algorithm is `cudaOccMaxActiveBlocksPerMultiprocessor` from NVIDIA's
//! `cuda_occupancy.h` (CUDA 12.6 toolkit, `include/`), restated with worked examples in
//! docs/reference/occupancy.md#nvidia:
//!
//! ```text
//! W        = ceil(T / 32)                                     warps per block
//! L_warps  = floor(max_warps_per_SM / W)
//! L_regs   = floor(4 * floor((regs_per_SM / 4) / roundup(R * 32, 256)) / W)   (inf if R = 0)
//!            = 0 when roundup(R * 32, 256) * roundup(W, 4) > 65536 (hardware per-block check)
//! alloc    = roundup(S_static + S_dynamic + reserve, granule)  reserve = 1 KiB on CC >= 8.0
//! L_smem   = floor(carveout / alloc)                          (inf if alloc = 0)
//! L_blocks = max_blocks_per_SM
//! L_bars   = floor(2 * L_blocks / barriers)                   CC >= 9.0 only
//! blocks   = min(all); occupancy = blocks * W / max_warps_per_SM
//! ```
//!
//! Carveout: with no preference the driver uses the maximum shared memory of the CC.
//! With a preference (percent of the maximum), the preferred size is rounded up to the
//! next carveout step of the CC; if one block does not fit in it, the driver picks the
//! smallest step that fits one block (`cudaOccMaxBlocksPerSMSmemLimit`).
//!
//! Per-SM figures are read from the device ([`DeviceSpec::limits`]); a missing figure
//! falls back to the per-CC table below (docs/reference/occupancy.md, from the CUDA C++
//! Programming Guide and `cuda_occupancy.h`) and the
//! result notes it. CC 10.0 and 12.0 are newer than the stored header: their allocation
//! rules are assumed (128 B granule and 1 KiB reserve as on CC 8.0-9.0; carveout steps
//! of CC 9.0 and 8.6 respectively; the CC 9.0 barrier rule for both), so those results
//! carry `confidence: medium`.
//!
//! Deliberately not modelled (theoretical occupancy ignores them): tail effects,
//! thread-block clusters (CC >= 9.0 clusters must be co-scheduled on a GPC), and
//! `setmaxnreg` register rebalancing in warp-specialised kernels, where the per-warp
//! register counts differ from the `numRegs` the API reports.

use super::{
    check_threads, div_ceil, fmt_bytes, pct, resolve, round_up, to_blocks, KernelResources,
    Limiter, Occupancy, OccupancyError, OccupancyOptions, Scope,
};
use crate::device::DeviceSpec;
use crate::units::Confidence;

const KIB: u64 = 1024;

/// Registers are allocated to a warp in units of 256 (`cuda_occupancy.h`
/// `cudaOccRegAllocationGranularity`, CC 3.x-9.x).
pub const REG_ALLOC_UNIT_PER_WARP: u64 = 256;

/// Registers are split evenly over 4 SM sub-partitions; a warp's registers come from one
/// of them (`cuda_occupancy.h` `cudaOccSubPartitionsPerMultiprocessor`, CC 7.x-9.x).
pub const SUB_PARTITIONS: u64 = 4;

/// Most registers a thread may use. `cuda_occupancy.h` says 256 for CC >= 7.0; the CUDA
/// C++ Programming Guide and ptxas say 255, which is what a compiled kernel can report.
pub const MAX_REGS_PER_THREAD: u32 = 255;

/// Most 32-bit registers one block may use (CUDA C++ Programming Guide "maximum number of
/// 32-bit registers per thread block", 64 K on every CC here; `cuda_occupancy.h`
/// `regsPerBlock`).
pub const REGS_PER_BLOCK: u64 = 65536;

/// Shared memory a block may use without the opt-in attribute (CUDA C++ Programming Guide).
pub const DEFAULT_SMEM_PER_BLOCK: u64 = 48 * KIB;

/// Most named barriers one block may use (PTX `bar.sync` ids 0..15).
pub const MAX_BARRIERS_PER_BLOCK: u32 = 16;

/// The per-SM rules of one compute capability (docs/reference/occupancy.md: the CUDA C++
/// Programming Guide for the device figures, `cuda_occupancy.h` for block slots, granules,
/// reserve and carveout steps).
#[derive(Debug, Clone, Copy)]
struct CcRules {
    major: u32,
    minor: u32,
    max_warps: u32,
    max_blocks: u32,
    regs_per_sm: u32,
    smem_per_sm: u64,
    smem_per_block_optin: u64,
    smem_granule: u64,
    smem_reserve: u64,
    /// Shared-memory carveout steps in KiB (`cuda_occupancy.h`
    /// `cudaOccAlignUpShmemSizeVoltaPlus`).
    carveouts_kib: &'static [u64],
    confidence: Confidence,
}

const CARVEOUT_70: &[u64] = &[0, 8, 16, 32, 64, 96];
const CARVEOUT_75: &[u64] = &[32, 64];
const CARVEOUT_80: &[u64] = &[0, 8, 16, 32, 64, 100, 132, 164];
const CARVEOUT_86: &[u64] = &[0, 8, 16, 32, 64, 100];
const CARVEOUT_90: &[u64] = &[0, 8, 16, 32, 64, 100, 132, 164, 196, 228];

const RULES: &[CcRules] = &[
    CcRules {
        major: 7,
        minor: 0,
        max_warps: 64,
        max_blocks: 32,
        regs_per_sm: 65536,
        smem_per_sm: 96 * KIB,
        smem_per_block_optin: 96 * KIB,
        smem_granule: 256,
        smem_reserve: 0,
        carveouts_kib: CARVEOUT_70,
        confidence: Confidence::High,
    },
    CcRules {
        major: 7,
        minor: 5,
        max_warps: 32,
        max_blocks: 16,
        regs_per_sm: 65536,
        smem_per_sm: 64 * KIB,
        smem_per_block_optin: 64 * KIB,
        smem_granule: 256,
        smem_reserve: 0,
        carveouts_kib: CARVEOUT_75,
        confidence: Confidence::High,
    },
    CcRules {
        major: 8,
        minor: 0,
        max_warps: 64,
        max_blocks: 32,
        regs_per_sm: 65536,
        smem_per_sm: 164 * KIB,
        smem_per_block_optin: 163 * KIB,
        smem_granule: 128,
        smem_reserve: KIB,
        carveouts_kib: CARVEOUT_80,
        confidence: Confidence::High,
    },
    CcRules {
        major: 8,
        minor: 6,
        max_warps: 48,
        max_blocks: 16,
        regs_per_sm: 65536,
        smem_per_sm: 100 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_granule: 128,
        smem_reserve: KIB,
        carveouts_kib: CARVEOUT_86,
        confidence: Confidence::High,
    },
    CcRules {
        major: 8,
        minor: 9,
        max_warps: 48,
        max_blocks: 24,
        regs_per_sm: 65536,
        smem_per_sm: 100 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_granule: 128,
        smem_reserve: KIB,
        carveouts_kib: CARVEOUT_86,
        confidence: Confidence::High,
    },
    CcRules {
        major: 9,
        minor: 0,
        max_warps: 64,
        max_blocks: 32,
        regs_per_sm: 65536,
        smem_per_sm: 228 * KIB,
        smem_per_block_optin: 227 * KIB,
        smem_granule: 128,
        smem_reserve: KIB,
        carveouts_kib: CARVEOUT_90,
        confidence: Confidence::High,
    },
    // CC 10.0 (B200): figures from the programming guide (228 KiB per SM also in the device
    // properties a B200 reports); granule, reserve and carveout steps assumed equal to CC 9.0.
    CcRules {
        major: 10,
        minor: 0,
        max_warps: 64,
        max_blocks: 32,
        regs_per_sm: 65536,
        smem_per_sm: 228 * KIB,
        smem_per_block_optin: 227 * KIB,
        smem_granule: 128,
        smem_reserve: KIB,
        carveouts_kib: CARVEOUT_90,
        confidence: Confidence::Medium,
    },
    // CC 12.0 (RTX 50, RTX PRO Blackwell): figures from the programming guide; 32 block
    // slots unverified;
    // granule, reserve and carveout steps assumed equal to CC 8.6.
    CcRules {
        major: 12,
        minor: 0,
        max_warps: 48,
        max_blocks: 32,
        regs_per_sm: 65536,
        smem_per_sm: 100 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_granule: 128,
        smem_reserve: KIB,
        carveouts_kib: CARVEOUT_86,
        confidence: Confidence::Medium,
    },
];

/// The compute capabilities this module has rules for, as `(major, minor)`.
pub fn supported_compute_capabilities() -> impl Iterator<Item = (u32, u32)> {
    RULES.iter().map(|r| (r.major, r.minor))
}

fn rules(major: u32, minor: u32) -> Option<&'static CcRules> {
    RULES.iter().find(|r| r.major == major && r.minor == minor)
}

/// Per-SM figures for one calculation: the device's own where it has them, else the
/// CC table's.
struct Figures {
    warp_size: u64,
    max_warps: u64,
    max_blocks: u64,
    max_threads_per_block: u32,
    regs_per_sm: u64,
    max_regs_per_thread: u32,
    smem_per_sm: u64,
    smem_per_block_optin: u64,
    smem_per_block_default: u64,
    smem_granule: u64,
    smem_reserve: u64,
    /// Names of the device fields that fell back to the CC table.
    fallbacks: Vec<&'static str>,
}

impl Figures {
    fn new(device: &DeviceSpec, r: &CcRules) -> Figures {
        let l = &device.limits;
        let mut fallbacks = Vec::new();
        let mut pick = |v: Option<u64>, table: u64, name: &'static str| match v {
            Some(v) if v > 0 => v,
            _ => {
                fallbacks.push(name);
                table
            }
        };
        let warp_size = u64::from(device.warp_size.max(1));
        let max_warps = pick(
            l.max_warps_per_cu
                .map(u64::from)
                .or(l.max_threads_per_cu.map(|t| u64::from(t) / warp_size)),
            u64::from(r.max_warps),
            "max_warps_per_cu",
        );
        let max_blocks =
            pick(l.max_blocks_per_cu.map(u64::from), u64::from(r.max_blocks), "max_blocks_per_cu");
        let max_threads_per_block =
            pick(l.max_threads_per_block.map(u64::from), 1024, "max_threads_per_block");
        let regs_per_sm =
            pick(l.regs_32bit_per_cu.map(u64::from), u64::from(r.regs_per_sm), "regs_32bit_per_cu");
        let max_regs_per_thread = pick(
            l.max_regs_per_thread.map(u64::from),
            u64::from(MAX_REGS_PER_THREAD),
            "max_regs_per_thread",
        );
        let smem_per_sm = pick(l.smem_bytes_per_cu, r.smem_per_sm, "smem_bytes_per_cu");
        let smem_per_block_optin =
            pick(l.smem_bytes_per_block_max, r.smem_per_block_optin, "smem_bytes_per_block_max");
        let smem_per_block_default = pick(
            l.smem_bytes_per_block_default,
            DEFAULT_SMEM_PER_BLOCK,
            "smem_bytes_per_block_default",
        );
        let smem_granule =
            pick(l.smem_alloc_granularity_bytes, r.smem_granule, "smem_alloc_granularity_bytes");
        // A reserve of 0 is a real value (CC 7.x), so only an absent field falls back.
        let smem_reserve = l.smem_reserved_per_block_bytes.unwrap_or_else(|| {
            fallbacks.push("smem_reserved_per_block_bytes");
            r.smem_reserve
        });
        Figures {
            warp_size,
            max_warps,
            max_blocks,
            max_threads_per_block: u32::try_from(max_threads_per_block).unwrap_or(u32::MAX),
            regs_per_sm,
            max_regs_per_thread: u32::try_from(max_regs_per_thread).unwrap_or(u32::MAX),
            smem_per_sm,
            smem_per_block_optin,
            smem_per_block_default,
            smem_granule,
            smem_reserve,
            fallbacks,
        }
    }
}

/// Rounds a shared-memory size up to the next carveout step of the CC, never above the
/// SM's shared memory (`cuda_occupancy.h` `cudaOccAlignUpShmemSizeVoltaPlus`).
fn align_up_carveout(size: u64, r: &CcRules, smem_per_sm: u64) -> u64 {
    r.carveouts_kib
        .iter()
        .map(|k| k * KIB)
        .filter(|step| *step <= smem_per_sm)
        .find(|step| *step >= size)
        .unwrap_or(smem_per_sm)
}

/// Theoretical occupancy on an NVIDIA GPU of compute capability `major.minor`.
pub fn occupancy(
    device: &DeviceSpec,
    major: u32,
    minor: u32,
    res: &KernelResources,
    opts: &OccupancyOptions,
) -> Result<Occupancy, OccupancyError> {
    let Some(r) = rules(major, minor) else {
        let known: Vec<String> =
            supported_compute_capabilities().map(|(a, b)| format!("{a}.{b}")).collect();
        return Err(OccupancyError::Unsupported(format!(
            "compute capability {major}.{minor} ({}) has no occupancy rules in rooftop \
             (supported: {})",
            device.name,
            known.join(", ")
        )));
    };
    let cc = format!("CC {major}.{minor}");
    let f = Figures::new(device, r);
    let mut notes = Vec::new();

    // --- validation: what would make the launch fail outright -----------------------
    check_threads(device, res, opts, f.max_threads_per_block, "block")?;
    let regs = res.regs_per_thread.filter(|r| *r > 0);
    if let Some(regs) = regs {
        if regs > f.max_regs_per_thread {
            return Err(OccupancyError::Invalid(format!(
                "{regs} registers per thread exceed the maximum of {} per thread on {cc} ({})",
                f.max_regs_per_thread, device.name
            )));
        }
    }
    let smem = res.smem_bytes;
    if smem > f.smem_per_block_optin {
        return Err(OccupancyError::Invalid(format!(
            "{} of shared memory per block exceed the {} opt-in maximum per block on {cc} ({})",
            fmt_bytes(smem),
            fmt_bytes(f.smem_per_block_optin),
            device.name
        )));
    }
    if let Some(p) = opts.smem_carveout_pct.filter(|p| *p > 100) {
        return Err(OccupancyError::Invalid(format!(
            "a shared-memory carveout preference is a percentage from 0 to 100, got {p}"
        )));
    }
    let barriers = opts.barriers_per_block.unwrap_or(1);
    if barriers > MAX_BARRIERS_PER_BLOCK {
        return Err(OccupancyError::Invalid(format!(
            "{barriers} named barriers per block exceed the maximum of {MAX_BARRIERS_PER_BLOCK}"
        )));
    }

    // --- 1. warp slots ---------------------------------------------------------------
    let t = u64::from(res.threads_per_block);
    let warps_per_block = div_ceil(t, f.warp_size);
    let l_warps = f.max_warps / warps_per_block;

    // --- 2. registers ----------------------------------------------------------------
    let l_regs = match regs {
        None => {
            notes.push(
                "register count unknown: the register limit is not applied (take it from \
                 ncu, `cuobjdump --dump-resource-usage` or `-Xptxas -v`)"
                    .to_string(),
            );
            None
        }
        Some(regs) => {
            let per_warp = round_up(u64::from(regs) * f.warp_size, REG_ALLOC_UNIT_PER_WARP);
            let per_block = per_warp * warps_per_block;
            // The hardware check assumes the block's warps are spread over all
            // sub-partitions at once, so it rounds the warp count up to 4 (`cuda_occupancy.h`).
            let assumed = per_warp * round_up(warps_per_block, SUB_PARTITIONS);
            if assumed > REGS_PER_BLOCK || per_block > REGS_PER_BLOCK {
                notes.push(format!(
                    "this launch cannot run: {regs} registers per thread x {t} threads need \
                     {assumed} registers per block ({per_warp} per warp, warps rounded up to \
                     {SUB_PARTITIONS}), more than the {REGS_PER_BLOCK} a block may use"
                ));
                Some(0)
            } else {
                let per_subpartition = (f.regs_per_sm / SUB_PARTITIONS) / per_warp;
                let warps = SUB_PARTITIONS * per_subpartition;
                notes.push(format!(
                    "registers: {regs} per thread -> {per_warp} per warp (allocated in units \
                     of {REG_ALLOC_UNIT_PER_WARP}) -> {per_subpartition} warps per \
                     sub-partition x {SUB_PARTITIONS} = {warps} warps per SM"
                ));
                Some(to_blocks(warps / warps_per_block))
            }
        }
    };

    // --- 3. shared memory ------------------------------------------------------------
    let alloc = round_up(smem + f.smem_reserve, f.smem_granule);
    let smem_sm = match opts.smem_carveout_pct {
        None => f.smem_per_sm,
        Some(p) => {
            let preferred = align_up_carveout(u64::from(p) * f.smem_per_sm / 100, r, f.smem_per_sm);
            if preferred >= alloc {
                preferred
            } else {
                let raised = align_up_carveout(alloc, r, f.smem_per_sm);
                notes.push(format!(
                    "the {p}% carveout preference ({}) cannot hold one block's {}: the driver \
                     raises the carveout to {}",
                    fmt_bytes(preferred),
                    fmt_bytes(alloc),
                    fmt_bytes(raised)
                ));
                raised
            }
        }
    };
    let l_smem = (alloc > 0).then(|| to_blocks(smem_sm / alloc));
    if smem > 0 {
        let reserve = if f.smem_reserve > 0 {
            format!(" + {} driver reserve", fmt_bytes(f.smem_reserve))
        } else {
            String::new()
        };
        notes.push(format!(
            "shared memory: {}{reserve} -> {} allocated per block (granule {} B), {} per SM",
            fmt_bytes(smem),
            fmt_bytes(alloc),
            f.smem_granule,
            fmt_bytes(smem_sm)
        ));
    }
    if smem > f.smem_per_block_default {
        notes.push(format!(
            "{} of shared memory per block is above the {} default: the kernel must opt in \
             with cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)",
            fmt_bytes(smem),
            fmt_bytes(f.smem_per_block_default)
        ));
    }

    // --- 4. block slots, 5. barriers (CC >= 9.0, `cuda_occupancy.h`) ---------------------------------
    let l_blocks = to_blocks(f.max_blocks);
    let mut limits = vec![
        (Limiter::Warps, Some(to_blocks(l_warps))),
        (Limiter::Registers, l_regs),
        (Limiter::SharedMemory, l_smem),
        (Limiter::BlockSlots, Some(l_blocks)),
    ];
    if major >= 9 {
        let l_bars = (barriers > 0).then(|| to_blocks(2 * f.max_blocks / u64::from(barriers)));
        limits.push((Limiter::Barriers, l_bars));
    }

    let (blocks, limiter, tie) = resolve(&limits);
    notes.extend(tie);
    if !f.fallbacks.is_empty() {
        notes.push(format!(
            "the device spec lacks {}: used the {cc} values of docs/reference/occupancy.md",
            f.fallbacks.join(", ")
        ));
    }
    if r.confidence != Confidence::High {
        notes.push(format!(
            "{cc} is newer than NVIDIA's stored occupancy header: its shared-memory granule, \
             1 KiB reserve and carveout steps are assumed, not published (medium confidence)"
        ));
    }
    let active = u64::from(blocks) * warps_per_block;
    Ok(Occupancy {
        blocks_per_cu: blocks,
        active_warps_per_cu: to_blocks(active),
        max_warps_per_cu: to_blocks(f.max_warps),
        occupancy_pct: pct(active, f.max_warps),
        limiter,
        limits,
        estimate: false,
        notes,
        scope: Scope::Sm,
        waves_per_simd: None,
        confidence: r.confidence,
    })
}

#[cfg(test)]
// Tests state their expectation with unwrap: a failure is the test's message.
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_devices as dev;
    use super::super::{
        occupancy, occupancy_with, KernelResources, Limiter, OccupancyError, OccupancyOptions,
    };
    use crate::units::Confidence;

    const KIB: u64 = 1024;

    fn res(threads: u32, regs: u32, smem: u64) -> KernelResources {
        KernelResources {
            threads_per_block: threads,
            regs_per_thread: Some(regs),
            smem_bytes: smem,
            ..KernelResources::default()
        }
    }

    /// Checks one worked example of docs/reference/occupancy.md#nvidia (N1 ... N9, derived
    /// there step by step from the rules of `cuda_occupancy.h`): the per-limit block
    /// counts (warps / regs / smem / block slots; `None` = unlimited), blocks, warps and
    /// occupancy percent.
    #[track_caller]
    fn check(
        d: &crate::device::DeviceSpec,
        r: &KernelResources,
        limits: [Option<u32>; 4],
        blocks: u32,
        warps: u32,
        pct: f64,
        limiter: Limiter,
    ) {
        let o = occupancy(d, r).expect("valid launch");
        let got: Vec<Option<u32>> = o.limits.iter().take(4).map(|(_, l)| *l).collect();
        assert_eq!(got, limits, "limits {:?}", o.limits);
        assert_eq!(o.blocks_per_cu, blocks);
        assert_eq!(o.active_warps_per_cu, warps);
        assert!((o.occupancy_pct - pct).abs() < 1e-9, "{} vs {pct}", o.occupancy_pct);
        assert_eq!(o.limiter, limiter);
        assert!(!o.estimate);
    }

    #[test]
    fn n1_a100_256_threads_64_regs() {
        // regs: 64 * 32 = 2048 per warp; 16384 / 2048 = 8 warps per sub-partition;
        // 4 * 8 = 32 warps / 8 per block = 4 blocks. smem: 0 + 1 KiB reserve = 1 KiB;
        // 164 KiB / 1 KiB = 164. Occupancy 4 * 8 / 64 = 50 %.
        check(
            &dev::a100(),
            &res(256, 64, 0),
            [Some(8), Some(4), Some(164), Some(32)],
            4,
            32,
            50.0,
            Limiter::Registers,
        );
    }

    #[test]
    fn n2_h100_128_threads_168_regs_100k_smem() {
        // regs: 168 * 32 = 5376 (already a multiple of 256); 16384 / 5376 = 3; 12 warps
        // / 4 = 3. smem: 100 KiB + 1 KiB = 101 KiB; 228 / 101 = 2. 2 * 4 / 64 = 12.5 %.
        let o = occupancy(&dev::h100(), &res(128, 168, 100 * KIB)).unwrap();
        check(
            &dev::h100(),
            &res(128, 168, 100 * KIB),
            [Some(16), Some(3), Some(2), Some(32)],
            2,
            8,
            12.5,
            Limiter::SharedMemory,
        );
        // 100 KiB > 48 KiB needs the opt-in attribute.
        assert!(o.notes.iter().any(|n| n.contains("opt in")), "{:?}", o.notes);
        // CC 9.0: one barrier -> 2 * 32 / 1 = 64 blocks, never binding.
        assert_eq!(o.limits[4], (Limiter::Barriers, Some(64)));
    }

    #[test]
    fn n3_rtx3090_90_regs() {
        // 90 * 32 = 2880 -> 3072 per warp; 16384 / 3072 = 5; 20 warps / 4 = 5 blocks.
        // 5 * 4 / 48 = 41.67 %.
        check(
            &dev::rtx3090(),
            &res(128, 90, 0),
            [Some(12), Some(5), Some(100), Some(16)],
            5,
            20,
            20.0 / 48.0 * 100.0,
            Limiter::Registers,
        );
    }

    #[test]
    fn n4_t4_1024_threads() {
        // 32 warps per block; 32 / 32 = 1. regs 32 * 32 = 1024 per warp; 16 per
        // sub-partition, 64 / 32 = 2. No reserve on CC 7.5 and no smem: unlimited.
        check(
            &dev::t4(),
            &res(1024, 32, 0),
            [Some(1), Some(2), None, Some(16)],
            1,
            32,
            100.0,
            Limiter::Warps,
        );
    }

    #[test]
    fn n5_l4_block_slot_bound() {
        // 1 warp per block; regs 16 * 32 = 512 -> 32 per sub-partition -> 128.
        // smem 1 KiB reserve -> 100. Block slots 24: 24 warps / 48 = 50 %.
        check(
            &dev::l4(),
            &res(32, 16, 0),
            [Some(48), Some(128), Some(100), Some(24)],
            24,
            24,
            50.0,
            Limiter::BlockSlots,
        );
    }

    #[test]
    fn n6_h100_reserve_counts_inside_the_rounding() {
        // 12 KiB + 1 KiB = 13 KiB per block; 228 / 13 = 17 (not 228 / 12 = 19).
        // 17 warps / 64 = 26.5625 %.
        check(
            &dev::h100(),
            &res(32, 8, 12 * KIB),
            [Some(64), Some(256), Some(17), Some(32)],
            17,
            17,
            17.0 / 64.0 * 100.0,
            Limiter::SharedMemory,
        );
    }

    #[test]
    fn n7_v100_48k_dynamic() {
        // regs 128 * 32 = 4096 -> 4 per sub-partition -> 16 warps / 8 = 2. smem
        // 96 KiB / 48 KiB = 2 (no reserve on CC 7.0). 16 / 64 = 25 %.
        let o = occupancy(&dev::v100(), &res(256, 128, 48 * KIB)).unwrap();
        check(
            &dev::v100(),
            &res(256, 128, 48 * KIB),
            [Some(8), Some(2), Some(2), Some(32)],
            2,
            16,
            25.0,
            Limiter::Registers,
        );
        // 48 KiB is exactly the default: no opt-in needed. CC 7.0 has no barrier limit.
        assert!(!o.notes.iter().any(|n| n.contains("opt in")));
        assert_eq!(o.limits.len(), 4);
        assert!(o.notes.iter().any(|n| n.contains("shared memory also limits")));
    }

    #[test]
    fn n8_a100_255_regs() {
        // 255 * 32 = 8160 -> 8192 per warp; 2 per sub-partition -> 8 warps / 4 = 2.
        check(
            &dev::a100(),
            &res(128, 255, 0),
            [Some(16), Some(2), Some(164), Some(32)],
            2,
            8,
            12.5,
            Limiter::Registers,
        );
    }

    #[test]
    fn n9_b200_medium_confidence() {
        // 12 warps per block; regs 5376 per warp -> 3 per sub-partition -> 12 / 12 = 1;
        // smem 200 + 1 = 201 KiB -> 228 / 201 = 1. 12 / 64 = 18.75 %.
        let o = occupancy(&dev::b200(), &res(384, 168, 200 * KIB)).unwrap();
        check(
            &dev::b200(),
            &res(384, 168, 200 * KIB),
            [Some(5), Some(1), Some(1), Some(32)],
            1,
            12,
            18.75,
            Limiter::Registers,
        );
        assert_eq!(o.confidence, Confidence::Medium);
        assert!(o.notes.iter().any(|n| n.contains("medium confidence")));
    }

    #[test]
    fn cc_9_and_earlier_are_high_confidence() {
        let o = occupancy(&dev::h100(), &res(256, 64, 0)).unwrap();
        assert_eq!(o.confidence, Confidence::High);
    }

    #[test]
    fn zero_threads_is_invalid() {
        let e = occupancy(&dev::a100(), &res(0, 32, 0)).unwrap_err();
        assert!(matches!(&e, OccupancyError::Invalid(m) if m.contains("at least 1")), "{e}");
    }

    #[test]
    fn over_1024_threads_is_invalid() {
        let e = occupancy(&dev::a100(), &res(1025, 32, 0)).unwrap_err();
        assert!(matches!(&e, OccupancyError::Invalid(m) if m.contains("1024")), "{e}");
    }

    #[test]
    fn over_255_regs_is_invalid() {
        let e = occupancy(&dev::a100(), &res(128, 256, 0)).unwrap_err();
        assert!(matches!(&e, OccupancyError::Invalid(m) if m.contains("255")), "{e}");
    }

    #[test]
    fn smem_over_opt_in_max_is_invalid() {
        // 163 KiB is the A100 opt-in maximum: allowed; one byte more is not.
        let ok = occupancy(&dev::a100(), &res(128, 32, 163 * KIB)).unwrap();
        // 163 + 1 = 164 KiB allocated: exactly one block in 164 KiB.
        assert_eq!(ok.blocks_per_cu, 1);
        let e = occupancy(&dev::a100(), &res(128, 32, 163 * KIB + 1)).unwrap_err();
        assert!(matches!(&e, OccupancyError::Invalid(m) if m.contains("opt-in")), "{e}");
    }

    #[test]
    fn zero_regs_means_unknown_and_unlimited() {
        let o = occupancy(&dev::a100(), &res(256, 0, 0)).unwrap();
        assert_eq!(o.limits[1], (Limiter::Registers, None));
        // 64 / 8 = 8 blocks by warps: 100 %.
        assert_eq!(o.blocks_per_cu, 8);
        assert_eq!(o.occupancy_pct, 100.0);
        let none = KernelResources { threads_per_block: 256, ..KernelResources::default() };
        assert_eq!(occupancy(&dev::a100(), &none).unwrap().limits[1], (Limiter::Registers, None));
    }

    #[test]
    fn zero_smem_still_pays_the_reserve_on_cc8() {
        // A100, 32 threads, 0 smem: alloc = 1 KiB -> 164 blocks by smem; block slots (32)
        // bind: 32 warps / 64 = 50 %.
        let o = occupancy(&dev::a100(), &res(32, 16, 0)).unwrap();
        assert_eq!(o.limits[2], (Limiter::SharedMemory, Some(164)));
        assert_eq!(o.blocks_per_cu, 32);
        assert_eq!(o.limiter, Limiter::BlockSlots);
    }

    #[test]
    fn too_many_registers_for_the_block_gives_zero_blocks() {
        // 1024 threads x 128 regs: 4096 per warp x 32 warps = 131072 > 65536.
        let o = occupancy(&dev::a100(), &res(1024, 128, 0)).unwrap();
        assert_eq!(o.blocks_per_cu, 0);
        assert_eq!(o.occupancy_pct, 0.0);
        assert_eq!(o.limiter, Limiter::Registers);
        assert!(o.notes.iter().any(|n| n.contains("cannot run")));
    }

    #[test]
    fn hardware_check_rounds_warps_up_to_four() {
        // H100, 160 threads (5 warps), 200 regs: 6400 per warp; software 5 * 6400 = 32000
        // fits, hardware 8 * 6400 = 51200 fits too -> registers allow
        // 4 * floor(16384 / 6400) = 8 warps -> 1 block.
        let o = occupancy(&dev::h100(), &res(160, 200, 0)).unwrap();
        assert_eq!(o.limits[1], (Limiter::Registers, Some(1)));
        // 992 threads (31 warps) x 64 regs: 2048 per warp, 31 * 2048 = 63488 fits but
        // 32 * 2048 = 65536 is the limit exactly, so still fits: 32 / 31 = 1 block.
        let o = occupancy(&dev::h100(), &res(992, 64, 0)).unwrap();
        assert_eq!(o.limits[1], (Limiter::Registers, Some(1)));
        // 992 threads x 72 regs: 2304 per warp; 31 * 2304 = 71424 > 65536.
        let o = occupancy(&dev::h100(), &res(992, 72, 0)).unwrap();
        assert_eq!(o.blocks_per_cu, 0);
    }

    fn with(f: impl FnOnce(&mut OccupancyOptions)) -> OccupancyOptions {
        let mut o = OccupancyOptions::default();
        f(&mut o);
        o
    }

    #[test]
    fn carveout_preference_rounds_up_to_a_step() {
        // A100, 50 % of 164 KiB = 82 KiB -> step 100 KiB. 128 threads, 32 regs,
        // 24 KiB smem: 25 KiB allocated -> 100 / 25 = 4 blocks.
        let r = res(128, 32, 24 * KIB);
        let half = with(|o| o.smem_carveout_pct = Some(50));
        let o = occupancy_with(&dev::a100(), &r, &half).unwrap();
        assert_eq!(o.limits[2], (Limiter::SharedMemory, Some(4)));
        // Default (max carveout): 164 / 25 = 6.
        assert_eq!(
            occupancy(&dev::a100(), &r).unwrap().limits[2],
            (Limiter::SharedMemory, Some(6))
        );
    }

    #[test]
    fn carveout_too_small_for_one_block_is_raised_to_the_smallest_fitting_step() {
        // A100, 0 % preference (max L1), 40 KiB smem -> 41 KiB allocated -> smallest step
        // >= 41 KiB is 64 KiB -> 1 block.
        let r = res(128, 32, 40 * KIB);
        let o = occupancy_with(&dev::a100(), &r, &with(|o| o.smem_carveout_pct = Some(0))).unwrap();
        assert_eq!(o.limits[2], (Limiter::SharedMemory, Some(1)));
        assert!(
            o.notes.iter().any(|n| n.contains("raises the carveout to 64 KiB")),
            "{:?}",
            o.notes
        );
        let bad = with(|o| o.smem_carveout_pct = Some(101));
        assert!(matches!(occupancy_with(&dev::a100(), &r, &bad), Err(OccupancyError::Invalid(_))));
    }

    #[test]
    fn turing_carveout_steps_are_32_and_64() {
        // T4, 10 % of 64 KiB = 6.4 KiB -> step 32 KiB; 8 KiB blocks -> 4.
        let r = res(64, 32, 8 * KIB);
        let o = occupancy_with(&dev::t4(), &r, &with(|o| o.smem_carveout_pct = Some(10))).unwrap();
        assert_eq!(o.limits[2], (Limiter::SharedMemory, Some(4)));
    }

    #[test]
    fn barriers_limit_on_hopper() {
        // H100, 32 threads, 8 barriers: 2 * 32 / 8 = 8 blocks.
        let r = res(32, 16, 0);
        let bars = |n| with(|o| o.barriers_per_block = Some(n));
        let o = occupancy_with(&dev::h100(), &r, &bars(8)).unwrap();
        assert_eq!(o.limits[4], (Limiter::Barriers, Some(8)));
        assert_eq!(o.blocks_per_cu, 8);
        assert_eq!(o.limiter, Limiter::Barriers);
        let o = occupancy_with(&dev::h100(), &r, &bars(0)).unwrap();
        assert_eq!(o.limits[4], (Limiter::Barriers, None));
        assert!(matches!(
            occupancy_with(&dev::h100(), &r, &bars(17)),
            Err(OccupancyError::Invalid(_))
        ));
    }

    #[test]
    fn kernel_block_limit_is_enforced() {
        let bounds = with(|o| o.kernel_max_threads_per_block = Some(256));
        let e = occupancy_with(&dev::a100(), &res(512, 32, 0), &bounds).unwrap_err();
        assert!(matches!(&e, OccupancyError::Invalid(m) if m.contains("256")), "{e}");
    }

    #[test]
    fn missing_device_figures_fall_back_to_the_cc_table() {
        let mut d = dev::h100();
        d.limits = crate::device::ResourceLimits::default();
        let o = occupancy(&d, &res(32, 8, 12 * KIB)).unwrap();
        assert_eq!(o.blocks_per_cu, 17);
        assert!(o.notes.iter().any(|n| n.contains("lacks") && n.contains("smem_bytes_per_cu")));
    }

    #[test]
    fn unknown_cc_is_unsupported() {
        let mut d = dev::a100();
        d.family = crate::device::ArchFamily::NvidiaCc { major: 6, minor: 1 };
        let e = occupancy(&d, &res(128, 32, 0)).unwrap_err();
        assert!(matches!(&e, OccupancyError::Unsupported(m) if m.contains("6.1")), "{e}");
    }

    #[test]
    fn cc12_has_rules_at_medium_confidence() {
        let mut d = dev::rtx3090();
        d.family = crate::device::ArchFamily::NvidiaCc { major: 12, minor: 0 };
        d.limits.max_blocks_per_cu = Some(32);
        let o = occupancy(&d, &res(128, 90, 0)).unwrap();
        assert_eq!(o.blocks_per_cu, 5);
        assert_eq!(o.confidence, Confidence::Medium);
    }
}
