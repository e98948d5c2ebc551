//! Normalization ops (layer, batch, group, instance, fused RMS norm and the backwards):
//! TraceLens `Normalization`.

use super::args::{
    as_i64, bpe_of, custom_work, finish, mul, numel, parse_bool, parse_bool_list, parse_int_list,
    sum, udim, vector_precision, Args, R,
};
use super::{ExecUnit, Kind, OpClass, OpModel, ParamValue, Params, Table};

// --- Normalization ---------------------------------------------------------------------

/// TraceLens `Normalization`: FLOPs `3*C + 3*E if training + 3*C + 2*E`; bytes
/// `E*bpe_in + E*bpe_out + T*C*bpe_in` with `T = 2 (mean, var) + 1 if affine (+1 if bias)
/// + 2 if training`, E the elements, C the channels (LayerNorm: the normalized size).
pub(super) fn norm(kind: Kind, a: &Args) -> R<OpModel> {
    let shape = a.dims(0)?;
    if shape.is_empty() {
        return Err("normalization of a scalar".to_string());
    }
    let e = numel(&shape)?;
    let (channels, affine, has_bias, training) = match kind {
        Kind::LayerNorm => {
            let ns = a
                .concrete(1)
                .and_then(parse_int_list)
                .ok_or_else(|| "layer_norm: normalized_shape not recorded".to_string())?;
            (numel(&ns)?, a.has_tensor(2), a.has_tensor(3), true)
        }
        Kind::BatchNorm | Kind::InstanceNorm => {
            let training = parse_bool(a.concrete(5)).unwrap_or(true);
            (udim(&shape, 1, "C")?, a.has_tensor(1), true, training)
        }
        Kind::GroupNorm => (udim(&shape, 1, "C")?, a.has_tensor(2), true, true),
        _ => (udim(&shape, 1, "C")?, a.has_tensor(1), true, true), // native_group_norm
    };
    let dtype = a.dtype(0)?;
    let bpe = bpe_of(&dtype)?;
    let c3 = mul(&[3, channels])?;
    let flops = sum(&[c3, if training { mul(&[3, e])? } else { 0 }, c3, mul(&[2, e])?])?;
    let tensors: u128 =
        2 + u128::from(affine) * (1 + u128::from(has_bias)) + if training { 2 } else { 0 };
    let read = sum(&[mul(&[e, bpe])?, mul(&[tensors, channels, bpe])?])?;
    let written = mul(&[e, bpe])?;
    let work = custom_work(
        OpClass::LayerNorm,
        format!("{shape:?} C={channels}"),
        flops,
        format!(
            "3*C{} + 3*C + 2*E = 3*{channels}{} + 3*{channels} + 2*{e}",
            if training { " + 3*E" } else { "" },
            if training { format!(" + 3*{e}") } else { String::new() }
        ),
        vector_precision(&dtype),
        ExecUnit::Vector,
        read,
        written,
        format!("E*{bpe} + {tensors}*C*{bpe} read + E*{bpe} written = {read} + {written} B"),
        vec!["activations cross DRAM once; statistics and parameters are read once per channel \
             (TraceLens Normalization model)"
            .to_string()],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(shape));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(dtype), None]));
    p.push("stride_input", a.strides(0));
    p.push("stride_output", ParamValue::Null);
    p.push("num_channels", ParamValue::Int(as_i64(channels)));
    p.push("has_bias", ParamValue::Bool(has_bias));
    p.push("is_affine", ParamValue::Bool(affine));
    p.push("is_training", ParamValue::Bool(training));
    Ok(finish(Table::Normalization, p, work, None))
}

/// Normalization backward, TraceLens `Normalization.flops_func_bwd` / `bytes_func_bwd`:
/// FLOPs `4*E` (the dot products) `+ 5*E` for the input gradient in training `+ 2*E` for
/// the input gradient from running statistics `+ 3*C` to recompute `invstd` when not
/// training; bytes: dY and X read, dX written (X only in training), `invstd` read in
/// training, the weight read and its gradient (and the bias's) written when affine.
pub(super) fn norm_bwd(kind: Kind, a: &Args) -> R<OpModel> {
    let (xi, channels, affine, has_bias, training, mask) = if kind == Kind::LayerNormBwd {
        // grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask
        let ns = a
            .concrete(2)
            .and_then(parse_int_list)
            .ok_or_else(|| "layer_norm_backward: normalized_shape not recorded".to_string())?;
        let mask = a.concrete(7).and_then(parse_bool_list).unwrap_or_else(|| vec![true; 3]);
        let m = |i: usize| mask.get(i).copied().unwrap_or(false);
        (1, numel(&ns)?, m(1), m(2), true, mask)
    } else {
        // native: grad_out, input, weight, running_mean, running_var, save_mean,
        // save_invstd, train, eps, output_mask; cudnn/miopen: input, grad_output,
        // weight, ... (training only).
        let native = kind == Kind::BatchNormBwd;
        let xi = usize::from(native);
        let shape = a.dims(xi)?;
        let training = if native { parse_bool(a.concrete(7)).unwrap_or(true) } else { true };
        let mask = if native {
            a.concrete(9).and_then(parse_bool_list).unwrap_or_else(|| vec![true; 3])
        } else {
            vec![true; 3]
        };
        let affine = a.has_tensor(2);
        let m2 = mask.get(2).copied().unwrap_or(false);
        (xi, udim(&shape, 1, "C")?, affine, affine && m2, training, mask)
    };
    let shape = a.dims(xi)?;
    let e = numel(&shape)?;
    let dx = mask.first().copied().unwrap_or(true);
    let dtype = a.dtype(xi)?;
    let bpe = bpe_of(&dtype)?;
    let mut flops = sum(&[mul(&[4, e])?, if training { 0 } else { mul(&[3, channels])? }])?;
    if dx {
        flops = sum(&[flops, mul(&[if training { 5 } else { 2 }, e])?])?;
    }
    let read = sum(&[
        mul(&[e, bpe])?,
        if dx && training { mul(&[e, bpe])? } else { 0 },
        if training { mul(&[channels, bpe])? } else { 0 },
        if affine { mul(&[channels, bpe])? } else { 0 },
    ])?;
    let written = sum(&[
        if dx { mul(&[e, bpe])? } else { 0 },
        if affine && training { mul(&[channels, bpe, if has_bias { 2 } else { 1 }])? } else { 0 },
    ])?;
    let work = custom_work(
        OpClass::LayerNorm,
        format!("{shape:?} C={channels} backward"),
        flops,
        format!(
            "4*E{}{} = {flops}",
            if dx {
                if training {
                    " + 5*E"
                } else {
                    " + 2*E"
                }
            } else {
                ""
            },
            if training { "" } else { " + 3*C" }
        ),
        vector_precision(&dtype),
        ExecUnit::Vector,
        read,
        written,
        format!("{read} read + {written} written B"),
        vec!["activations cross DRAM once per use (TraceLens Normalization backward model)"
            .to_string()],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(shape));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(dtype), None]));
    p.push("stride_input", a.strides(xi));
    p.push("stride_output", ParamValue::Null);
    p.push("num_channels", ParamValue::Int(as_i64(channels)));
    p.push("has_bias", ParamValue::Bool(has_bias));
    p.push("is_affine", ParamValue::Bool(affine));
    p.push("is_training", ParamValue::Bool(training));
    p.push("output_mask", ParamValue::Str(format!("{mask:?}")));
    Ok(finish(Table::Normalization, p, work, None))
}

/// TraceLens `RMSNorm` (`aten::_fused_rms_norm`): FLOPs `(E/C)*(2*C + 2) + E*(2 if
/// affine else 1)`; bytes `E*bpe + E*bpe + C*bpe if affine`.
pub(super) fn rms_norm(a: &Args) -> R<OpModel> {
    let shape = a.dims(0)?;
    let e = numel(&shape)?;
    let ns = a
        .concrete(1)
        .and_then(parse_int_list)
        .ok_or_else(|| "rms_norm: normalized_shape not recorded".to_string())?;
    let c = numel(&ns)?;
    if c == 0 || e % c != 0 {
        return Err(format!("normalized_shape {ns:?} does not divide {shape:?}"));
    }
    let affine = a.has_tensor(2);
    let dtype = a.dtype(0)?;
    let bpe = bpe_of(&dtype)?;
    let flops =
        sum(&[mul(&[e / c, sum(&[mul(&[2, c])?, 2])?])?, mul(&[e, if affine { 2 } else { 1 }])?])?;
    let read = sum(&[mul(&[e, bpe])?, if affine { mul(&[c, bpe])? } else { 0 }])?;
    let written = mul(&[e, bpe])?;
    let work = custom_work(
        OpClass::RmsNorm,
        format!("{shape:?} C={c}"),
        flops,
        format!(
            "(E/C)*(2*C + 2) + E*{} = ({e}/{c})*(2*{c} + 2) + {e}*{}",
            if affine { 2 } else { 1 },
            if affine { 2 } else { 1 }
        ),
        vector_precision(&dtype),
        ExecUnit::Vector,
        read,
        written,
        format!(
            "E*{bpe}{} read + E*{bpe} written = {read} + {written} B",
            if affine { format!(" + C*{bpe}") } else { String::new() }
        ),
        vec!["each row is read once and stays on chip".to_string()],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(shape));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(dtype), None]));
    p.push("stride_input", a.strides(0));
    p.push("stride_output", ParamValue::Null);
    p.push("num_channels", ParamValue::Int(as_i64(c)));
    p.push("has_bias", ParamValue::Bool(false));
    p.push("is_affine", ParamValue::Bool(affine));
    p.push("is_training", ParamValue::Bool(false));
    Ok(finish(Table::Normalization, p, work, None))
}
