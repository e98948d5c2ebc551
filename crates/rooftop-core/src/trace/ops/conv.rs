//! Convolutions (`convolution`, `convolution_backward`): TraceLens `CONV_fwd` /
//! `CONV_bwd`.

// The formulas name dimensions as the docs do (N, C, H, W, k).
#![allow(clippy::many_single_char_names)]

use super::args::{
    bpe_of, custom_work, finish, mul, numel, parse_bool, parse_bool_list, parse_int_list,
    prefer_core, sum, udim, Args, R,
};
use super::{
    dtype_precision, Conv2dSpec, ExecUnit, OpClass, OpModel, ParamValue, Params, Precision, Table,
};

// --- CONV ------------------------------------------------------------------------------

/// TraceLens `CONV` (after PyTorch's `flop_counter`): FLOPs `2*prod(out)*prod(w[1:])`
/// (`2*prod(x)*prod(w[1:])` transposed) plus `prod(out)` bias adds; bytes
/// `(prod(x) + prod(w) + C_out if bias + prod(out))*bpe`. The bias counts when the op
/// has one (TraceLens never sees it on `aten::convolution`).
#[allow(clippy::many_single_char_names)]
/// A convolution's geometry as `aten::convolution` (and its backward) record it.
struct ConvGeom {
    x: Vec<i64>,
    w: Vec<i64>,
    out: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
}

/// Reads input `xi`, weight `wi` and the scalar arguments from `c0` on (stride, padding,
/// dilation, transposed, output_padding, groups); computes the output shape (PyTorch
/// `Conv*d` / `ConvTranspose*d` docs) in `i128`, so no geometry overflows.
#[allow(clippy::many_single_char_names)]
fn conv_geom(a: &Args, xi: usize, wi: usize, c0: usize) -> R<ConvGeom> {
    let x = a.dims(xi)?;
    let w = a.dims(wi)?;
    if x.len() < 3 || x.len() > 5 || w.len() != x.len() {
        return Err(format!(
            "convolution expects 3-D to 5-D input and matching weight, got {x:?} and {w:?}"
        ));
    }
    let nd = x.len() - 2;
    let axis_list = |i: usize, default: i64, what: &str| -> R<Vec<i64>> {
        let v = match a.concrete(i) {
            Some(s) if !s.trim().is_empty() => {
                parse_int_list(s).ok_or_else(|| format!("cannot read {what} `{s}`"))?
            }
            _ => vec![default; nd],
        };
        match v.len() {
            1 => Ok(vec![v[0]; nd]),
            l if l == nd => Ok(v),
            _ => Err(format!("{what} {v:?} does not have {nd} entries")),
        }
    };
    let stride = axis_list(c0, 1, "stride")?;
    let padding = axis_list(c0 + 1, 0, "padding")?;
    let dilation = axis_list(c0 + 2, 1, "dilation")?;
    let transposed = parse_bool(a.concrete(c0 + 3)).unwrap_or(false);
    let output_padding = axis_list(c0 + 4, 0, "output_padding")?;
    let groups: i64 = match a.concrete(c0 + 5) {
        Some(s) if !s.trim().is_empty() => {
            s.trim().parse().map_err(|_| format!("cannot read groups `{s}`"))?
        }
        _ => 1,
    };
    if groups < 1 {
        return Err(format!("groups must be at least 1, got {groups}"));
    }
    let wide = |v: i128, what: &str| i64::try_from(v).map_err(|_| format!("{what} overflows"));
    let c_out = if transposed {
        wide(i128::from(w[1]) * i128::from(groups), "output channels")?
    } else {
        w[0]
    };
    let mut out = vec![x[0], c_out];
    for i in 0..nd {
        let [inp, k, s, p, d, op] =
            [x[i + 2], w[i + 2], stride[i], padding[i], dilation[i], output_padding[i]]
                .map(i128::from);
        if s < 1 || d < 1 || k < 1 || inp < 0 || p < 0 || op < 0 {
            return Err(format!("invalid convolution geometry on axis {i}"));
        }
        let o = if transposed {
            (inp - 1) * s - 2 * p + d * (k - 1) + op + 1
        } else {
            let span = d * (k - 1) + 1;
            if span > inp + 2 * p {
                return Err(format!(
                    "the dilated filter spans {span} elements but the padded input has {}",
                    inp + 2 * p
                ));
            }
            (inp + 2 * p - span) / s + 1
        };
        if o < 1 {
            return Err(format!("output extent {o} on axis {i}"));
        }
        out.push(wide(o, "output extent")?);
    }
    Ok(ConvGeom { x, w, out, stride, padding, dilation, transposed, output_padding, groups })
}

fn conv_params(a: &Args, g: ConvGeom, xi: usize, wi: usize, bias: bool) -> R<Params> {
    let nd = g.x.len() - 2;
    let mut p = Params::default();
    p.push("convNd", ParamValue::Str(format!("conv{nd}d")));
    p.push("input_shape", ParamValue::Ints(g.x));
    p.push("filter_shape", ParamValue::Ints(g.w));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(a.dtype(xi)?), Some(a.dtype(wi)?)]));
    p.push("input_stride", a.strides(xi));
    p.push("weight_stride", a.strides(wi));
    p.push("bias", ParamValue::Bool(bias));
    p.push("stride", ParamValue::Ints(g.stride));
    p.push("padding", ParamValue::Ints(g.padding));
    p.push("dilation", ParamValue::Ints(g.dilation));
    p.push("transposed_conv", ParamValue::Bool(g.transposed));
    p.push("output_padding", ParamValue::Ints(g.output_padding));
    p.push("groups", ParamValue::Int(g.groups));
    Ok(p)
}

pub(super) fn conv(a: &Args) -> R<OpModel> {
    let g = conv_geom(a, 0, 1, 3)?;
    let bias = a.has_tensor(2);
    let ConvGeom { x, w, out, stride, padding, dilation, transposed, groups, .. } = &g;
    let (transposed, groups, nd) = (*transposed, *groups, x.len() - 2);
    let dtype = a.dtype(0)?;
    let bpe = bpe_of(&dtype)?;
    let (nx, nw, no) = (numel(x)?, numel(w)?, numel(out)?);
    let per_elem = mul(&[2, numel(&w[1..])?])?;
    let conv_flops = mul(&[if transposed { nx } else { no }, per_elem])?;
    let flops = sum(&[conv_flops, if bias { no } else { 0 }])?;
    let c_out = udim(out, 1, "C_out")?;
    let read = mul(&[sum(&[nx, nw, if bias { c_out } else { 0 }])?, bpe])?;
    let written = mul(&[no, bpe])?;
    let bytes = sum(&[read, written])?;
    let precision = dtype_precision(&dtype);
    let core = match (nd, transposed, precision) {
        (2, false, Some(p)) => {
            let spec = Conv2dSpec {
                n: u64::try_from(x[0]).unwrap_or(0),
                c: u64::try_from(x[1]).unwrap_or(0),
                h: u64::try_from(x[2]).unwrap_or(0),
                w: u64::try_from(x[3]).unwrap_or(0),
                k: u64::try_from(w[0]).unwrap_or(0),
                r: u64::try_from(w[2]).unwrap_or(0),
                s: u64::try_from(w[3]).unwrap_or(0),
                stride: (stride[0].unsigned_abs(), stride[1].unsigned_abs()),
                pad: (padding[0].unsigned_abs(), padding[1].unsigned_abs()),
                dilation: (dilation[0].unsigned_abs(), dilation[1].unsigned_abs()),
                groups: groups.unsigned_abs(),
                dtype: p,
                bias,
            };
            spec.work().ok()
        }
        _ => None,
    };
    let work = prefer_core(core, flops, bytes, || {
        let p = precision.unwrap_or(Precision::Fp32);
        // FP32 convolutions run as TF32 on the matrix unit (cuDNN's allow_tf32 default).
        let p = if p == Precision::Fp32 { Precision::Tf32 } else { p };
        custom_work(
            OpClass::Conv,
            format!("x={x:?} w={w:?} out={out:?}"),
            flops,
            format!(
                "2*prod(out)*prod(w[1:]){} = {conv_flops}{}",
                if bias { " + prod(out)" } else { "" },
                if bias { format!(" + {no}") } else { String::new() }
            ),
            p,
            ExecUnit::Matrix,
            read,
            written,
            format!(
                "(x + w{})*{bpe} read + out*{bpe} written = {read} + {written} B",
                if bias { " + C_out" } else { "" }
            ),
            vec!["input, weight and output cross DRAM once".to_string()],
        )
    });
    let p = conv_params(a, g, 0, 1, bias)?;
    Ok(finish(Table::ConvFwd, p, work, None))
}

/// Convolution backward (`aten::convolution_backward`): each requested gradient
/// (`output_mask`) costs what TraceLens's `CONV.flops_bwd_func` counts — the input and
/// the weight gradient one forward convolution each (`2*prod(out)*prod(w[1:])`), the bias
/// gradient `prod(out)` adds. Bytes: input gradient reads dY and W and writes dX; weight
/// gradient reads dY and X and writes dW; bias gradient reads dY and writes `C_out`, all
/// in the input's element size (TraceLens adds the bias-gradient bytes as elements).
#[allow(clippy::many_single_char_names)]
pub(super) fn conv_bwd(a: &Args) -> R<OpModel> {
    // grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    // output_padding, groups, output_mask
    let g = conv_geom(a, 1, 2, 4)?;
    let mask = a.concrete(10).and_then(parse_bool_list).unwrap_or_else(|| vec![true, true, false]);
    let m = |i: usize| mask.get(i).copied().unwrap_or(false);
    let (nx, nw, no) = (numel(&g.x)?, numel(&g.w)?, numel(&g.out)?);
    let conv_flops =
        mul(&[if g.transposed { nx } else { no }, 2, numel(g.w.get(1..).unwrap_or(&[]))?])?;
    let c_out = udim(&g.out, 1, "C_out")?;
    let dtype = a.dtype(1)?;
    let bpe = bpe_of(&dtype)?;
    let mut flops = 0u128;
    let (mut read, mut written) = (0u128, 0u128);
    if m(0) {
        flops = sum(&[flops, conv_flops])?;
        read = sum(&[read, no, nw])?;
        written = sum(&[written, nx])?;
    }
    if m(1) {
        flops = sum(&[flops, conv_flops])?;
        read = sum(&[read, no, nx])?;
        written = sum(&[written, nw])?;
    }
    if m(2) {
        flops = sum(&[flops, no])?;
        read = sum(&[read, no])?;
        written = sum(&[written, c_out])?;
    }
    let (read, written) = (mul(&[read, bpe])?, mul(&[written, bpe])?);
    let p = dtype_precision(&dtype).unwrap_or(Precision::Fp32);
    let p = if p == Precision::Fp32 { Precision::Tf32 } else { p };
    let work = custom_work(
        OpClass::Conv,
        format!("x={:?} w={:?} out={:?} backward", g.x, g.w, g.out),
        flops,
        format!(
            "dX {} + dW {} + db {} = {flops}",
            if m(0) { conv_flops } else { 0 },
            if m(1) { conv_flops } else { 0 },
            if m(2) { no } else { 0 }
        ),
        p,
        ExecUnit::Matrix,
        read,
        written,
        format!(
            "{read} read + {written} written B (dX: dY + W → dX; dW: dY + X → dW; db: dY → C_out)"
        ),
        vec!["each tensor crosses DRAM once per gradient that uses it".to_string()],
    );
    let mut params = conv_params(a, g, 1, 2, m(2))?;
    params.push("output_mask", ParamValue::Str(format!("{mask:?}")));
    Ok(finish(Table::ConvBwd, params, work, None))
}

/// The cuDNN/MIOpen convolution backward ops of PyTorch before 1.11 (`aten::convolution_backward`
/// replaced them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Legacy {
    /// `cudnn_convolution_backward(self, grad_output, weight, padding, stride, dilation,
    /// groups, benchmark, deterministic, allow_tf32, output_mask)`: both gradients.
    Both,
    /// `cudnn_convolution_backward_input(self_size, grad_output, weight, ...)`.
    Input,
    /// `cudnn_convolution_backward_weight(weight_size, grad_output, self, ...)`.
    Weight,
}

pub(super) fn legacy(name: &str) -> Option<Legacy> {
    match name {
        "aten::cudnn_convolution_backward" | "aten::miopen_convolution_backward" => {
            Some(Legacy::Both)
        }
        "aten::cudnn_convolution_backward_input" | "aten::miopen_convolution_backward_input" => {
            Some(Legacy::Input)
        }
        "aten::cudnn_convolution_backward_weight" | "aten::miopen_convolution_backward_weight" => {
            Some(Legacy::Weight)
        }
        _ => None,
    }
}

/// A size list recorded as a concrete input (`[64, 3, 7, 7]`).
fn size_arg(a: &Args, i: usize, what: &str) -> R<Vec<i64>> {
    a.concrete(i).and_then(parse_int_list).filter(|v| !v.is_empty()).ok_or_else(|| {
        format!(
            "the {what} (an int list, concrete input {i}) is not recorded; traces before \
             PyTorch 2.0 do not record int lists"
        )
    })
}

/// Legacy convolution backward: each gradient is one convolution's worth of work,
/// `2·prod(dy)·prod(w[1:])` — the input gradient is a transposed convolution of `dy`
/// with `W`, the weight gradient a convolution of `X` with `dy`, and both do one
/// multiply-add per (output element, filter element) pair whatever the stride, padding
/// or dilation (PyTorch `flop_counter.conv_backward_flop`). Bytes as in
/// [`conv_bwd`]: the input gradient reads `dy` and `W` and writes `dX`, the weight
/// gradient reads `dy` and `X` and writes `dW`.
pub(super) fn conv_bwd_legacy(l: Legacy, a: &Args) -> R<OpModel> {
    let (x, dy, w, mask, dt_at) = match l {
        Legacy::Both => {
            let mask = a
                .args
                .concrete_inputs
                .last()
                .filter(|s| s.contains("True") || s.contains("False"))
                .and_then(|s| parse_bool_list(s))
                .filter(|v| v.len() == 2)
                .unwrap_or_else(|| vec![true, true]);
            (a.dims(0)?, a.dims(1)?, a.dims(2)?, mask, 1)
        }
        Legacy::Input => {
            (size_arg(a, 0, "input size")?, a.dims(1)?, a.dims(2)?, vec![true, false], 1)
        }
        Legacy::Weight => {
            (a.dims(2)?, a.dims(1)?, size_arg(a, 0, "weight size")?, vec![false, true], 1)
        }
    };
    if x.len() < 3 || x.len() != dy.len() || w.len() != x.len() {
        return Err(format!(
            "convolution backward expects matching 3-D to 5-D input {x:?}, grad_output {dy:?} \
             and weight {w:?}"
        ));
    }
    if dy[1] != w[0] {
        return Err(format!("grad_output {dy:?} has not the {} output channels of {w:?}", w[0]));
    }
    let dtype = a.dtype(dt_at)?;
    let bpe = bpe_of(&dtype)?;
    let (nx, nw, no) = (numel(&x)?, numel(&w)?, numel(&dy)?);
    let conv_flops = mul(&[no, 2, numel(&w[1..])?])?;
    let (dx, dw) = (mask.first().copied().unwrap_or(false), mask.get(1).copied().unwrap_or(false));
    let mut flops = 0u128;
    let (mut read, mut written) = (0u128, 0u128);
    if dx {
        flops = sum(&[flops, conv_flops])?;
        read = sum(&[read, no, nw])?;
        written = sum(&[written, nx])?;
    }
    if dw {
        flops = sum(&[flops, conv_flops])?;
        read = sum(&[read, no, nx])?;
        written = sum(&[written, nw])?;
    }
    let (read, written) = (mul(&[read, bpe])?, mul(&[written, bpe])?);
    let p = dtype_precision(&dtype).unwrap_or(Precision::Fp32);
    let p = if p == Precision::Fp32 { Precision::Tf32 } else { p };
    let work = custom_work(
        OpClass::Conv,
        format!("x={x:?} w={w:?} dy={dy:?} backward"),
        flops,
        format!(
            "2*prod(dy)*prod(w[1:]) per gradient: dX {} + dW {} = {flops}",
            if dx { conv_flops } else { 0 },
            if dw { conv_flops } else { 0 }
        ),
        p,
        ExecUnit::Matrix,
        read,
        written,
        format!("{read} read + {written} written B (dX: dY + W → dX; dW: dY + X → dW)"),
        vec!["each tensor crosses DRAM once per gradient that uses it".to_string()],
    );
    let nd = x.len() - 2;
    let mut params = Params::default();
    params.push("convNd", ParamValue::Str(format!("conv{nd}d")));
    params.push("input_shape", ParamValue::Ints(x));
    params.push("filter_shape", ParamValue::Ints(w));
    params.push("grad_output_shape", ParamValue::Ints(dy));
    params.push("dtypes", ParamValue::Dtypes(vec![Some(dtype)]));
    params.push("output_mask", ParamValue::Str(format!("{:?}", [dx, dw])));
    Ok(finish(Table::ConvBwd, params, work, None))
}
