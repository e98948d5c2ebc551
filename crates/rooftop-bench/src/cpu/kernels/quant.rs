//! CPU implementations of `qmatvec` and `qgemm` (`suite::quant`), dequantizing in the
//! kernel (fused: the quantized weights are the only copy read from memory).
//!
//! `qmatvec` streams the weights once: output rows in rayon tasks of `launch.tile` rows
//! (default n / (16 threads), at least 16). Per group of a row it accumulates
//! `sum q_i x_i` in vector lanes straight from the quant bytes (`simd::qdot4` /
//! `simd::qdot8`, intrinsics for AVX-512 and AVX2) and applies the group's scale and zero
//! as `s (sum q x - z sum x)`, where `sum x` per group is computed once per call; for
//! 4-bit formats the activations are first split (once per call) into the ones that meet
//! low nibbles and the ones that meet high nibbles, in the format's nibble order, so that
//! both streams are contiguous.
//!
//! `qgemm` is a BLIS-style blocked product: X is packed once per call into MR-row strips
//! (zero-padded), each rayon task owns `launch.tile` output columns (rounded up to NR;
//! default NR) and, per block of KC = 256 along K, dequantizes NR weight rows into a
//! KC × NR panel that stays in L1 and runs an MR × NR register-tile micro-kernel
//! (`acc[i][j] += x[i] * w[j]`, broadcast × vector FMAs) over every strip. MR × NR is
//! 6 × 32 for AVX-512, 6 × 16 for AVX2, 4 × 8 for SSE2 (12, 12 and 8 accumulator
//! registers). The dequantization costs O(n k) against the O(m n k) multiply-adds; its
//! transposition into the panel is a strided store (about a sixth of the time at
//! m = 128).

// `inline(always)` on kernel bodies and their helpers is how they get compiled for each
// SIMD level (see `cpu::simd`).
#![allow(clippy::inline_always)]
// m, n, k, x, y, w, q, s, z, g: the names of the formulas in the module docs.
#![allow(clippy::many_single_char_names)]

use super::CpuKernel;
use super::{check_lens, mismatch, tile_or};
use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::cpu::simd::{self, f16_to_f32, Body, Fma, Level, Quants8};
use crate::error::BackendError;
use crate::suite::quant::{NibbleOrder, QuantLayout, GGML_BLOCK};
use crate::suite::KernelId;
use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
use rayon::prelude::*;

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[
    CpuKernel {
        kernel: KernelId::Qmatvec,
        implementation: "rooftop",
        builtin: false,
        label: "rooftop: fused dequant dot products, rows in rayon tasks, AVX-512/AVX2/SSE2",
        tiles: &[16, 64, 256],
        run: qmatvec,
    },
    CpuKernel {
        kernel: KernelId::Qgemm,
        implementation: "rooftop",
        builtin: false,
        label: "rooftop: KC x NR dequantized panels, MR x NR FMA micro-kernel, AVX-512/AVX2/SSE2",
        tiles: &[32, 64, 128, 256],
        run: qgemm,
    },
];

/// Rows of K per dequantized panel of `qgemm` (a multiple of every group size).
const KC: usize = 256;

/// The quant bytes of a case.
#[derive(Clone, Copy)]
enum Quants<'a> {
    U8(&'a [u8]),
    I8(&'a [i8]),
}

/// A quantized weight matrix of `n` rows of `k`, borrowed from the buffers.
#[derive(Clone, Copy)]
struct Weights<'a> {
    l: QuantLayout,
    k: usize,
    q: Quants<'a>,
    scales: &'a [u16],
    zeros: &'a [u8],
}

impl Weights<'_> {
    /// Groups per row.
    fn row_groups(&self) -> usize {
        self.k / self.l.group
    }

    /// The zero point of flat group `g` (row * groups per row + group).
    #[inline(always)]
    fn zero(&self, g: usize) -> f32 {
        if !self.l.zero_point {
            return self.l.implicit_zero() as f32;
        }
        if self.l.bits == 4 {
            let b = self.zeros[g / 2];
            f32::from(if g.is_multiple_of(2) { b & 0x0F } else { b >> 4 })
        } else {
            f32::from(self.zeros[g])
        }
    }
}

/// A quantized case's buffers: `(m, n, weights, x, y)`.
type Split<'a> = (usize, usize, Weights<'a>, &'a [f32], &'a mut [f32]);

/// Splits the buffers of a quantized case.
fn split<'a>(case: &Case, bufs: &'a mut [HostBuf]) -> Result<Split<'a>, BackendError> {
    let l = case.weights.and_then(QuantLayout::of).ok_or_else(|| {
        BackendError::Other(format!("{}: no CPU kernel for this weight format", case.label()))
    })?;
    let m = if case.kernel == KernelId::Qgemm { case.size_usize("m") } else { 1 };
    let (n, k) = (case.size_usize("n"), case.size_usize("k"));
    if k % l.group != 0 {
        return Err(BackendError::Other(format!(
            "{}: k is not a multiple of the group",
            case.label()
        )));
    }
    let expected = "[x f32, qweight u8/i8, scales f16, (qzeros u8,) y f32]";
    let shaped = if l.zero_point {
        matches!(bufs, [HostBuf::F32(_), _, HostBuf::U16(_), HostBuf::U8(_), HostBuf::F32(_)])
    } else {
        matches!(bufs, [HostBuf::F32(_), _, HostBuf::U16(_), HostBuf::F32(_)])
    };
    if !shaped {
        return Err(mismatch(case, bufs, expected));
    }
    let (x, q, scales, zeros, y): (&[f32], &HostBuf, &[u16], &[u8], &mut [f32]) = match bufs {
        [HostBuf::F32(x), q, HostBuf::U16(s), HostBuf::U8(z), HostBuf::F32(y)] => (x, q, s, z, y),
        [HostBuf::F32(x), q, HostBuf::U16(s), HostBuf::F32(y)] => (x, q, s, &[], y),
        // Excluded by the check above (which keeps `bufs` usable for its message).
        _ => return Err(BackendError::Other(format!("{}: expected {expected}", case.label()))),
    };
    let q = match q {
        HostBuf::U8(v) if !l.signed => Quants::U8(v),
        HostBuf::I8(v) if l.signed => Quants::I8(v),
        other => {
            return Err(BackendError::Other(format!(
                "{}: qweight is {}, expected {}",
                case.label(),
                other.kind(),
                if l.signed { "i8" } else { "u8" }
            )))
        }
    };
    let qlen = match q {
        Quants::U8(v) => v.len(),
        Quants::I8(v) => v.len(),
    };
    check_lens(
        case,
        &[x.len(), qlen, scales.len(), zeros.len(), y.len()],
        &[m * k, l.quant_bytes(n, k), l.groups(n, k), l.zero_bytes(n, k), m * n],
    )?;
    Ok((m, n, Weights { l, k, q, scales, zeros }, x, y))
}

// ---- qmatvec ----

fn qmatvec(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    qmatvec_at(Level::detect(), case, bufs, launch)
}

/// Activations prepared once per call.
struct Prepared {
    /// 4-bit formats: the activations that meet low / high nibbles, byte by byte.
    lo: Vec<f32>,
    hi: Vec<f32>,
    /// Sum of the activations of each group of a row.
    group_sums: Vec<f32>,
    /// `implicit zero * group sum` (formats without stored zero points).
    zx: Vec<f32>,
}

fn prepare(w: &Weights<'_>, x: &[f32]) -> Prepared {
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    if w.l.bits == 4 {
        lo.reserve(w.k / 2);
        hi.reserve(w.k / 2);
        match w.l.nibbles {
            NibbleOrder::Ggml => {
                for block in x.chunks_exact(GGML_BLOCK) {
                    lo.extend_from_slice(&block[..GGML_BLOCK / 2]);
                    hi.extend_from_slice(&block[GGML_BLOCK / 2..]);
                }
            }
            NibbleOrder::Sequential => {
                for pair in x.chunks_exact(2) {
                    lo.push(pair[0]);
                    hi.push(pair[1]);
                }
            }
        }
    }
    let group_sums: Vec<f32> = x.chunks_exact(w.l.group).map(|g| g.iter().sum()).collect();
    let implicit = w.l.implicit_zero() as f32;
    let zx = group_sums.iter().map(|s| implicit * s).collect();
    Prepared { lo, hi, group_sums, zx }
}

/// Output rows `first_row..first_row + y.len()` of `qmatvec`.
fn matvec_rows(
    level: Level,
    w: &Weights<'_>,
    p: &Prepared,
    x: &[f32],
    first_row: usize,
    y: &mut [f32],
) {
    let k = w.k;
    let groups = w.row_groups();
    let mut scales = vec![0.0f32; groups];
    let mut zx = if w.l.zero_point { vec![0.0f32; groups] } else { Vec::new() };
    for (r, y) in y.iter_mut().enumerate() {
        let row = first_row + r;
        // F16C-vectorised where the CPU has it (one feature check per row).
        w.scales[row * groups..(row + 1) * groups]
            .reinterpret_cast::<half::f16>()
            .convert_to_f32_slice(&mut scales);
        let zx: &[f32] = if w.l.zero_point {
            for (g, (z, &s)) in zx.iter_mut().zip(&p.group_sums).enumerate() {
                *z = w.zero(row * groups + g) * s;
            }
            &zx
        } else {
            &p.zx
        };
        *y = match w.q {
            Quants::U8(q) if w.l.bits == 4 => {
                let q = &q[row * (k / 2)..(row + 1) * (k / 2)];
                simd::qdot4(level, q, (&p.lo, &p.hi), &scales, zx, w.l.group)
            }
            Quants::U8(q) => {
                let q = Quants8::U8(&q[row * k..(row + 1) * k]);
                simd::qdot8(level, q, x, &scales, zx, w.l.group)
            }
            Quants::I8(q) => {
                let q = Quants8::I8(&q[row * k..(row + 1) * k]);
                simd::qdot8(level, q, x, &scales, zx, w.l.group)
            }
        };
    }
}

fn qmatvec_at(
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    let (_, n, w, x, y) = split(case, bufs)?;
    let threads = rayon::current_num_threads().max(1);
    let rows = tile_or(launch, (n / (16 * threads)).max(16))?;
    let p = prepare(&w, x);
    y.par_chunks_mut(rows)
        .enumerate()
        .for_each(|(t, y)| matvec_rows(level, &w, &p, x, t * rows, y));
    Ok(())
}

// ---- qgemm ----

fn qgemm(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    qgemm_at(Level::detect(), case, bufs, launch)
}

fn qgemm_at(
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    match level {
        Level::Avx512 => gemm_tiled::<6, 32>(level, case, bufs, launch),
        Level::Avx2 => gemm_tiled::<6, 16>(level, case, bufs, launch),
        Level::Base => gemm_tiled::<4, 8>(level, case, bufs, launch),
    }
}

fn gemm_tiled<const MR: usize, const NR: usize>(
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    let (m, n, w, x, y) = split(case, bufs)?;
    let k = w.k;
    let width = tile_or(launch, NR)?.next_multiple_of(NR);
    // X in MR-row strips, element (strip, kk, i) at (strip * k + kk) * MR + i.
    let strips = m.div_ceil(MR);
    let mut packed = vec![0.0f32; strips * k * MR];
    packed.par_chunks_mut(k * MR).enumerate().for_each(|(s, strip)| {
        for i in 0..MR.min(m - s * MR) {
            let row = &x[(s * MR + i) * k..(s * MR + i + 1) * k];
            for (dst, &v) in strip.chunks_exact_mut(MR).zip(row) {
                dst[i] = v;
            }
        }
    });
    let blocks: Vec<Vec<f32>> = (0..n.div_ceil(width))
        .into_par_iter()
        .map(|t| {
            let cols = (t * width)..n.min((t + 1) * width);
            simd::run(level, GemmBlock::<MR, NR> { w, packed: &packed, m, cols })
        })
        .collect();
    // Each block is m rows of its columns; copy them into Y row by row.
    y.par_chunks_mut(n).enumerate().for_each(|(i, yrow)| {
        for (t, block) in blocks.iter().enumerate() {
            let cols = block.len() / m;
            yrow[t * width..t * width + cols].copy_from_slice(&block[i * cols..(i + 1) * cols]);
        }
    });
    Ok(())
}

/// The output columns `cols` of Y (all m rows), row-major.
struct GemmBlock<'a, const MR: usize, const NR: usize> {
    w: Weights<'a>,
    packed: &'a [f32],
    m: usize,
    cols: std::ops::Range<usize>,
}

impl<const MR: usize, const NR: usize> Body for GemmBlock<'_, MR, NR> {
    type Output = Vec<f32>;
    #[inline(always)]
    fn run<M: Fma>(self) -> Vec<f32> {
        let GemmBlock { w, packed, m, cols } = self;
        let k = w.k;
        let width = cols.len();
        let mut out = vec![0.0f32; m * width];
        let mut panel = vec![0.0f32; KC * NR];
        let mut row = vec![0.0f32; KC];
        for p0 in cols.clone().step_by(NR) {
            let pcols = NR.min(cols.end - p0);
            let c0 = p0 - cols.start;
            for kb in (0..k).step_by(KC) {
                let kc = KC.min(k - kb);
                let panel = &mut panel[..kc * NR];
                for l in 0..NR {
                    if l < pcols {
                        dequant_segment::<M>(&w, p0 + l, kb, &mut row[..kc]);
                        for (dst, &v) in panel.chunks_exact_mut(NR).zip(&row[..kc]) {
                            dst[l] = v;
                        }
                    } else {
                        for dst in panel.chunks_exact_mut(NR) {
                            dst[l] = 0.0;
                        }
                    }
                }
                for (s, strip) in packed.chunks_exact(k * MR).enumerate() {
                    let acc = micro::<M, MR, NR>(&strip[kb * MR..(kb + kc) * MR], panel);
                    for (i, acc) in acc.iter().enumerate().take(m.saturating_sub(s * MR)) {
                        let o = (s * MR + i) * width + c0;
                        for (o, &a) in out[o..o + pcols].iter_mut().zip(acc) {
                            *o += a;
                        }
                    }
                }
            }
        }
        out
    }
}

/// `acc[i][j] = sum_kk a[kk][i] * b[kk][j]` over a packed strip (`kc × MR`) and panel
/// (`kc × NR`).
#[inline(always)]
fn micro<M: Fma, const MR: usize, const NR: usize>(a: &[f32], b: &[f32]) -> [[f32; NR]; MR] {
    let mut acc = [[0.0f32; NR]; MR];
    for (av, bv) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        let (Ok(av), Ok(bv)) = (<&[f32; MR]>::try_from(av), <&[f32; NR]>::try_from(bv)) else {
            break;
        };
        for (acc, &a) in acc.iter_mut().zip(av) {
            for (c, &b) in acc.iter_mut().zip(bv) {
                *c = M::mul_add_f32(a, b, *c);
            }
        }
    }
    acc
}

/// Dequantizes weights `kb..kb + out.len()` of weight row `row` (group-aligned).
#[inline(always)]
fn dequant_segment<M: Fma>(w: &Weights<'_>, row: usize, kb: usize, out: &mut [f32]) {
    let (k, g) = (w.k, w.l.group);
    let groups = w.row_groups();
    for (gl, dst) in out.chunks_exact_mut(g).enumerate() {
        let gi = kb / g + gl;
        let flat = row * groups + gi;
        let s = f16_to_f32(w.scales[flat]);
        let z = w.zero(flat);
        let start = row * k + gi * g;
        match w.q {
            Quants::U8(q) if w.l.bits == 4 => {
                let bytes = &q[start / 2..start / 2 + g / 2];
                match w.l.nibbles {
                    NibbleOrder::Ggml => {
                        let (lo, hi) = dst.split_at_mut(GGML_BLOCK / 2);
                        for ((lo, hi), &b) in lo.iter_mut().zip(hi).zip(bytes) {
                            *lo = (f32::from(b & 0x0F) - z) * s;
                            *hi = (f32::from(b >> 4) - z) * s;
                        }
                    }
                    NibbleOrder::Sequential => {
                        for (pair, &b) in dst.chunks_exact_mut(2).zip(bytes) {
                            pair[0] = (f32::from(b & 0x0F) - z) * s;
                            pair[1] = (f32::from(b >> 4) - z) * s;
                        }
                    }
                }
            }
            Quants::U8(q) => {
                for (d, &b) in dst.iter_mut().zip(&q[start..start + g]) {
                    *d = (f32::from(b) - z) * s;
                }
            }
            Quants::I8(q) => {
                for (d, &b) in dst.iter_mut().zip(&q[start..start + g]) {
                    *d = f32::from(b) * s;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::cpu::CpuBackend;
    use crate::harness::{run_case, TimingOptions};
    use crate::rng;
    use crate::suite::compare;
    use rooftop_core::ops::quant::WeightFormat;
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    fn affine(bits: u32, group: u64, zero_point: bool) -> WeightFormat {
        WeightFormat::Affine { bits, group_size: group, scale_dtype: Precision::Fp16, zero_point }
    }

    fn formats() -> Vec<WeightFormat> {
        vec![
            WeightFormat::Q4_0,
            WeightFormat::Q8_0,
            affine(4, 32, false),
            affine(4, 64, true),
            affine(4, 128, false),
            affine(8, 32, true),
            affine(8, 128, false),
        ]
    }

    fn case(gemm: bool, m: u64, n: u64, k: u64, format: WeightFormat) -> Case {
        let sizes =
            if gemm { vec![("m", m), ("n", n), ("k", k)] } else { vec![("n", n), ("k", k)] };
        Case {
            kernel: if gemm { KernelId::Qgemm } else { KernelId::Qmatvec }.into(),
            sizes,
            dtype: Precision::Fp32,
            weights: Some(format),
            variant: None,
        }
    }

    fn check(c: &Case, tiles: &[Option<u32>]) {
        let k = c.kernel.suite().unwrap().def();
        let specs = k.buffers(c);
        let host: Vec<HostBuf> = rng::fill_all(&specs, 21, 1);
        let want = k.reference(c, &host);
        for level in Level::available() {
            for &tile in tiles {
                let mut bufs = host.clone();
                let launch = Launch { tile, ..Launch::default() };
                if c.kernel == KernelId::Qgemm {
                    qgemm_at(level, c, &mut bufs, &launch).unwrap();
                } else {
                    qmatvec_at(level, c, &mut bufs, &launch).unwrap();
                }
                let got = vec![bufs.pop().unwrap()];
                let r = compare(&["y"], &got, &want, &[false], k.tolerance(c));
                assert!(r.passed, "{} {} {level:?} {tile:?}: {r:?}", c.kernel, c.label());
            }
        }
    }

    #[test]
    fn qmatvec_matches_the_reference() {
        for f in formats() {
            for (n, k) in [(1, 128), (37, 384), (5, 1024)] {
                check(&case(false, 1, n, k, f), &[None, Some(1), Some(7)]);
            }
        }
    }

    #[test]
    fn qgemm_matches_the_reference() {
        for f in formats() {
            // Odd m and m > NR (token strips and padding), n not a multiple of MR.
            for (m, n, k) in [(1, 1, 128), (7, 37, 384), (13, 70, 640), (40, 13, 256)] {
                check(&case(true, m, n, k, f), &[None, Some(1), Some(40)]);
            }
        }
        // K = 160: a block of K shorter than KC (groups of 32 only).
        for f in [WeightFormat::Q4_0, WeightFormat::Q8_0, affine(4, 32, true)] {
            check(&case(true, 5, 9, 160, f), &[None, Some(7)]);
        }
    }

    #[test]
    fn q4_0_block_by_hand() {
        // The block of suite::quant's hand test: d = 0.5, bytes [0x9F, 0x08, 0 ...]:
        // w0 = 3.5, w16 = 0.5, w1 = 0, w17 = -4, others -4; x = e0 + 2 e16 + 10 e17:
        // y = 3.5 + 1 - 40 = -35.5. As a 2 x 1 qgemm with x rows [x, 2x]: [-35.5, -71].
        let mut qs = vec![0u8; 16];
        qs[0] = 0x9F;
        qs[1] = 0x08;
        let mut x = vec![0.0f32; 32];
        x[0] = 1.0;
        x[16] = 2.0;
        x[17] = 10.0;
        let x2: Vec<f32> = x
            .iter()
            .chain(x.iter())
            .enumerate()
            .map(|(i, v)| if i < 32 { *v } else { 2.0 * v })
            .collect();
        for level in Level::available() {
            let c = case(false, 1, 1, 32, WeightFormat::Q4_0);
            let mut b = vec![
                HostBuf::F32(x.clone()),
                HostBuf::U8(qs.clone()),
                HostBuf::U16(vec![0x3800]),
                HostBuf::F32(vec![f32::NAN]),
            ];
            qmatvec_at(level, &c, &mut b, &Launch::default()).unwrap();
            assert_eq!(b[3], HostBuf::F32(vec![-35.5]), "{level:?}");
            let c = case(true, 2, 1, 32, WeightFormat::Q4_0);
            let mut b = vec![
                HostBuf::F32(x2.clone()),
                HostBuf::U8(qs.clone()),
                HostBuf::U16(vec![0x3800]),
                HostBuf::F32(vec![f32::NAN; 2]),
            ];
            qgemm_at(level, &c, &mut b, &Launch::default()).unwrap();
            assert_eq!(b[3], HostBuf::F32(vec![-35.5, -71.0]), "{level:?}");
        }
    }

    #[test]
    fn wrong_buffers_are_errors() {
        let c = case(false, 1, 2, 32, affine(4, 32, true));
        // Missing qzeros.
        let mut b = vec![
            HostBuf::F32(vec![0.0; 32]),
            HostBuf::U8(vec![0; 32]),
            HostBuf::U16(vec![0; 2]),
            HostBuf::F32(vec![0.0; 2]),
        ];
        assert!(qmatvec(&c, &mut b, &Launch::default()).is_err());
        // i8 quants for an unsigned format.
        let c = case(false, 1, 2, 32, affine(8, 32, false));
        let mut b = vec![
            HostBuf::F32(vec![0.0; 32]),
            HostBuf::I8(vec![0; 64]),
            HostBuf::U16(vec![0; 2]),
            HostBuf::F32(vec![0.0; 2]),
        ];
        assert!(qmatvec(&c, &mut b, &Launch::default()).is_err());
        // Short scales.
        let c = case(true, 1, 2, 32, WeightFormat::Q8_0);
        let mut b = vec![
            HostBuf::F32(vec![0.0; 32]),
            HostBuf::I8(vec![0; 64]),
            HostBuf::U16(vec![0; 1]),
            HostBuf::F32(vec![0.0; 2]),
        ];
        assert!(qgemm(&c, &mut b, &Launch::default()).is_err());
    }

    #[test]
    fn cpu_backend_end_to_end() {
        let mut cpu = CpuBackend::new();
        let opts = TimingOptions {
            warmup_runs: 1,
            warmup_time_s: 0.0,
            min_runs: 2,
            min_time_s: 0.001,
            ..TimingOptions::default()
        };
        for c in [
            case(true, 5, 33, 256, WeightFormat::Q4_0),
            case(false, 1, 100, 512, affine(8, 64, true)),
        ] {
            let k = c.kernel.suite().unwrap().def();
            let imp = cpu.implementations(c.kernel).remove(0);
            let r =
                run_case(&mut cpu, k, &c, &imp, None, &opts, &AtomicBool::new(false), &mut |_| {})
                    .unwrap();
            assert!(r.check.passed, "{} {:?}", c.label(), r.check);
            assert!(r.timing.is_some());
        }
    }
}
