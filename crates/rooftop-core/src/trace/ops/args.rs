//! Checked access to an op's recorded arguments and the exact-count helpers every
//! op family's model uses (element counts, checked sums and products, dtype sizes).

use super::{
    dtype_bytes, dtype_precision, Dims, ExecUnit, GemmShape, OpArgs, OpClass, OpModel, ParamValue,
    Params, Precision, Table, Work,
};

pub(super) type R<T> = Result<T, String>;

/// Checked access to the recorded arguments.
pub(super) struct Args<'a> {
    pub(super) args: &'a OpArgs,
}

impl Args<'_> {
    /// The dims of tensor argument `i` (empty for scalars and `None`).
    pub(super) fn dims(&self, i: usize) -> R<Vec<i64>> {
        match self.args.input_dims.get(i) {
            Some(Dims::Tensor(d)) => Ok(d.clone()),
            Some(Dims::List(_)) => Err(format!("argument {i} is a tensor list, not a tensor")),
            None => Err(format!(
                "argument {i} has no recorded shape ({} recorded; was the trace taken with \
                 record_shapes=True?)",
                self.args.input_dims.len()
            )),
        }
    }

    /// Whether argument `i` is a tensor with at least one dimension.
    pub(super) fn has_tensor(&self, i: usize) -> bool {
        matches!(self.args.input_dims.get(i), Some(Dims::Tensor(d)) if !d.is_empty())
    }

    pub(super) fn dtype(&self, i: usize) -> R<String> {
        self.args
            .input_types
            .get(i)
            .cloned()
            .ok_or_else(|| format!("argument {i} has no recorded type"))
    }

    /// Strides of argument `i`; `None` when not recorded (older traces).
    pub(super) fn strides(&self, i: usize) -> ParamValue {
        match self.args.input_strides.get(i) {
            Some(Dims::Tensor(d)) => ParamValue::Ints(d.clone()),
            _ => ParamValue::Null,
        }
    }

    pub(super) fn concrete(&self, i: usize) -> Option<&str> {
        self.args.concrete_inputs.get(i).map(String::as_str)
    }
}

/// Element count of a shape (1 for a scalar's empty shape), exactly.
pub(super) fn numel(shape: &[i64]) -> R<u128> {
    shape.iter().try_fold(1u128, |acc, &d| {
        let d = u128::try_from(d).map_err(|_| format!("negative dimension {d} in {shape:?}"))?;
        acc.checked_mul(d).ok_or_else(|| format!("element count of {shape:?} overflows"))
    })
}

/// A dimension as an unsigned count.
pub(super) fn udim(shape: &[i64], i: usize, what: &str) -> R<u128> {
    let d = *shape.get(i).ok_or_else(|| format!("{what}: shape {shape:?} has no axis {i}"))?;
    u128::try_from(d).map_err(|_| format!("{what}: negative dimension {d}"))
}

pub(super) fn mul(factors: &[u128]) -> R<u128> {
    factors
        .iter()
        .try_fold(1u128, |acc, &f| acc.checked_mul(f))
        .ok_or_else(|| "count overflows 128 bits".to_string())
}

pub(super) fn sum(terms: &[u128]) -> R<u128> {
    terms
        .iter()
        .try_fold(0u128, |acc, &t| acc.checked_add(t))
        .ok_or_else(|| "count overflows 128 bits".to_string())
}

pub(super) fn bpe_of(dtype: &str) -> R<u128> {
    dtype_bytes(dtype)
        .map(u128::from)
        .ok_or_else(|| format!("unknown element size of dtype `{dtype}`"))
}

pub(super) fn to_u64(x: u128, what: &str) -> R<u64> {
    u64::try_from(x).map_err(|_| format!("{what} = {x} does not fit in 64 bits"))
}

pub(super) fn as_i64(x: u128) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

/// Parses a Python bool from `Concrete Inputs` (`True`/`False`).
pub(super) fn parse_bool(s: Option<&str>) -> Option<bool> {
    match s?.trim() {
        "True" | "true" | "1" => Some(true),
        "False" | "false" | "0" => Some(false),
        _ => None,
    }
}

/// Parses `[True, False, True]` into booleans.
pub(super) fn parse_bool_list(s: &str) -> Option<Vec<bool>> {
    let inner = s.trim().trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    inner.split(',').filter(|p| !p.trim().is_empty()).map(|p| parse_bool(Some(p))).collect()
}

/// Parses `[16, 16]`, `(1,)` or a bare `3` into integers; `None` for `''` or garbage.
pub(super) fn parse_int_list(s: &str) -> Option<Vec<i64>> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    let inner = t.trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    let mut out = Vec::new();
    for part in inner.split(',') {
        let p = part.trim();
        if p.is_empty() {
            continue;
        }
        out.push(p.parse::<i64>().ok()?);
    }
    Some(out)
}

/// A Work built from exact counts (for models the core crate does not have).
#[allow(clippy::too_many_arguments)]
pub(super) fn custom_work(
    class: OpClass,
    shape: String,
    flops: u128,
    flops_formula: String,
    precision: Precision,
    unit: ExecUnit,
    read: u128,
    written: u128,
    bytes_formula: String,
    assumptions: Vec<String>,
) -> Work {
    Work {
        class,
        shape,
        flops: flops as f64,
        precision,
        unit,
        bytes_read: read as f64,
        bytes_written: written as f64,
        flops_formula,
        bytes_formula,
        assumptions,
    }
}

/// Uses the core model's Work when it gives exactly our numbers, else `fallback`.
pub(super) fn prefer_core(
    core: Option<Work>,
    flops: u128,
    bytes: u128,
    fallback: impl FnOnce() -> Work,
) -> Work {
    match core {
        Some(w) if w.flops == flops as f64 && (w.bytes_read + w.bytes_written) == bytes as f64 => w,
        _ => fallback(),
    }
}

/// The precision a vector kernel computes in for `storage` (FP64 stays FP64, everything
/// else widens to FP32, as PyTorch's opmath types do).
pub(super) fn vector_precision(dtype: &str) -> Precision {
    if dtype_precision(dtype) == Some(Precision::Fp64) {
        Precision::Fp64
    } else {
        Precision::Fp32
    }
}

pub(super) fn finish(table: Table, params: Params, work: Work, gemm: Option<GemmShape>) -> OpModel {
    OpModel { table, flops: work.flops, bytes: work.bytes(), params, work, gemm }
}
