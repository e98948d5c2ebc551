//! SIMD micro-kernels of the CPU GEMM and FMA kernels, and the call into the
//! `matrixmultiply` library: the only `unsafe` code of the CPU kernels.
//!
//! Every function here is safe to call: the public wrappers check the slice lengths the
//! raw-pointer code relies on (a violation is a bug in the caller, so they assert), and
//! they enter a `#[target_feature]` function only after [`Isa::detect`] found the
//! feature with `is_x86_feature_detected!`.
//!
//! Why AVX2+FMA and not AVX-512: the workspace's minimum Rust is 1.85, and the AVX-512
//! intrinsics and `target_feature(enable = "avx512f")` are stable only since 1.89. On
//! Zen 4 this costs nothing (its two FMA pipes are 256 bits wide; AVX-512 is executed
//! double-pumped, AMD Zen 4 Software Optimization Guide, pub. 57647, §2.11); on Intel
//! server cores with two 512-bit FMA ports the kernels reach at most half the peak.
//!
//! Micro-kernel shapes (register blocking, 16 ymm registers): fp32 6x16 and fp64 6x8,
//! i.e. 6 rows x 2 vectors = 12 accumulators + 2 vectors of B + 1 broadcast of A. Twelve
//! independent FMA chains cover the FMA latency x throughput of current x86 cores
//! (4 cycles x 2 pipes = 8 on Zen 2-4 and Skylake to Raptor Lake). The portable fallback
//! computes the same tile shapes with plain arrays (separate multiply and add on x86
//! without FMA, `mul_add` on aarch64 where FMA is baseline).

#![allow(unsafe_code)]

/// The instruction set a kernel runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// x86-64 with AVX2 and FMA3 (256-bit vectors).
    Avx2Fma,
    /// Plain Rust that the compiler vectorises for the baseline target (SSE2 on x86-64,
    /// NEON on aarch64).
    Portable,
}

impl Isa {
    /// The best instruction set this CPU supports, detected at run time.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Isa::Avx2Fma;
            }
        }
        Isa::Portable
    }
}

/// Rows of the GEMM micro-tile.
pub const MR: usize = 6;
/// Columns of the fp32 micro-tile (two 8-lane vectors).
pub const NR_F32: usize = 16;
/// Columns of the fp64 micro-tile (two 4-lane vectors).
pub const NR_F64: usize = 8;

/// Independent accumulator chains of the FMA kernel (per block).
pub const FMA_CHAINS: usize = 12;

// ---------------------------------------------------------------------------------------
// GEMM micro-kernels: C[MR x NR] (+)= A_panel[kc x MR] . B_panel[kc x NR].
// `a` holds, for each p in 0..kc, the MR values A[i][p] (i = 0..MR); `b` holds, for each p,
// the NR values B[p][j]. C is given as MR row slices, the tile at `col` in each.
// ---------------------------------------------------------------------------------------

macro_rules! gemm_wrapper {
    ($name:ident, $t:ty, $nr:expr, $avx:ident, $portable:ident) => {
        /// Multiplies a packed `MR x kc` panel of A by a packed `kc x NR` panel of B into
        /// the `MR x NR` tile at column `col` of the first `MR` row slices of `c`, adding
        /// to it when `accumulate`, else overwriting it.
        pub fn $name(
            isa: Isa,
            kc: usize,
            a: &[$t],
            b: &[$t],
            c: &mut [&mut [$t]],
            col: usize,
            accumulate: bool,
        ) {
            assert!(a.len() >= kc * MR && b.len() >= kc * $nr, "packed panels too short");
            assert!(c.len() >= MR, "C tile needs {MR} rows");
            // Slicing checks that every row holds the tile's NR columns.
            let rows: [*mut $t; MR] = std::array::from_fn(|i| c[i][col..col + $nr].as_mut_ptr());
            match isa {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2Fma => {
                    // SAFETY: `Isa::Avx2Fma` is only produced by `Isa::detect` after
                    // `is_x86_feature_detected!("avx2")` and `("fma")` returned true; the
                    // asserts bound every read of `a` (kc*MR) and `b` (kc*NR), each row
                    // pointer addresses NR elements of its own (exclusively borrowed)
                    // row slice, and the rows are distinct slices, so they do not alias.
                    unsafe { $avx(kc, a.as_ptr(), b.as_ptr(), rows, accumulate) }
                }
                _ => $portable(kc, a, b, c, col, accumulate),
            }
        }
    };
}

gemm_wrapper!(gemm_tile_f32, f32, NR_F32, gemm_6x16_f32_avx2, gemm_portable_f32);
gemm_wrapper!(gemm_tile_f64, f64, NR_F64, gemm_6x8_f64_avx2, gemm_portable_f64);

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gemm_6x16_f32_avx2(
    kc: usize,
    a: *const f32,
    b: *const f32,
    c: [*mut f32; MR],
    accumulate: bool,
) {
    use std::arch::x86_64::{
        _mm256_add_ps, _mm256_broadcast_ss, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps,
        _mm256_storeu_ps, _mm_prefetch, _MM_HINT_T0,
    };
    // Fetch the C tile while the loop runs: its rows are far apart in C and often out
    // of cache, and the out-of-order window would reach the loads only after the loop.
    for &ci in &c {
        // SAFETY: both addresses lie inside row i's NR elements, which the caller
        // checked; a prefetch never faults anyway.
        _mm_prefetch::<_MM_HINT_T0>(ci.cast::<i8>());
        _mm_prefetch::<_MM_HINT_T0>(ci.add(NR_F32 - 1).cast::<i8>());
    }
    let mut acc = [[_mm256_setzero_ps(); 2]; MR];
    for p in 0..kc {
        // SAFETY (whole loop): p < kc, so b + p*16 + 15 < kc*16 and a + p*6 + 5 < kc*6,
        // both checked by the caller.
        let b0 = _mm256_loadu_ps(b.add(p * NR_F32));
        let b1 = _mm256_loadu_ps(b.add(p * NR_F32 + 8));
        for (i, row) in acc.iter_mut().enumerate() {
            let ai = _mm256_broadcast_ss(&*a.add(p * MR + i));
            row[0] = _mm256_fmadd_ps(ai, b0, row[0]);
            row[1] = _mm256_fmadd_ps(ai, b1, row[1]);
        }
    }
    for (&ci, row) in c.iter().zip(&acc) {
        // SAFETY: ci addresses NR = 16 elements, checked by the caller.
        if accumulate {
            _mm256_storeu_ps(ci, _mm256_add_ps(_mm256_loadu_ps(ci), row[0]));
            _mm256_storeu_ps(ci.add(8), _mm256_add_ps(_mm256_loadu_ps(ci.add(8)), row[1]));
        } else {
            _mm256_storeu_ps(ci, row[0]);
            _mm256_storeu_ps(ci.add(8), row[1]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gemm_6x8_f64_avx2(
    kc: usize,
    a: *const f64,
    b: *const f64,
    c: [*mut f64; MR],
    accumulate: bool,
) {
    use std::arch::x86_64::{
        _mm256_add_pd, _mm256_broadcast_sd, _mm256_fmadd_pd, _mm256_loadu_pd, _mm256_setzero_pd,
        _mm256_storeu_pd, _mm_prefetch, _MM_HINT_T0,
    };
    // Fetch the C tile while the loop runs: its rows are far apart in C and often out
    // of cache, and the out-of-order window would reach the loads only after the loop.
    for &ci in &c {
        // SAFETY: both addresses lie inside row i's NR elements, which the caller
        // checked; a prefetch never faults anyway.
        _mm_prefetch::<_MM_HINT_T0>(ci.cast::<i8>());
        _mm_prefetch::<_MM_HINT_T0>(ci.add(NR_F64 - 1).cast::<i8>());
    }
    let mut acc = [[_mm256_setzero_pd(); 2]; MR];
    for p in 0..kc {
        // SAFETY (whole loop): p < kc, so b + p*8 + 7 < kc*8 and a + p*6 + 5 < kc*6,
        // both checked by the caller.
        let b0 = _mm256_loadu_pd(b.add(p * NR_F64));
        let b1 = _mm256_loadu_pd(b.add(p * NR_F64 + 4));
        for (i, row) in acc.iter_mut().enumerate() {
            let ai = _mm256_broadcast_sd(&*a.add(p * MR + i));
            row[0] = _mm256_fmadd_pd(ai, b0, row[0]);
            row[1] = _mm256_fmadd_pd(ai, b1, row[1]);
        }
    }
    for (&ci, row) in c.iter().zip(&acc) {
        // SAFETY: ci addresses NR = 8 elements, checked by the caller.
        if accumulate {
            _mm256_storeu_pd(ci, _mm256_add_pd(_mm256_loadu_pd(ci), row[0]));
            _mm256_storeu_pd(ci.add(4), _mm256_add_pd(_mm256_loadu_pd(ci.add(4)), row[1]));
        } else {
            _mm256_storeu_pd(ci, row[0]);
            _mm256_storeu_pd(ci.add(4), row[1]);
        }
    }
}

macro_rules! gemm_portable {
    ($name:ident, $t:ty, $nr:expr) => {
        fn $name(kc: usize, a: &[$t], b: &[$t], c: &mut [&mut [$t]], col: usize, accumulate: bool) {
            let mut acc = [[0.0 as $t; $nr]; MR];
            for (ap, bp) in a.chunks_exact(MR).zip(b.chunks_exact($nr)).take(kc) {
                for (row, &ai) in acc.iter_mut().zip(ap) {
                    for (x, &bj) in row.iter_mut().zip(bp) {
                        *x = madd(ai, bj, *x);
                    }
                }
            }
            for (ci, row) in c.iter_mut().zip(&acc) {
                for (x, &v) in ci[col..col + $nr].iter_mut().zip(row) {
                    *x = if accumulate { *x + v } else { v };
                }
            }
        }
    };
}

gemm_portable!(gemm_portable_f32, f32, NR_F32);
gemm_portable!(gemm_portable_f64, f64, NR_F64);

/// `a * b + c`: fused where FMA is baseline (aarch64), else a multiply and an add (a
/// call to `fma()` in libm would be far slower than the two instructions).
#[inline]
fn madd<T: Madd>(a: T, b: T, c: T) -> T {
    T::madd(a, b, c)
}

trait Madd: Copy {
    fn madd(a: Self, b: Self, c: Self) -> Self;
}

impl Madd for f32 {
    #[inline]
    fn madd(a: f32, b: f32, c: f32) -> f32 {
        if cfg!(target_arch = "aarch64") {
            a.mul_add(b, c)
        } else {
            a * b + c
        }
    }
}

impl Madd for f64 {
    #[inline]
    fn madd(a: f64, b: f64, c: f64) -> f64 {
        if cfg!(target_arch = "aarch64") {
            a.mul_add(b, c)
        } else {
            a * b + c
        }
    }
}

// ---------------------------------------------------------------------------------------
// FMA throughput: x <- x * a + b, `iters` times, on FMA_CHAINS independent chains.
// ---------------------------------------------------------------------------------------

macro_rules! fma_wrappers {
    ($scalar:ident, $t:ty, $avx_s:ident) => {
        /// `x <- x * a + b` `iters` times on every element of `x` (`FMA_CHAINS`
        /// elements), one lane per instruction: the scalar FMA peak. (The vector peak is
        /// `cpu::kernels::fma`, at the widest SIMD level.)
        pub fn $scalar(isa: Isa, x: &mut [$t], a: $t, b: $t, iters: u64) {
            match isa {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2Fma if x.len() == FMA_CHAINS => {
                    // SAFETY: `Isa::Avx2Fma` comes from `Isa::detect` after
                    // `is_x86_feature_detected!("avx2")` and `("fma")`; `x` holds exactly
                    // FMA_CHAINS elements, all the kernel touches.
                    unsafe { $avx_s(x.as_mut_ptr(), a, b, iters) }
                }
                _ => fma_portable(x, a, b, iters),
            }
        }
    };
}

fma_wrappers!(fma_scalar_f32, f32, fma_scalar_f32_fma3);
fma_wrappers!(fma_scalar_f64, f64, fma_scalar_f64_fma3);

macro_rules! fma_scalar {
    ($scalar:ident, $t:ty, $sty:ident, $set_s:ident, $fmadd_s:ident, $cvt_s:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "fma")]
        unsafe fn $scalar(x: *mut $t, a: $t, b: $t, iters: u64) {
            use std::arch::x86_64::{$cvt_s, $fmadd_s, $set_s, $sty};
            // Scalar FMAs (vfmadd...ss/sd) on lane 0 of each register: one lane per
            // instruction, the other lanes are don't-care zeros.
            let av = $set_s(a);
            let bv = $set_s(b);
            let mut acc: [$sty; FMA_CHAINS] = [$set_s(0.0); FMA_CHAINS];
            for (i, v) in acc.iter_mut().enumerate() {
                // SAFETY: i < FMA_CHAINS = the length of x.
                *v = $set_s(*x.add(i));
            }
            for _ in 0..iters {
                for v in &mut acc {
                    *v = $fmadd_s(*v, av, bv);
                }
            }
            for (i, v) in acc.iter().enumerate() {
                // SAFETY: as for the loads.
                *x.add(i) = $cvt_s(*v);
            }
        }
    };
}

fma_scalar!(fma_scalar_f32_fma3, f32, __m128, _mm_set_ss, _mm_fmadd_ss, _mm_cvtss_f32);
fma_scalar!(fma_scalar_f64_fma3, f64, __m128d, _mm_set_sd, _mm_fmadd_sd, _mm_cvtsd_f64);

/// Portable chains: every element of `x` is its own chain (the compiler vectorises
/// across them where it can).
fn fma_portable<T: Madd>(x: &mut [T], a: T, b: T, iters: u64) {
    for _ in 0..iters {
        for v in x.iter_mut() {
            *v = madd(*v, a, b);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The matrixmultiply library (row-major C = A B).
// ---------------------------------------------------------------------------------------

macro_rules! library_gemm {
    ($name:ident, $t:ty, $lib:ident) => {
        #[doc = concat!(
                    "`c[m x n] = a[m x k] . b[k x n]`, all row-major, through `matrixmultiply::",
                    stringify!($lib),
                    "` (which runs on its own thread pool)."
                )]
        pub fn $name(m: usize, n: usize, k: usize, a: &[$t], b: &[$t], c: &mut [$t]) {
            assert!(
                a.len() >= m * k && b.len() >= k * n && c.len() >= m * n,
                "matrix buffers too short"
            );
            let (rsa, rsb, rsc) = (stride(k), stride(n), stride(n));
            // SAFETY: the asserts bound every element the library reads (a: m*k,
            // b: k*n) and writes (c: m*n) for row-major layouts with unit column stride;
            // `c` is exclusively borrowed, so it aliases neither input; beta = 0 means C
            // is not read.
            unsafe {
                matrixmultiply::$lib(
                    m,
                    k,
                    n,
                    1.0,
                    a.as_ptr(),
                    rsa,
                    1,
                    b.as_ptr(),
                    rsb,
                    1,
                    0.0,
                    c.as_mut_ptr(),
                    rsc,
                    1,
                );
            }
        }
    };
}

library_gemm!(library_sgemm, f32, sgemm);
library_gemm!(library_dgemm, f64, dgemm);

fn stride(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both instruction sets against hand-computed products: A = rows of (i+1), B =
    /// columns of (j+1) give C[i][j] = kc * (i+1) * (j+1).
    #[test]
    fn gemm_tile_matches_hand_arithmetic_on_every_isa() {
        for isa in [Isa::detect(), Isa::Portable] {
            let kc = 7;
            let a: Vec<f32> = (0..kc).flat_map(|_| (0..MR).map(|i| (i + 1) as f32)).collect();
            let b: Vec<f32> = (0..kc).flat_map(|_| (0..NR_F32).map(|j| (j + 1) as f32)).collect();
            let ldc = NR_F32 + 5;
            let mut c = vec![1.0f32; MR * ldc];
            let mut rows: Vec<&mut [f32]> = c.chunks_mut(ldc).collect();
            gemm_tile_f32(isa, kc, &a, &b, &mut rows, 3, true);
            for i in 0..MR {
                for j in 0..ldc {
                    let want = if (3..3 + NR_F32).contains(&j) {
                        1.0 + (kc * (i + 1) * (j - 2)) as f32
                    } else {
                        1.0
                    };
                    assert_eq!(c[i * ldc + j], want, "{isa:?} c[{i}][{j}]");
                }
            }
            let a: Vec<f64> = (0..kc).flat_map(|_| (0..MR).map(|i| (i + 1) as f64)).collect();
            let b: Vec<f64> = (0..kc).flat_map(|_| (0..NR_F64).map(|j| (j + 1) as f64)).collect();
            let mut c = vec![f64::NAN; MR * NR_F64];
            let mut rows: Vec<&mut [f64]> = c.chunks_mut(NR_F64).collect();
            gemm_tile_f64(isa, kc, &a, &b, &mut rows, 0, false);
            for i in 0..MR {
                for j in 0..NR_F64 {
                    assert_eq!(c[i * NR_F64 + j], (kc * (i + 1) * (j + 1)) as f64);
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn gemm_tile_refuses_short_rows() {
        let mut c = vec![0.0f32; MR * NR_F32];
        let mut rows: Vec<&mut [f32]> = c.chunks_mut(NR_F32).collect();
        // Column 1 would need 17 elements per row.
        gemm_tile_f32(Isa::detect(), 1, &[0.0; MR], &[0.0; NR_F32], &mut rows, 1, false);
    }

    /// x <- x*1 + 0.25 is exact: after n steps x0 + n/4.
    #[test]
    fn fma_chains_count_iterations() {
        for isa in [Isa::detect(), Isa::Portable] {
            let mut x: Vec<f64> = (0..FMA_CHAINS).map(|i| i as f64).collect();
            fma_scalar_f64(isa, &mut x, 1.0, 0.25, 8);
            assert!(x.iter().enumerate().all(|(i, &v)| v == i as f64 + 2.0), "{isa:?}");
            let mut x = vec![2.0f32; FMA_CHAINS];
            fma_scalar_f32(isa, &mut x, 2.0, 1.0, 3);
            assert!(x.iter().all(|&v| v == 23.0)); // 2 -> 5 -> 11 -> 23
        }
    }

    #[test]
    fn library_gemm_matches_hand_arithmetic() {
        // [1 2; 3 4] . [5 6; 7 8] = [19 22; 43 50]
        let mut c = [0.0f32; 4];
        library_sgemm(2, 2, 2, &[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], &mut c);
        assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
        let mut c = [0.0f64; 2];
        library_dgemm(1, 2, 3, &[1.0, 2.0, 3.0], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0], &mut c);
        assert_eq!(c, [4.0, 5.0]);
    }
}
