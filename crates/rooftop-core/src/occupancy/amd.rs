//! AMD theoretical occupancy: CDNA1 (gfx908), CDNA2 (gfx90a), CDNA3 (gfx940-942),
//! CDNA4 (gfx950) and RDNA3 (gfx1100/1101, the 1.5x VGPR parts).
//!
//! Rules of the LLVM AMDGPU backend (llvm-project
//! `llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp`), which HIP's occupancy API and the
//! compiler's own occupancy remarks use, as restated with worked examples (A1 ... A8, the
//! tests below) in docs/reference/occupancy.md#amd:
//!
//! ```text
//! VGPRs      unified file (gfx90a+):  alignup(arch, 4) + agpr   if agpr > 0 else arch
//!            separate files (gfx908): max(arch, agpr)
//! waves_vgpr = maxw if vgprs < granule else min(max(total / alignup(vgprs, granule), 1), maxw)
//! waves_sgpr = 10 / 9 / 8 / 7 for <= 80 / 88 / 100 / more SGPRs (GFX9 = CDNA only)
//! waves/SIMD = min(waves_vgpr, waves_sgpr)
//! N          = ceil(T / wave)                                   waves per workgroup
//! WG limits  wave slots  floor(maxw * simds / N)
//!            registers   floor(waves/SIMD * simds / N)
//!            barriers    16 per CU (CDNA, RDNA CU mode) | 32 per WGP; none if N == 1
//!            LDS         floor(pool / alignup(lds, 512))            (inf if lds == 0)
//! occupancy  = min(waves/SIMD, ceil(WGs * N / simds)) / maxw        (rocprof-compute's %)
//! ```
//!
//! | family | total VGPRs/lane | granule | maxw | SGPR-limited | LDS pool |
//! |---|---|---|---|---|---|
//! | CDNA1 gfx908 | 256 (+256 AGPR file) | 4 | 10 | yes | 64 KiB |
//! | CDNA2/3 | 512 unified | 8 | 8 | yes | 64 KiB |
//! | CDNA4 gfx950 | 512 unified | 8 | 8 | yes | 160 KiB |
//! | RDNA3 wave32 / wave64 | 1536 / 768 | 24 / 12 | 16 | no | 128 KiB per WGP, 64 KiB per CU |
//! | RDNA3 gfx1102/1103 (no 1.5x VGPRs) | 1024 / 512 | 16 / 8 | 16 | no | same |
//!
//! RDNA3 counts are per WGP (2 CUs, 4 SIMDs) in WGP mode, the HIP default, and per CU
//! (2 SIMDs) when the kernel is built with `-mcumode` ([`OccupancyOptions::rdna_cu_mode`]).
//!
//! The register-file rules are the architecture's (compiler constants); the device
//! supplies the LDS pool and per-workgroup maximum ([`DeviceSpec::limits`]), with the
//! family's values as fallback.

use super::{
    check_threads, div_ceil, fmt_bytes, pct, resolve, round_up, to_blocks, KernelResources,
    Limiter, Occupancy, OccupancyError, OccupancyOptions, Scope,
};
use crate::device::{ArchFamily, DeviceSpec};
use crate::units::Confidence;

const KIB: u64 = 1024;

/// LDS is allocated to a workgroup in blocks of 128 dwords (LLVM `getLdsDwGranularity`).
pub const LDS_GRANULE_BYTES: u64 = 512;

/// Workgroups per CU limited by barrier resources for multi-wave workgroups (LLVM
/// `getMaxWorkGroupsPerCU`); 32 per WGP on GFX10+ in WGP mode.
pub const MAX_BARRIER_WGS_PER_CU: u64 = 16;
pub const MAX_BARRIER_WGS_PER_WGP: u64 = 32;

/// Addressable architectural VGPRs (and AGPRs) per wave.
pub const MAX_VGPRS_PER_WAVE: u32 = 256;

/// Most threads in a workgroup on every AMD GPU here.
pub const MAX_WORKGROUP_SIZE: u32 = 1024;

/// Waves per SIMD allowed by `sgprs` on GFX9 (LLVM `getOccupancyWithNumSGPRs`, VOLCANIC_ISLANDS
/// and later, before GFX10: 800 SGPRs per SIMD, 16-register granule). The count includes
/// VCC, FLAT_SCRATCH and XNACK_MASK as the code object reports it.
pub fn waves_per_simd_with_sgprs(sgprs: u32) -> u32 {
    match sgprs {
        0..=80 => 10,
        81..=88 => 9,
        89..=100 => 8,
        _ => 7,
    }
}

/// Waves per SIMD allowed by `vgprs` (LLVM `getNumWavesPerEUWithNumVGPRs`).
pub fn waves_per_simd_with_vgprs(vgprs: u32, granule: u32, total: u32, max_waves: u32) -> u32 {
    if vgprs < granule {
        return max_waves;
    }
    let rounded = vgprs.div_ceil(granule) * granule;
    (total / rounded).clamp(1, max_waves)
}

/// The register-file and workgroup rules of one family in one mode.
#[derive(Debug, Clone, Copy)]
struct Rules {
    name: &'static str,
    /// Arch VGPRs and AGPRs share one file (gfx90a+).
    unified: bool,
    /// AGPRs exist (CDNA).
    has_agprs: bool,
    total_vgprs: u32,
    granule: u32,
    max_waves: u32,
    sgpr_limited: bool,
    simds: u32,
    lds_pool: u64,
    lds_per_wg_max: u64,
    barrier_cap: u64,
    wave: u32,
    scope: Scope,
}

fn rules(
    device: &DeviceSpec,
    res: &KernelResources,
    opts: &OccupancyOptions,
) -> Result<Rules, OccupancyError> {
    let l = &device.limits;
    let cdna = |name, unified, total_vgprs, granule, max_waves, lds_default: u64| {
        let lds_pool = l.smem_bytes_per_cu.filter(|b| *b > 0).unwrap_or(lds_default);
        Rules {
            name,
            unified,
            has_agprs: true,
            total_vgprs,
            granule,
            max_waves,
            sgpr_limited: true,
            simds: 4,
            lds_pool,
            lds_per_wg_max: l.smem_bytes_per_block_max.filter(|b| *b > 0).unwrap_or(lds_pool),
            barrier_cap: MAX_BARRIER_WGS_PER_CU,
            wave: 64,
            scope: Scope::Cu,
        }
    };
    let r = match device.family {
        ArchFamily::Cdna1 => cdna("CDNA1 (gfx908)", false, 256, 4, 10, 64 * KIB),
        ArchFamily::Cdna2 => cdna("CDNA2 (gfx90a)", true, 512, 8, 8, 64 * KIB),
        ArchFamily::Cdna3 => cdna("CDNA3 (gfx942)", true, 512, 8, 8, 64 * KIB),
        ArchFamily::Cdna4 => cdna("CDNA4 (gfx950)", true, 512, 8, 8, 160 * KIB),
        ArchFamily::Rdna3 => {
            let wave = res.wave_size.unwrap_or(device.warp_size);
            // gfx1102/gfx1103 (RX 7600, Phoenix iGPU) lack Feature1_5xVGPRs and keep the
            // RDNA2-sized file (LLVM getTotalNumVGPRs / getVGPRAllocGranule).
            let small_file = device
                .llvm_target
                .as_deref()
                .is_some_and(|t| matches!(t.trim(), "gfx1102" | "gfx1103"));
            let (total_vgprs, granule) = match (wave, small_file) {
                (32, false) => (1536, 24),
                (64, false) => (768, 12),
                (32, true) => (1024, 16),
                (64, true) => (512, 8),
                (w, _) => {
                    return Err(OccupancyError::Invalid(format!(
                        "RDNA3 runs wave32 or wave64, not wave{w}"
                    )))
                }
            };
            let cu_lds = l.smem_bytes_per_cu.filter(|b| *b > 0).unwrap_or(64 * KIB);
            let (simds, lds_pool, barrier_cap, scope) = if opts.rdna_cu_mode {
                (2, cu_lds, MAX_BARRIER_WGS_PER_CU, Scope::Cu)
            } else {
                let wgp_lds = l.smem_bytes_per_wgp.filter(|b| *b > 0).unwrap_or(2 * cu_lds);
                (4, wgp_lds, MAX_BARRIER_WGS_PER_WGP, Scope::Wgp)
            };
            Rules {
                name: if small_file { "RDNA3 (gfx1102/3)" } else { "RDNA3 (gfx1100)" },
                unified: false,
                has_agprs: false,
                total_vgprs,
                granule,
                max_waves: 16,
                sgpr_limited: false,
                simds,
                lds_pool,
                lds_per_wg_max: l.smem_bytes_per_block_max.filter(|b| *b > 0).unwrap_or(64 * KIB),
                barrier_cap,
                wave,
                scope,
            }
        }
        other => {
            return Err(OccupancyError::Unsupported(format!(
                "{other:?} is not an AMD family with occupancy rules"
            )))
        }
    };
    if let Some(w) = res.wave_size.filter(|w| *w != r.wave) {
        return Err(OccupancyError::Invalid(format!(
            "{} runs wave{} only, not wave{w}",
            r.name, r.wave
        )));
    }
    Ok(r)
}

/// Theoretical occupancy on an AMD CDNA or RDNA3 GPU.
pub fn occupancy(
    device: &DeviceSpec,
    res: &KernelResources,
    opts: &OccupancyOptions,
) -> Result<Occupancy, OccupancyError> {
    let r = rules(device, res, opts)?;
    let mut notes = Vec::new();

    // --- validation ------------------------------------------------------------------
    let max_wg =
        device.limits.max_threads_per_block.filter(|t| *t > 0).unwrap_or(MAX_WORKGROUP_SIZE);
    check_threads(device, res, opts, max_wg, "workgroup")?;
    let arch = res.regs_per_thread.unwrap_or(0);
    let agpr = res.agprs.unwrap_or(0);
    if arch > MAX_VGPRS_PER_WAVE {
        return Err(OccupancyError::Invalid(format!(
            "{arch} architectural VGPRs exceed the {MAX_VGPRS_PER_WAVE} a wave can address on {}",
            r.name
        )));
    }
    if agpr > 0 && !r.has_agprs {
        return Err(OccupancyError::Invalid(format!(
            "{} has no accumulation VGPRs (AGPRs), got {agpr}",
            r.name
        )));
    }
    if agpr > MAX_VGPRS_PER_WAVE {
        return Err(OccupancyError::Invalid(format!(
            "{agpr} AGPRs exceed the {MAX_VGPRS_PER_WAVE} a wave can address on {}",
            r.name
        )));
    }
    let lds = res.smem_bytes;
    if lds > r.lds_per_wg_max {
        return Err(OccupancyError::Invalid(format!(
            "{} of LDS per workgroup exceed the {} maximum on {} ({})",
            fmt_bytes(lds),
            fmt_bytes(r.lds_per_wg_max),
            r.name,
            device.name
        )));
    }

    // --- waves per SIMD from registers -----------------------------------------------
    let regs_known = res.regs_per_thread.is_some_and(|v| v > 0) || agpr > 0;
    let vgprs = if r.unified && agpr > 0 { arch.div_ceil(4) * 4 + agpr } else { arch.max(agpr) };
    let waves_vgpr = if regs_known {
        let w = waves_per_simd_with_vgprs(vgprs, r.granule, r.total_vgprs, r.max_waves);
        let what = if r.unified && agpr > 0 {
            format!("{vgprs} VGPRs ({arch} arch aligned to 4 + {agpr} AGPRs)")
        } else if agpr > 0 {
            format!("{vgprs} VGPRs (the larger of {arch} arch and {agpr} AGPRs, separate files)")
        } else {
            format!("{vgprs} VGPRs")
        };
        notes.push(format!(
            "registers: {what} -> {} per wave (granule {}) of {} per SIMD lane -> {w} waves \
             per SIMD (max {})",
            if vgprs < r.granule { r.granule } else { vgprs.div_ceil(r.granule) * r.granule },
            r.granule,
            r.total_vgprs,
            r.max_waves
        ));
        w
    } else {
        notes.push(
            "VGPR count unknown: the register limit is not applied (take arch_vgpr / \
             accum_vgpr from rocprof or the code object)"
                .to_string(),
        );
        r.max_waves
    };
    let waves_sgpr = match res.sgprs {
        Some(s) if r.sgpr_limited => {
            let w = waves_per_simd_with_sgprs(s).min(r.max_waves);
            if w < waves_vgpr {
                notes.push(format!("{s} SGPRs limit residency to {w} waves per SIMD"));
            }
            Some(w)
        }
        _ => None,
    };
    let waves_per_simd = waves_sgpr.map_or(waves_vgpr, |s| s.min(waves_vgpr));

    // --- workgroups per CU / WGP -----------------------------------------------------
    let simds = u64::from(r.simds);
    let max_waves = u64::from(r.max_waves);
    let n = div_ceil(u64::from(res.threads_per_block), u64::from(r.wave));
    let l_warps = max_waves * simds / n;
    let l_regs = (regs_known || waves_sgpr.is_some())
        .then(|| to_blocks(u64::from(waves_per_simd) * simds / n));
    // Single-wave workgroups use no barrier resources (LLVM getMaxWorkGroupsPerCU).
    let l_bars = (n > 1).then_some(to_blocks(r.barrier_cap));
    let lds_alloc = round_up(lds, LDS_GRANULE_BYTES);
    let l_lds = (lds_alloc > 0).then(|| to_blocks(r.lds_pool / lds_alloc));
    if lds > 0 {
        notes.push(format!(
            "LDS: {} -> {} allocated per workgroup (granule {LDS_GRANULE_BYTES} B), {} per {}",
            fmt_bytes(lds),
            fmt_bytes(lds_alloc),
            fmt_bytes(r.lds_pool),
            r.scope.as_str()
        ));
        if device.family == ArchFamily::Cdna4 {
            notes.push(
                "gfx950's LDS allocation granule may be 1280 B (320 dwords) in newer LLVM \
                 rather than 512 B (unverified, docs/reference/occupancy.md#amd)"
                    .to_string(),
            );
        }
    }
    let limits = vec![
        (Limiter::Warps, Some(to_blocks(l_warps))),
        (Limiter::Registers, l_regs),
        (Limiter::SharedMemory, l_lds),
        (Limiter::Barriers, l_bars),
    ];
    let (wgs, limiter, tie) = resolve(&limits);
    notes.extend(tie);
    if r.scope == Scope::Wgp {
        notes.push(
            "counts are per WGP (2 CUs, 4 SIMDs, 128 KiB LDS) in WGP mode, the HIP default"
                .to_string(),
        );
    }

    let active_waves = u64::from(wgs) * n;
    let resident_per_simd = u64::from(waves_per_simd).min(div_ceil(active_waves, simds));
    Ok(Occupancy {
        blocks_per_cu: wgs,
        active_warps_per_cu: to_blocks(active_waves),
        max_warps_per_cu: to_blocks(max_waves * simds),
        occupancy_pct: pct(resident_per_simd, max_waves),
        limiter,
        limits,
        estimate: false,
        notes,
        scope: r.scope,
        waves_per_simd: Some(to_blocks(resident_per_simd)),
        confidence: Confidence::High,
    })
}

#[cfg(test)]
// Tests state their expectation with unwrap: a failure is the test's message.
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_devices as dev;
    use super::super::{
        occupancy, occupancy_with, KernelResources, Limiter, OccupancyError, OccupancyOptions,
        Scope,
    };
    use super::*;

    const KIB: u64 = 1024;

    fn res(threads: u32, vgpr: u32, agpr: u32, sgpr: Option<u32>, lds: u64) -> KernelResources {
        KernelResources {
            threads_per_block: threads,
            regs_per_thread: Some(vgpr),
            agprs: Some(agpr),
            sgprs: sgpr,
            smem_bytes: lds,
            ..KernelResources::default()
        }
    }

    fn limit(o: &Occupancy, which: Limiter) -> Option<u32> {
        o.limits.iter().find(|(l, _)| *l == which).and_then(|(_, v)| *v)
    }

    #[test]
    fn a1_mi300x_agprs_and_lds() {
        // VGPRs: alignup(128, 4) + 128 = 256 -> 512 / 256 = 2 waves/SIMD; SGPR 80 -> 10,
        // capped at 8. N = 4 waves per WG. LDS 64 / 32 = 2; barriers 16; warps 32/4 = 8;
        // regs 2 * 4 / 4 = 2. WGs = 2 -> 8 waves per CU -> 2 per SIMD -> 2 / 8 = 25 %.
        let o = occupancy(&dev::mi300x(), &res(256, 128, 128, Some(80), 32 * KIB)).unwrap();
        assert_eq!(o.waves_per_simd, Some(2));
        assert_eq!(limit(&o, Limiter::SharedMemory), Some(2));
        assert_eq!(limit(&o, Limiter::Warps), Some(8));
        assert_eq!(limit(&o, Limiter::Registers), Some(2));
        assert_eq!(limit(&o, Limiter::Barriers), Some(16));
        assert_eq!(o.blocks_per_cu, 2);
        assert_eq!(o.active_warps_per_cu, 8);
        assert_eq!(o.max_warps_per_cu, 32);
        assert_eq!(o.occupancy_pct, 25.0);
        assert_eq!(o.limiter, Limiter::Registers);
        assert_eq!(o.scope, Scope::Cu);
    }

    #[test]
    fn a2_mi300x_64_vgprs_full_occupancy() {
        // 512 / 64 = 8 waves/SIMD; WGs min(8 warps, 8 regs, 16 barriers) = 8 -> 32 waves
        // -> 8 per SIMD -> 100 %.
        let o = occupancy(&dev::mi300x(), &res(256, 64, 0, Some(32), 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(8));
        assert_eq!(limit(&o, Limiter::SharedMemory), None);
        assert_eq!(o.blocks_per_cu, 8);
        assert_eq!(o.active_warps_per_cu, 32);
        assert_eq!(o.occupancy_pct, 100.0);
    }

    #[test]
    fn a3_mi300x_96_vgprs() {
        // alignup(96, 8) = 96; 512 / 96 = 5 waves/SIMD; WGs floor(5 * 4 / 4) = 5 ->
        // 20 waves -> 5 per SIMD -> 5 / 8 = 62.5 %.
        let o = occupancy(&dev::mi300x(), &res(256, 96, 0, Some(32), 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(5));
        assert_eq!(o.blocks_per_cu, 5);
        assert_eq!(o.active_warps_per_cu, 20);
        assert_eq!(o.occupancy_pct, 62.5);
        assert_eq!(o.limiter, Limiter::Registers);
    }

    #[test]
    fn a4_mi100_119_vgprs() {
        // gfx908 granule 4: alignup(119, 4) = 120; 256 / 120 = 2 waves/SIMD (max 10).
        // Warps limit floor(40 / 4) = 10 ("- / 10"). 2 / 10 = 20 % (ROCm MI100 doc).
        let o = occupancy(&dev::mi100(), &res(256, 119, 0, Some(32), 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(2));
        assert_eq!(limit(&o, Limiter::Warps), Some(10));
        assert_eq!(o.blocks_per_cu, 2);
        assert_eq!(o.max_warps_per_cu, 40);
        assert_eq!(o.occupancy_pct, 20.0);
    }

    #[test]
    fn a5_rx7900xtx_wave32_96_vgprs() {
        // 1536 / 96 = 16 waves/SIMD; N = 8; per WGP: warps 16 * 4 / 8 = 8, barriers 32
        // -> 8 WGs -> 64 waves -> 16 per SIMD -> 100 %.
        let o = occupancy(&dev::rx7900xtx(), &res(256, 96, 0, None, 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(16));
        assert_eq!(limit(&o, Limiter::Warps), Some(8));
        assert_eq!(limit(&o, Limiter::Barriers), Some(32));
        assert_eq!(o.blocks_per_cu, 8);
        assert_eq!(o.active_warps_per_cu, 64);
        assert_eq!(o.max_warps_per_cu, 64);
        assert_eq!(o.occupancy_pct, 100.0);
        assert_eq!(o.scope, Scope::Wgp);
    }

    #[test]
    fn a6_rx7900xtx_wave32_128_vgprs() {
        // alignup(128, 24) = 144; 1536 / 144 = 10 waves/SIMD; WGs floor(10 * 4 / 8) = 5
        // -> 40 waves -> 10 per SIMD -> 10 / 16 = 62.5 %.
        let o = occupancy(&dev::rx7900xtx(), &res(256, 128, 0, None, 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(10));
        assert_eq!(o.blocks_per_cu, 5);
        assert_eq!(o.active_warps_per_cu, 40);
        assert_eq!(o.occupancy_pct, 62.5);
        assert_eq!(o.limiter, Limiter::Registers);
    }

    #[test]
    fn a7_mi355x_160k_lds() {
        // 512 / 128 = 4 waves/SIMD; LDS 160 / 64 = 2 WGs -> 8 waves -> 2 per SIMD -> 25 %.
        let o = occupancy(&dev::mi355x(), &res(256, 128, 0, Some(32), 64 * KIB)).unwrap();
        assert_eq!(limit(&o, Limiter::SharedMemory), Some(2));
        assert_eq!(limit(&o, Limiter::Registers), Some(4));
        assert_eq!(o.blocks_per_cu, 2);
        assert_eq!(o.waves_per_simd, Some(2));
        assert_eq!(o.occupancy_pct, 25.0);
        assert_eq!(o.limiter, Limiter::SharedMemory);
        // 64 KiB would not fit twice on MI300X (pool 64 KiB).
        let o = occupancy(&dev::mi300x(), &res(256, 128, 0, Some(32), 64 * KIB)).unwrap();
        assert_eq!(o.blocks_per_cu, 1);
    }

    #[test]
    fn a8_mi300x_single_wave_skips_barrier_cap() {
        // alignup(256, 4) + 256 = 512 -> 1 wave/SIMD; SGPR 100 -> 8. N = 1: no barrier
        // limit, warps 32; regs 1 * 4 / 1 = 4 WGs -> 4 waves -> 1 per SIMD -> 12.5 %.
        let o = occupancy(&dev::mi300x(), &res(64, 256, 256, Some(100), 0)).unwrap();
        assert_eq!(limit(&o, Limiter::Barriers), None);
        assert_eq!(limit(&o, Limiter::Warps), Some(32));
        assert_eq!(o.blocks_per_cu, 4);
        assert_eq!(o.waves_per_simd, Some(1));
        assert_eq!(o.occupancy_pct, 12.5);
    }

    #[test]
    fn single_wave_workgroups_exceed_the_barrier_cap() {
        // 64 VGPRs, 64 threads: 8 waves/SIMD -> 32 single-wave WGs, above the 16-WG cap
        // that multi-wave WGs have.
        let o = occupancy(&dev::mi300x(), &res(64, 64, 0, Some(32), 0)).unwrap();
        assert_eq!(o.blocks_per_cu, 32);
        assert_eq!(o.occupancy_pct, 100.0);
        // 128 threads = 2 waves: capped at 16 WGs by barriers (= 32 / 2 by warps).
        let o = occupancy(&dev::mi300x(), &res(128, 32, 0, Some(32), 0)).unwrap();
        assert_eq!(o.blocks_per_cu, 16);
    }

    #[test]
    fn barrier_cap_binds_for_two_wave_workgroups_on_mi100() {
        // MI100: 24 VGPRs -> 256 / 24 = 10 waves/SIMD x 4 = 40 slots; 2-wave WGs: 20 by
        // warps and registers, 16 by barriers.
        let o = occupancy(&dev::mi100(), &res(128, 24, 0, Some(32), 0)).unwrap();
        assert_eq!(o.blocks_per_cu, 16);
        assert_eq!(o.limiter, Limiter::Barriers);
        // 32 waves over 4 SIMDs = 8 per SIMD of 10 -> 80 %.
        assert_eq!(o.occupancy_pct, 80.0);
    }

    #[test]
    fn sgpr_table_matches_llvm() {
        assert_eq!(waves_per_simd_with_sgprs(80), 10);
        assert_eq!(waves_per_simd_with_sgprs(81), 9);
        assert_eq!(waves_per_simd_with_sgprs(88), 9);
        assert_eq!(waves_per_simd_with_sgprs(100), 8);
        assert_eq!(waves_per_simd_with_sgprs(101), 7);
        // On gfx908 (10 waves max) 96 SGPRs limit to 8 waves.
        let o = occupancy(&dev::mi100(), &res(256, 24, 0, Some(96), 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(8));
        assert!(o.notes.iter().any(|n| n.contains("SGPRs limit")));
        // On gfx942 (8 max) only > 100 SGPRs bind: 7 waves.
        let o = occupancy(&dev::mi300x(), &res(256, 24, 0, Some(104), 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(7));
    }

    #[test]
    fn rdna3_ignores_sgprs_and_supports_wave64_and_cu_mode() {
        let mut r = res(256, 128, 0, Some(120), 0);
        let o = occupancy(&dev::rx7900xtx(), &r).unwrap();
        assert_eq!(o.waves_per_simd, Some(10));
        // wave64: 768 total, granule 12: alignup(128, 12) = 132 -> 768 / 132 = 5 waves;
        // N = 4 -> WGs floor(5 * 4 / 4) = 5 -> 20 waves -> 5 per SIMD -> 31.25 %.
        r.wave_size = Some(64);
        let o = occupancy(&dev::rx7900xtx(), &r).unwrap();
        assert_eq!(o.waves_per_simd, Some(5));
        assert_eq!(o.occupancy_pct, 31.25);
        // CU mode, wave32, 96 VGPRs: 16 waves/SIMD x 2 SIMDs = 32 slots / 8 = 4 WGs,
        // barrier cap 16, LDS pool 64 KiB: 20 KiB -> 3 WGs -> 24 waves -> 12 per SIMD.
        let cu_mode = OccupancyOptions { rdna_cu_mode: true, ..OccupancyOptions::default() };
        let r = res(256, 96, 0, None, 20 * KIB);
        let o = occupancy_with(&dev::rx7900xtx(), &r, &cu_mode).unwrap();
        assert_eq!(o.scope, Scope::Cu);
        assert_eq!(limit(&o, Limiter::Warps), Some(4));
        assert_eq!(limit(&o, Limiter::Barriers), Some(16));
        assert_eq!(limit(&o, Limiter::SharedMemory), Some(3));
        assert_eq!(o.blocks_per_cu, 3);
        assert_eq!(o.occupancy_pct, 75.0);
        // WGP mode: 128 KiB pool -> 6 WGs by LDS.
        let r = res(256, 96, 0, None, 20 * KIB);
        let o = occupancy(&dev::rx7900xtx(), &r).unwrap();
        assert_eq!(limit(&o, Limiter::SharedMemory), Some(6));
    }

    #[test]
    fn gfx1102_has_the_smaller_vgpr_file() {
        // RX 7600 (gfx1102), wave32, 128 VGPRs: alignup(128, 16) = 128 -> 1024 / 128 = 8
        // waves/SIMD (the 1.5x parts get 10).
        let mut d = dev::rx7900xtx();
        d.llvm_target = Some("gfx1102".to_string());
        let o = occupancy(&d, &res(256, 128, 0, None, 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(8));
        assert_eq!(o.occupancy_pct, 50.0);
    }

    #[test]
    fn gfx908_uses_separate_register_files() {
        // max(64, 128) = 128 -> alignup 128 -> 256 / 128 = 2 waves.
        let o = occupancy(&dev::mi100(), &res(256, 64, 128, Some(32), 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(2));
        // The same on gfx942 (unified): 64 + 128 = 192 -> 512 / 192 = 2.
        let o = occupancy(&dev::mi300x(), &res(256, 64, 128, Some(32), 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(2));
        // Unified-file alignment: 61 arch -> 64 + 64 AGPRs = 128 -> 4 waves.
        let o = occupancy(&dev::mi300x(), &res(256, 61, 64, Some(32), 0)).unwrap();
        assert_eq!(o.waves_per_simd, Some(4));
    }

    #[test]
    fn uneven_waves_round_up_per_simd() {
        // MI300X, 192 threads = 3 waves, 128 VGPRs -> 4 waves/SIMD; WGs floor(16 / 3) = 5
        // -> 15 waves over 4 SIMDs -> ceil = 4 per SIMD -> 50 % (rocprof-compute's
        // per-SIMD view; 15 / 32 waves per CU would be 46.9 %).
        let o = occupancy(&dev::mi300x(), &res(192, 128, 0, Some(32), 0)).unwrap();
        assert_eq!(o.blocks_per_cu, 5);
        assert_eq!(o.active_warps_per_cu, 15);
        assert_eq!(o.waves_per_simd, Some(4));
        assert_eq!(o.occupancy_pct, 50.0);
    }

    #[test]
    fn lds_granule_is_512_bytes() {
        // 1 B of LDS takes 512 B: 64 KiB / 512 = 128 WGs by LDS.
        let o = occupancy(&dev::mi300x(), &res(64, 32, 0, None, 1)).unwrap();
        assert_eq!(limit(&o, Limiter::SharedMemory), Some(128));
        // 16 KiB + 1 B -> 16.5 KiB -> 3 WGs.
        let o = occupancy(&dev::mi300x(), &res(64, 32, 0, None, 16 * KIB + 1)).unwrap();
        assert_eq!(limit(&o, Limiter::SharedMemory), Some(3));
    }

    #[test]
    fn invalid_inputs() {
        let d = dev::mi300x();
        assert!(matches!(occupancy(&d, &res(0, 32, 0, None, 0)), Err(OccupancyError::Invalid(_))));
        assert!(matches!(
            occupancy(&d, &res(1025, 32, 0, None, 0)),
            Err(OccupancyError::Invalid(_))
        ));
        assert!(matches!(
            occupancy(&d, &res(64, 257, 0, None, 0)),
            Err(OccupancyError::Invalid(_))
        ));
        assert!(matches!(
            occupancy(&d, &res(64, 32, 257, None, 0)),
            Err(OccupancyError::Invalid(_))
        ));
        let e = occupancy(&d, &res(64, 32, 0, None, 64 * KIB + 1)).unwrap_err();
        assert!(matches!(&e, OccupancyError::Invalid(m) if m.contains("LDS")), "{e}");
        let wave32 = KernelResources { wave_size: Some(32), ..res(64, 32, 0, None, 0) };
        assert!(matches!(occupancy(&d, &wave32), Err(OccupancyError::Invalid(_))));
        let agpr_on_rdna = res(64, 32, 8, None, 0);
        assert!(matches!(
            occupancy(&dev::rx7900xtx(), &agpr_on_rdna),
            Err(OccupancyError::Invalid(_))
        ));
    }

    #[test]
    fn unknown_registers_and_zero_lds() {
        let r = KernelResources { threads_per_block: 256, ..KernelResources::default() };
        let o = occupancy(&dev::mi300x(), &r).unwrap();
        assert_eq!(limit(&o, Limiter::Registers), None);
        assert_eq!(limit(&o, Limiter::SharedMemory), None);
        assert_eq!(o.blocks_per_cu, 8);
        assert_eq!(o.occupancy_pct, 100.0);
        assert!(o.notes.iter().any(|n| n.contains("unknown")));
    }
}
