//! CPU implementations of `gemm` (row-major `C[m x n] = A[m x k] . B[k x n]`, fp32 and
//! fp64): ours, a BLIS-style blocked GEMM, and the `matrixmultiply` library's.
//!
//! Ours follows the loop structure of Goto and van de Geijn ("Anatomy of
//! high-performance matrix multiplication", ACM TOMS 34(3), 2008) as BLIS arranges it:
//!
//! ```text
//! for j0 in columns, NC at a time          B block (KC x NC) lives in the L3
//!   for p0 in depth, KC at a time          pack B[p0.., j0..] into NR-wide panels and
//!                                          A[.., p0..] into MR-tall panels (parallel)
//!     tasks = row blocks x column groups   rayon; a row block of A (MC x KC) sits in L2
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
//! 256. Tasks: row blocks, their number rounded up to a multiple of the thread count
//! (MC shrunk accordingly) so that every thread gets the same share; with fewer than 4
//! tasks per thread (few rows, such as a 128-token batch) each column block is also cut
//! into column groups of whole NR panels, so that a thread can take over the work of a
//! late or preempted peer. All tasks read the shared packed A and B; each writes its
//! own rows of C, cut to its columns (disjoint `&mut` slices, no shared writes).
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
use crate::suite::KernelId;
use microkernel::{Isa, MR, NR_F32, NR_F64};
use rayon::prelude::*;

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[
    CpuKernel {
        kernel: KernelId::Gemm,
        implementation: "rooftop",
        builtin: false,
        label: "rooftop blocked GEMM: packed A/B panels, 6x16 (fp32) / 6x8 (fp64) AVX2+FMA \
                micro-kernel, rayon over row blocks x column groups; tile = KC (depth block, default 512 fp32 / 256 fp64)",
        tiles: &[128, 256, 384, 512, 768],
        run: run_rooftop,
    },
    CpuKernel {
        kernel: KernelId::Gemm,
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
    /// `c[MR x NR] (+)= a_panel . b_panel` at column `col` of MR row slices (see
    /// `microkernel`).
    fn tile(
        isa: Isa,
        kc: usize,
        a: &[Self],
        b: &[Self],
        c: &mut [&mut [Self]],
        col: usize,
        acc: bool,
    );
}

impl Elem for f32 {
    const NR: usize = NR_F32;
    const KC: usize = 512;
    fn tile(
        isa: Isa,
        kc: usize,
        a: &[f32],
        b: &[f32],
        c: &mut [&mut [f32]],
        col: usize,
        acc: bool,
    ) {
        microkernel::gemm_tile_f32(isa, kc, a, b, c, col, acc);
    }
}

impl Elem for f64 {
    const NR: usize = NR_F64;
    const KC: usize = 256;
    fn tile(
        isa: Isa,
        kc: usize,
        a: &[f64],
        b: &[f64],
        c: &mut [&mut [f64]],
        col: usize,
        acc: bool,
    ) {
        microkernel::gemm_tile_f64(isa, kc, a, b, c, col, acc);
    }
}

/// How a (column block, depth block) iteration is split into parallel tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Split {
    /// Rows per row block (a multiple of MR, at most `MC_MAX`).
    mc: usize,
    /// Column groups per column block.
    groups: usize,
}

/// Row blocks of at most `MC_MAX` rows, their number rounded up to a multiple of the
/// thread count where the rows allow it; when that gives fewer than 4 tasks per thread
/// (few rows: an LLM's 128-token batch), each column block is also split into column
/// groups (of whole NR panels), so that threads can balance a late or preempted peer.
fn split(m: usize, panels_n: usize, threads: usize) -> Split {
    let threads = threads.max(1);
    let panels_m = m.div_ceil(MR).max(1);
    let blocks = m.div_ceil(MC_MAX).next_multiple_of(threads).clamp(1, panels_m);
    let mc = MR * panels_m.div_ceil(blocks);
    let blocks = m.div_ceil(mc).max(1);
    let groups = (4 * threads).div_ceil(blocks).clamp(1, panels_n.max(1));
    Split { mc, groups }
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
    let threads = rayon::current_num_threads();
    let mut bpack = vec![T::default(); kc_blk * nc_blk];
    let mut apack = vec![T::default(); m.div_ceil(MR) * MR * kc_blk];
    for j0 in (0..n).step_by(nc_blk) {
        let nc = nc_blk.min(n - j0);
        let panels = nc.div_ceil(nr);
        let Split { mc, groups } = split(m, panels, threads);
        // Panels per column group.
        let gp = panels.div_ceil(groups);
        for p0 in (0..k).step_by(kc_blk) {
            let kc = kc_blk.min(k - p0);
            let bp = &mut bpack[..panels * nr * kc];
            bp.par_chunks_mut(kc * nr).enumerate().for_each(|(jp, panel)| {
                let col0 = j0 + jp * nr;
                pack_b(b, n, p0, kc, col0, nr.min(j0 + nc - col0), nr, panel);
            });
            let ap = &mut apack[..m.div_ceil(MR) * MR * kc];
            ap.par_chunks_mut(kc * MR).enumerate().for_each(|(ip, panel)| {
                pack_a(a, k, ip * MR, m, p0, kc, panel);
            });
            // Each task's C: the rows of its row block, each cut to its column group.
            let mut tasks: Vec<Task<'_, T>> = Vec::new();
            for (blk, band) in c.chunks_mut(mc * n).enumerate() {
                let mut per_group: Vec<Vec<&mut [T]>> = (0..groups).map(|_| Vec::new()).collect();
                for row in band.chunks_mut(n) {
                    let mut rest = &mut row[j0..j0 + nc];
                    for g in &mut per_group {
                        let (head, tail) = rest.split_at_mut((gp * nr).min(rest.len()));
                        g.push(head);
                        rest = tail;
                    }
                }
                for (g, rows) in per_group.into_iter().enumerate() {
                    if g * gp < panels {
                        tasks.push(Task { blk, g, rows });
                    }
                }
            }
            let (ap, bp) = (&apack[..], &bpack[..panels * nr * kc]);
            let block_len = mc * kc; // packed A of one row block (mc is a multiple of MR)
            tasks.into_par_iter().for_each(|mut t| {
                let a_blk = &ap[t.blk * block_len..][..t.rows.len().div_ceil(MR) * MR * kc];
                let b_grp = &bp[t.g * gp * nr * kc..][..(gp.min(panels - t.g * gp)) * nr * kc];
                macro_kernel(isa, kc, p0 > 0, a_blk, b_grp, &mut t.rows);
            });
        }
    }
}

/// One parallel task: row block `blk`, column group `g`, and its rows of C.
struct Task<'c, T> {
    blk: usize,
    g: usize,
    rows: Vec<&'c mut [T]>,
}

/// Packs rows `i0..i0+MR` of `a[..][p0..p0+kc]` (zero rows at and past `m`) into one
/// MR-row panel: for each p, the MR values of column p.
fn pack_a<T: Elem>(
    a: &[T],
    lda: usize,
    i0: usize,
    m: usize,
    p0: usize,
    kc: usize,
    panel: &mut [T],
) {
    for i in 0..MR {
        let r = i0 + i;
        if r < m {
            let src = &a[r * lda + p0..][..kc];
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

/// Runs the micro-kernel over every (NR panel of B, MR panel of A) pair of a task:
/// `rows` are its rows of C, each cut to the task's columns; `accumulate` adds to C
/// (every depth block after the first) rather than overwriting it.
fn macro_kernel<T: Elem>(
    isa: Isa,
    kc: usize,
    accumulate: bool,
    apack: &[T],
    bpack: &[T],
    rows: &mut [&mut [T]],
) {
    let nr = T::NR;
    let (width, nrows) = (rows.first().map_or(0, |r| r.len()), rows.len());
    let mut edge = [[T::default(); NR_F32]; MR];
    for (jp, bpanel) in bpack.chunks_exact(kc * nr).enumerate() {
        let col = jp * nr;
        let cols = nr.min(width - col);
        for (ip, apanel) in apack.chunks_exact(kc * MR).enumerate() {
            let tile = &mut rows[ip * MR..nrows.min(ip * MR + MR)];
            if tile.len() == MR && cols == nr {
                T::tile(isa, kc, apanel, bpanel, tile, col, accumulate);
            } else {
                let mut tmp = edge.each_mut().map(|r| &mut r[..]);
                T::tile(isa, kc, apanel, bpanel, &mut tmp, 0, false);
                for (dst, src) in tile.iter_mut().zip(&edge) {
                    for (d, &s) in dst[col..col + cols].iter_mut().zip(src) {
                        *d = if accumulate { *d + s } else { s };
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
    fn splits_balance_threads() {
        // 2048 rows on 2 threads: 16 row blocks of 132 rows (15 full + 68), 1 group.
        assert_eq!(split(2048, 128, 2), Split { mc: 132, groups: 1 });
        // 128 rows on 2 threads: 2 row blocks of 66, 4 column groups (8 tasks).
        assert_eq!(split(128, 128, 2), Split { mc: 66, groups: 4 });
        // 128 rows on 16 threads: 11 blocks of 12 rows, 6 groups (66 tasks).
        assert_eq!(split(128, 128, 16), Split { mc: 12, groups: 6 });
        // Fewer panels than threads: one panel per block, groups capped by panels.
        assert_eq!(split(10, 1, 8), Split { mc: 6, groups: 1 });
        assert_eq!(split(1, 3, 1), Split { mc: 6, groups: 3 });
    }
}

#[cfg(test)]
mod harness_tests {
    use crate::backend::{Backend, Launch};
    use crate::case::Case;
    use crate::cpu::CpuBackend;
    use crate::harness::{run_case, TimingOptions};
    use crate::suite::KernelId;
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    /// Both implementations pass the suite's check (f64 compensated reference, gamma_k
    /// tolerance) through the harness, in full and in a sampled case, with a tile.
    #[test]
    fn both_implementations_pass_the_suite_check() {
        let mut be = CpuBackend::new();
        let kernel = KernelId::Gemm.def();
        let opts = TimingOptions {
            min_runs: 1,
            min_time_s: 0.0,
            warmup_runs: 1,
            warmup_time_s: 0.0,
            ..TimingOptions::default()
        };
        for imp in be.implementations(KernelId::Gemm.into()) {
            for (dtype, (m, n, k)) in
                [(Precision::Fp32, (37, 45, 300)), (Precision::Fp64, (130, 129, 1001))]
            {
                let case = Case {
                    kernel: KernelId::Gemm.into(),
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
        let kernel = KernelId::Gemm.def();
        let imp = be.implementations(KernelId::Gemm.into()).remove(0);
        assert_eq!(imp.id, "rooftop");
        let case = Case {
            kernel: KernelId::Gemm.into(),
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
