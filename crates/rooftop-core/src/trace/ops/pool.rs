//! Pooling, forward and backward (`max_pool{1,2,3}d_with_indices`, `avg_pool{2,3}d`,
//! `_adaptive_avg_pool{2,3}d`, `adaptive_max_pool{2,3}d` and their backwards): table
//! `Pool` (ours; TraceLens has no pooling model).
//!
//! Geometry as PyTorch documents it (`torch.nn.MaxPool2d`, `AvgPool2d`,
//! `AdaptiveAvgPool2d`): output extent `⌊(in + 2p − d·(k−1) − 1)/s⌋ + 1` (`⌈…⌉` with
//! `ceil_mode`, dropping a last window that would start in the right padding); stride
//! defaults to the kernel; adaptive window `o` spans `[⌊o·in/out⌋, ⌈(o+1)·in/out⌉)`.
//!
//! Model: the windows' in-bounds elements, summed exactly per axis (a window is the
//! product of its axes' ranges, so `Σ windows = N·C·Π_axis Σ_o w(o)`):
//! - max: one comparison per window element; the output and its `int64` indices written;
//! - average: one addition per window element and one division per output;
//! - backward: max scatters each output gradient once (one addition per output, the
//!   indices read); average spreads each output gradient over its window (one addition
//!   per window element, one division per output);
//! - bytes: each tensor crosses DRAM once (overlapping windows are re-read from cache).

// The formulas name dimensions as the docs do (N, C, H, W, k).
#![allow(clippy::many_single_char_names)]

use super::args::{
    bpe_of, custom_work, finish, mul, numel, parse_bool, parse_int_list, sum, vector_precision,
    Args, R,
};
use super::{ExecUnit, OpClass, OpModel, ParamValue, Params, Table};

/// Which pooling op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PoolKind {
    Max { nd: usize, backward: bool },
    Avg { nd: usize, backward: bool },
    AdaptiveAvg { nd: usize, backward: bool },
    AdaptiveMax { nd: usize, backward: bool },
}

pub(super) fn kind(name: &str) -> Option<PoolKind> {
    let n = name.strip_prefix("aten::")?;
    let (base, backward) = match n.strip_suffix("_backward") {
        Some(b) => (b, true),
        None => (n, false),
    };
    let k = match base {
        "max_pool1d_with_indices" => PoolKind::Max { nd: 1, backward },
        "max_pool2d_with_indices" => PoolKind::Max { nd: 2, backward },
        "max_pool3d_with_indices" => PoolKind::Max { nd: 3, backward },
        "avg_pool2d" => PoolKind::Avg { nd: 2, backward },
        "avg_pool3d" => PoolKind::Avg { nd: 3, backward },
        "_adaptive_avg_pool2d" => PoolKind::AdaptiveAvg { nd: 2, backward },
        "_adaptive_avg_pool3d" => PoolKind::AdaptiveAvg { nd: 3, backward },
        "adaptive_max_pool2d" => PoolKind::AdaptiveMax { nd: 2, backward },
        "adaptive_max_pool3d" => PoolKind::AdaptiveMax { nd: 3, backward },
        _ => return None,
    };
    Some(k)
}

/// One axis of a windowed (non-adaptive) pool.
#[derive(Debug, Clone, Copy)]
struct Axis {
    input: i64,
    k: i64,
    s: i64,
    p: i64,
    d: i64,
}

/// Output extent of one axis (PyTorch `pooling_output_shape`).
fn out_extent(ax: Axis, ceil: bool) -> R<i64> {
    let Axis { input, k, s, p, d } = ax;
    if k < 1 || s < 1 || d < 1 || p < 0 || input < 1 {
        return Err(format!("invalid pooling geometry {ax:?}"));
    }
    let span = input + 2 * p - d * (k - 1) - 1;
    if span < 0 {
        return Err(format!("the window {ax:?} does not fit the padded input"));
    }
    let mut o = if ceil { (span + s - 1) / s + 1 } else { span / s + 1 };
    if ceil && (o - 1) * s >= input + p {
        o -= 1;
    }
    Ok(o)
}

/// Σ over the axis's outputs of the in-bounds elements of each window.
fn window_sum(ax: Axis, out: i64) -> u128 {
    let mut total = 0u128;
    for o in 0..out {
        let start = o * ax.s - ax.p;
        let n = (0..ax.k).filter(|j| (0..ax.input).contains(&(start + j * ax.d))).count();
        total += n as u128;
    }
    total
}

/// Σ over the axis's adaptive windows of their lengths.
fn adaptive_window_sum(input: i64, out: i64) -> u128 {
    let mut total = 0u128;
    for o in 0..out {
        let start = (o * input) / out;
        let end = ((o + 1) * input + out - 1) / out;
        total += u128::try_from(end - start).unwrap_or(0);
    }
    total
}

/// An axis list argument (one value for all axes, or one per axis); `default` when
/// empty or not recorded.
fn axis_list(a: &Args, i: usize, nd: usize, default: Option<&[i64]>, what: &str) -> R<Vec<i64>> {
    let v = a.concrete(i).and_then(parse_int_list);
    let v = match (v, default) {
        (Some(v), _) if !v.is_empty() => v,
        (_, Some(d)) => d.to_vec(),
        _ => return Err(format!("{what} (concrete input {i}) is not recorded")),
    };
    match v.len() {
        1 => Ok(vec![v[0]; nd]),
        l if l == nd => Ok(v),
        _ => Err(format!("{what} {v:?} does not have {nd} entries")),
    }
}

/// The spatial part of an input shape (`[N, C, *spatial]` or `[C, *spatial]`):
/// `(N·C, spatial)`.
fn split(shape: &[i64], nd: usize) -> R<(u128, Vec<i64>)> {
    if shape.len() < nd + 1 {
        return Err(format!("input {shape:?} has fewer than {} dimensions", nd + 1));
    }
    let (lead, spatial) = shape.split_at(shape.len() - nd);
    Ok((numel(lead)?, spatial.to_vec()))
}

/// Geometry of a windowed pool on `x` with arguments from `c0` (kernel, stride,
/// padding, then dilation for max) and `ceil_mode` at `ceil_at`: `(out spatial, Σ
/// windows per N·C)`.
fn windowed(a: &Args, x: &[i64], nd: usize, c0: usize, dilation: bool) -> R<(Vec<i64>, u128)> {
    let k = axis_list(a, c0, nd, None, "kernel_size")?;
    let s = axis_list(a, c0 + 1, nd, Some(&k), "stride")?;
    let p = axis_list(a, c0 + 2, nd, Some(&[0]), "padding")?;
    let (d, ceil_at) = if dilation {
        (axis_list(a, c0 + 3, nd, Some(&[1]), "dilation")?, c0 + 4)
    } else {
        (vec![1; nd], c0 + 3)
    };
    let ceil = parse_bool(a.concrete(ceil_at)).unwrap_or(false);
    let mut out = Vec::with_capacity(nd);
    let mut windows = 1u128;
    for i in 0..nd {
        let ax = Axis { input: x[i], k: k[i], s: s[i], p: p[i], d: d[i] };
        let o = out_extent(ax, ceil)?;
        windows = mul(&[windows, window_sum(ax, o)])?;
        out.push(o);
    }
    Ok((out, windows))
}

/// Adaptive geometry: `(out spatial, Σ windows per N·C)`.
fn adaptive(x: &[i64], out: &[i64]) -> R<u128> {
    if out.len() != x.len() || out.iter().any(|&o| o < 1) {
        return Err(format!("output size {out:?} does not fit input {x:?}"));
    }
    let mut w = 1u128;
    for (&i, &o) in x.iter().zip(out) {
        w = mul(&[w, adaptive_window_sum(i, o)])?;
    }
    Ok(w)
}

pub(super) fn pool(k: PoolKind, a: &Args) -> R<OpModel> {
    let (nd, backward) = match k {
        PoolKind::Max { nd, backward }
        | PoolKind::Avg { nd, backward }
        | PoolKind::AdaptiveAvg { nd, backward }
        | PoolKind::AdaptiveMax { nd, backward } => (nd, backward),
    };
    // Backward ops take grad_output first and the forward input second.
    let xi = usize::from(backward);
    let x = a.dims(xi)?;
    let t = a.dtype(xi)?;
    let b = bpe_of(&t)?;
    let (nc, spatial) = split(&x, nd)?;
    let (out_spatial, windows) = match k {
        PoolKind::Max { .. } => windowed(a, &spatial, nd, xi + 1, true)?,
        PoolKind::Avg { .. } => windowed(a, &spatial, nd, xi + 1, false)?,
        PoolKind::AdaptiveAvg { .. } | PoolKind::AdaptiveMax { .. } => {
            let out = if backward {
                split(&a.dims(0)?, nd)?.1
            } else {
                axis_list(a, 1, nd, None, "output_size")?
            };
            let w = adaptive(&spatial, &out)?;
            (out, w)
        }
    };
    if backward {
        let g = split(&a.dims(0)?, nd)?.1;
        if g != out_spatial {
            return Err(format!(
                "grad_output's spatial size {g:?} is not the pooled size {out_spatial:?}"
            ));
        }
    }
    let e_in = numel(&x)?;
    let e_out = mul(&[nc, numel(&out_spatial)?])?;
    let windows = mul(&[nc, windows])?;
    let is_max = matches!(k, PoolKind::Max { .. } | PoolKind::AdaptiveMax { .. });
    let idx = if is_max { mul(&[e_out, 8])? } else { 0 };
    let (flops, flops_formula) = match (is_max, backward) {
        (true, false) => (windows, format!("Σ window elements = {windows} comparisons")),
        (true, true) => (e_out, format!("E_out = {e_out} additions (scatter)")),
        (false, _) => {
            (sum(&[windows, e_out])?, format!("Σ window elements + E_out = {windows} + {e_out}"))
        }
    };
    let (read, written, bytes_formula) = if backward {
        let r = sum(&[mul(&[e_out, b])?, idx])?;
        let w = mul(&[e_in, b])?;
        (
            r,
            w,
            format!(
                "E_out*{b} (dy){} read + E_in*{b} (dx) written = {r} + {w} B",
                if is_max { " + E_out*8 (indices)" } else { "" }
            ),
        )
    } else {
        let r = mul(&[e_in, b])?;
        let w = sum(&[mul(&[e_out, b])?, idx])?;
        (
            r,
            w,
            format!(
                "E_in*{b} read + E_out*{b}{} written = {r} + {w} B",
                if is_max { " + E_out*8 (indices)" } else { "" }
            ),
        )
    };
    let work = custom_work(
        if is_max && !backward { OpClass::Reduction } else { OpClass::Elementwise },
        format!("{x:?} -> {out_spatial:?}{}", if backward { " backward" } else { "" }),
        flops,
        flops_formula,
        vector_precision(&t),
        ExecUnit::Vector,
        read,
        written,
        bytes_formula,
        vec![
            "each tensor crosses DRAM once; overlapping windows are re-read from cache".to_string()
        ],
    );
    let mut p = Params::default();
    p.push("input_shape", ParamValue::Ints(x));
    p.push("output_spatial", ParamValue::Ints(out_spatial));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(t)]));
    p.push("backward", ParamValue::Bool(backward));
    Ok(finish(Table::Pool, p, work, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_match_pytorch_docs() {
        // AlexNet's MaxPool2d(3, 2) on 55×55: ⌊(55 − 2 − 1)/2⌋ + 1 = 27.
        let ax = Axis { input: 55, k: 3, s: 2, p: 0, d: 1 };
        assert_eq!(out_extent(ax, false).unwrap(), 27);
        // ResNet's MaxPool2d(3, 2, 1) on 112: ⌊(112 + 2 − 3)/2⌋ + 1 = 56.
        let ax = Axis { input: 112, k: 3, s: 2, p: 1, d: 1 };
        assert_eq!(out_extent(ax, false).unwrap(), 56);
        // ceil_mode on 6 with k=3, s=2: ⌈(6 − 3)/2⌉ + 1 = 3 (last window starts at 4 < 6).
        let ax = Axis { input: 6, k: 3, s: 2, p: 0, d: 1 };
        assert_eq!(out_extent(ax, true).unwrap(), 3);
        // Padded windows: in 4, k 3, s 1, p 1 → 4 outputs of 2, 3, 3, 2 elements.
        let ax = Axis { input: 4, k: 3, s: 1, p: 1, d: 1 };
        assert_eq!(window_sum(ax, 4), 10);
        // Adaptive 5 → 3: windows [0,2), [1,4), [3,5): 2 + 3 + 2.
        assert_eq!(adaptive_window_sum(5, 3), 7);
        // Adaptive 6 → 6: one element each.
        assert_eq!(adaptive_window_sum(6, 6), 6);
    }
}
