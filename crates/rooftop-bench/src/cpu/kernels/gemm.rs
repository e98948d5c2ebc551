//! CPU implementations of `gemm` (row-major `C[m x n] = A[m x k] . B[k x n]`, fp32 and
//! fp64): ours, a BLIS-style blocked GEMM, and the `matrixmultiply` library's.
//!
//! Ours follows the loop structure of Goto and van de Geijn ("Anatomy of
//! high-performance matrix multiplication", ACM TOMS 34(3), 2008) as BLIS arranges it:
//!
//! ```text
//! for j0 in columns, NC at a time          B block (KC x NC) lives in the L3
//!   for p0 in depth, KC at a time          pack B[p0.., j0..] into NR-wide panels (parallel)
//!     for row blocks of MC rows (rayon)    pack A[i0.., p0..] into MR-tall panels (L2)
//!       for each NR panel of B             the B micro-panel (KC x NR) is reused from L1/L2
//!         for each MR panel of A           micro-kernel: MR x NR tile in registers
//! ```
//!
//! Parameters: MR x NR = 6 x 16 (fp32) / 6 x 8 (fp64) from the micro-kernel
//! (`microkernel.rs`, which also prefetches each C tile while it computes); MC <= 144 rows
//! (an A block of <= 288 KiB fp32 in a >= 512 KiB L2) and NC <= 4080 in equal column
//! blocks (the B block in the L3), as BLIS's Haswell/Zen 6x16 configuration
//! (`config/haswell/bli_cntx_init_haswell.c`); KC = 512 (fp32) / 256 (fp64), set by
//! `launch.tile`. BLIS uses KC = 256, keeping a 16 KiB B micro-panel in L1; on the 2-core
//! Zen 4 VM this was tuned on, fp32 ran 3-7% faster with 512 (C is read and written once
//! per depth block, and the VM's shared L3 does not hold it reliably), fp64 was best at
//! 256. Row blocks are the parallel tasks: their number is rounded up to a multiple of
//! the thread count (and MC shrunk accordingly) so that every thread gets the same
//! share; each task packs its own A block, all share the packed B block, and each
//! writes a disjoint band of rows of C.
//!
//! Edge tiles (m or n not multiples of MR or NR) are computed into a small buffer from
//! zero-padded panels and copied into C.

// m, n, k, a, b, c (and i, j, p) are the GEMM literature's names.
#![allow(clippy::many_single_char_names)]

#[path = "microkernel.rs"]
pub(super) mod microkernel;

use super::CpuKernel;
use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::error::BackendError;
use microkernel::{Isa, MR, NR_F32, NR_F64};
use rayon::prelude::*;

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[
    CpuKernel {
        kernel: "gemm",
        implementation: "rooftop",
        builtin: false,
        label: "rooftop blocked GEMM: packed A/B panels, 6x16 (fp32) / 6x8 (fp64) AVX2+FMA \
                micro-kernel, rayon over row blocks; tile = KC (depth block, default 512 fp32 / 256 fp64)",
        tiles: &[128, 256, 384, 512, 768],
        run: run_rooftop,
    },
    CpuKernel {
        kernel: "gemm",
        implementation: "matrixmultiply",
        builtin: true,
        label: "matrixmultiply 0.3 sgemm/dgemm (threading feature): its own thread pool of \
                MATMUL_NUM_THREADS threads (read once, at the first call), else the physical \
                core count, at most 4; the launch's thread count does not apply",
        tiles: &[],
        run: run_library,
    },
];

/// Largest row block.
const MC_MAX: usize = 144;
/// Column block (a multiple of both NRs).
const NC: usize = 4080;

/// The three matrices of a case, checked against its sizes.
fn dims(case: &Case, bufs: &[HostBuf]) -> Result<(usize, usize, usize), BackendError> {
    let (m, n, k) = (case.size_usize("m"), case.size_usize("n"), case.size_usize("k"));
    let want = [m.checked_mul(k), k.checked_mul(n), m.checked_mul(n)];
    if bufs.len() != 3 {
        return Err(BackendError::Other(format!("gemm takes 3 buffers, got {}", bufs.len())));
    }
    for (i, (buf, w)) in bufs.iter().zip(want).enumerate() {
        if Some(buf.len()) != w {
            return Err(BackendError::BufferMismatch {
                buffer: i as u32,
                expected: format!(
                    "{} elements",
                    w.map_or("too many".to_string(), |w| w.to_string())
                ),
                got: format!("{} elements", buf.len()),
            });
        }
    }
    Ok((m, n, k))
}

fn run_rooftop(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    let (m, n, k) = dims(case, bufs)?;
    let kc = match launch.tile {
        None => None,
        Some(t) if (8..=4096).contains(&t) => Some(t as usize),
        Some(t) => {
            return Err(BackendError::BadLaunch(format!(
                "gemm tile (depth block KC) must be in 8..=4096, got {t}"
            )))
        }
    };
    let isa = Isa::detect();
    match bufs {
        [HostBuf::F32(a), HostBuf::F32(b), HostBuf::F32(c)] => {
            gemm(isa, m, n, k, a, b, c, kc);
            Ok(())
        }
        [HostBuf::F64(a), HostBuf::F64(b), HostBuf::F64(c)] => {
            gemm(isa, m, n, k, a, b, c, kc);
            Ok(())
        }
        _ => Err(BackendError::Other("gemm buffers must be all f32 or all f64".to_string())),
    }
}

fn run_library(case: &Case, bufs: &mut [HostBuf], _launch: &Launch) -> Result<(), BackendError> {
    let (m, n, k) = dims(case, bufs)?;
    match bufs {
        [HostBuf::F32(a), HostBuf::F32(b), HostBuf::F32(c)] => {
            microkernel::library_sgemm(m, n, k, a, b, c);
            Ok(())
        }
        [HostBuf::F64(a), HostBuf::F64(b), HostBuf::F64(c)] => {
            microkernel::library_dgemm(m, n, k, a, b, c);
            Ok(())
        }
        _ => Err(BackendError::Other("gemm buffers must be all f32 or all f64".to_string())),
    }
}

/// An element type with a micro-kernel.
trait Elem: Copy + Default + Send + Sync + std::ops::Add<Output = Self> {
    /// Columns of the micro-tile.
    const NR: usize;
    /// Default depth block (see the module doc).
    const KC: usize;
    /// `c[MR x NR] (+)= a_panel . b_panel` (see `microkernel`).
    fn tile(isa: Isa, kc: usize, a: &[Self], b: &[Self], c: &mut [Self], ldc: usize, acc: bool);
}

impl Elem for f32 {
    const NR: usize = NR_F32;
    const KC: usize = 512;
    fn tile(isa: Isa, kc: usize, a: &[f32], b: &[f32], c: &mut [f32], ldc: usize, acc: bool) {
        microkernel::gemm_tile_f32(isa, kc, a, b, c, ldc, acc);
    }
}

impl Elem for f64 {
    const NR: usize = NR_F64;
    const KC: usize = 256;
    fn tile(isa: Isa, kc: usize, a: &[f64], b: &[f64], c: &mut [f64], ldc: usize, acc: bool) {
        microkernel::gemm_tile_f64(isa, kc, a, b, c, ldc, acc);
    }
}

/// Rows per parallel row block: at most `MC_MAX`, a multiple of `MR`, and a number of
/// blocks that is a multiple of `threads` where the rows allow it.
fn row_block(m: usize, threads: usize) -> usize {
    let panels = m.div_ceil(MR);
    let blocks = m.div_ceil(MC_MAX).next_multiple_of(threads.max(1)).clamp(1, panels.max(1));
    MR * panels.div_ceil(blocks)
}

/// `c = a . b` (row-major, `a` m x k, `b` k x n), blocked as the module doc says, with
/// depth blocks of `kc` (default `T::KC`).
#[allow(clippy::too_many_arguments)]
fn gemm<T: Elem>(
    isa: Isa,
    m: usize,
    n: usize,
    k: usize,
    a: &[T],
    b: &[T],
    c: &mut [T],
    kc: Option<usize>,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c.fill(T::default());
        return;
    }
    let nr = T::NR;
    let kc_blk = kc.unwrap_or(T::KC).min(k);
    // Column blocks of equal width (4096 columns: two of 2048, not 4080 + 16).
    let nc_blk = n.div_ceil(n.div_ceil(NC)).next_multiple_of(nr);
    let mc = row_block(m, rayon::current_num_threads());
    let mut bpack = vec![T::default(); kc_blk * nc_blk];
    for j0 in (0..n).step_by(nc_blk) {
        let nc = nc_blk.min(n - j0);
        let panels = nc.div_ceil(nr);
        for p0 in (0..k).step_by(kc_blk) {
            let kc = kc_blk.min(k - p0);
            let bp = &mut bpack[..panels * nr * kc];
            bp.par_chunks_mut(kc * nr).enumerate().for_each(|(jp, panel)| {
                let col0 = j0 + jp * nr;
                pack_b(b, n, p0, kc, col0, nr.min(j0 + nc - col0), nr, panel);
            });
            let bp = &bpack[..panels * nr * kc];
            let accumulate = p0 > 0;
            c.par_chunks_mut(mc * n).enumerate().for_each(|(blk, cblk)| {
                let rows = cblk.len() / n;
                let mut apack = vec![T::default(); rows.div_ceil(MR) * MR * kc];
                pack_a(a, k, blk * mc, rows, p0, kc, &mut apack);
                let block = Block { kc, nc, j0, ldc: n, rows, accumulate };
                macro_kernel(isa, &block, &apack, bp, cblk);
            });
        }
    }
}

/// Packs `a[i0..i0+rows][p0..p0+kc]` into MR-row panels (zero rows past `rows`): for
/// each panel, for each p, the MR values of column p.
fn pack_a<T: Elem>(
    a: &[T],
    lda: usize,
    i0: usize,
    rows: usize,
    p0: usize,
    kc: usize,
    out: &mut [T],
) {
    for (ip, panel) in out.chunks_exact_mut(MR * kc).enumerate() {
        for i in 0..MR {
            let r = ip * MR + i;
            if r < rows {
                let src = &a[(i0 + r) * lda + p0..][..kc];
                for (p, &v) in src.iter().enumerate() {
                    panel[p * MR + i] = v;
                }
            } else {
                for p in 0..kc {
                    panel[p * MR + i] = T::default();
                }
            }
        }
    }
}

/// Packs `b[p0..p0+kc][col0..col0+cols]` into one NR-wide panel (zero columns past
/// `cols`): for each p, NR contiguous values.
#[allow(clippy::too_many_arguments)]
fn pack_b<T: Elem>(
    b: &[T],
    ldb: usize,
    p0: usize,
    kc: usize,
    col0: usize,
    cols: usize,
    nr: usize,
    panel: &mut [T],
) {
    for (p, dst) in panel.chunks_exact_mut(nr).take(kc).enumerate() {
        let src = &b[(p0 + p) * ldb + col0..][..cols];
        dst[..cols].copy_from_slice(src);
        dst[cols..].fill(T::default());
    }
}

/// One row block's share of a (j0, p0) iteration.
struct Block {
    kc: usize,
    /// Columns of the column block, starting at `j0`.
    nc: usize,
    j0: usize,
    /// Row stride of C (= n).
    ldc: usize,
    /// Rows of this row block.
    rows: usize,
    /// Add to C (every depth block after the first) rather than overwrite it.
    accumulate: bool,
}

/// Runs the micro-kernel over every (NR panel of B, MR panel of A) pair of a row block;
/// `cblk` is the row block's band of C (`rows` full rows).
fn macro_kernel<T: Elem>(isa: Isa, blk: &Block, apack: &[T], bpack: &[T], cblk: &mut [T]) {
    let (nr, kc, ldc) = (T::NR, blk.kc, blk.ldc);
    let mut edge = [T::default(); MR * NR_F32];
    for (jp, bpanel) in bpack.chunks_exact(kc * nr).enumerate() {
        let col = blk.j0 + jp * nr;
        let cols = nr.min(blk.j0 + blk.nc - col);
        for (ip, apanel) in apack.chunks_exact(kc * MR).enumerate() {
            let row = ip * MR;
            let rows = MR.min(blk.rows - row);
            let off = row * ldc + col;
            if rows == MR && cols == nr {
                T::tile(isa, kc, apanel, bpanel, &mut cblk[off..], ldc, blk.accumulate);
            } else {
                T::tile(isa, kc, apanel, bpanel, &mut edge[..MR * nr], nr, false);
                for i in 0..rows {
                    let dst = &mut cblk[off + i * ldc..][..cols];
                    let src = &edge[i * nr..][..cols];
                    for (d, &s) in dst.iter_mut().zip(src) {
                        *d = if blk.accumulate { *d + s } else { s };
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact: small integers make every product and partial sum exact in fp32.
    fn naive(m: usize, n: usize, k: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0.0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k)
                    .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
                    .sum::<f64>() as f32;
            }
        }
        c
    }

    #[test]
    fn blocked_gemm_is_exact_on_small_integers_for_awkward_shapes() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for isa in [Isa::detect(), Isa::Portable] {
            for &(m, n, k, kc) in &[
                (1, 1, 1, 256),
                (7, 17, 5, 256),
                (13, 33, 300, 128),
                (6, 16, 256, 256),
                (50, 4100, 9, 8),
                (145, 20, 40, 16),
            ] {
                let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 + 3) % 11) as f32 - 5.0).collect();
                let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 + 1) % 9) as f32 - 4.0).collect();
                let mut c = vec![f32::NAN; m * n];
                pool.install(|| gemm(isa, m, n, k, &a, &b, &mut c, Some(kc)));
                assert_eq!(c, naive(m, n, k, &a, &b), "{isa:?} {m}x{n}x{k} kc={kc}");
                let a64: Vec<f64> = a.iter().map(|&x| f64::from(x)).collect();
                let b64: Vec<f64> = b.iter().map(|&x| f64::from(x)).collect();
                let mut c64 = vec![f64::NAN; m * n];
                pool.install(|| gemm(isa, m, n, k, &a64, &b64, &mut c64, Some(kc)));
                let want: Vec<f64> = naive(m, n, k, &a, &b).iter().map(|&x| f64::from(x)).collect();
                assert_eq!(c64, want, "{isa:?} fp64 {m}x{n}x{k}");
            }
        }
    }

    #[test]
    fn k_zero_gives_zeros() {
        let mut c = vec![f32::NAN; 6];
        gemm(Isa::detect(), 2, 3, 0, &[], &[], &mut c, None);
        assert_eq!(c, vec![0.0; 6]);
    }

    #[test]
    fn row_blocks_balance_threads() {
        // 2048 rows on 2 threads: 16 blocks of 132 rows (15 full + 68).
        assert_eq!(row_block(2048, 2), 132);
        assert_eq!(2048usize.div_ceil(row_block(2048, 2)), 16);
        // 128 rows on 2 threads: 2 blocks.
        assert_eq!(row_block(128, 2), 66);
        // Fewer panels than threads: one panel per block.
        assert_eq!(row_block(10, 8), 6);
        assert_eq!(row_block(1, 1), 6);
    }
}

#[cfg(test)]
mod harness_tests {
    use crate::backend::{Backend, Launch};
    use crate::case::Case;
    use crate::cpu::CpuBackend;
    use crate::harness::{run_case, TimingOptions};
    use crate::suite;
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    /// Both implementations pass the suite's check (f64 compensated reference, gamma_k
    /// tolerance) through the harness, in full and in a sampled case, with a tile.
    #[test]
    fn both_implementations_pass_the_suite_check() {
        let mut be = CpuBackend::new();
        let kernel = suite::find("gemm").unwrap();
        let opts = TimingOptions {
            min_runs: 1,
            min_time_s: 0.0,
            warmup_runs: 1,
            warmup_time_s: 0.0,
            ..TimingOptions::default()
        };
        for imp in be.implementations("gemm") {
            for (dtype, (m, n, k)) in
                [(Precision::Fp32, (37, 45, 300)), (Precision::Fp64, (130, 129, 1001))]
            {
                let case = Case {
                    kernel: "gemm",
                    sizes: vec![("m", m), ("n", n), ("k", k)],
                    dtype,
                    weights: None,
                    variant: None,
                };
                let launch = Launch { threads: Some(2), tile: Some(128), ..Launch::default() };
                let r = run_case(
                    &mut be,
                    kernel,
                    &case,
                    &imp,
                    Some(launch),
                    &opts,
                    &AtomicBool::new(false),
                    &mut |_| {},
                )
                .unwrap();
                assert!(r.check.passed, "{} {}: {:?}", imp.id, case.label(), r.check);
            }
        }
    }

    #[test]
    fn bad_tiles_are_errors_not_panics() {
        let mut be = CpuBackend::new();
        let kernel = suite::find("gemm").unwrap();
        let imp = be.implementations("gemm").remove(0);
        assert_eq!(imp.id, "rooftop");
        let case = Case {
            kernel: "gemm",
            sizes: vec![("m", 4), ("n", 4), ("k", 4)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        };
        let launch = Launch { tile: Some(3), ..Launch::default() };
        let r = run_case(
            &mut be,
            kernel,
            &case,
            &imp,
            Some(launch),
            &TimingOptions::default(),
            &AtomicBool::new(false),
            &mut |_| {},
        );
        assert!(r.is_err());
    }
}
