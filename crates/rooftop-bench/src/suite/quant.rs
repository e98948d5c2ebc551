//! Weight-quantized matrix products with fp32 activations: `qmatvec` (`y = W x`, one
//! token, M = 1) and `qgemm` (`Y = X Wᵀ`, M tokens).
//!
//! Weights: N output rows of K weights each (a row is one output feature's weights,
//! contiguous along K, as ggml and PyTorch `Linear` store them), quantized in groups of
//! `group` consecutive weights along K with one fp16 scale per group:
//!
//! - `Q4_0` (ggml `block_q4_0`): groups of 32, value `(q - 8) d`, q a 4-bit nibble. Nibble
//!   order as ggml: in each 32-weight block, byte j (0..16) holds weight j in its low
//!   nibble and weight j + 16 in its high nibble.
//! - `Q8_0` (ggml `block_q8_0`): groups of 32, value `q d`, q a signed byte.
//! - affine `int4` / `int8` with groups of 32, 64 or 128 (GPTQ/AWQ/MLX style): q unsigned,
//!   value `(q - z) s` where z is the group's zero point (`--variant zp`: stored, packed
//!   at the weight's bits, GPTQ `qzeros`) or the midpoint 2^(bits-1) (8 or 128;
//!   symmetric, the default). int4 weights are packed two per byte in order: weight 2i
//!   in the low nibble of byte i, 2i + 1 in the high nibble (GPTQ/MLX order).
//!
//! Storage: the quants of all rows in one array (`qweight`, row after row), the scales
//! in a second (`scales`, N × K/group, row-major) and the zero points in a third
//! (`qzeros`, N × K/group values packed at the weight's bits). For Q4_0 and Q8_0 this is
//! ggml's block contents split into two arrays (as ggml's GPU back ends repack them)
//! rather than interleaved 18- or 34-byte blocks: the bytes are the same, 4.5 and 8.5
//! bits per weight. (Interleaved blocks would need an input initialiser that writes a
//! sane fp16 scale into every block; random bits give NaN and infinite scales.)
//!
//! Selection: `--wformat q4_0|q8_0|affine`, `--bits 4|8` (affine), `--group-size
//! 32|64|128` (affine; ggml formats are 32), `--variant zp|sym` (affine). With none of
//! them, the default formats are Q4_0 and int4 g128. Sizes: `qmatvec` has `n, k`
//! (default 4096 × 4096 and 14336 × 4096, a Llama-3-8B FFN projection; `--sizes S` counts
//! weight elements: n = S / 4096, k = 4096); `qgemm` has `m, n, k` (default 128 × 4096 ×
//! 4096; `--sizes S` counts activation elements: m = S / 4096). K must be a multiple of
//! the group size.
//!
//! Inputs: activations uniform in [-1, 1); quants and zero points random bits; scales
//! uniform in [0.002, 0.02) for 4-bit, [0.0001, 0.001) for 8-bit formats (weights of a
//! similar size). References decode every weight exactly in f64 and sum in f64; for
//! `qgemm` above 2^26 multiply-adds only three rows of Y (first, middle, last) are
//! computed, the rest left unchecked (NaN). Work is the core's `QuantGemmSpec` unchanged.

// m, n, k, x, y, w, q, s, z, g: the names of the formulas in the module docs.
#![allow(clippy::many_single_char_names)]

use super::stream::{sum_tolerance, unit_roundoff};
use super::{bad, model_err, BufferSpec, Kernel, Tolerance};
use crate::backend::{DType, HostBuf};
use crate::case::{Case, KernelRef, Selection, Variant, WeightFormatKind};
use crate::error::SuiteError;
use crate::rng::Init;
use crate::suite::KernelId;
use rayon::prelude::*;
use rooftop_core::ops::quant::{QuantGemmSpec, WeightFormat};
use rooftop_core::ops::Work;
use rooftop_core::units::Precision;

/// Weights per block of ggml's Q4_0 and Q8_0.
pub const GGML_BLOCK: usize = 32;

/// Default `(n, k)` shapes of `qmatvec`.
pub const MATVEC_SHAPES: [(u64, u64); 2] = [(4096, 4096), (14336, 4096)];

/// Default `(m, n, k)` of `qgemm`.
pub const GEMM_SHAPE: (u64, u64, u64) = (128, 4096, 4096);

/// Above this many multiply-adds the `qgemm` reference computes three rows only.
pub const FULL_REFERENCE_MACS: u64 = 1 << 26;

/// Order of the two 4-bit weights in a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NibbleOrder {
    /// ggml Q4_0: in each 32-weight block, byte j has weight j (low) and j + 16 (high).
    Ggml,
    /// Byte i has weight 2i (low) and 2i + 1 (high).
    Sequential,
}

/// What a kernel needs to know to decode a weight format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantLayout {
    /// 4 or 8.
    pub bits: u32,
    /// Weights per scale, along K.
    pub group: usize,
    /// Zero points stored in `qzeros` (otherwise [`QuantLayout::implicit_zero`]).
    pub zero_point: bool,
    /// Order of 4-bit weights in a byte.
    pub nibbles: NibbleOrder,
    /// Quants are signed bytes (Q8_0, buffer type i8) with no offset.
    pub signed: bool,
}

impl QuantLayout {
    /// The layout of `format`, if this suite has kernels for it.
    pub fn of(format: WeightFormat) -> Option<QuantLayout> {
        match format {
            WeightFormat::Q4_0 => Some(QuantLayout {
                bits: 4,
                group: GGML_BLOCK,
                zero_point: false,
                nibbles: NibbleOrder::Ggml,
                signed: false,
            }),
            WeightFormat::Q8_0 => Some(QuantLayout {
                bits: 8,
                group: GGML_BLOCK,
                zero_point: false,
                nibbles: NibbleOrder::Sequential,
                signed: true,
            }),
            WeightFormat::Affine { bits, group_size, scale_dtype, zero_point } => {
                let ok = matches!(bits, 4 | 8)
                    && matches!(group_size, 32 | 64 | 128)
                    && scale_dtype == Precision::Fp16;
                ok.then_some(QuantLayout {
                    bits,
                    group: group_size as usize,
                    zero_point,
                    nibbles: NibbleOrder::Sequential,
                    signed: false,
                })
            }
        }
    }

    /// The zero of unsigned quants without stored zero points: 8 (4-bit), 128 (8-bit);
    /// 0 for signed quants.
    pub fn implicit_zero(&self) -> u32 {
        if self.signed {
            0
        } else {
            1 << (self.bits - 1)
        }
    }

    /// Bytes of `qweight` for `n` rows of `k` weights.
    pub fn quant_bytes(&self, n: usize, k: usize) -> usize {
        n * k * self.bits as usize / 8
    }

    /// Number of groups (= scales, = zero points) of `n` rows of `k` weights.
    pub fn groups(&self, n: usize, k: usize) -> usize {
        n * (k / self.group)
    }

    /// Bytes of `qzeros` (0 without zero points).
    pub fn zero_bytes(&self, n: usize, k: usize) -> usize {
        if self.zero_point {
            (self.groups(n, k) * self.bits as usize).div_ceil(8)
        } else {
            0
        }
    }

    /// The range of the random scales: weights of about the same size for 4 and 8 bits.
    pub fn scale_range(&self) -> (f64, f64) {
        if self.bits == 4 {
            (0.002, 0.02)
        } else {
            (0.0001, 0.001)
        }
    }

    /// The largest `|q - zero|`: 8 or 15 (4-bit), 128 or 255 (8-bit).
    fn max_deviation(&self) -> f64 {
        match (self.bits, self.zero_point) {
            (4, false) => 8.0,
            (4, true) => 15.0,
            (_, false) => 128.0,
            (_, true) => 255.0,
        }
    }
}

/// `qmatvec` (`gemm: false`) or `qgemm`.
#[derive(Debug)]
pub struct Quant {
    pub gemm: bool,
}

pub(super) static QMATVEC: Quant = Quant { gemm: false };
pub(super) static QGEMM: Quant = Quant { gemm: true };

fn affine(bits: u32, group: u64, zero_point: bool) -> WeightFormat {
    WeightFormat::Affine { bits, group_size: group, scale_dtype: Precision::Fp16, zero_point }
}

/// The weight formats of a selection.
fn formats(kernel: &str, sel: &Selection) -> Result<Vec<WeightFormat>, SuiteError> {
    let zero_point = match sel.variant {
        None | Some(Variant::Sym) => false,
        Some(Variant::Zp) => true,
        Some(v) => {
            return Err(bad(
                kernel,
                format!("--variant takes zp (stored zero points) or sym (none), got `{v}`"),
            ))
        }
    };
    let ggml = |name: &str, fmt: WeightFormat, bits: u32| {
        if let Some(b) = sel.bits.filter(|&b| b != bits) {
            return Err(bad(kernel, format!("{name} is {bits}-bit; --bits {b} contradicts it")));
        }
        if let Some(g) = sel.group_size.filter(|&g| g as usize != GGML_BLOCK) {
            return Err(bad(
                kernel,
                format!("{name} has groups of {GGML_BLOCK}; --group-size {g} contradicts it"),
            ));
        }
        if zero_point {
            return Err(bad(
                kernel,
                format!("{name} has no zero points; --variant zp needs --wformat affine"),
            ));
        }
        Ok(vec![fmt])
    };
    match sel.wformat {
        Some(WeightFormatKind::Q4_0) => ggml("Q4_0", WeightFormat::Q4_0, 4),
        Some(WeightFormatKind::Q8_0) => ggml("Q8_0", WeightFormat::Q8_0, 8),
        Some(WeightFormatKind::Affine) | None => {
            if sel.wformat.is_none()
                && sel.bits.is_none()
                && sel.group_size.is_none()
                && sel.variant.is_none()
            {
                return Ok(vec![WeightFormat::Q4_0, affine(4, 128, false)]);
            }
            let bits = sel.bits.unwrap_or(4);
            if !matches!(bits, 4 | 8) {
                return Err(bad(
                    kernel,
                    format!("the affine kernels take --bits 4 or 8, got {bits}"),
                ));
            }
            let group = sel.group_size.unwrap_or(128);
            if !matches!(group, 32 | 64 | 128) {
                return Err(bad(
                    kernel,
                    format!("the affine kernels take --group-size 32, 64 or 128, got {group}"),
                ));
            }
            Ok(vec![affine(bits, u64::from(group), zero_point)])
        }
    }
}

impl Quant {
    fn shapes(&self, sel: &Selection) -> Result<Vec<(u64, u64, u64)>, SuiteError> {
        let name = self.name();
        if let Some(c) = &sel.single_config {
            return match (self.gemm, c.as_slice()) {
                (false, &[n, k]) => Ok(vec![(1, n, k)]),
                (true, &[m, n, k]) => Ok(vec![(m, n, k)]),
                _ => Err(bad(
                    name,
                    format!(
                        "--single-config takes {} values ({}), got {}",
                        self.size_params().len(),
                        self.size_params().join(","),
                        c.len()
                    ),
                )),
            };
        }
        if let Some(s) = &sel.sizes {
            // A size counts elements, as for every kernel: the weight matrix (qmatvec,
            // n = S / k) or the activations (qgemm, m = S / k), at least one row.
            let (_, n, k) = GEMM_SHAPE;
            let rows = |s: u64| (s / k).max(1);
            return Ok(s
                .iter()
                .map(|&s| if self.gemm { (rows(s), n, k) } else { (1, rows(s), k) })
                .collect());
        }
        Ok(if self.gemm {
            vec![GEMM_SHAPE]
        } else {
            MATVEC_SHAPES.iter().map(|&(n, k)| (1, n, k)).collect()
        })
    }

    fn mnk(&self, case: &Case) -> (usize, usize, usize) {
        let m = if self.gemm { case.size_usize("m") } else { 1 };
        (m, case.size_usize("n"), case.size_usize("k"))
    }

    fn layout(case: &Case) -> Option<QuantLayout> {
        case.weights.and_then(QuantLayout::of)
    }
}

/// The weight `(row, col)` of a quantized matrix with `k` columns, decoded in f64
/// straight from the format's definition: the oracle of [`decode_row`], which the
/// reference uses.
#[cfg(test)]
fn weight(
    l: &QuantLayout,
    q: &HostBuf,
    scales: &[u16],
    zeros: &[u8],
    k: usize,
    row: usize,
    col: usize,
) -> f64 {
    let g = row * (k / l.group) + col / l.group;
    let s = half::f16::from_bits(scales[g]).to_f64();
    let idx = row * k + col;
    let (qv, zero) = match (q, l.bits) {
        (HostBuf::I8(v), _) => (f64::from(v[idx]), 0.0),
        (HostBuf::U8(v), 4) => {
            let byte = match l.nibbles {
                NibbleOrder::Ggml => {
                    let block = idx / GGML_BLOCK;
                    let j = idx % GGML_BLOCK;
                    let b = v[block * GGML_BLOCK / 2 + j % 16];
                    if j < 16 {
                        b & 0x0F
                    } else {
                        b >> 4
                    }
                }
                NibbleOrder::Sequential => {
                    let b = v[idx / 2];
                    if idx.is_multiple_of(2) {
                        b & 0x0F
                    } else {
                        b >> 4
                    }
                }
            };
            let z = if l.zero_point {
                let b = zeros[g / 2];
                if g.is_multiple_of(2) {
                    b & 0x0F
                } else {
                    b >> 4
                }
            } else {
                8
            };
            (f64::from(byte), f64::from(z))
        }
        (HostBuf::U8(v), _) => {
            let z = if l.zero_point { zeros[g] } else { 128 };
            (f64::from(v[idx]), f64::from(z))
        }
        _ => (f64::NAN, 0.0),
    };
    (qv - zero) * s
}

/// Row `row` of the quantized matrix decoded into `out` (`k` weights): the values of
/// [`weight`] for every column, with each group's scale and zero point read once (the
/// reference decodes tens of millions of weights per check).
fn decode_row(
    l: &QuantLayout,
    q: &HostBuf,
    scales: &[u16],
    zeros: &[u8],
    k: usize,
    row: usize,
    out: &mut [f64],
) {
    let groups = k / l.group;
    for (gi, chunk) in out.chunks_mut(l.group).enumerate() {
        let g = row * groups + gi;
        let s = half::f16::from_bits(scales[g]).to_f64();
        let zero = match (q, l.bits) {
            (HostBuf::I8(_), _) => 0.0,
            (HostBuf::U8(_), 4) if l.zero_point => {
                let b = zeros[g / 2];
                f64::from(if g.is_multiple_of(2) { b & 0x0F } else { b >> 4 })
            }
            (HostBuf::U8(_), 4) => 8.0,
            (HostBuf::U8(_), _) => f64::from(if l.zero_point { zeros[g] } else { 128 }),
            _ => f64::NAN,
        };
        let base = row * k + gi * l.group;
        for (c, o) in chunk.iter_mut().enumerate() {
            let idx = base + c;
            let qv = match (q, l.bits, l.nibbles) {
                (HostBuf::I8(v), _, _) => f64::from(v[idx]),
                (HostBuf::U8(v), 4, NibbleOrder::Ggml) => {
                    let (block, j) = (idx / GGML_BLOCK, idx % GGML_BLOCK);
                    let b = v[block * GGML_BLOCK / 2 + j % 16];
                    f64::from(if j < 16 { b & 0x0F } else { b >> 4 })
                }
                (HostBuf::U8(v), 4, NibbleOrder::Sequential) => {
                    let b = v[idx / 2];
                    f64::from(if idx.is_multiple_of(2) { b & 0x0F } else { b >> 4 })
                }
                (HostBuf::U8(v), _, _) => f64::from(v[idx]),
                _ => f64::NAN,
            };
            *o = (qv - zero) * s;
        }
    }
}

impl Kernel for Quant {
    fn id(&self) -> KernelRef {
        KernelRef::Suite(if self.gemm { KernelId::Qgemm } else { KernelId::Qmatvec })
    }

    fn summary(&self) -> &'static str {
        if self.gemm {
            "Y[m x n] = X[m x k] W^T, W quantized (Q4_0, Q8_0, int4/int8 groups of 32-128, fp16 scales)"
        } else {
            "y[n] = W[n x k] x[k], W quantized (Q4_0, Q8_0, int4/int8 groups of 32-128, fp16 scales)"
        }
    }

    fn size_params(&self) -> &'static [&'static str] {
        if self.gemm {
            &["m", "n", "k"]
        } else {
            &["n", "k"]
        }
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        let name = self.name();
        match sel.dtype {
            None | Some(Precision::Fp32) => {}
            Some(p) => {
                return Err(bad(
                    name,
                    format!("activations are fp32 on every backend; --dtype {p} does not apply"),
                ))
            }
        }
        let formats = formats(name, sel)?;
        let shapes = self.shapes(sel)?;
        if shapes.is_empty() {
            return Err(bad(name, "no sizes given"));
        }
        let mut out = Vec::new();
        for &(m, n, k) in &shapes {
            if m == 0 || n == 0 || k == 0 {
                return Err(bad(
                    name,
                    format!("m, n and k must be at least 1, got m={m} n={n} k={k}"),
                ));
            }
            let fits = [m.checked_mul(k), n.checked_mul(k), m.checked_mul(n)]
                .iter()
                .all(|e| e.and_then(|e| usize::try_from(e).ok()).is_some());
            if !fits {
                return Err(bad(name, format!("m={m} n={n} k={k} does not fit this machine")));
            }
            for &format in &formats {
                let Some(l) = QuantLayout::of(format) else {
                    return Err(bad(
                        name,
                        format!("no kernels for weight format {}", format.label()),
                    ));
                };
                if k % l.group as u64 != 0 {
                    return Err(bad(
                        name,
                        format!("the group size {} does not divide k = {k}", l.group),
                    ));
                }
                let sizes = if self.gemm {
                    vec![("m", m), ("n", n), ("k", k)]
                } else {
                    vec![("n", n), ("k", k)]
                };
                out.push(Case {
                    kernel: self.id(),
                    sizes,
                    dtype: Precision::Fp32,
                    weights: Some(format),
                    variant: None,
                });
            }
        }
        Ok(out)
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let (m, n, k) = self.mnk(case);
        let Some(l) = Self::layout(case) else { return Vec::new() };
        let (lo, hi) = l.scale_range();
        let qtype = if l.signed { DType::I8 } else { DType::U8 };
        let mut v = vec![
            BufferSpec::input("x", DType::F32, m * k, Init::Uniform { lo: -1.0, hi: 1.0 }),
            BufferSpec::input("qweight", qtype, l.quant_bytes(n, k), Init::RandomBits),
            BufferSpec::input("scales", DType::F16, l.groups(n, k), Init::Uniform { lo, hi }),
        ];
        if l.zero_point {
            v.push(BufferSpec::input("qzeros", DType::U8, l.zero_bytes(n, k), Init::RandomBits));
        }
        v.push(BufferSpec::output("y", DType::F32, m * n));
        v
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let (m, n, k) = self.mnk(case);
        let Some(l) = Self::layout(case) else { return Vec::new() };
        let (Some(HostBuf::F32(x)), Some(q), Some(HostBuf::U16(scales))) =
            (buffers.first(), buffers.get(1), buffers.get(2))
        else {
            return Vec::new();
        };
        let zeros: &[u8] = match (l.zero_point, buffers.get(3)) {
            (true, Some(HostBuf::U8(z))) => z,
            (true, _) => return Vec::new(),
            (false, _) => &[],
        };
        if x.len() != m * k
            || q.len() != l.quant_bytes(n, k)
            || scales.len() != l.groups(n, k)
            || zeros.len() != l.zero_bytes(n, k)
        {
            return Vec::new();
        }
        let rows: Vec<usize> = if (m * n * k) as u64 <= FULL_REFERENCE_MACS {
            (0..m).collect()
        } else {
            let mut r = vec![0, m / 2, m - 1];
            r.dedup();
            r
        };
        // Output columns in parallel (each decodes its weight row once); every value is
        // the same sequential f64 dot product whatever the split.
        let cols: Vec<Vec<f64>> = (0..n)
            .into_par_iter()
            .map_init(
                || vec![0.0; k],
                |w_row, j| {
                    decode_row(&l, q, scales, zeros, k, j, w_row);
                    rows.iter()
                        .map(|&i| {
                            let xi = &x[i * k..(i + 1) * k];
                            xi.iter().zip(w_row.iter()).map(|(&a, &w)| f64::from(a) * w).sum()
                        })
                        .collect()
                },
            )
            .collect();
        let mut y = vec![f32::NAN; m * n];
        for (j, col) in cols.iter().enumerate() {
            for (&i, v) in rows.iter().zip(col) {
                y[i * n + j] = *v as f32;
            }
        }
        vec![HostBuf::F32(y)]
    }

    fn tolerance(&self, case: &Case) -> Tolerance {
        // A dot product of k terms |w x| <= wmax (|x| < 1, wmax = the largest
        // |q - zero| times the largest scale), accumulated in fp32 in any order: the
        // error is within the sum bound (4 sqrt(k) + 16) u of sum |w x| <= k wmax, plus
        // one rounding per group scale (k / group more terms). Absolute, because y
        // cancels: typical |y| is sqrt(k) wmax / 4, about 100 times this bound for
        // k = 4096, so a misplaced nibble or scale still fails.
        let k = case.size("k");
        let Some(l) = Self::layout(case) else { return Tolerance::EXACT };
        let u = unit_roundoff(Precision::Fp32);
        let wmax = l.max_deviation() * l.scale_range().1;
        let terms = sum_tolerance(k, u) + (k / l.group as u64) as f64 * u;
        Tolerance::new(terms * k as f64 * wmax, 0.0)
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let name = self.name();
        let (m, n, k) =
            (if self.gemm { case.size("m") } else { 1 }, case.size("n"), case.size("k"));
        let format =
            case.weights.ok_or_else(|| bad(name, "a quantized case needs a weight format"))?;
        let mut w = QuantGemmSpec { m, n, k, act_dtype: Precision::Fp32, format, out_dtype: None }
            .work()
            .map_err(|e| model_err(name, e))?;
        w.assumptions.push(
            "weights stored as N rows of K; quants, fp16 scales and zero points in separate \
             arrays (the bytes of ggml's blocks, not interleaved)"
                .to_string(),
        );
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{run_case, TimingOptions};
    use crate::mock::{MockBackend, MockConfig};
    use std::sync::atomic::AtomicBool;

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

    const F16_ONE: u16 = 0x3C00;
    const F16_HALF: u16 = 0x3800;

    /// The row decoder gives the definition's value for every weight of every format.
    #[test]
    fn rows_decode_as_the_definition() {
        let formats = [
            WeightFormat::Q4_0,
            WeightFormat::Q8_0,
            affine(4, 32, false),
            affine(4, 64, true),
            affine(8, 128, true),
            affine(8, 32, false),
        ];
        for f in formats {
            let c = case(false, 1, 6, 256, f);
            let l = QuantLayout::of(f).unwrap();
            let bufs = crate::rng::fill_all(&Quant { gemm: false }.buffers(&c), 5, 3);
            let HostBuf::U16(scales) = &bufs[2] else { panic!() };
            let zeros: &[u8] = match bufs.get(3) {
                Some(HostBuf::U8(z)) if l.zero_point => z,
                _ => &[],
            };
            let mut row = vec![0.0; 256];
            for r in 0..6 {
                decode_row(&l, &bufs[1], scales, zeros, 256, r, &mut row);
                for (col, v) in row.iter().enumerate() {
                    let want = weight(&l, &bufs[1], scales, zeros, 256, r, col);
                    assert_eq!(v.to_bits(), want.to_bits(), "{f:?} row {r} col {col}");
                }
            }
        }
    }

    #[test]
    fn q4_0_block_decoded_by_hand() {
        // One Q4_0 block (n = 1, k = 32), d = 0.5. Byte j = 0x_hl holds weight j in l and
        // weight j+16 in h. Bytes: [0x9F, 0x08, 0, ..., 0]:
        //   w0  = (0xF - 8) * 0.5 = 3.5,   w16 = (0x9 - 8) * 0.5 = 0.5,
        //   w1  = (0x8 - 8) * 0.5 = 0,     w17 = (0x0 - 8) * 0.5 = -4,
        //   others (0 - 8) * 0.5 = -4.
        // x = e0 + 2 e16 + 10 e17: y = 3.5 + 2*0.5 + 10*(-4) = -35.5
        let mut qs = vec![0u8; 16];
        qs[0] = 0x9F;
        qs[1] = 0x08;
        let mut x = vec![0.0f32; 32];
        x[0] = 1.0;
        x[16] = 2.0;
        x[17] = 10.0;
        let c = case(false, 1, 1, 32, WeightFormat::Q4_0);
        let out = Quant { gemm: false }.reference(
            &c,
            &[HostBuf::F32(x.clone()), HostBuf::U8(qs.clone()), HostBuf::U16(vec![F16_HALF])],
        );
        assert_eq!(out, vec![HostBuf::F32(vec![-35.5])]);
        // The same block in sequential (int4, g32, symmetric) order reads w0 = 3.5,
        // w1 = (9 - 8) * 0.5 = 0.5, w2 = 0, w3 = -4, and the rest -4: with
        // x = e0 + 2 e1 + 10 e17, y = 3.5 + 1 - 40 = -35.5 again.
        let c = case(false, 1, 1, 32, affine(4, 32, false));
        let mut x2 = vec![0.0f32; 32];
        x2[0] = 1.0;
        x2[1] = 2.0;
        x2[17] = 10.0;
        let out = Quant { gemm: false }.reference(
            &c,
            &[HostBuf::F32(x2), HostBuf::U8(qs.clone()), HostBuf::U16(vec![F16_HALF])],
        );
        assert_eq!(out, vec![HostBuf::F32(vec![-35.5])]);
    }

    #[test]
    fn int8_and_zero_points_by_hand() {
        // Q8_0, k = 32, d = 1: q = [-3, 5, 0...], x = [2, 1, ...]: y = -6 + 5 = -1.
        let mut q = vec![0i8; 32];
        q[0] = -3;
        q[1] = 5;
        let mut x = vec![0.0f32; 32];
        x[0] = 2.0;
        x[1] = 1.0;
        let out = Quant { gemm: false }.reference(
            &case(false, 1, 1, 32, WeightFormat::Q8_0),
            &[HostBuf::F32(x.clone()), HostBuf::I8(q), HostBuf::U16(vec![F16_ONE])],
        );
        assert_eq!(out, vec![HostBuf::F32(vec![-1.0])]);
        // int4 g32 with zero points, two rows (n = 2): zero nibbles 0x_53 -> row 0 z = 3,
        // row 1 z = 5. All quants 7: row 0 weights (7-3)*1 = 4, row 1 (7-5)*1 = 2.
        // x = ones(32): y = [128, 64].
        let out = Quant { gemm: false }.reference(
            &case(false, 1, 2, 32, affine(4, 32, true)),
            &[
                HostBuf::F32(vec![1.0; 32]),
                HostBuf::U8(vec![0x77; 32]),
                HostBuf::U16(vec![F16_ONE; 2]),
                HostBuf::U8(vec![0x53]),
            ],
        );
        assert_eq!(out, vec![HostBuf::F32(vec![128.0, 64.0])]);
        // int8 g32 symmetric: q = 130 -> (130 - 128) * 0.5 = 1 each; x = ones: y = 32.
        let out = Quant { gemm: false }.reference(
            &case(false, 1, 1, 32, affine(8, 32, false)),
            &[
                HostBuf::F32(vec![1.0; 32]),
                HostBuf::U8(vec![130; 32]),
                HostBuf::U16(vec![F16_HALF]),
            ],
        );
        assert_eq!(out, vec![HostBuf::F32(vec![32.0])]);
    }

    #[test]
    fn work_by_hand() {
        // qmatvec Q4_0 n = k = 4096: read x 4096*4 = 16,384 + weights 4096*4096*18/32 =
        // 9,437,184; write y 4096*4 = 16,384; FLOPs 2*4096*4096 = 33,554,432.
        let w =
            Quant { gemm: false }.work(&case(false, 1, 4096, 4096, WeightFormat::Q4_0)).unwrap();
        assert_eq!(w.bytes_read, 16_384.0 + 9_437_184.0);
        assert_eq!(w.bytes_written, 16_384.0);
        assert_eq!(w.flops, 33_554_432.0);
        // qgemm int4 g128 with zero points, m = 2, n = 10, k = 256: x 2*256*4 = 2,048;
        // quants 10*256/2 = 1,280; scales 10*2*2 = 40; zeros 10*2/2 = 10; y 2*10*4 = 80.
        let w = Quant { gemm: true }.work(&case(true, 2, 10, 256, affine(4, 128, true))).unwrap();
        assert_eq!(w.bytes_read, 2048.0 + 1280.0 + 40.0 + 10.0);
        assert_eq!(w.bytes_written, 80.0);
        assert_eq!(w.flops, 2.0 * 2.0 * 10.0 * 256.0);
        // The buffers hold exactly those bytes.
        let c = case(true, 2, 10, 256, affine(4, 128, true));
        let bytes: u64 = Quant { gemm: true }.buffers(&c).iter().map(BufferSpec::bytes).sum();
        assert_eq!(bytes as f64, w.bytes());
    }

    #[test]
    fn selections() {
        let k = KernelId::Qmatvec.def();
        let cs = k.cases(&Selection::default()).unwrap();
        assert_eq!(cs.len(), 4);
        assert_eq!(cs[0].sizes, vec![("n", 4096), ("k", 4096)]);
        assert_eq!(cs[0].weights, Some(WeightFormat::Q4_0));
        assert_eq!(cs[3].sizes, vec![("n", 14336), ("k", 4096)]);
        let sel = Selection {
            single_config: Some(vec![100, 256]),
            bits: Some(8),
            group_size: Some(64),
            variant: Some(Variant::Zp),
            ..Selection::default()
        };
        let cs = k.cases(&sel).unwrap();
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].weights, Some(affine(8, 64, true)));
        let sel = Selection { wformat: Some(WeightFormatKind::Q8_0), ..Selection::default() };
        assert!(k.cases(&sel).unwrap().iter().all(|c| c.weights == Some(WeightFormat::Q8_0)));
        let g = KernelId::Qgemm.def();
        // 7 x 4096 activation elements → m = 7; fewer than one row → m = 1.
        let cs = g
            .cases(&Selection { sizes: Some(vec![7 * 4096, 100]), ..Selection::default() })
            .unwrap();
        assert_eq!(cs[0].sizes, vec![("m", 7), ("n", 4096), ("k", 4096)]);
        assert!(cs.iter().any(|c| c.sizes == vec![("m", 1), ("n", 4096), ("k", 4096)]));
        let bad_sels = [
            Selection { bits: Some(3), ..Selection::default() },
            Selection {
                wformat: Some(WeightFormatKind::Q4_0),
                bits: Some(8),
                ..Selection::default()
            },
            Selection {
                wformat: Some(WeightFormatKind::Q4_0),
                group_size: Some(64),
                ..Selection::default()
            },
            Selection {
                wformat: Some(WeightFormatKind::Q4_0),
                variant: Some(Variant::Zp),
                ..Selection::default()
            },
            Selection { group_size: Some(48), ..Selection::default() },
            Selection { variant: Some(Variant::Scalar), ..Selection::default() },
            Selection { single_config: Some(vec![64, 100]), ..Selection::default() },
            Selection { single_config: Some(vec![0, 64]), ..Selection::default() },
            Selection { single_config: Some(vec![1, 64, 64]), ..Selection::default() },
            Selection { dtype: Some(Precision::Fp16), ..Selection::default() },
        ];
        for sel in bad_sels {
            assert!(matches!(k.cases(&sel), Err(SuiteError::BadConfig { .. })), "{sel:?}");
        }
        let e = k
            .cases(&Selection { single_config: Some(vec![64, 100]), ..Selection::default() })
            .unwrap_err();
        assert!(e.to_string().contains("does not divide k = 100"), "{e}");
    }

    #[test]
    fn large_gemm_reference_samples_three_rows() {
        // m*n*k = 8192*32*512 = 2^27 > 2^26: rows 0, 4096 and 8191 computed, others NaN.
        let q = Quant { gemm: true };
        let c = case(true, 8192, 32, 512, WeightFormat::Q8_0);
        let l = QuantLayout::of(WeightFormat::Q8_0).unwrap();
        let bufs = [
            HostBuf::F32(vec![0.5; 8192 * 512]),
            HostBuf::I8(vec![2; l.quant_bytes(32, 512)]),
            HostBuf::U16(vec![F16_ONE; l.groups(32, 512)]),
        ];
        let out = q.reference(&c, &bufs);
        let y = out[0].as_f32().unwrap();
        // 512 * 0.5 * 2 = 512
        for (i, row) in y.chunks(32).enumerate() {
            if [0, 4096, 8191].contains(&i) {
                assert!(row.iter().all(|&v| v == 512.0), "row {i}");
            } else {
                assert!(row.iter().all(|v| v.is_nan()), "row {i}");
            }
        }
    }

    #[test]
    fn mock_backend_end_to_end() {
        let k = KernelId::Qgemm.def();
        let c = case(true, 3, 5, 64, affine(4, 32, true));
        let mut mock = MockBackend::new(MockConfig::default());
        let imp = crate::backend::Backend::implementations(&mock, KernelId::Qgemm.into()).remove(0);
        let opts = TimingOptions { min_time_s: 0.001, min_runs: 3, ..TimingOptions::default() };
        let r = run_case(&mut mock, k, &c, &imp, None, &opts, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert_eq!(r.check.elements, 15);
    }
}
