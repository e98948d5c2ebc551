//! Tile, wave and dimension efficiency (TraceLens's GEMM analysis,
//! github.com/AMD-AGI/TraceLens/blob/main/docs/conceptual/gemm-analysis.md), the
//! PyTorch-to-BLAS M/N swap, and the launch-grid check;
//! derivations and worked examples in docs/reference/formulas.md.
//!
//! Formulas (TraceLens's steps 3-6, extended by batch and split-K), in the kernel's (BLAS)
//! view of M and N:
//!
//! ```text
//! tiles_m   = ceil(M / mt_m)            tiles_n = ceil(N / mt_n)
//! tile_eff  = (M * N) / (tiles_m * mt_m * tiles_n * mt_n)
//! num_tiles = tiles_m * tiles_n * batch * split_k
//! waves     = ceil(num_tiles / (num_cu * ctas_per_cu))
//! wq_eff    = num_tiles / (waves * num_cu * ctas_per_cu)
//! dim_eff   = tile_eff * wq_eff
//! ```
//!
//! Stream-K kernels balance K-iterations across CUs, so `waves` and `wq_eff` are None there and
//! `dim_eff = tile_eff` (docs/reference/kernel-names.md, split-K and stream-K). Integer counts use checked `u64` (padded sizes
//! `u128`); ratios are formed so that a value proven <= 1 in integers stays <= 1 in `f64`.

use serde::Serialize;

use super::{TileEfficiency, TileProblem};

/// PyTorch (row-major) matmul M, N -> the (M, N) a column-major BLAS kernel sees.
///
/// PyTorch computes a row-major `C = A @ B` (M x N) by asking cuBLAS / rocBLAS / hipBLASLt
/// for the column-major `C^T = B^T A^T` (N x M): in `aten/src/ATen/native/cuda/Blas.cpp`,
/// `prepare_matrix_for_cublas` finds the row-major result not column-major-usable, sets
/// `transpose_result`, swaps the operands and passes `m = result.size(1)`. So BLAS M = PyTorch
/// N and BLAS N = PyTorch M. This holds for the contiguous outputs of `aten::mm`, `addmm`,
/// `bmm` and `linear`; an output that is already column-major (stride(0) == 1) is not swapped.
pub fn blas_mn_from_torch(torch_m: u64, torch_n: u64) -> (u64, u64) {
    (torch_n, torch_m)
}

/// Tile and wave quantization efficiency (docs/reference/formulas.md).
///
/// `None` when any count is zero (m, n, batch, tile, num_cu, ctas_per_cu, split_k) or the
/// tile count does not fit in `u64`. Otherwise every efficiency is in (0, 1].
pub fn tile_efficiency(p: &TileProblem) -> Option<TileEfficiency> {
    if p.m == 0
        || p.n == 0
        || p.batch == 0
        || p.mt_m == 0
        || p.mt_n == 0
        || p.num_cu == 0
        || p.ctas_per_cu == 0
        || p.split_k == 0
    {
        return None;
    }
    let tiles_m = p.m.div_ceil(u64::from(p.mt_m));
    let tiles_n = p.n.div_ceil(u64::from(p.mt_n));
    let num_tiles =
        tiles_m.checked_mul(tiles_n)?.checked_mul(p.batch)?.checked_mul(u64::from(p.split_k))?;

    // (M / M_pad) * (N / N_pad): each factor is <= 1 because M <= M_pad, and u64 -> f64 is
    // monotonic, so the product stays in (0, 1] even where M * N would not fit in u64.
    let pad_m = u128::from(tiles_m) * u128::from(p.mt_m);
    let pad_n = u128::from(tiles_n) * u128::from(p.mt_n);
    let tile_eff = (p.m as f64 / pad_m as f64) * (p.n as f64 / pad_n as f64);

    let mut notes = Vec::new();
    if p.split_k > 1 {
        notes.push(format!("tile count includes split-K factor {}", p.split_k));
    }
    if p.stream_k {
        notes.push(
            "stream-K: K-iterations are balanced across CUs, wave quantization not modelled \
             (tile efficiency only)"
                .to_owned(),
        );
        return Some(TileEfficiency {
            mt_m: p.mt_m,
            mt_n: p.mt_n,
            tiles_m,
            tiles_n,
            num_tiles,
            tile_eff,
            waves: None,
            wq_eff: None,
            dim_eff: tile_eff,
            notes,
        });
    }

    // num_cu * ctas_per_cu < 2^64; waves * slots < num_tiles + slots < 2^65 fits u128.
    let slots = u64::from(p.num_cu) * u64::from(p.ctas_per_cu);
    let waves = num_tiles.div_ceil(slots);
    let capacity = u128::from(waves) * u128::from(slots);
    let wq_eff = num_tiles as f64 / capacity as f64;
    Some(TileEfficiency {
        mt_m: p.mt_m,
        mt_n: p.mt_n,
        tiles_m,
        tiles_n,
        num_tiles,
        tile_eff,
        waves: Some(waves),
        wq_eff: Some(wq_eff),
        dim_eff: tile_eff * wq_eff,
        notes,
    })
}

/// How a launch grid compares with the tile count: for a non-persistent kernel the launched
/// grid is the ground truth (docs/reference/kernel-names.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum GridCheck {
    /// `num_tiles == grid.x * grid.y * grid.z`.
    Matches,
    /// The grid is CUTLASS 2's threadblock swizzle of the tiles: `(tiles_n * s,
    /// ceil(tiles_m / s), batch * split)` or with M and N exchanged, `s` a power of two up to
    /// 16. cuBLAS's CUTLASS kernels launch this way (seen with `s` = 8 in the TraceLens H100
    /// goldens).
    Swizzled { swizzle: u32 },
    /// The grid is an exact multiple `factor > 1` of the tile count: consistent with a split-K
    /// the name did not state (hipBLASLt chooses GSU at run time).
    SplitK { factor: u64 },
    /// Neither: the tile, the M/N swap or the split assumption is wrong.
    Mismatch { expected_ctas: u64, launched_ctas: u64 },
    /// Persistent or stream-K kernel: the grid follows the CU count, not the tiles.
    NotApplicable,
}

impl GridCheck {
    /// Some(true) when the grid is explained by the tiles (exactly or swizzled), Some(false)
    /// when not, None when the check does not apply.
    pub fn matches(self) -> Option<bool> {
        match self {
            Self::Matches | Self::Swizzled { .. } => Some(true),
            Self::SplitK { .. } | Self::Mismatch { .. } => Some(false),
            Self::NotApplicable => None,
        }
    }
}

/// Checks a launch grid, in blocks (CTAs / workgroups), against the tiles of `eff`
/// (`num_tiles` already counts batch and split-K).
///
/// Pass `persistent` from [`super::GemmKernelInfo::persistent`]. For HIP traces whose grid is in
/// work-items, convert with [`grid_blocks_from_work_items`] first.
pub fn check_launch_grid(
    eff: &TileEfficiency,
    grid_blocks: [u64; 3],
    persistent: bool,
) -> GridCheck {
    if persistent {
        return GridCheck::NotApplicable;
    }
    let expected = eff.num_tiles;
    let launched =
        u128::from(grid_blocks[0]) * u128::from(grid_blocks[1]) * u128::from(grid_blocks[2]);
    if launched == u128::from(expected) {
        return GridCheck::Matches;
    }
    let per_z = eff.tiles_m.checked_mul(eff.tiles_n).filter(|&t| t > 0).map(|t| expected / t);
    if per_z == Some(grid_blocks[2]) {
        for log in 0..=4u32 {
            let s = 1u64 << log;
            let fits = |a: u64, b: u64| {
                a.checked_mul(s) == Some(grid_blocks[0]) && b.div_ceil(s) == grid_blocks[1]
            };
            if fits(eff.tiles_n, eff.tiles_m) || fits(eff.tiles_m, eff.tiles_n) {
                return GridCheck::Swizzled { swizzle: 1 << log };
            }
        }
    }
    let launched_ctas = u64::try_from(launched).unwrap_or(u64::MAX);
    if expected > 0 && launched > u128::from(expected) && launched % u128::from(expected) == 0 {
        return GridCheck::SplitK { factor: launched_ctas / expected };
    }
    GridCheck::Mismatch { expected_ctas: expected, launched_ctas }
}

/// Converts a grid given in work-items (HIP `hipExtModuleLaunchKernel` global size, as the
/// PyTorch profiler records it for hipBLASLt / Tensile kernels) into blocks. None when a
/// dimension is not a multiple of the block.
///
/// In the TraceLens MI300X goldens a `MT16x16x128` kernel with 256-thread workgroups records
/// grid `[73728, 1, 1]` = 288 workgroups = its 288 tiles.
pub fn grid_blocks_from_work_items(grid: [u64; 3], block: [u64; 3]) -> Option<[u64; 3]> {
    let mut out = [0u64; 3];
    for i in 0..3 {
        if block[i] == 0 || !grid[i].is_multiple_of(block[i]) {
            return None;
        }
        out[i] = grid[i] / block[i];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::gemm_tiles::parse_kernel_name;

    fn problem(m: u64, n: u64, mt_m: u32, mt_n: u32, num_cu: u32) -> TileProblem {
        TileProblem {
            m,
            n,
            batch: 1,
            mt_m,
            mt_n,
            num_cu,
            ctas_per_cu: 1,
            split_k: 1,
            stream_k: false,
        }
    }

    fn eff(p: &TileProblem) -> TileEfficiency {
        tile_efficiency(p).expect("valid problem")
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// TraceLens's GEMM-analysis example 1 (docs/reference/formulas.md): M=10240, N=2048,
    /// K=2048, MT256x64, 304 CUs.
    #[test]
    fn tracelens_example_1() {
        let e = eff(&problem(10240, 2048, 256, 64, 304));
        assert_eq!((e.tiles_m, e.tiles_n), (40, 32)); // 10240/256, 2048/64
        assert_eq!(e.num_tiles, 1280);
        assert!(close(e.tile_eff, 1.0));
        assert_eq!(e.waves, Some(5)); // ceil(1280/304) = ceil(4.21)
        let wq = e.wq_eff.expect("waves apply");
        assert!(close(wq, 1280.0 / 1520.0)); // 1280 / (5*304)
        assert!((wq - 0.842).abs() < 5e-4);
        assert!(close(e.dim_eff, 1280.0 / 1520.0));
    }

    /// TraceLens's GEMM-analysis example 2 (docs/reference/formulas.md): M=2048, N=10240,
    /// K=2048, MT256x144, 304 CUs.
    #[test]
    fn tracelens_example_2() {
        let e = eff(&problem(2048, 10240, 256, 144, 304));
        assert_eq!((e.tiles_m, e.tiles_n), (8, 72)); // 2048/256, ceil(71.11)
        assert_eq!(e.num_tiles, 576);
        let tile_eff = (2048.0 * 10240.0) / (2048.0 * 10368.0); // 72*144 = 10368
        assert!(close(e.tile_eff, tile_eff));
        assert!((e.tile_eff - 0.98765).abs() < 1e-5);
        assert_eq!(e.waves, Some(2)); // ceil(576/304) = ceil(1.895)
        let wq = e.wq_eff.expect("waves apply");
        assert!(close(wq, 576.0 / 608.0));
        assert!((wq - 0.947).abs() < 5e-4);
        assert!(close(e.dim_eff, tile_eff * 576.0 / 608.0));
        // 0.98765 * 0.94737 = 0.93567: TraceLens prints it truncated as 0.935.
        assert!((e.dim_eff - 0.9357).abs() < 5e-5);
    }

    #[test]
    fn batch_and_split_multiply_tiles() {
        let p = TileProblem {
            batch: 3,
            split_k: 4,
            ctas_per_cu: 2,
            ..problem(1000, 500, 128, 128, 100)
        };
        let e = eff(&p);
        // ceil(1000/128) = 8, ceil(500/128) = 4 -> 32 tiles * 3 * 4 = 384 over 200 slots.
        assert_eq!(e.num_tiles, 384);
        assert_eq!(e.waves, Some(2));
        assert!(close(e.wq_eff.expect("waves"), 384.0 / 400.0));
        assert!(e.notes.iter().any(|n| n.contains("split-K factor 4")));
    }

    #[test]
    fn stream_k_has_no_waves() {
        let p = TileProblem { stream_k: true, ..problem(2048, 10240, 256, 144, 304) };
        let e = eff(&p);
        assert_eq!((e.waves, e.wq_eff), (None, None));
        assert!(close(e.dim_eff, e.tile_eff));
        assert!(e.notes.iter().any(|n| n.contains("stream-K")));
    }

    #[test]
    fn zero_inputs_and_overflow_are_none() {
        let base = problem(1024, 1024, 128, 128, 304);
        for bad in [
            TileProblem { m: 0, ..base },
            TileProblem { n: 0, ..base },
            TileProblem { batch: 0, ..base },
            TileProblem { mt_m: 0, ..base },
            TileProblem { mt_n: 0, ..base },
            TileProblem { num_cu: 0, ..base },
            TileProblem { ctas_per_cu: 0, ..base },
            TileProblem { split_k: 0, ..base },
        ] {
            assert_eq!(tile_efficiency(&bad), None, "{bad:?}");
        }
        let huge = TileProblem { m: u64::MAX, n: u64::MAX, mt_m: 1, mt_n: 1, ..base };
        assert_eq!(tile_efficiency(&huge), None);
        let big_but_fine = TileProblem { m: u64::MAX, n: 1, mt_m: u32::MAX, mt_n: 1, ..base };
        let e = eff(&big_but_fine);
        assert!(e.tile_eff > 0.0 && e.tile_eff <= 1.0);
    }

    #[test]
    fn torch_to_blas_swap() {
        assert_eq!(blas_mn_from_torch(141, 30522), (30522, 141));
    }

    /// TraceLens MI300X golden (bert, `aten::addmm` M=141, N=30522, K=512):
    /// `Cijk_..._MT128x144x64_..._WG32_8_1`, grid [61184, 1, 1] work-items of 256 threads.
    #[test]
    fn grid_check_tensile_swapped_matches() {
        let info = parse_kernel_name("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x144x64_MI16x16x1_SN_LDSB1_GSUAMB_ISA942_SK0_WS64_WG32_8_1").expect("tensile");
        let p = info.tile_problem_from_torch(141, 30522, 1, 304, 1).expect("tile");
        assert_eq!((p.m, p.n), (30522, 141));
        let e = eff(&p);
        assert_eq!(e.num_tiles, 239); // ceil(30522/128) = 239, ceil(141/144) = 1
        let grid = grid_blocks_from_work_items([61184, 1, 1], [256, 1, 1]).expect("divides");
        assert_eq!(grid, [239, 1, 1]);
        assert_eq!(check_launch_grid(&e, grid, info.persistent), GridCheck::Matches);
        // Without the swap the tiles would be ceil(141/128) * ceil(30522/144) = 2 * 212 = 424.
        let unswapped = eff(&problem(141, 30522, 128, 144, 304));
        assert_eq!(unswapped.num_tiles, 424);
        assert!(matches!(check_launch_grid(&unswapped, grid, false), GridCheck::Mismatch { .. }));
    }

    /// TraceLens MI300X golden (Falconsai, `aten::addmm` M=4, N=768, K=768): `MT16x16x256`
    /// launched 36864 work-items / 256 = 144 workgroups for 48 tiles: GSU 3 chosen at run time.
    #[test]
    fn grid_check_reveals_run_time_split_k() {
        let (m, n) = blas_mn_from_torch(4, 768);
        let e = eff(&problem(m, n, 16, 16, 304));
        assert_eq!(e.num_tiles, 48); // 768/16 * ceil(4/16)
        let grid = grid_blocks_from_work_items([36864, 1, 1], [256, 1, 1]).expect("divides");
        assert_eq!(check_launch_grid(&e, grid, false), GridCheck::SplitK { factor: 3 });
    }

    /// TraceLens H100 goldens: cuBLAS's CUTLASS 2 kernels launch swizzled grids.
    #[test]
    fn grid_check_cutlass_swizzle() {
        // bert addmm M=141, N=30522: 256x128 tile, grid [16, 15, 1].
        let (m, n) = blas_mn_from_torch(141, 30522);
        let e = eff(&problem(m, n, 256, 128, 132));
        assert_eq!((e.tiles_m, e.tiles_n), (120, 2));
        // (2 * 8, 120 / 8): a swizzle whose product happens to equal the 240 tiles.
        assert_eq!(check_launch_grid(&e, [16, 15, 1], false), GridCheck::Matches);
        // bert addmm M=141, N=512: 32x32 tile, grid [40, 2, 1] = (5 * 8, ceil(16 / 8)).
        let (m, n) = blas_mn_from_torch(141, 512);
        let e = eff(&problem(m, n, 32, 32, 132));
        assert_eq!((e.tiles_m, e.tiles_n), (16, 5));
        assert_eq!(check_launch_grid(&e, [40, 2, 1], false).matches(), Some(true));
        // Falconsai addmm M=788, N=768: 128x64 tile, grid [104, 1, 1].
        let (m, n) = blas_mn_from_torch(788, 768);
        let e = eff(&problem(m, n, 128, 64, 132));
        assert_eq!((e.tiles_m, e.tiles_n), (6, 13));
        assert_eq!(check_launch_grid(&e, [104, 1, 1], false), GridCheck::Swizzled { swizzle: 8 });
        assert_eq!(check_launch_grid(&e, [104, 1, 1], true), GridCheck::NotApplicable);
    }

    /// TraceLens MI300X Inductor golden: `aten::mm` M=32768, N=8192, MT256x192, grid 1400832
    /// work-items of 256 = 5472 workgroups.
    #[test]
    fn grid_check_large_mm() {
        let (m, n) = blas_mn_from_torch(32768, 8192);
        let e = eff(&problem(m, n, 256, 192, 304));
        assert_eq!(e.num_tiles, 5472); // 8192/256 = 32, ceil(32768/192) = 171
        let grid = grid_blocks_from_work_items([1_400_832, 1, 1], [256, 1, 1]).expect("divides");
        assert_eq!(check_launch_grid(&e, grid, false).matches(), Some(true));
    }

    #[test]
    fn two_sm_counts_sm_pairs() {
        let info = parse_kernel_name("cutlass3x_sm100_tensorop_s256x256x16gemm_bf16_bf16_f32_void_f32_256x256x64_2x1x1_0_tnt_align8_2sm").expect("cutlass3");
        let p = info.tile_problem_from_torch(1024, 1024, 1, 148, 1).expect("tile");
        assert_eq!((p.m, p.n, p.mt_m, p.num_cu), (1024, 1024, 256, 74));
        let e = eff(&p);
        assert_eq!(e.num_tiles, 16); // 4 x 4 pair tiles on 74 pairs
        assert_eq!(e.waves, Some(1));
        assert_eq!(info.tile_problem_from_torch(1024, 1024, 1, 1, 1), None);
    }

    #[test]
    fn work_item_grid_must_divide() {
        assert_eq!(grid_blocks_from_work_items([100, 1, 1], [64, 1, 1]), None);
        assert_eq!(grid_blocks_from_work_items([128, 1, 1], [0, 1, 1]), None);
    }

    /// Independent exact tile count, None when it does not fit in u64.
    fn exact_tiles(p: &TileProblem) -> Option<u64> {
        let t = u128::from(p.m.div_ceil(u64::from(p.mt_m)))
            .checked_mul(u128::from(p.n.div_ceil(u64::from(p.mt_n))))?
            .checked_mul(u128::from(p.batch))?
            .checked_mul(u128::from(p.split_k))?;
        u64::try_from(t).ok()
    }

    const MAX: u64 = 1 << 40;

    proptest! {
        #[test]
        fn efficiencies_in_unit_interval(
            m in 1..=MAX, n in 1..=MAX, batch in 1..=MAX,
            mt_m in 1..=u32::MAX, mt_n in 1..=u32::MAX,
            num_cu in 1..=u32::MAX, ctas in 1..=u32::MAX, split in 1..=u32::MAX,
            stream_k in any::<bool>(),
        ) {
            let p = TileProblem { m, n, batch, mt_m, mt_n, num_cu, ctas_per_cu: ctas, split_k: split, stream_k };
            let r = tile_efficiency(&p);
            prop_assert_eq!(r.is_some(), exact_tiles(&p).is_some());
            if let Some(e) = r {
                prop_assert_eq!(Some(e.num_tiles), exact_tiles(&p));
                prop_assert!(e.tile_eff > 0.0 && e.tile_eff <= 1.0);
                prop_assert!(e.dim_eff > 0.0 && e.dim_eff <= 1.0);
                if let Some(wq) = e.wq_eff {
                    prop_assert!(wq > 0.0 && wq <= 1.0);
                    prop_assert!(e.waves.is_some_and(|w| w >= 1));
                } else {
                    prop_assert!(stream_k);
                }
            }
        }

        #[test]
        fn realistic_problems_always_give_a_result(
            m in 1..=(1u64 << 20), n in 1..=(1u64 << 20), batch in 1..=1024u64,
            mt_m in 1..=512u32, mt_n in 1..=512u32, num_cu in 1..=512u32,
            ctas in 1..=8u32, split in 1..=64u32,
        ) {
            let p = TileProblem { m, n, batch, mt_m, mt_n, num_cu, ctas_per_cu: ctas, split_k: split, stream_k: false };
            let e = tile_efficiency(&p);
            prop_assert!(e.is_some());
            if let Some(e) = e {
                prop_assert!(e.waves.is_some_and(|w| w >= 1));
                let waves = e.waves.unwrap_or(1);
                let slots = u64::from(num_cu) * u64::from(ctas);
                // waves is the least count that holds every tile.
                prop_assert!((waves - 1) * slots < e.num_tiles && e.num_tiles <= waves * slots);
            }
        }
    }
}
