//! Runtime-dispatched SIMD for the CPU kernels.
//!
//! Kernel bodies are plain safe Rust written so that LLVM vectorises them: fixed-width
//! lane arrays for reductions, no early exits, no libm calls in hot loops. A body is a
//! [`Body`] whose `run` is `#[inline(always)]`; [`run`] inlines it into one of three
//! `#[target_feature]` functions — AVX-512 (F, BW, VL, DQ), AVX2 + FMA, or the SSE2
//! baseline of x86-64 — so the same source is compiled three times, and calls the widest
//! one the CPU supports. Helpers that bodies call in hot loops ([`Real::exp`],
//! [`f16_to_f32`], [`sum_lanes`]) are `#[inline(always)]` too, so they are compiled with
//! the caller's features.
//!
//! AVX-512 needs Rust 1.89 (its `target_feature` names and intrinsics were stabilised
//! then), hence the workspace's `rust-version = "1.89"`.
//!
//! This is the only module allowed `unsafe`: calling a `#[target_feature]` function is
//! unsafe because running it on a CPU without the feature is undefined behaviour, and
//! every such call below sits behind the `is_x86_feature_detected!` checks of
//! [`Level::supported`].
//!
//! Multiply-add policy ([`Fma`]): `f32::mul_add` is one instruction where FMA is enabled
//! and a libm call where it is not, so bodies take the policy as a type parameter:
//! [`Fused`] in the AVX2 and AVX-512 builds, [`Unfused`] (`a * b + c`, two roundings) in
//! the baseline build.
//!
//! The exponential is Cephes' `expf` scheme (Cody–Waite range reduction by ln 2, a
//! degree-7 polynomial, the power of two built in the exponent bits; about 2 ulp in f32),
//! and for f64 the same reduction with the degree-13 Taylor polynomial (|r| ≤ ln2/2, so
//! the truncation error is below r¹⁴/14! < 2e-16 relative).

#![allow(unsafe_code)]
// `inline(always)` is the mechanism here: a body must be inlined into the
// `#[target_feature]` function to be compiled for that feature set.
#![allow(clippy::inline_always)]
// x, t, n, r, p: the names of the exp reduction's formula.
#![allow(clippy::many_single_char_names)]

use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

/// A SIMD instruction-set level of the CPU kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// AVX-512 F/BW/VL/DQ with FMA: 512-bit vectors.
    Avx512,
    /// AVX2 with FMA: 256-bit vectors.
    Avx2,
    /// The x86-64 baseline (SSE2, 128-bit vectors, no FMA), or scalar code elsewhere.
    Base,
}

impl Level {
    /// The widest level this CPU supports.
    pub(crate) fn detect() -> Level {
        [Level::Avx512, Level::Avx2].into_iter().find(|l| l.supported()).unwrap_or(Level::Base)
    }

    /// Every level this CPU supports, widest first (tests run each).
    #[cfg(test)]
    pub(crate) fn available() -> Vec<Level> {
        [Level::Avx512, Level::Avx2, Level::Base].into_iter().filter(|l| l.supported()).collect()
    }

    /// True when the CPU has every feature the level's build enables.
    pub(crate) fn supported(self) -> bool {
        match self {
            Level::Base => true,
            #[cfg(target_arch = "x86_64")]
            Level::Avx512 => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vl")
                    && is_x86_feature_detected!("avx512dq")
                    && Level::Avx2.supported()
            }
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => {
                is_x86_feature_detected!("avx")
                    && is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// A kernel body: runs once, compiled for the level [`run`] picks.
pub(crate) trait Body {
    type Output;
    /// The body; `M` is the multiply-add policy of the build it is inlined into. Mark
    /// implementations `#[inline(always)]`, or they are compiled for the baseline only.
    fn run<M: Fma>(self) -> Self::Output;
}

/// Runs `body` compiled for `level`, or for the widest supported level below it when the
/// CPU lacks `level`'s features.
#[inline]
pub(crate) fn run<B: Body>(level: Level, body: B) -> B::Output {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx,avx2,fma")]
        unsafe fn avx512<B: Body>(body: B) -> B::Output {
            body.run::<Fused>()
        }
        #[target_feature(enable = "avx,avx2,fma")]
        unsafe fn avx2<B: Body>(body: B) -> B::Output {
            body.run::<Fused>()
        }
        if level == Level::Avx512 && Level::Avx512.supported() {
            // SAFETY: `Level::Avx512.supported()` has just checked with
            // `is_x86_feature_detected!` every feature `avx512` enables (avx512f/bw/vl/dq,
            // avx, avx2, fma).
            return unsafe { avx512(body) };
        }
        if matches!(level, Level::Avx512 | Level::Avx2) && Level::Avx2.supported() {
            // SAFETY: `Level::Avx2.supported()` has just checked with
            // `is_x86_feature_detected!` every feature `avx2` enables (avx, avx2, fma).
            return unsafe { avx2(body) };
        }
    }
    let _ = level;
    body.run::<Unfused>()
}

/// Multiply-add policy of a build (see the module docs).
pub(crate) trait Fma {
    fn mul_add_f32(a: f32, b: f32, c: f32) -> f32;
    fn mul_add_f64(a: f64, b: f64, c: f64) -> f64;
}

/// `a * b + c` in one FMA instruction (only instantiated in FMA-enabled builds).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fused;

/// `a * b + c` as a multiply and an add (the baseline build has no FMA instruction).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unfused;

impl Fma for Fused {
    #[inline(always)]
    fn mul_add_f32(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    fn mul_add_f64(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

impl Fma for Unfused {
    #[inline(always)]
    fn mul_add_f32(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }
    #[inline(always)]
    fn mul_add_f64(a: f64, b: f64, c: f64) -> f64 {
        a * b + c
    }
}

/// Elements per lane array of the reductions: 64 f32 fill 4 AVX-512, 8 AVX2 or 16 SSE
/// registers, enough independent add chains to hide the add latency.
pub(crate) const LANES: usize = 64;

/// The floating-point element types of the kernels (f32 and f64).
pub(crate) trait Real:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::fmt::Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// `self * b + c` under policy `M`.
    fn mul_add<M: Fma>(self, b: Self, c: Self) -> Self;
    /// The larger of two numbers (a compare and select, which vectorises to one max).
    #[inline(always)]
    fn max_of(self, other: Self) -> Self {
        if self > other {
            self
        } else {
            other
        }
    }
    /// Square root (one instruction).
    fn sqrt(self) -> Self;
    /// `e^self`, vectorisable (see the module docs for the accuracy). Arguments are
    /// clamped to the finite range: below about -87 (f32) or -708 (f64) the result is the
    /// smallest normal instead of a subnormal or zero, above 88 / 709 it saturates.
    fn exp(self) -> Self;
}

impl Real for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    #[inline(always)]
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn mul_add<M: Fma>(self, b: f32, c: f32) -> f32 {
        M::mul_add_f32(self, b, c)
    }
    #[inline(always)]
    fn sqrt(self) -> f32 {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn exp(self) -> f32 {
        exp_f32(self)
    }
}

impl Real for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    #[inline(always)]
    fn from_f64(x: f64) -> f64 {
        x
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn mul_add<M: Fma>(self, b: f64, c: f64) -> f64 {
        M::mul_add_f64(self, b, c)
    }
    #[inline(always)]
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn exp(self) -> f64 {
        exp_f64(self)
    }
}

/// 1.5 * 2^23: adding it to |v| < 2^22 rounds v to an integer held in the low mantissa
/// bits (no conversion instruction needed).
const ROUND_F32: f32 = 12_582_912.0;
/// 1.5 * 2^52, the same for f64.
const ROUND_F64: f64 = 6_755_399_441_055_744.0;
/// Cephes `expf` polynomial for e^r on |r| <= ln2/2, highest degree first (degrees 7..2
/// of `1 + r + r^2 p(r)`).
const EXPF_POLY: [f32; 6] =
    [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_6e-1, 0.5];
/// 1/i! for i = 0..=13: the Taylor polynomial of e^r, whose remainder on |r| <= ln2/2 is
/// below 0.35^14/14! < 2e-16 relative.
const INV_FACT: [f64; 14] = [
    1.0,
    1.0,
    0.5,
    1.666_666_666_666_666_6e-1,
    4.166_666_666_666_666_4e-2,
    8.333_333_333_333_333e-3,
    1.388_888_888_888_889e-3,
    1.984_126_984_126_984e-4,
    2.480_158_730_158_73e-5,
    2.755_731_922_398_589_3e-6,
    2.755_731_922_398_589e-7,
    2.505_210_838_544_172e-8,
    2.087_675_698_786_81e-9,
    1.605_904_383_682_161_3e-10,
];

/// `e^x` in f32, branch-free (Cephes `expf`): `x = n ln2 + r`, `e^r` by a polynomial,
/// `2^n` written into the exponent bits.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    // e^88 < f32::MAX; e^-87 > the smallest normal, so 2^n below stays a normal number.
    let x = x.max_of(-87.0).min_of(88.0);
    let t = x * std::f32::consts::LOG2_E + ROUND_F32;
    let n = t - ROUND_F32;
    // Cody–Waite: ln2 = 0.693359375 (few mantissa bits: n * it is exact) - 2.12194e-4.
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut p = EXPF_POLY[0];
    for c in &EXPF_POLY[1..] {
        p = p * r + c;
    }
    let er = p * r * r + r + 1.0;
    // t's bits are 0x4B40_0000 + n; the exponent field of 2^n is n + 127.
    let pow2 = f32::from_bits(t.to_bits().wrapping_sub(0x4B40_0000 - 127) << 23);
    er * pow2
}

/// `e^x` in f64, branch-free: the reduction of [`exp_f32`] with the degree-13 Taylor
/// polynomial of `e^r` for |r| ≤ ln2/2.
#[inline(always)]
pub(crate) fn exp_f64(x: f64) -> f64 {
    let x = x.max_of(-708.0).min_of(709.0);
    let t = x * std::f64::consts::LOG2_E + ROUND_F64;
    let n = t - ROUND_F64;
    // ln2 = 0.6931471803691238 (n * it is exact) + 1.9082149292705877e-10.
    let r = x - n * 0.693_147_180_369_123_8 - n * 1.908_214_929_270_587_7e-10;
    let mut p = INV_FACT[13];
    for c in INV_FACT[..13].iter().rev() {
        p = p * r + c;
    }
    let pow2 = f64::from_bits(t.to_bits().wrapping_sub(0x4338_0000_0000_0000 - 1023) << 52);
    p * pow2
}

/// Compare-and-select minimum (vectorises to one `min`), for the exp clamps.
trait MinOf: Real {
    #[inline(always)]
    fn min_of(self, other: Self) -> Self {
        if self < other {
            self
        } else {
            other
        }
    }
}
impl<T: Real> MinOf for T {}

/// IEEE binary16 bits to f32, branch-free (F. Giesen's `half_to_float_fast`): the 15
/// magnitude bits shifted into an f32 and rescaled by 2^112 give normals and subnormals
/// exactly; infinities and NaNs get the all-ones exponent.
#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let magnitude = f32::from_bits((h & 0x7FFF) << 13) * f32::from_bits(0x7780_0000); // 2^112
    let inf_nan = if h & 0x7C00 == 0x7C00 { 0x7F80_0000 } else { 0 };
    f32::from_bits(magnitude.to_bits() | inf_nan | ((h & 0x8000) << 16))
}

/// Sum of `x` through [`LANES`] independent accumulators, then a pairwise tree.
///
/// Rounding: each lane adds at most `ceil(len / LANES)` terms and the tree 6 levels, so
/// for terms of one sign the relative error is below `(len / LANES + 7) * u`.
#[inline(always)]
pub(crate) fn sum_lanes<T: Real>(x: &[T]) -> T {
    let mut acc = [T::ZERO; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a += v;
    }
    reduce_lanes(acc)
}

/// `sum (x[i] - c)^2` through [`LANES`] accumulators (`c = 0`: the sum of squares).
/// Same rounding bound as [`sum_lanes`] plus one rounding per term.
#[inline(always)]
pub(crate) fn sum_sq_dev_lanes<M: Fma, T: Real>(x: &[T], c: T) -> T {
    let mut acc = [T::ZERO; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for ch in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(ch) {
            let d = v - c;
            *a = d.mul_add::<M>(d, *a);
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        let d = v - c;
        *a = d.mul_add::<M>(d, *a);
    }
    reduce_lanes(acc)
}

/// Maximum of `x` (`T` lowest-ish start: the first element) through [`LANES`] lanes;
/// `None` for an empty slice.
#[inline(always)]
pub(crate) fn max_of_lanes<T: Real>(x: &[T]) -> Option<T> {
    let first = *x.first()?;
    let mut acc = [first; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for ch in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(ch) {
            *a = a.max_of(v);
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a = a.max_of(v);
    }
    Some(max_lanes(acc))
}

/// Pairwise sum of a lane array.
#[inline(always)]
pub(crate) fn reduce_lanes<T: Real>(mut acc: [T; LANES]) -> T {
    let mut width = LANES / 2;
    while width > 0 {
        for i in 0..width {
            let v = acc[i + width];
            acc[i] += v;
        }
        width /= 2;
    }
    acc[0]
}

/// Maximum of a lane array.
#[inline(always)]
pub(crate) fn max_lanes<T: Real>(mut acc: [T; LANES]) -> T {
    let mut width = LANES / 2;
    while width > 0 {
        for i in 0..width {
            acc[i] = acc[i].max_of(acc[i + width]);
        }
        width /= 2;
    }
    acc[0]
}

// ---- Quantized dot products (the inner loops of `qmatvec`) ----
//
// LLVM's vectorisers handle these loops unreliably (u8 -> f32 conversions over 16-byte
// chunks became 2- or 4-wide code in most formulations), so the AVX-512 and AVX2 builds
// are written with intrinsics; `Base` and unchecked inputs use the portable loops.

/// The 8-bit quants of a row: unsigned (affine formats) or signed (Q8_0).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Quants8<'a> {
    U8(&'a [u8]),
    I8(&'a [i8]),
}

impl Quants8<'_> {
    fn len(&self) -> usize {
        match self {
            Quants8::U8(q) => q.len(),
            Quants8::I8(q) => q.len(),
        }
    }
}

/// `sum_g scales[g] * (sum_{i in g} (lo[i] * (q[i] & 15) + hi[i] * (q[i] >> 4)) - zx[g])`
/// over a row of 4-bit quants, `group / 2` bytes per group (`lo`/`hi`: the activations
/// that meet low and high nibbles; `zx[g]`: the group's zero times its activation sum).
/// Groups are independent FMA chains; consecutive groups accumulate into two registers.
pub(crate) fn qdot4(
    level: Level,
    q: &[u8],
    (lo, hi): (&[f32], &[f32]),
    scales: &[f32],
    zx: &[f32],
    group: usize,
) -> f32 {
    let shaped = group >= 32
        && group.is_multiple_of(32)
        && lo.len() == q.len()
        && hi.len() == q.len()
        && zx.len() == scales.len()
        && q.len() * 2 == scales.len() * group;
    #[cfg(target_arch = "x86_64")]
    if shaped {
        if level == Level::Avx512 && Level::Avx512.supported() {
            // SAFETY: `Level::Avx512.supported()` checked avx512f/bw/vl/dq, avx2 and fma
            // with `is_x86_feature_detected!`; `shaped` gives the lengths the loads need.
            return unsafe { x86::qdot4_avx512(q, lo, hi, scales, zx, group) };
        }
        if matches!(level, Level::Avx512 | Level::Avx2) && Level::Avx2.supported() {
            // SAFETY: `Level::Avx2.supported()` checked avx, avx2 and fma with
            // `is_x86_feature_detected!`; `shaped` gives the lengths the loads need.
            return unsafe { x86::qdot4_avx2(q, lo, hi, scales, zx, group) };
        }
    }
    let _ = (level, shaped);
    let half = (group / 2).max(1);
    let mut total = 0.0f32;
    for ((((qg, lg), hg), &s), &zx) in
        q.chunks(half).zip(lo.chunks(half)).zip(hi.chunks(half)).zip(scales).zip(zx)
    {
        let mut acc = 0.0f32;
        for ((&b, &l), &h) in qg.iter().zip(lg).zip(hg) {
            acc += f32::from(b & 0x0F) * l + f32::from(b >> 4) * h;
        }
        total += s * (acc - zx);
    }
    total
}

/// `sum_g scales[g] * (sum_{i in g} q[i] x[i] - zx[g])` over a row of 8-bit quants.
pub(crate) fn qdot8(
    level: Level,
    q: Quants8<'_>,
    x: &[f32],
    scales: &[f32],
    zx: &[f32],
    group: usize,
) -> f32 {
    let shaped = group >= 16
        && group.is_multiple_of(16)
        && x.len() == q.len()
        && zx.len() == scales.len()
        && q.len() == scales.len() * group;
    #[cfg(target_arch = "x86_64")]
    if shaped {
        if level == Level::Avx512 && Level::Avx512.supported() {
            // SAFETY: as in `qdot4`: features checked by `Level::Avx512.supported()`,
            // lengths by `shaped`.
            return unsafe { x86::qdot8_avx512(q, x, scales, zx, group) };
        }
        if matches!(level, Level::Avx512 | Level::Avx2) && Level::Avx2.supported() {
            // SAFETY: as in `qdot4`: features checked by `Level::Avx2.supported()`,
            // lengths by `shaped`.
            return unsafe { x86::qdot8_avx2(q, x, scales, zx, group) };
        }
    }
    let _ = (level, shaped);
    let group = group.max(1);
    let mut total = 0.0f32;
    for (g, ((xg, &s), &zx)) in x.chunks(group).zip(scales).zip(zx).enumerate() {
        let start = g * group;
        let acc: f32 = match q {
            Quants8::U8(q) => q.iter().skip(start).zip(xg).map(|(&q, &x)| f32::from(q) * x).sum(),
            Quants8::I8(q) => q.iter().skip(start).zip(xg).map(|(&q, &x)| f32::from(q) * x).sum(),
        };
        total += s * (acc - zx);
    }
    total
}

// AVX-512 intrinsics and `target_feature` names are stable since Rust 1.89, the
// workspace's rust-version.
// `_mm_loadu_si128` and `_mm_loadl_epi64` take unaligned pointers to `__m128i`.
#[allow(clippy::cast_ptr_alignment)]
#[cfg(target_arch = "x86_64")]
mod x86 {
    //! Intrinsics versions of the quantized dot products. Callers guarantee the CPU
    //! features (`Level::supported`) and the shapes (`shaped` in `qdot4` / `qdot8`): every
    //! pointer offset below is below the length of the slice it indexes.

    use super::Quants8;
    use std::arch::x86_64::{
        __m128i, __m256, __m512, _mm256_add_ps, _mm256_and_si256, _mm256_castps256_ps128,
        _mm256_cvtepi32_ps, _mm256_cvtepi8_epi32, _mm256_cvtepu8_epi32, _mm256_extractf128_ps,
        _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setzero_ps,
        _mm256_srli_epi32, _mm256_sub_ps, _mm256_zextps128_ps256, _mm512_add_ps, _mm512_and_si512,
        _mm512_cvtepi32_ps, _mm512_cvtepi8_epi32, _mm512_cvtepu8_epi32, _mm512_fmadd_ps,
        _mm512_loadu_ps, _mm512_reduce_add_ps, _mm512_set1_epi32, _mm512_set1_ps,
        _mm512_setzero_ps, _mm512_srli_epi32, _mm512_sub_ps, _mm512_zextps128_ps512, _mm_add_ps,
        _mm_cvtss_f32, _mm_hadd_ps, _mm_loadl_epi64, _mm_loadu_si128, _mm_set_ss,
    };

    /// `[v, 0, 0, ...]`: a group's scalar correction on one lane (the lanes are summed at
    /// the end, so one lane carries it).
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx,avx2,fma")]
    fn lane0_512(v: f32) -> __m512 {
        _mm512_zextps128_ps512(_mm_set_ss(v))
    }

    #[target_feature(enable = "avx,avx2,fma")]
    fn lane0_256(v: f32) -> __m256 {
        _mm256_zextps128_ps256(_mm_set_ss(v))
    }

    #[target_feature(enable = "avx,avx2,fma")]
    fn hsum256(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_hadd_ps(s, s);
        _mm_cvtss_f32(_mm_hadd_ps(s, s))
    }

    /// 16 quants from byte offset `off` of `q`, as 16 i32 lanes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx,avx2,fma")]
    fn load16_u8(q: &[u8], off: usize) -> std::arch::x86_64::__m512i {
        debug_assert!(off + 16 <= q.len());
        // SAFETY: callers read whole 16-byte chunks of a slice whose length is a multiple
        // of 16 (`shaped`), so off + 16 <= q.len().
        _mm512_cvtepu8_epi32(unsafe { _mm_loadu_si128(q.as_ptr().add(off).cast::<__m128i>()) })
    }

    /// 16 f32 from element offset `off` of `x`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx,avx2,fma")]
    fn load16_f32(x: &[f32], off: usize) -> __m512 {
        debug_assert!(off + 16 <= x.len());
        // SAFETY: as `load16_u8`: off + 16 <= x.len() for every chunk callers read.
        unsafe { _mm512_loadu_ps(x.as_ptr().add(off)) }
    }

    /// 8 f32 from element offset `off` of `x`.
    #[target_feature(enable = "avx,avx2,fma")]
    fn load8_f32(x: &[f32], off: usize) -> __m256 {
        debug_assert!(off + 8 <= x.len());
        // SAFETY: callers read whole 8-element chunks of slices whose lengths are
        // multiples of 8 (`shaped`), so off + 8 <= x.len().
        unsafe { _mm256_loadu_ps(x.as_ptr().add(off)) }
    }

    /// 8 bytes from offset `off` of `q` in the low half of an `__m128i`.
    #[target_feature(enable = "avx,avx2,fma")]
    fn load8_bytes<T>(q: &[T], off: usize) -> __m128i {
        debug_assert!(std::mem::size_of::<T>() == 1 && off + 8 <= q.len());
        // SAFETY: `T` is u8 or i8 (one byte); callers read whole 8-byte chunks of a slice
        // whose length is a multiple of 8, so off + 8 <= q.len().
        unsafe { _mm_loadl_epi64(q.as_ptr().add(off).cast::<__m128i>()) }
    }

    /// Two groups per iteration into two accumulators (no dependence between them), the
    /// odd last group into the first.
    macro_rules! two_groups {
        ($scales:expr, $zero:expr, $fmadd:ident, $set1:ident, $group:expr) => {{
            let scales: &[f32] = $scales;
            let (mut t0, mut t1) = ($zero, $zero);
            let mut g = 0;
            while g + 1 < scales.len() {
                t0 = $fmadd($set1(scales[g]), $group(g), t0);
                t1 = $fmadd($set1(scales[g + 1]), $group(g + 1), t1);
                g += 2;
            }
            if g < scales.len() {
                t0 = $fmadd($set1(scales[g]), $group(g), t0);
            }
            (t0, t1)
        }};
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx,avx2,fma")]
    pub(super) fn qdot4_avx512(
        q: &[u8],
        lo: &[f32],
        hi: &[f32],
        scales: &[f32],
        zx: &[f32],
        group: usize,
    ) -> f32 {
        let chunks = group / 32; // 16-byte chunks (32 weights) per group
        let mask = _mm512_set1_epi32(0x0F);
        // sum over group g of q x, minus the zero's share (on lane 0).
        let group_sum = |g: usize| {
            let (mut al, mut ah) = (_mm512_setzero_ps(), _mm512_setzero_ps());
            for c in 0..chunks {
                let off = (g * chunks + c) * 16;
                let w = load16_u8(q, off);
                let ql = _mm512_cvtepi32_ps(_mm512_and_si512(w, mask));
                let qh = _mm512_cvtepi32_ps(_mm512_srli_epi32::<4>(w));
                al = _mm512_fmadd_ps(ql, load16_f32(lo, off), al);
                ah = _mm512_fmadd_ps(qh, load16_f32(hi, off), ah);
            }
            _mm512_sub_ps(_mm512_add_ps(al, ah), lane0_512(zx[g]))
        };
        let (t0, t1) =
            two_groups!(scales, _mm512_setzero_ps(), _mm512_fmadd_ps, _mm512_set1_ps, group_sum);
        _mm512_reduce_add_ps(_mm512_add_ps(t0, t1))
    }

    #[target_feature(enable = "avx,avx2,fma")]
    pub(super) fn qdot4_avx2(
        q: &[u8],
        lo: &[f32],
        hi: &[f32],
        scales: &[f32],
        zx: &[f32],
        group: usize,
    ) -> f32 {
        let chunks = group / 16; // 8-byte chunks (16 weights) per group
        let mask = _mm256_set1_epi32(0x0F);
        let group_sum = |g: usize| {
            let (mut al, mut ah) = (_mm256_setzero_ps(), _mm256_setzero_ps());
            for c in 0..chunks {
                let off = (g * chunks + c) * 8;
                let w = _mm256_cvtepu8_epi32(load8_bytes(q, off));
                let ql = _mm256_cvtepi32_ps(_mm256_and_si256(w, mask));
                let qh = _mm256_cvtepi32_ps(_mm256_srli_epi32::<4>(w));
                al = _mm256_fmadd_ps(ql, load8_f32(lo, off), al);
                ah = _mm256_fmadd_ps(qh, load8_f32(hi, off), ah);
            }
            _mm256_sub_ps(_mm256_add_ps(al, ah), lane0_256(zx[g]))
        };
        let (t0, t1) =
            two_groups!(scales, _mm256_setzero_ps(), _mm256_fmadd_ps, _mm256_set1_ps, group_sum);
        hsum256(_mm256_add_ps(t0, t1))
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx,avx2,fma")]
    pub(super) fn qdot8_avx512(
        q: Quants8<'_>,
        x: &[f32],
        scales: &[f32],
        zx: &[f32],
        group: usize,
    ) -> f32 {
        let chunks = group / 16;
        let group_sum = |g: usize| {
            let mut acc = _mm512_setzero_ps();
            for c in 0..chunks {
                let off = (g * chunks + c) * 16;
                let w = match q {
                    Quants8::U8(q) => load16_u8(q, off),
                    Quants8::I8(q) => {
                        debug_assert!(off + 16 <= q.len());
                        // SAFETY: off + 16 <= q.len() (`shaped`: whole 16-byte chunks).
                        let b = unsafe { _mm_loadu_si128(q.as_ptr().add(off).cast::<__m128i>()) };
                        _mm512_cvtepi8_epi32(b)
                    }
                };
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(w), load16_f32(x, off), acc);
            }
            _mm512_sub_ps(acc, lane0_512(zx[g]))
        };
        let (t0, t1) =
            two_groups!(scales, _mm512_setzero_ps(), _mm512_fmadd_ps, _mm512_set1_ps, group_sum);
        _mm512_reduce_add_ps(_mm512_add_ps(t0, t1))
    }

    #[target_feature(enable = "avx,avx2,fma")]
    pub(super) fn qdot8_avx2(
        q: Quants8<'_>,
        x: &[f32],
        scales: &[f32],
        zx: &[f32],
        group: usize,
    ) -> f32 {
        let chunks = group / 8;
        let group_sum = |g: usize| {
            let mut acc = _mm256_setzero_ps();
            for c in 0..chunks {
                let off = (g * chunks + c) * 8;
                let w = match q {
                    Quants8::U8(q) => _mm256_cvtepu8_epi32(load8_bytes(q, off)),
                    Quants8::I8(q) => _mm256_cvtepi8_epi32(load8_bytes(q, off)),
                };
                acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(w), load8_f32(x, off), acc);
            }
            _mm256_sub_ps(acc, lane0_256(zx[g]))
        };
        let (t0, t1) =
            two_groups!(scales, _mm256_setzero_ps(), _mm256_fmadd_ps, _mm256_set1_ps, group_sum);
        hsum256(_mm256_add_ps(t0, t1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct ExpAll<'a, T>(&'a [T], &'a mut Vec<T>);
    impl<T: Real> Body for ExpAll<'_, T> {
        type Output = ();
        #[inline(always)]
        fn run<M: Fma>(self) {
            self.1.clear();
            self.1.extend(self.0.iter().map(|&x| x.exp()));
        }
    }

    #[test]
    fn exp_is_accurate_at_every_level() {
        // Against the correctly rounded libm exp, over the range the kernels use.
        let xs32: Vec<f32> = (-8690..=8790).map(|i| i as f32 * 0.01 + 0.003).collect();
        let xs64: Vec<f64> = (-7000..=7000).map(|i| f64::from(i) * 0.1 + 0.003).collect();
        for level in Level::available() {
            let mut out = Vec::new();
            run(level, ExpAll(&xs32, &mut out));
            for (&x, &y) in xs32.iter().zip(&out) {
                let want = f64::from(x).exp();
                let rel = (f64::from(y) - want).abs() / want;
                assert!(
                    rel < 6.0 * f64::from(f32::EPSILON) / 2.0,
                    "{level:?} exp({x}) = {y}, {want}"
                );
            }
            let mut out = Vec::new();
            run(level, ExpAll(&xs64, &mut out));
            for (&x, &y) in xs64.iter().zip(&out) {
                let want = x.exp();
                let rel = (y - want).abs() / want;
                assert!(rel < 8.0 * f64::EPSILON / 2.0, "{level:?} exp({x}) = {y}, {want}");
            }
        }
        // Saturation instead of overflow and the zero point.
        assert!(exp_f32(1000.0).is_finite() && exp_f32(-1000.0) > 0.0);
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f64(0.0), 1.0);
    }

    #[test]
    fn f16_decodes_every_class() {
        // 1.0 = 0x3C00, -2.0 = 0xC000, 65504 = 0x7BFF, the smallest subnormal 2^-24 =
        // 0x0001, +inf = 0x7C00, a NaN = 0x7E00.
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
        assert_eq!(f16_to_f32(0x7BFF), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
        assert_eq!(f16_to_f32(0x7C00), f32::INFINITY);
        assert!(f16_to_f32(0x7E00).is_nan());
        // Every finite value agrees with the `half` crate.
        for h in 0..=u16::MAX {
            let want = half::f16::from_bits(h).to_f32();
            if want.is_finite() {
                assert_eq!(f16_to_f32(h), want, "{h:#06x}");
            }
        }
    }

    #[test]
    fn lane_sums_and_maxima() {
        // 1 + 2 + ... + 1000 = 500,500 (exact in f32); odd length exercises the tail.
        let x: Vec<f32> = (1..=1000).map(|i| i as f32).collect();
        assert_eq!(sum_lanes(&x), 500_500.0);
        let mut a = [0.0f64; LANES];
        a[37] = 3.5;
        a[5] = -1.0;
        assert_eq!(max_lanes(a), 3.5);
        assert_eq!(sum_lanes::<f64>(&[]), 0.0);
    }

    #[test]
    fn detection_is_consistent() {
        let best = Level::detect();
        assert!(best.supported());
        assert_eq!(Level::available()[0], best);
    }
}
