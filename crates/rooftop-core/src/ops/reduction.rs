//! Row reductions (sum, mean, max, min, norm) of an N×D input to N values.
//!
//! Bytes: the input is read once and one value per row written once (TraceLens
//! `Reduce.bytes_func`: input elements × input size + output elements × output size).
//! FLOPs: one per input element (an add or a compare), TraceLens's convention; a mean's
//! final divide per row is not counted. Vector unit, FP32 arithmetic.

use super::count::{self, bpe, dim, vector_work as finish, Terms};
use super::{OpClass, OpError, Work};
use crate::units::Precision;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Reduction of each row of `cols` elements to one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReductionSpec {
    /// Rows (independent reductions, = output elements).
    pub rows: u64,
    /// Elements reduced per row.
    pub cols: u64,
    /// Storage precision of the input.
    pub dtype: Precision,
    /// Storage precision of the output; `None` means `dtype`.
    pub out_dtype: Option<Precision>,
}

impl ReductionSpec {
    /// The FLOPs and minimum DRAM bytes of this reduction.
    pub fn work(&self) -> Result<Work, OpError> {
        let n = dim("rows", self.rows)?;
        let d = dim("cols", self.cols)?;
        let x = self.dtype;
        let out = self.out_dtype.unwrap_or(x);
        let (nv, dv) = (self.rows, self.cols);
        let (sx, so) = (bpe(x), bpe(out));

        let mut flops = Terms::new();
        flops.push("", "N*D", format!("{nv}*{dv}"), count::mul("FLOPs", &[n, d])?);
        let mut read = Terms::new();
        read.push(
            "x",
            format!("N*D*{sx}"),
            format!("{nv}*{dv}*{sx}"),
            count::mul("bytes of x", &[n, d, u128::from(x.bits())])?,
        );
        let mut write = Terms::new();
        write.push(
            "y",
            format!("N*{so}"),
            format!("{nv}*{so}"),
            count::mul("bytes of y", &[n, u128::from(out.bits())])?,
        );

        let assumptions = vec![
            "the input is read once, one value per row written once".to_string(),
            "FLOPs: 1 per input element (add or compare), as TraceLens counts".to_string(),
            count::vector_precision_note(x),
        ];
        let mut shape = format!("N={nv} D={dv} {x}");
        if out != x {
            let _ = write!(shape, "->{out}");
        }
        finish(OpClass::Reduction, shape, x, &flops, &read, &write, assumptions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_sum_bf16_to_fp32() {
        // N=1024 rows of D=4096 bf16 summed into fp32:
        // read 1024*4096*2 = 8,388,608; write 1024*4 = 4,096; FLOPs 1024*4096 = 4,194,304.
        let w = ReductionSpec {
            rows: 1024,
            cols: 4096,
            dtype: Precision::Bf16,
            out_dtype: Some(Precision::Fp32),
        }
        .work()
        .unwrap();
        assert_eq!(w.bytes_read, 8_388_608.0);
        assert_eq!(w.bytes_written, 4096.0);
        assert_eq!(w.flops, 4_194_304.0);
        assert_eq!(w.class, OpClass::Reduction);
        assert_eq!(w.shape, "N=1024 D=4096 bf16->fp32");
    }

    #[test]
    fn zero_dims_are_named() {
        let e = ReductionSpec { rows: 0, cols: 1, dtype: Precision::Fp32, out_dtype: None }
            .work()
            .unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "rows", value: 0 });
    }
}
