//! Ops that gather or move rows: `cat`, `index_select` (table `DataMovement`),
//! `embedding`, `embedding_dense_backward`, `embedding_bag` and fbgemm's table-batched
//! (split) embedding lookups (table `Embedding`). Ours: TraceLens has no model for them.
//!
//! They do no arithmetic except the bags' pooling and the backward's accumulation, so
//! their floor is the bytes, each counted once at its DRAM minimum:
//! - `cat(tensors, dim)`: every input read, the output (their sum) written; FLOPs 0. A
//!   tensor list's dtype is not recorded (`Input type` says `TensorList`): the element
//!   size comes from the kernel's `OpaqueType<N>` (PyTorch's `CatArrayBatchedCopy` copies
//!   N-byte opaque elements), see [`super::model_op_in`];
//! - `index_select(self, dim, index)` and `embedding(weight, indices)`: the indices read,
//!   the selected rows read and written once (`n·D` each, `n` indices of rows of `D`);
//! - `embedding_dense_backward(grad, indices, num_weights, ...)`: the gradient rows and
//!   indices read, each added into the weight gradient (`n·D` additions), which is
//!   zero-filled and written once (`V·D`);
//! - `embedding_bag(weight, indices, offsets, ..., mode)`: indices, offsets and the
//!   `n·D` rows read, `B·D` pooled outputs written, `n·D` additions (sum and mean; mean
//!   adds one division per output, max compares instead of adding);
//! - fbgemm table-batched lookups: the same as a bag per table, when every table has the
//!   same row width (`total_D = T·max_D`); with mixed widths the rows each index reads
//!   depend on which table it belongs to, which the trace does not record.

// The formulas name dimensions as the docs do (N, C, H, W, k).
#![allow(clippy::many_single_char_names)]

use super::args::{bpe_of, custom_work, finish, mul, numel, sum, udim, vector_precision, Args, R};
use super::{Dims, ExecUnit, OpClass, OpModel, ParamValue, Params, Precision, Table};

/// Element size named by a kernel's `OpaqueType<N>` template argument (PyTorch's
/// concatenation and copy kernels), when it has one.
pub(super) fn opaque_bytes(kernel: &str) -> Option<u128> {
    let at = kernel.find("OpaqueType<")? + "OpaqueType<".len();
    let digits: String = kernel[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|&b: &u128| b > 0 && b <= 16)
}

fn movement_work(
    shape: String,
    read: u128,
    written: u128,
    bytes_formula: String,
    assumption: &str,
) -> crate::ops::Work {
    custom_work(
        OpClass::Copy,
        shape,
        0,
        "0 (data movement only)".to_string(),
        Precision::Fp32,
        ExecUnit::Vector,
        read,
        written,
        bytes_formula,
        vec![assumption.to_string()],
    )
}

/// `aten::cat(tensors, dim)`; `bpe` is the element size when the caller found it
/// elsewhere (the kernel), else the recorded dtype's.
pub(super) fn cat(a: &Args, bpe: Option<u128>) -> R<OpModel> {
    let shapes = match a.args.input_dims.first() {
        Some(Dims::List(v)) => v.clone(),
        Some(Dims::Tensor(_)) => return Err("argument 0 is not a tensor list".to_string()),
        None => return Err(a.dims(0).err().unwrap_or_default()),
    };
    let dtype = a.dtype(0)?;
    let b = match bpe {
        Some(b) => b,
        None => bpe_of(&dtype).map_err(|_| {
            format!(
                "the element size of the tensor list is not recorded (`{dtype}`) and no \
                 kernel names it"
            )
        })?,
    };
    let mut n = 0u128;
    for s in &shapes {
        n = sum(&[n, numel(s)?])?;
    }
    let bytes = mul(&[n, b])?;
    let work = movement_work(
        format!("{} tensors, {n} elements", shapes.len()),
        bytes,
        bytes,
        format!("Σ inputs*{b} read + Σ inputs*{b} written = {bytes} + {bytes} B"),
        "each input is read once and the output written once",
    );
    let mut p = Params::default();
    p.push("input_shapes", ParamValue::Str(format!("{shapes:?}")));
    p.push("dim", a.concrete(1).map_or(ParamValue::Null, |s| ParamValue::Str(s.to_string())));
    p.push("bytes_per_element", ParamValue::Int(i64::try_from(b).unwrap_or(i64::MAX)));
    Ok(finish(Table::DataMovement, p, work, None))
}

/// Reads `index`'s element count and size (indices are `long` or `int`).
fn indices(a: &Args, i: usize) -> R<(Vec<i64>, u128, u128)> {
    let s = a.dims(i)?;
    let n = numel(&s)?;
    let b = bpe_of(&a.dtype(i)?)?;
    Ok((s, n, b))
}

/// `aten::index_select(self, dim, index)`.
pub(super) fn index_select(a: &Args) -> R<OpModel> {
    let s = a.dims(0)?;
    let t = a.dtype(0)?;
    let b = bpe_of(&t)?;
    let d: i64 = a
        .concrete(1)
        .and_then(|x| x.trim().parse().ok())
        .ok_or_else(|| "dim (concrete input 1) is not recorded".to_string())?;
    let nd = i64::try_from(s.len()).unwrap_or(i64::MAX);
    let ax = usize::try_from(if d < 0 { d + nd } else { d })
        .ok()
        .filter(|&x| x < s.len())
        .ok_or_else(|| format!("dim {d} out of range for {s:?}"))?;
    let (_, n, ib) = indices(a, 2)?;
    let along = udim(&s, ax, "index_select dim")?;
    let per = numel(&s)?.checked_div(along).unwrap_or(0);
    let moved = mul(&[n, per, b])?;
    let read = sum(&[mul(&[n, ib])?, moved])?;
    let work = movement_work(
        format!("{s:?} dim={ax} n={n}"),
        read,
        moved,
        format!("n*{ib} (index) + n*row*{b} read + n*row*{b} written = {read} + {moved} B"),
        "each selected row is read once and written once",
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(s));
    p.push("dim", ParamValue::Int(d));
    p.push("num_indices", ParamValue::Int(i64::try_from(n).unwrap_or(i64::MAX)));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(t), a.args.input_types.get(2).cloned()]));
    Ok(finish(Table::DataMovement, p, work, None))
}

/// A weight table `[V, D]` at argument `i`: `(V, D, bpe, dtype)`.
fn table(a: &Args, i: usize) -> R<(u128, u128, u128, String)> {
    let w = a.dims(i)?;
    if w.len() != 2 {
        return Err(format!("weight {w:?} is not a [rows, width] table"));
    }
    let t = a.dtype(i)?;
    Ok((udim(&w, 0, "V")?, udim(&w, 1, "D")?, bpe_of(&t)?, t))
}

fn embedding_params(v: u128, d: u128, n: u128, dtype: String) -> Params {
    let i = |x: u128| ParamValue::Int(i64::try_from(x).unwrap_or(i64::MAX));
    let mut p = Params::default();
    p.push("num_embeddings", i(v));
    p.push("embedding_dim", i(d));
    p.push("num_indices", i(n));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(dtype)]));
    p
}

/// `aten::embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)`.
pub(super) fn embedding(a: &Args) -> R<OpModel> {
    let (v, d, b, t) = table(a, 0)?;
    let (is, n, ib) = indices(a, 1)?;
    let rows = mul(&[n, d, b])?;
    let read = sum(&[mul(&[n, ib])?, rows])?;
    let work = custom_work(
        OpClass::Copy,
        format!("V={v} D={d} indices={is:?}"),
        0,
        "0 (a gather)".to_string(),
        vector_precision(&t),
        ExecUnit::Vector,
        read,
        rows,
        format!("n*{ib} (indices) + n*D*{b} (rows) read + n*D*{b} written = {read} + {rows} B"),
        vec!["each looked-up row is read once and written once".to_string()],
    );
    Ok(finish(Table::Embedding, embedding_params(v, d, n, t), work, None))
}

/// `aten::embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
/// scale_grad_by_freq)` and `aten::embedding_backward(…, sparse)`.
pub(super) fn embedding_bwd(name: &str, a: &Args) -> R<OpModel> {
    let g = a.dims(0)?;
    let t = a.dtype(0)?;
    let b = bpe_of(&t)?;
    let (_, n, ib) = indices(a, 1)?;
    let d = match g.last() {
        Some(&x) => u128::try_from(x).map_err(|_| format!("negative width {x}"))?,
        None => return Err("grad_output is a scalar".to_string()),
    };
    if name == "aten::embedding_backward" && super::args::parse_bool(a.concrete(5)) == Some(true) {
        return Err("sparse embedding gradients are not modelled".to_string());
    }
    let v: u128 = a
        .concrete(2)
        .and_then(|x| x.trim().parse().ok())
        .ok_or_else(|| "num_weights (concrete input 2) is not recorded".to_string())?;
    let flops = mul(&[n, d])?;
    let read = sum(&[mul(&[n, d, b])?, mul(&[n, ib])?])?;
    let written = mul(&[v, d, b])?;
    let work = custom_work(
        OpClass::Elementwise,
        format!("V={v} D={d} n={n} backward"),
        flops,
        format!("n*D = {n}*{d} (each gradient row added into its weight row)"),
        vector_precision(&t),
        ExecUnit::Vector,
        read,
        written,
        format!("n*D*{b} + n*{ib} read + V*D*{b} written = {read} + {written} B"),
        vec!["the weight gradient is written once (zero fill and accumulation on chip)".to_string()],
    );
    Ok(finish(Table::Embedding, embedding_params(v, d, n, t), work, None))
}

/// Pooling of a bag: `n·D` operations, plus one division per output for `mean`.
fn bag_flops(n: u128, d: u128, outputs: u128, mode: &str) -> R<(u128, String)> {
    let adds = mul(&[n, d])?;
    Ok(match mode {
        "mean" => (sum(&[adds, outputs])?, format!("n*D + B*D = {adds} + {outputs}")),
        _ => (adds, format!("n*D = {n}*{d} ({mode})")),
    })
}

/// `aten::_embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
/// per_sample_weights, include_last_offset, padding_idx)`.
pub(super) fn embedding_bag(name: &str, a: &Args) -> R<OpModel> {
    let (v, d, b, t) = table(a, 0)?;
    let (is, n, ib) = indices(a, 1)?;
    let (os, bags, ob) = indices(a, 2)?;
    let mode = match a.concrete(4).map(str::trim) {
        Some("0") => "sum",
        Some("1") => "mean",
        Some("2") => "max",
        _ => return Err(format!("`{name}`: mode (concrete input 4) is not recorded")),
    };
    if is.len() == 2 {
        return Err("2-D indices (fixed-size bags without offsets) are not modelled".to_string());
    }
    let last = super::args::parse_bool(a.concrete(7)).unwrap_or(false);
    let bags = if last { bags.saturating_sub(1) } else { bags };
    let weighted = a.has_tensor(6);
    let outputs = mul(&[bags, d])?;
    let (mut flops, mut formula) = bag_flops(n, d, outputs, mode)?;
    if weighted {
        flops = sum(&[flops, mul(&[n, d])?])?;
        formula.push_str(" + n*D (per-sample weights)");
    }
    let read = sum(&[
        mul(&[n, ib])?,
        mul(&[numel(&os)?, ob])?,
        mul(&[n, d, b])?,
        if weighted { mul(&[n, b])? } else { 0 },
    ])?;
    let written = mul(&[outputs, b])?;
    let work = custom_work(
        OpClass::Reduction,
        format!("V={v} D={d} n={n} bags={bags} {mode}"),
        flops,
        formula,
        vector_precision(&t),
        ExecUnit::Vector,
        read,
        written,
        format!(
            "indices + offsets + n*D*{b} (rows){} read + B*D*{b} written = {read} + {written} B",
            if weighted { " + weights" } else { "" }
        ),
        vec!["each looked-up row is read once; the pooled bag is written once".to_string()],
    );
    let mut p = embedding_params(v, d, n, t);
    p.push("bags", ParamValue::Int(i64::try_from(bags).unwrap_or(i64::MAX)));
    p.push("mode", ParamValue::Str(mode.to_string()));
    Ok(finish(Table::Embedding, p, work, None))
}

/// Whether `name` is one of fbgemm's table-batched embedding lookups (forward).
pub(super) fn is_split_embedding(name: &str) -> bool {
    name.starts_with("fbgemm::split_embedding")
        && (name.contains("lookup") || name.contains("forward"))
        && !name.contains("backward")
}

/// A 1-D integer tensor's element count at argument `i`.
fn int_vector(a: &Args, i: usize) -> Option<u128> {
    let t = a.args.input_types.get(i)?;
    if !matches!(t.as_str(), "long int" | "int" | "long") {
        return None;
    }
    match a.args.input_dims.get(i)? {
        Dims::Tensor(d) if d.len() == 1 => u128::try_from(d[0]).ok(),
        _ => None,
    }
}

fn concrete_int(a: &Args, i: usize) -> Option<u128> {
    a.concrete(i)?.trim().parse().ok()
}

/// fbgemm's split (table-batched) embedding forward: `dev_weights, uvm_weights,
/// lxu_cache_weights, weights_placements, weights_offsets, D_offsets, total_D, max_D,
/// [hash_size_cumsum, total_hash_size_bits,] indices, offsets, pooling_mode, ...`
/// (`split_embedding_codegen_forward_*_cuda` and the lookup functions that wrap it).
/// The arguments are found by that pattern: `D_offsets` (`T + 1` integers) followed by
/// the two integers `total_D` and `max_D`, then `indices` and `offsets`.
#[allow(clippy::many_single_char_names)]
pub(super) fn split_embedding(name: &str, a: &Args) -> R<OpModel> {
    let n_args = a.args.input_dims.len();
    let start = (0..n_args.saturating_sub(2))
        .find(|&i| {
            int_vector(a, i).is_some_and(|n| n >= 2)
                && concrete_int(a, i + 1).is_some()
                && concrete_int(a, i + 2).is_some()
        })
        .ok_or_else(|| {
            format!(
                "`{name}`: no D_offsets, total_D, max_D argument triple (were shapes and \
                 concrete inputs recorded?)"
            )
        })?;
    let t_tables = int_vector(a, start).unwrap_or(1) - 1;
    let total_d = concrete_int(a, start + 1).unwrap_or(0);
    let max_d = concrete_int(a, start + 2).unwrap_or(0);
    // Optional hash_size_cumsum (T + 1 integers) and total_hash_size_bits.
    let mut i = start + 3;
    if int_vector(a, i) == Some(t_tables + 1) && concrete_int(a, i + 1).is_some() {
        i += 2;
    }
    let n = int_vector(a, i).ok_or_else(|| format!("`{name}`: argument {i} is not the indices"))?;
    let offs = int_vector(a, i + 1)
        .ok_or_else(|| format!("`{name}`: argument {} is not the offsets", i + 1))?;
    let (ib, ob) = (bpe_of(&a.dtype(i)?)?, bpe_of(&a.dtype(i + 1)?)?);
    if t_tables == 0 || (offs.saturating_sub(1)) % t_tables != 0 {
        return Err(format!("`{name}`: {offs} offsets do not split into {t_tables} tables"));
    }
    let batch = (offs - 1) / t_tables;
    if total_d != mul(&[t_tables, max_d])? {
        return Err(format!(
            "tables of different widths (total_D {total_d} ≠ {t_tables} tables × max_D \
             {max_d}): the rows each index reads depend on its table, which the trace does \
             not record"
        ));
    }
    // The weights: the first of dev/uvm/cache weights that holds data.
    let wt = (0..3.min(n_args))
        .find(|&j| a.dims(j).is_ok_and(|s| numel(&s).is_ok_and(|x| x > 0)))
        .and_then(|j| a.args.input_types.get(j).cloned())
        .ok_or_else(|| format!("`{name}`: no weight tensor with a recorded shape"))?;
    let wb = bpe_of(&wt)?;
    let ob_out = match wt.as_str() {
        "float" | "c10::Half" | "c10::BFloat16" => wb,
        _ => {
            return Err(format!("quantised rows (`{wt}`): the output element size is not recorded"))
        }
    };
    let flops = mul(&[n, max_d])?;
    let read = sum(&[mul(&[n, ib])?, mul(&[offs, ob])?, mul(&[n, max_d, wb])?])?;
    let written = mul(&[batch, total_d, ob_out])?;
    let work = custom_work(
        OpClass::Reduction,
        format!("T={t_tables} B={batch} D={max_d} n={n}"),
        flops,
        format!("n*D = {n}*{max_d} (sum pooling)"),
        vector_precision(&wt),
        ExecUnit::Vector,
        read,
        written,
        format!(
            "n*{ib} (indices) + (T*B+1)*{ob} (offsets) + n*D*{wb} (rows) read + \
             B*total_D*{ob_out} written = {read} + {written} B"
        ),
        vec![
            "every table has the same row width (total_D = T*max_D)".to_string(),
            "each looked-up row is read once; the pooled output written once".to_string(),
        ],
    );
    let int = |x: u128| ParamValue::Int(i64::try_from(x).unwrap_or(i64::MAX));
    let mut p = Params::default();
    p.push("tables", int(t_tables));
    p.push("batch", int(batch));
    p.push("embedding_dim", int(max_d));
    p.push("num_indices", int(n));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(wt)]));
    Ok(finish(Table::Embedding, p, work, None))
}
