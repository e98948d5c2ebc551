//! Exact counting shared by the work models.
//!
//! Every count is an exact `u128` built with checked arithmetic: a product that does not
//! fit is an [`OpError::Overflow`], never a panic or a wrapped value. Byte counts are
//! kept in *bits* until the end so that sub-byte formats (int4, fp6, 3-bit weights) stay
//! exact; they become `f64` bytes only when a [`Work`](super::Work) is built. Any `u128`
//! converts to a finite `f64`, so every number a model returns is finite.
//!
//! [`Terms`] renders the "formula with numbers substituted" that every `Work` carries:
//! `N*D*2 (x) + D*2 (weight) = 788*768*2 + 768*2 = 1211904 B`.

use super::{OpClass, OpError, Work};
use crate::units::{ExecUnit, Precision};

/// A dimension that must be at least 1, widened for counting.
pub(crate) fn dim(name: &'static str, value: u64) -> Result<u128, OpError> {
    if value == 0 {
        Err(OpError::ZeroDim { name, value })
    } else {
        Ok(u128::from(value))
    }
}

/// The error for a count that does not fit in 128 bits.
pub(crate) fn overflow(what: &str) -> OpError {
    OpError::Overflow(format!("{what} does not fit in 128 bits; check the dimensions"))
}

/// Checked product of `factors`; `what` names the quantity in the error.
pub(crate) fn mul(what: &str, factors: &[u128]) -> Result<u128, OpError> {
    factors.iter().try_fold(1u128, |acc, &f| acc.checked_mul(f)).ok_or_else(|| overflow(what))
}

/// Checked sum of `terms`; `what` names the quantity in the error.
pub(crate) fn add(what: &str, terms: &[u128]) -> Result<u128, OpError> {
    terms.iter().try_fold(0u128, |acc, &t| acc.checked_add(t)).ok_or_else(|| overflow(what))
}

/// `ceil(a / b)` for `b >= 1`.
pub(crate) fn ceil_div(a: u128, b: u128) -> u128 {
    a.div_ceil(b)
}

/// Bytes (possibly fractional) of a bit count.
pub(crate) fn bits_to_bytes(bits: u128) -> f64 {
    bits as f64 / 8.0
}

/// A count as `f64` (exact up to 2^53, correctly rounded above).
pub(crate) fn to_f64(count: u128) -> f64 {
    count as f64
}

/// Bytes of a bit count as text: an integer when whole, else with the fraction.
pub(crate) fn fmt_bits_as_bytes(bits: u128) -> String {
    if bits.is_multiple_of(8) {
        (bits / 8).to_string()
    } else {
        format!("{}", bits_to_bytes(bits))
    }
}

/// Bytes per element of `p` as text: `2`, `0.5`, `0.75`.
pub(crate) fn bpe(p: Precision) -> String {
    fmt_bits_as_bytes(u128::from(p.bits()))
}

/// The unit that runs a dense matrix product in `p` by default.
///
/// FP32 runs on the vector unit: cuBLAS SGEMM uses FFMA on CUDA cores unless TF32 is
/// allowed (`torch.backends.cuda.matmul.allow_tf32`, off by default since PyTorch 1.12),
/// and TF32 is its own precision here. Every other precision (TF32, FP16, BF16, FP8,
/// FP6, FP4, INT8, INT4, FP64 via DMMA on A100/H100 and MFMA on CDNA) uses the matrix
/// unit. Callers that know better (MFMA FP32 GEMMs on CDNA) override the unit.
pub(crate) fn default_matmul_unit(p: Precision) -> ExecUnit {
    if p == Precision::Fp32 {
        ExecUnit::Vector
    } else {
        ExecUnit::Matrix
    }
}

/// The precision in which a vector (SIMT/VALU) kernel does its arithmetic on `storage`.
///
/// FP64 stays FP64; everything else computes in FP32: PyTorch's element-wise, norm and
/// softmax kernels use `opmath_t` / `acc_type` = float for half, bfloat16 and 8-bit types,
/// and MLX accumulates half-precision reductions in float. Integer element-wise math runs
/// on 32-bit ALUs, whose rate the FP32 vector roof approximates.
pub(crate) fn vector_precision(storage: Precision) -> Precision {
    if storage == Precision::Fp64 {
        Precision::Fp64
    } else {
        Precision::Fp32
    }
}

/// The assumption line that goes with [`vector_precision`].
pub(crate) fn vector_precision_note(storage: Precision) -> String {
    if storage == Precision::Fp64 || storage == Precision::Fp32 {
        format!("arithmetic on the vector unit in {}", vector_precision(storage))
    } else {
        format!(
            "arithmetic on the vector unit in fp32 ({storage} storage is widened to fp32, as \
             PyTorch's opmath/acc types and MLX do)"
        )
    }
}

/// One additive term of a byte or FLOP formula.
#[derive(Debug, Clone)]
pub(crate) struct Term {
    /// Symbolic form, `M*K*2`.
    pub sym: String,
    /// What it is, `A` or `weight`.
    pub label: String,
    /// Numeric form, `1*4096*2`.
    pub num: String,
    /// Its value (bits for byte terms, operations for FLOP terms).
    pub value: u128,
}

/// A sum of terms that renders as `sym (label) + ... = num + ... = total`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Terms {
    pub items: Vec<Term>,
}

impl Terms {
    pub fn new() -> Terms {
        Terms::default()
    }

    /// Adds a term.
    pub fn push(
        &mut self,
        label: &str,
        sym: impl Into<String>,
        num: impl Into<String>,
        value: u128,
    ) {
        self.items.push(Term { sym: sym.into(), label: label.to_string(), num: num.into(), value });
    }

    /// The checked sum of the terms.
    pub fn total(&self, what: &str) -> Result<u128, OpError> {
        add(what, &self.items.iter().map(|t| t.value).collect::<Vec<_>>())
    }

    fn render(&self, total: &str, unit: &str) -> String {
        if self.items.is_empty() {
            return format!("0{unit}");
        }
        let sym: Vec<String> = self
            .items
            .iter()
            .map(|t| {
                if t.label.is_empty() {
                    t.sym.clone()
                } else {
                    format!("{} ({})", t.sym, t.label)
                }
            })
            .collect();
        let num: Vec<&str> = self.items.iter().map(|t| t.num.as_str()).collect();
        format!("{} = {} = {total}{unit}", sym.join(" + "), num.join(" + "))
    }

    /// Renders a byte formula (values are bits): `... = 8192 B`.
    pub fn bytes_formula(&self, what: &str) -> Result<String, OpError> {
        let total = self.total(what)?;
        Ok(self.render(&fmt_bits_as_bytes(total), " B"))
    }

    /// Renders a FLOP formula: `... = 33554432`.
    pub fn flops_formula(&self, what: &str) -> Result<String, OpError> {
        let total = self.total(what)?;
        Ok(self.render(&total.to_string(), ""))
    }
}

/// `read: ...; write: ...` from the two byte sums.
pub(crate) fn rw_formula(read: &Terms, write: &Terms) -> Result<String, OpError> {
    Ok(format!(
        "read {}; write {}",
        read.bytes_formula("bytes read")?,
        write.bytes_formula("bytes written")?
    ))
}

/// Builds a vector-unit [`Work`] (FP32 arithmetic, see [`vector_precision`]) from its
/// FLOP and byte terms.
pub(crate) fn vector_work(
    class: OpClass,
    shape: String,
    storage: Precision,
    flops: &Terms,
    read: &Terms,
    write: &Terms,
    assumptions: Vec<String>,
) -> Result<Work, OpError> {
    let f = to_f64(flops.total("FLOPs")?);
    vector_work_f64(
        class,
        shape,
        storage,
        (f, flops.flops_formula("FLOPs")?),
        read,
        write,
        assumptions,
    )
}

/// [`vector_work`] with FLOPs already counted (`(flops, formula)`).
pub(crate) fn vector_work_f64(
    class: OpClass,
    shape: String,
    storage: Precision,
    (flops, flops_formula): (f64, String),
    read: &Terms,
    write: &Terms,
    assumptions: Vec<String>,
) -> Result<Work, OpError> {
    Ok(Work {
        class,
        shape,
        flops,
        precision: vector_precision(storage),
        unit: ExecUnit::Vector,
        bytes_read: bits_to_bytes(read.total("bytes read")?),
        bytes_written: bits_to_bytes(write.total("bytes written")?),
        flops_formula,
        bytes_formula: rw_formula(read, write)?,
        assumptions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_products_and_sums() {
        assert_eq!(mul("x", &[2, 3, 7]), Ok(42));
        assert!(matches!(mul("x", &[u128::MAX, 2]), Err(OpError::Overflow(_))));
        assert!(matches!(add("x", &[u128::MAX, 1]), Err(OpError::Overflow(_))));
        assert_eq!(ceil_div(4096, 128), 32);
        assert_eq!(ceil_div(4097, 128), 33);
        assert_eq!(dim("m", 0), Err(OpError::ZeroDim { name: "m", value: 0 }));
    }

    #[test]
    fn formulas_render_with_numbers() {
        let mut t = Terms::new();
        t.push("x", "N*D*2", "788*768*2", 788 * 768 * 16);
        t.push("weight", "D*2", "768*2", 768 * 16);
        assert_eq!(
            t.bytes_formula("b").unwrap(),
            "N*D*2 (x) + D*2 (weight) = 788*768*2 + 768*2 = 1211904 B"
        );
        assert_eq!(fmt_bits_as_bytes(12), "1.5");
        assert_eq!(bpe(Precision::Int4), "0.5");
        assert_eq!(bpe(Precision::Fp6), "0.75");
        assert_eq!(bpe(Precision::Bf16), "2");
    }
}
