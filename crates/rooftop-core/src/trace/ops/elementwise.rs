//! Element-wise ops: TraceLens `BinaryElementwise` and `UnaryElementwise`.

use super::args::{
    bpe_of, custom_work, finish, mul, numel, prefer_core, sum, vector_precision, Args, R,
};
use super::{
    dtype_precision, ElementwiseSpec, ExecUnit, OpClass, OpModel, ParamValue, Params, Table,
};

// --- Element-wise ----------------------------------------------------------------------

/// NumPy broadcast of two shapes.
fn broadcast(s1: &[i64], s2: &[i64]) -> R<Vec<i64>> {
    let n = s1.len().max(s2.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let d1 = if i + s1.len() >= n { s1[i + s1.len() - n] } else { 1 };
        let d2 = if i + s2.len() >= n { s2[i + s2.len() - n] } else { 1 };
        if d1 != d2 && d1 != 1 && d2 != 1 {
            return Err(format!("shapes {s1:?} and {s2:?} do not broadcast"));
        }
        out.push(d1.max(d2));
    }
    Ok(out)
}

/// TraceLens `BinaryElementwise`: FLOPs = output elements (the broadcast shape); bytes
/// `n1*bpe1 + n2*bpe2 + n_out*bpe_out`, the output in the stated dtype, else the larger
/// input element size when both inputs are tensors, else the first input's.
pub(super) fn binary(a: &Args) -> R<OpModel> {
    let s1 = a.dims(0)?;
    let s2 = a.dims(1)?;
    let (t1, t2) = (a.dtype(0)?, a.dtype(1)?);
    let out_dtype = if a.has_tensor(2) { a.args.input_types.get(2).cloned() } else { None };
    let (b1, b2) = (bpe_of(&t1)?, bpe_of(&t2)?);
    let bo = match &out_dtype {
        Some(t) => bpe_of(t)?,
        None if !s1.is_empty() && !s2.is_empty() => b1.max(b2),
        None => b1,
    };
    let so = broadcast(&s1, &s2)?;
    let (n1, n2, no) = (numel(&s1)?, numel(&s2)?, numel(&so)?);
    let read = sum(&[mul(&[n1, b1])?, mul(&[n2, b2])?])?;
    let written = mul(&[no, bo])?;
    let bytes = sum(&[read, written])?;
    let core = match dtype_precision(&t1) {
        Some(p) if t1 == t2 && bo == b1 && n1 == no && !s2.is_empty() => {
            let mut spec = ElementwiseSpec::binary(u64::try_from(no).unwrap_or(0), p, 1.0);
            if n2 != no {
                spec.broadcast_elements = u64::try_from(n2).ok();
            }
            spec.work().ok()
        }
        _ => None,
    };
    let work = prefer_core(core, no, bytes, || {
        custom_work(
            OpClass::Elementwise,
            format!("{s1:?} op {s2:?} -> {so:?}"),
            no,
            format!("n_out = {no}"),
            vector_precision(&t1),
            ExecUnit::Vector,
            read,
            written,
            format!("n1*{b1} + n2*{b2} read + n_out*{bo} written = {read} + {written} B"),
            vec!["each input is read once at its own size, the output written once".to_string()],
        )
    });
    let mut p = Params::default();
    p.push("shape_in1", ParamValue::Ints(s1));
    p.push("shape_in2", ParamValue::Ints(s2));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(t1), Some(t2), out_dtype]));
    p.push("stride_input1", a.strides(0));
    p.push("stride_input2", a.strides(1));
    p.push("stride_output", if a.has_tensor(2) { a.strides(2) } else { ParamValue::Null });
    Ok(finish(Table::BinaryElementwise, p, work, None))
}

/// TraceLens `UnaryElementwise`: FLOPs = elements; bytes `E*bpe_in + E*bpe_out`, the
/// output in the second tensor argument's dtype when there is one.
#[allow(clippy::many_single_char_names)]
pub(super) fn unary(a: &Args) -> R<OpModel> {
    let s = a.dims(0)?;
    let t = a.dtype(0)?;
    let out_dtype = if a.has_tensor(1) { a.args.input_types.get(1).cloned() } else { None };
    let bi = bpe_of(&t)?;
    let bo = match &out_dtype {
        Some(o) => bpe_of(o)?,
        None => bi,
    };
    let e = numel(&s)?;
    let read = mul(&[e, bi])?;
    let written = mul(&[e, bo])?;
    let bytes = sum(&[read, written])?;
    let core = match dtype_precision(&t) {
        Some(p) if bi == bo => {
            ElementwiseSpec::unary(u64::try_from(e).unwrap_or(0), p, 1.0).work().ok()
        }
        _ => None,
    };
    let work = prefer_core(core, e, bytes, || {
        custom_work(
            OpClass::Elementwise,
            format!("{s:?}"),
            e,
            format!("E = {e}"),
            vector_precision(&t),
            ExecUnit::Vector,
            read,
            written,
            format!("E*{bi} read + E*{bo} written = {read} + {written} B"),
            vec!["the input is read once, the output written once".to_string()],
        )
    });
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(s));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(t), out_dtype]));
    p.push("stride_input", a.strides(0));
    p.push("stride_output", if a.has_tensor(1) { a.strides(1) } else { ParamValue::Null });
    Ok(finish(Table::UnaryElementwise, p, work, None))
}
