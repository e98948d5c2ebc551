//! Reductions (`sum`, `mean`, `max`, `min`, `amax`, `amin`): TraceLens `Reduce`.

use super::args::{
    bpe_of, custom_work, finish, mul, numel, parse_bool, parse_int_list, vector_precision, Args, R,
};
use super::{ExecUnit, OpClass, OpModel, ParamValue, Params, Table};

/// TraceLens `Reduce`: FLOPs = input elements; bytes `in*bpe + out*bpe`. The output shape
/// comes from the `dim` and `keepdim` arguments (TraceLens never reads them from a
/// Kineto trace and always counts one output element). `out_dtype` is the output's
/// type when it is not the input's (`argmax`/`argmin` write `long` indices).
#[allow(clippy::many_single_char_names)]
pub(super) fn reduce(name: &str, a: &Args, out_dtype: Option<&str>) -> R<OpModel> {
    let s = a.dims(0)?;
    let t = a.dtype(0)?;
    let bpe = bpe_of(&t)?;
    let e = numel(&s)?;
    // sum/mean(self, dim, keepdim, dtype); amax/amin(self, dim, keepdim); max/min(self[, dim, keepdim]).
    let dims = a.concrete(1).and_then(parse_int_list);
    let keepdim = parse_bool(a.concrete(2)).unwrap_or(false);
    let out_shape: Vec<i64> = match dims {
        Some(d) if !d.is_empty() => {
            let nd = i64::try_from(s.len()).unwrap_or(i64::MAX);
            let mut axes: Vec<usize> = Vec::new();
            for x in d {
                let ax = if x < 0 { x + nd } else { x };
                let ax = usize::try_from(ax).ok().filter(|&i| i < s.len());
                axes.push(ax.ok_or_else(|| format!("{name}: dim {x} out of range for {s:?}"))?);
            }
            s.iter()
                .enumerate()
                .filter_map(
                    |(i, &v)| {
                        if axes.contains(&i) {
                            keepdim.then_some(1)
                        } else {
                            Some(v)
                        }
                    },
                )
                .collect()
        }
        _ => Vec::new(),
    };
    let eo = numel(&out_shape)?;
    let bo = match out_dtype {
        Some(t) => bpe_of(t)?,
        None => bpe,
    };
    let read = mul(&[e, bpe])?;
    let written = mul(&[eo, bo])?;
    let work = custom_work(
        OpClass::Reduction,
        format!("{s:?} -> {out_shape:?}"),
        e,
        format!("E_in = {e}"),
        vector_precision(&t),
        ExecUnit::Vector,
        read,
        written,
        format!("E_in*{bpe} read + E_out*{bo} written = {read} + {written} B"),
        vec!["the input is read once, the output written once".to_string()],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(s));
    p.push("out_shape", ParamValue::Ints(out_shape));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(t), out_dtype.map(str::to_string)]));
    p.push("stride_input", a.strides(0));
    Ok(finish(Table::Reduce, p, work, None))
}
