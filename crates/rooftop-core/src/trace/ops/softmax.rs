//! Softmax and log-softmax, forward and backward (`_softmax`, `_log_softmax`,
//! `_safe_softmax`, `_softmax_backward_data`, `_log_softmax_backward_data`): table
//! `Softmax` (ours; TraceLens leaves these ops unmodelled).
//!
//! Model, per element of the input (`E` elements in `R = E / n` rows of `n` along `dim`):
//! - forward (safe softmax, Milakov & Gimelshein, "Online normalizer calculation for
//!   softmax", arXiv:1805.02867, Algorithm 2): the row maximum (1 comparison), `x − max`
//!   (1), `exp` (1), the sum (1), and the scaling `× 1/sum` (1): `5·E`, plus one
//!   reciprocal per row: `5·E + R`. Log-softmax does `(x − max) − log(sum)` instead of
//!   the scaling and one `log` per row: also `5·E + R`. `exp` and `log` count as one
//!   FLOP each (they are one special-function instruction on both vendors' GPUs);
//! - backward: softmax `dx = y·(dy − Σ dy·y)` — the product, the sum, the difference
//!   and the product again, `4·E`; log-softmax `dx = dy − exp(y)·Σ dy` — the sum, `exp`,
//!   the product, the difference, `4·E`;
//! - bytes: the DRAM minimum, each tensor crossing once — forward `E` read and `E`
//!   written (in `float` when `half_to_float`), backward `dy` and `y` read and `dx`
//!   written. The paper counts 4 accesses per element for a three-pass safe softmax
//!   and 3 for the online one; a row that stays on chip between the passes (PyTorch's
//!   persistent kernel for rows up to 1024 elements, and L2 for longer ones) reads it
//!   once, which is the floor the roofline needs.

// The formulas name dimensions as the docs do (N, C, H, W, k).
#![allow(clippy::many_single_char_names)]

use super::args::{
    bpe_of, custom_work, finish, mul, numel, prefer_core, sum, udim, vector_precision, Args, R,
};
use super::{dtype_precision, ExecUnit, OpClass, OpModel, ParamValue, Params, Table};
use crate::ops::softmax::{SoftmaxPasses, SoftmaxSpec};

/// The reduced axis from `dim` (negative counts from the end).
fn axis(a: &Args, i: usize, shape: &[i64]) -> R<usize> {
    let s = a.concrete(i).map(str::trim).filter(|s| !s.is_empty());
    let d: i64 = s
        .ok_or_else(|| "dim (concrete input) is not recorded".to_string())?
        .parse()
        .map_err(|_| format!("cannot read dim `{}`", s.unwrap_or_default()))?;
    let nd = i64::try_from(shape.len()).unwrap_or(i64::MAX);
    let ax = if d < 0 { d + nd } else { d };
    usize::try_from(ax)
        .ok()
        .filter(|&x| x < shape.len().max(1))
        .ok_or_else(|| format!("dim {d} out of range for {shape:?}"))
}

/// Rows of `shape` reduced along `ax` (`E / n`); a scalar is one row of one.
fn rows(shape: &[i64], ax: usize, e: u128) -> R<u128> {
    if shape.is_empty() {
        return Ok(1);
    }
    let n = udim(shape, ax, "softmax dim")?;
    Ok(e.checked_div(n).unwrap_or(0))
}

/// `aten::_softmax(self, dim, half_to_float)` and its log and safe variants.
pub(super) fn forward(log: bool, a: &Args) -> R<OpModel> {
    let s = a.dims(0)?;
    let t = a.dtype(0)?;
    let ax = axis(a, 1, &s)?;
    let half_to_float = super::args::parse_bool(a.concrete(2)).unwrap_or(false);
    let bi = bpe_of(&t)?;
    let bo = if half_to_float { 4 } else { bi };
    let e = numel(&s)?;
    let r = rows(&s, ax, e)?;
    let flops = sum(&[mul(&[5, e])?, r])?;
    let (read, written) = (mul(&[e, bi])?, mul(&[e, bo])?);
    let what = if log { "log_softmax" } else { "softmax" };
    // The shared row-softmax model (last axis, same dtype in and out) when it gives
    // exactly these numbers.
    let core = match dtype_precision(&t) {
        Some(p) if !log && bi == bo && ax + 1 == s.len() => SoftmaxSpec {
            rows: u64::try_from(r).unwrap_or(0),
            cols: u64::try_from(udim(&s, ax, "softmax dim")?).unwrap_or(0),
            dtype: p,
            passes: SoftmaxPasses::One,
        }
        .work()
        .ok(),
        _ => None,
    };
    let work = prefer_core(core, flops, sum(&[read, written])?, || {
        custom_work(
            OpClass::Softmax,
            format!("{s:?} dim={ax}"),
            flops,
            format!("5*E + R = 5*{e} + {r}"),
            vector_precision(&t),
            ExecUnit::Vector,
            read,
            written,
            format!("E*{bi} read + E*{bo} written = {read} + {written} B"),
            vec![
                format!(
                    "{what}: max, subtract, exp, sum and {} per element, one {} per row",
                    if log { "subtract log(sum)" } else { "scale" },
                    if log { "log" } else { "reciprocal" }
                ),
                "each row crosses DRAM once (read once, written once)".to_string(),
            ],
        )
    });
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(s));
    p.push("dim", ParamValue::Int(i64::try_from(ax).unwrap_or(i64::MAX)));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(t), half_to_float.then(|| "float".to_string())]));
    p.push("stride_input", a.strides(0));
    Ok(finish(Table::Softmax, p, work, None))
}

/// The element size of a `ScalarType` as the `input_dtype` argument records it (its
/// enum number, `c10/core/ScalarType.h`), or `None`.
fn scalar_type_bytes(code: &str) -> Option<u128> {
    match code.trim() {
        "5" | "15" => Some(2), // Half, BFloat16
        "6" => Some(4),        // Float
        "7" => Some(8),        // Double
        _ => None,
    }
}

/// `aten::_softmax_backward_data(grad_output, output, dim, input_dtype)` and the log
/// variant.
pub(super) fn backward(log: bool, a: &Args) -> R<OpModel> {
    let s = a.dims(0)?;
    let sy = a.dims(1)?;
    if s != sy {
        return Err(format!("grad_output {s:?} and output {sy:?} differ"));
    }
    let (tg, ty) = (a.dtype(0)?, a.dtype(1)?);
    let ax = axis(a, 2, &s)?;
    let (bg, by) = (bpe_of(&tg)?, bpe_of(&ty)?);
    let bx = a.concrete(3).and_then(scalar_type_bytes).unwrap_or(bg);
    let e = numel(&s)?;
    let flops = mul(&[4, e])?;
    let read = sum(&[mul(&[e, bg])?, mul(&[e, by])?])?;
    let written = mul(&[e, bx])?;
    let work = custom_work(
        OpClass::Softmax,
        format!("{s:?} dim={ax} backward"),
        flops,
        format!("4*E = 4*{e}"),
        vector_precision(&tg),
        ExecUnit::Vector,
        read,
        written,
        format!("E*{bg} (dy) + E*{by} (y) read + E*{bx} (dx) written = {read} + {written} B"),
        vec![
            if log {
                "dx = dy - exp(y)*sum(dy): sum, exp, product, difference per element"
            } else {
                "dx = y*(dy - sum(dy*y)): product, sum, difference, product per element"
            }
            .to_string(),
            "dy and y are read once, dx written once".to_string(),
        ],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(s));
    p.push("dim", ParamValue::Int(i64::try_from(ax).unwrap_or(i64::MAX)));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(tg), Some(ty)]));
    p.push("stride_input", a.strides(0));
    Ok(finish(Table::Softmax, p, work, None))
}
