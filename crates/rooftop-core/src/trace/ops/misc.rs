//! Element-wise ops outside TraceLens's `BinaryElementwise` and `UnaryElementwise`
//! (whose op lists we keep as TraceLens has them, so that those tables match its CSVs):
//! table `Elementwise` (ours).
//!
//! - binary ops TraceLens does not list (`sub`, `rsub`, `maximum`, the activation
//!   backwards, ...) and unary ones (`floor`, `hardtanh`, `leaky_relu`, ...): the
//!   TraceLens binary and unary formulas ([`super::elementwise`]);
//! - comparisons and logical ops (`eq`, `lt`, `logical_and`, ...): the binary formula
//!   with a `bool` (1-byte) output;
//! - `where(condition, self, other)`, `masked_fill(self, mask, value)`: one select per
//!   output element; every operand read once, the output written once;
//! - fills (`fill_`, `zero_`): the tensor written once, no arithmetic;
//! - random fills: `uniform_` scales and shifts each random number (2 FLOPs),
//!   `normal_` scales and shifts each normal variate (2; the Box–Muller transform's
//!   special functions are not counted), `bernoulli_` compares (1); written once;
//! - `native_dropout(input, p, train)`: a comparison and a scaling per element, the
//!   output and its `bool` mask written; `native_dropout_backward(grad, mask, scale)`:
//!   two products per element;
//! - `mse_loss(self, target, reduction)`: difference, square and sum (3 per element,
//!   plus the mean's division); its backward `2·(x − t)·g/N`: 3 per element;
//!   `nll_loss_forward(self, target, ...)`: one gathered element per row, summed;
//!   `nll_loss_backward`: the gradient zero-filled and one element per row written;
//! - multi-tensor `_foreach_*` ops (optimizers): the ops' element count over the first
//!   list, each list read once, the result written once (in place: into the first
//!   list); FLOPs per element: 1 for a unary or binary op, 3 for `addcmul`, `addcdiv`
//!   and `lerp`. A tensor list's dtype is not recorded: the element size comes from the
//!   kernel's functor (`BinaryOpListAlphaFunctor<float, …>`), see [`super::model_op_in`].

// The formulas name dimensions as the docs do (N, C, H, W, k).
#![allow(clippy::many_single_char_names)]

use super::args::{bpe_of, custom_work, finish, mul, numel, sum, vector_precision, Args, R};
use super::elementwise::{binary, unary};
use super::{Dims, ExecUnit, OpClass, OpModel, ParamValue, Params, Table};

/// Which model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Misc {
    Binary,
    Unary,
    Compare,
    Where,
    MaskedFill,
    Fill,
    /// Random fill with this many FLOPs per element.
    Random(u8),
    Dropout,
    DropoutBwd,
    MseLoss,
    MseLossBwd,
    NllLoss,
    NllLossBwd,
    /// `_foreach_*` with this many FLOPs per element.
    Foreach(u8),
}

pub(super) fn kind(name: &str) -> Option<Misc> {
    let n = name.strip_prefix("aten::")?;
    if let Some(op) = n.strip_prefix("_foreach_") {
        let base = op.trim_end_matches('_');
        let per = if matches!(base, "addcmul" | "addcdiv" | "lerp") { 3 } else { 1 };
        return Some(Misc::Foreach(per));
    }
    let base = n.trim_end_matches('_');
    let m = match base {
        "sub"
        | "rsub"
        | "maximum"
        | "minimum"
        | "remainder"
        | "fmod"
        | "floor_divide"
        | "atan2"
        | "gelu_backward"
        | "silu_backward"
        | "tanh_backward"
        | "hardtanh_backward"
        | "leaky_relu_backward"
        | "hardswish_backward"
        | "hardsigmoid_backward"
        | "elu_backward"
        | "softplus_backward"
        | "mish_backward"
        | "xlogy"
        | "hypot"
        | "true_divide"
        | "sgn" => Misc::Binary,
        "floor" | "ceil" | "round" | "trunc" | "sign" | "log1p" | "expm1" | "log2" | "log10"
        | "exp2" | "hardtanh" | "leaky_relu" | "elu" | "hardswish" | "hardsigmoid" | "mish"
        | "softplus" | "square" | "logical_not" | "bitwise_not" | "isnan" | "isinf"
        | "nan_to_num" | "erfinv" | "atan" | "tan" | "sinh" | "cosh" | "asin" | "acos"
        | "relu6" | "celu" | "selu" | "glu" => Misc::Unary,
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "logical_and" | "logical_or" | "logical_xor"
        | "bitwise_and" | "bitwise_or" | "bitwise_xor" => Misc::Compare,
        "where" => Misc::Where,
        "masked_fill" => Misc::MaskedFill,
        "fill" | "zero" => Misc::Fill,
        "uniform" | "normal" => Misc::Random(2),
        "bernoulli" => Misc::Random(1),
        "native_dropout" => Misc::Dropout,
        "native_dropout_backward" => Misc::DropoutBwd,
        "mse_loss" => Misc::MseLoss,
        "mse_loss_backward" => Misc::MseLossBwd,
        "nll_loss_forward" | "nll_loss2d_forward" => Misc::NllLoss,
        "nll_loss_backward" | "nll_loss2d_backward" => Misc::NllLossBwd,
        _ => return None,
    };
    Some(m)
}

/// Whether `name` is a `_foreach_*` op (its element size may come from its kernel).
pub(super) fn is_foreach(name: &str) -> bool {
    name.starts_with("aten::_foreach_")
}

/// Element size of the functor type of a PyTorch kernel (`…Functor<float, …>`,
/// `FillFunctor<c10::BFloat16>`), when it names one.
pub(super) fn functor_bytes(kernel: &str) -> Option<u128> {
    let at = kernel.find("Functor<")? + "Functor<".len();
    let rest = &kernel[at..];
    let ty = rest.split([',', '>']).next()?.trim();
    match ty {
        "double" => Some(8),
        "float" => Some(4),
        "c10::Half" | "c10::BFloat16" | "__half" | "__nv_bfloat16" | "at::Half" => Some(2),
        _ => None,
    }
}

fn to_table(m: OpModel) -> OpModel {
    OpModel { table: Table::Elementwise, ..m }
}

// The nine are one model's parts (shape, FLOPs and bytes with their formulas).
#[allow(clippy::too_many_arguments)]
fn simple(
    a: &Args,
    shape: &[i64],
    dtype: &str,
    flops: u128,
    flops_formula: String,
    read: u128,
    written: u128,
    bytes_formula: String,
    assumption: &str,
) -> OpModel {
    let work = custom_work(
        OpClass::Elementwise,
        format!("{shape:?}"),
        flops,
        flops_formula,
        vector_precision(dtype),
        ExecUnit::Vector,
        read,
        written,
        bytes_formula,
        vec![assumption.to_string()],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(shape.to_vec()));
    p.push(
        "dtypes",
        ParamValue::Dtypes(a.args.input_types.iter().map(|t| Some(t.clone())).collect()),
    );
    finish(Table::Elementwise, p, work, None)
}

pub(super) fn model(m: Misc, a: &Args) -> R<OpModel> {
    match m {
        Misc::Binary => binary(a).map(to_table),
        Misc::Unary => unary(a).map(to_table),
        Misc::Compare => compare(a),
        Misc::Where | Misc::MaskedFill => select(m, a),
        Misc::Fill | Misc::Random(_) => {
            let s = a.dims(0)?;
            let t = a.dtype(0)?;
            let e = numel(&s)?;
            let w = mul(&[e, bpe_of(&t)?])?;
            let per = match m {
                Misc::Random(p) => u128::from(p),
                _ => 0,
            };
            let flops = mul(&[e, per])?;
            Ok(simple(
                a,
                &s,
                &t,
                flops,
                format!("{per}*E = {flops}"),
                0,
                w,
                format!("E*{} written = {w} B", bpe_of(&t)?),
                "the tensor is written once and not read",
            ))
        }
        Misc::Dropout | Misc::DropoutBwd => {
            let s = a.dims(0)?;
            let t = a.dtype(0)?;
            let (e, b) = (numel(&s)?, bpe_of(&t)?);
            let x = mul(&[e, b])?;
            let (read, written, what) = if m == Misc::Dropout {
                (x, sum(&[x, e])?, "E*b read + E*b (output) + E*1 (mask) written")
            } else {
                (sum(&[x, e])?, x, "E*b (grad) + E*1 (mask) read + E*b written")
            };
            let flops = mul(&[2, e])?;
            Ok(simple(
                a,
                &s,
                &t,
                flops,
                format!("2*E = {flops}"),
                read,
                written,
                format!("{what} = {read} + {written} B"),
                "each tensor crosses DRAM once; the mask is one byte per element",
            ))
        }
        Misc::MseLoss | Misc::MseLossBwd => mse(m, a),
        Misc::NllLoss | Misc::NllLossBwd => nll(m, a),
        Misc::Foreach(per) => foreach(a, per, None),
    }
}

/// Comparisons: the binary formula with a one-byte output.
fn compare(a: &Args) -> R<OpModel> {
    let s1 = a.dims(0)?;
    let t1 = a.dtype(0)?;
    let b1 = bpe_of(&t1)?;
    let (n2, b2, s2) = if a.has_tensor(1) {
        let s2 = a.dims(1)?;
        (numel(&s2)?, bpe_of(&a.dtype(1)?)?, s2)
    } else {
        (0, 0, Vec::new())
    };
    let n1 = numel(&s1)?;
    let nd = s1.len().max(s2.len());
    let mut out = Vec::with_capacity(nd);
    for i in 0..nd {
        let d1 = if i + s1.len() >= nd { s1[i + s1.len() - nd] } else { 1 };
        let d2 = if i + s2.len() >= nd { s2[i + s2.len() - nd] } else { 1 };
        if d1 != d2 && d1 != 1 && d2 != 1 {
            return Err(format!("shapes {s1:?} and {s2:?} do not broadcast"));
        }
        out.push(d1.max(d2));
    }
    let no = numel(&out)?;
    let read = sum(&[mul(&[n1, b1])?, mul(&[n2, b2])?])?;
    Ok(simple(
        a,
        &out,
        &t1,
        no,
        format!("n_out = {no}"),
        read,
        no,
        format!("n1*{b1} + n2*{b2} read + n_out*1 (bool) written = {read} + {no} B"),
        "each operand read once; the boolean result written once, one byte per element",
    ))
}

/// `where(condition, self, other)` and `masked_fill(self, mask, value)`.
fn select(m: Misc, a: &Args) -> R<OpModel> {
    let (cond_i, x_i) = if m == Misc::Where { (0, 1) } else { (1, 0) };
    let x = a.dims(x_i)?;
    let t = a.dtype(x_i)?;
    let b = bpe_of(&t)?;
    let cond = numel(&a.dims(cond_i)?)?;
    let cb = bpe_of(&a.dtype(cond_i)?)?;
    let mut operands = vec![a.dims(cond_i)?, x.clone()];
    let mut read = sum(&[mul(&[cond, cb])?, mul(&[numel(&x)?, b])?])?;
    if m == Misc::Where && a.has_tensor(2) {
        let o = a.dims(2)?;
        read = sum(&[read, mul(&[numel(&o)?, bpe_of(&a.dtype(2)?)?])?])?;
        operands.push(o);
    }
    let nd = operands.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = vec![1i64; nd];
    for s in &operands {
        for (i, &d) in s.iter().enumerate() {
            let j = i + nd - s.len();
            if out[j] != d && out[j] != 1 && d != 1 {
                return Err(format!("operands {operands:?} do not broadcast"));
            }
            out[j] = out[j].max(d);
        }
    }
    let no = numel(&out)?;
    let written = mul(&[no, b])?;
    Ok(simple(
        a,
        &out,
        &t,
        no,
        format!("n_out = {no} selects"),
        read,
        written,
        format!("condition + operands read + n_out*{b} written = {read} + {written} B"),
        "each operand read once, the output written once",
    ))
}

fn mse(m: Misc, a: &Args) -> R<OpModel> {
    // mse_loss(self, target, reduction); mse_loss_backward(grad, self, target, reduction).
    let xi = usize::from(m == Misc::MseLossBwd);
    let s = a.dims(xi)?;
    let t = a.dtype(xi)?;
    let (e, b) = (numel(&s)?, bpe_of(&t)?);
    let reduction = a.concrete(xi + 2).map(str::trim);
    let reduced = !matches!(reduction, Some("0"));
    let flops = sum(&[mul(&[3, e])?, u128::from(reduced && reduction == Some("1"))])?;
    let (read, written) = if m == Misc::MseLoss {
        (mul(&[2, e, b])?, if reduced { b } else { mul(&[e, b])? })
    } else {
        let g = if reduced { b } else { mul(&[e, b])? };
        (sum(&[mul(&[2, e, b])?, g])?, mul(&[e, b])?)
    };
    Ok(simple(
        a,
        &s,
        &t,
        flops,
        format!("3*E{} = {flops}", if reduced { " (+1 for the mean)" } else { "" }),
        read,
        written,
        format!("input and target (and the gradient) read + result written = {read} + {written} B"),
        "each tensor crosses DRAM once",
    ))
}

fn nll(m: Misc, a: &Args) -> R<OpModel> {
    // nll_loss_forward(self, target, weight, reduction, ignore_index);
    // nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight).
    let (xi, ti) = if m == Misc::NllLoss { (0, 1) } else { (1, 2) };
    let s = a.dims(xi)?;
    let t = a.dtype(xi)?;
    let b = bpe_of(&t)?;
    let target = numel(&a.dims(ti)?)?;
    let tb = bpe_of(&a.dtype(ti)?)?;
    let (read, written) = if m == Misc::NllLoss {
        (sum(&[mul(&[target, tb])?, mul(&[target, b])?])?, b)
    } else {
        (mul(&[target, tb])?, mul(&[numel(&s)?, b])?)
    };
    Ok(simple(
        a,
        &s,
        &t,
        target,
        format!("one per target = {target}"),
        read,
        written,
        format!(
            "{} = {read} + {written} B",
            if m == Misc::NllLoss {
                "targets + one element per row read + the loss written"
            } else {
                "targets read + the gradient written (zero fill and scatter)"
            }
        ),
        "each target gathers or scatters one element of its row",
    ))
}

/// `_foreach_*`: `bpe` from the kernel when the lists' dtype is not recorded.
pub(super) fn foreach(a: &Args, per: u8, bpe: Option<u128>) -> R<OpModel> {
    let lists: Vec<&Vec<Vec<i64>>> = a
        .args
        .input_dims
        .iter()
        .filter_map(|d| match d {
            Dims::List(v) => Some(v),
            Dims::Tensor(_) => None,
        })
        .collect();
    // A profiler that does not record a list's tensors writes `[]` for it (PyTorch 2.11
    // does so for the optimizer's `_foreach_*` ops): read as a scalar's dims, never as
    // an empty list of no elements.
    let first = lists.first().filter(|l| !l.is_empty()).ok_or_else(|| {
        "the trace records the tensor lists without their tensors' shapes (`Input Dims` \
         `[]`), so their sizes are unknown"
            .to_string()
    })?;
    let mut n = 0u128;
    for s in *first {
        n = sum(&[n, numel(s)?])?;
    }
    let b = match bpe {
        Some(b) => b,
        None => bpe_of(&a.dtype(0)?).map_err(|_| {
            "the tensor lists' element size is not recorded and no kernel names it".to_string()
        })?,
    };
    let k = u128::try_from(lists.len()).unwrap_or(u128::MAX);
    let read = mul(&[n, b, k])?;
    let written = mul(&[n, b])?;
    let flops = mul(&[n, u128::from(per)])?;
    let work = custom_work(
        OpClass::Elementwise,
        format!("{} tensors, {n} elements", first.len()),
        flops,
        format!("{per}*n = {flops}"),
        if b == 8 { crate::units::Precision::Fp64 } else { crate::units::Precision::Fp32 },
        ExecUnit::Vector,
        read,
        written,
        format!("{k} lists*n*{b} read + n*{b} written = {read} + {written} B"),
        vec!["each list read once, the result written once".to_string()],
    );
    let mut p = Params::default();
    p.push("tensors", ParamValue::Int(i64::try_from(first.len()).unwrap_or(i64::MAX)));
    p.push("elements", ParamValue::Int(i64::try_from(n).unwrap_or(i64::MAX)));
    p.push("lists", ParamValue::Int(i64::try_from(k).unwrap_or(i64::MAX)));
    p.push("bytes_per_element", ParamValue::Int(i64::try_from(b).unwrap_or(i64::MAX)));
    Ok(finish(Table::Elementwise, p, work, None))
}
