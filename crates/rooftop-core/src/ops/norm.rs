//! Row normalizations over the last dimension: RMSNorm and LayerNorm of an N×D input.
//!
//! Bytes (docs/reference/formulas.md#work-models), times the element size:
//! RMSNorm reads `N×D + D` (x, weight) and writes `N×D`; LayerNorm reads `N×D + 2×D`
//! (x, weight, bias) and writes `N×D`. A row is read from DRAM once (a row of D elements
//! stays on chip between the statistics and the normalization).
//!
//! FLOPs (vector unit, FP32 arithmetic):
//! - RMSNorm: 4 per element (square, accumulate, multiply by rsqrt, multiply by weight)
//!   and 2 per row (scale the sum by 1/D with eps, rsqrt) — TraceLens `RMSNorm.flops`
//!   counts the same `N*(2*D + 2) + 2*N*D`.
//! - LayerNorm: 5 per element (accumulate for the mean, subtract it, square and
//!   accumulate for the variance, multiply by rstd) + 2 more with an affine transform
//!   (multiply by weight, add bias), + 4 per row (two 1/D scales, eps, rsqrt).

use super::count::{self, bpe, dim, vector_work as finish, Terms};
use super::{OpClass, OpError, Work};
use crate::units::Precision;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// RMSNorm over the last dimension: `y = x / sqrt(mean(x²) + eps) * weight`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RmsNormSpec {
    /// Rows normalized independently (tokens: batch × sequence).
    pub rows: u64,
    /// Elements per row (hidden size D).
    pub cols: u64,
    /// Storage precision of x and y.
    pub dtype: Precision,
    /// Storage precision of the D-element weight; `None` means `dtype`.
    pub weight_dtype: Option<Precision>,
}

/// LayerNorm over the last dimension: `y = (x - mean) / sqrt(var + eps) * weight + bias`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerNormSpec {
    /// Rows normalized independently (tokens: batch × sequence).
    pub rows: u64,
    /// Elements per row (hidden size D).
    pub cols: u64,
    /// Storage precision of x, y, weight and bias.
    pub dtype: Precision,
    /// Applies a weight and a bias of D elements each (`elementwise_affine=True`).
    pub affine: bool,
}

fn row_assumptions(dtype: Precision) -> Vec<String> {
    vec![
        "each row is read from DRAM once: it stays on chip between the statistics and the \
         normalization"
            .to_string(),
        "parameters are read once, not once per row".to_string(),
        count::vector_precision_note(dtype),
    ]
}

impl RmsNormSpec {
    /// The FLOPs and minimum DRAM bytes of this RMSNorm.
    pub fn work(&self) -> Result<Work, OpError> {
        let n = dim("rows", self.rows)?;
        let d = dim("cols", self.cols)?;
        let x = self.dtype;
        let wd = self.weight_dtype.unwrap_or(x);
        let (nv, dv) = (self.rows, self.cols);
        let (sx, sw) = (bpe(x), bpe(wd));

        let mut flops = Terms::new();
        flops.push(
            "per element",
            "4*N*D",
            format!("4*{nv}*{dv}"),
            count::mul("FLOPs", &[4, n, d])?,
        );
        flops.push("per row", "2*N", format!("2*{nv}"), count::mul("FLOPs", &[2, n])?);

        let mut read = Terms::new();
        read.push(
            "x",
            format!("N*D*{sx}"),
            format!("{nv}*{dv}*{sx}"),
            count::mul("bytes of x", &[n, d, u128::from(x.bits())])?,
        );
        read.push(
            "weight",
            format!("D*{sw}"),
            format!("{dv}*{sw}"),
            count::mul("bytes of the weight", &[d, u128::from(wd.bits())])?,
        );
        let mut write = Terms::new();
        write.push(
            "y",
            format!("N*D*{sx}"),
            format!("{nv}*{dv}*{sx}"),
            count::mul("bytes of y", &[n, d, u128::from(x.bits())])?,
        );

        let mut assumptions = row_assumptions(x);
        assumptions.push(
            "FLOPs: 4 per element (square, accumulate, multiply by rsqrt, multiply by weight) + \
             2 per row (1/D scale with eps, rsqrt), as TraceLens counts"
                .to_string(),
        );
        let mut shape = format!("N={nv} D={dv} {x}");
        if wd != x {
            let _ = write!(shape, " weight {wd}");
        }
        finish(OpClass::RmsNorm, shape, x, &flops, &read, &write, assumptions)
    }
}

impl LayerNormSpec {
    /// The FLOPs and minimum DRAM bytes of this LayerNorm.
    pub fn work(&self) -> Result<Work, OpError> {
        let n = dim("rows", self.rows)?;
        let d = dim("cols", self.cols)?;
        let x = self.dtype;
        let (nv, dv) = (self.rows, self.cols);
        let sx = bpe(x);
        let bits = u128::from(x.bits());

        let per_elem: u128 = if self.affine { 7 } else { 5 };
        let mut flops = Terms::new();
        flops.push(
            "per element",
            format!("{per_elem}*N*D"),
            format!("{per_elem}*{nv}*{dv}"),
            count::mul("FLOPs", &[per_elem, n, d])?,
        );
        flops.push("per row", "4*N", format!("4*{nv}"), count::mul("FLOPs", &[4, n])?);

        let mut read = Terms::new();
        read.push(
            "x",
            format!("N*D*{sx}"),
            format!("{nv}*{dv}*{sx}"),
            count::mul("bytes of x", &[n, d, bits])?,
        );
        if self.affine {
            read.push(
                "weight + bias",
                format!("2*D*{sx}"),
                format!("2*{dv}*{sx}"),
                count::mul("bytes of the weight and bias", &[2, d, bits])?,
            );
        }
        let mut write = Terms::new();
        write.push(
            "y",
            format!("N*D*{sx}"),
            format!("{nv}*{dv}*{sx}"),
            count::mul("bytes of y", &[n, d, bits])?,
        );

        let mut assumptions = row_assumptions(x);
        assumptions.push(format!(
            "FLOPs: 5 per element (mean accumulate, subtract, square-accumulate, multiply by rstd){} \
             + 4 per row (two 1/D scales, eps, rsqrt)",
            if self.affine { " + 2 (weight multiply, bias add)" } else { "" }
        ));
        assumptions.push(
            "inference form: training-mode native_layer_norm also writes the per-row mean and \
             rstd (2*N fp32 values), not counted"
                .to_string(),
        );
        let shape = format!("N={nv} D={dv} {x}{}", if self.affine { " affine" } else { "" });
        finish(OpClass::LayerNorm, shape, x, &flops, &read, &write, assumptions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::ExecUnit;

    const MIB: f64 = 1_048_576.0;

    #[test]
    fn rmsnorm_bytes_n_d_plus_d() {
        // RMSNorm (N, D) reads N×D + D, writes N×D, times the element size.
        // N=4096 tokens, D=4096, bf16: read (4096*4096 + 4096)*2, write 4096*4096*2.
        let w = RmsNormSpec { rows: 4096, cols: 4096, dtype: Precision::Bf16, weight_dtype: None }
            .work()
            .unwrap();
        assert_eq!(w.bytes_read, (4096.0 * 4096.0 + 4096.0) * 2.0); // 33,562,624
        assert_eq!(w.bytes_written, 4096.0 * 4096.0 * 2.0); // 33,554,432
                                                            // 4*N*D + 2*N = 67,108,864 + 8,192
        assert_eq!(w.flops, 67_117_056.0);
        assert_eq!(w.class, OpClass::RmsNorm);
        assert_eq!(w.unit, ExecUnit::Vector);
        assert_eq!(w.precision, Precision::Fp32);
        assert_eq!(w.shape, "N=4096 D=4096 bf16");
    }

    #[test]
    fn rmsnorm_fp32_weight() {
        // N=2, D=8, fp16 x with an fp32 weight: read 2*8*2 + 8*4 = 64, write 32.
        let w = RmsNormSpec {
            rows: 2,
            cols: 8,
            dtype: Precision::Fp16,
            weight_dtype: Some(Precision::Fp32),
        }
        .work()
        .unwrap();
        assert_eq!(w.bytes_read, 64.0);
        assert_eq!(w.bytes_written, 32.0);
        assert_eq!(w.shape, "N=2 D=8 fp16 weight fp32");
        assert_eq!(
            w.bytes_formula,
            "read N*D*2 (x) + D*4 (weight) = 2*8*2 + 8*4 = 64 B; write N*D*2 (y) = 2*8*2 = 32 B"
        );
    }

    #[test]
    fn layernorm_bytes_n_d_plus_2d() {
        // LayerNorm (N, D) reads N×D + 2×D, writes N×D. N=3, D=5, fp32:
        // read (15 + 10)*4 = 100, write 15*4 = 60; FLOPs 7*15 + 4*3 = 117.
        let w = LayerNormSpec { rows: 3, cols: 5, dtype: Precision::Fp32, affine: true }
            .work()
            .unwrap();
        assert_eq!(w.bytes_read, 100.0);
        assert_eq!(w.bytes_written, 60.0);
        assert_eq!(w.flops, 117.0);
        // Without the affine transform: read 60, FLOPs 5*15 + 4*3 = 87.
        let w = LayerNormSpec { rows: 3, cols: 5, dtype: Precision::Fp32, affine: false }
            .work()
            .unwrap();
        assert_eq!(w.bytes_read, 60.0);
        assert_eq!(w.flops, 87.0);
    }

    #[test]
    fn zero_dims_are_named() {
        let e = LayerNormSpec { rows: 1, cols: 0, dtype: Precision::Fp16, affine: true }
            .work()
            .unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "cols", value: 0 });
        let e = RmsNormSpec { rows: 0, cols: 1, dtype: Precision::Fp16, weight_dtype: None }
            .work()
            .unwrap_err();
        assert_eq!(e, OpError::ZeroDim { name: "rows", value: 0 });
    }

    // TraceLens goldens (Normalization.csv). TraceLens models LayerNorm with its BatchNorm
    // formula: bytes = 2*N*D*bpe + 6*D*bpe (mean and variance read, weight, bias, mean and
    // variance written — all per *channel*), FLOPs = 5*N*D + 6*D. LayerNorm has no running
    // statistics and its statistics are per row, so the 4*D*bpe of statistics do not
    // exist; the training form writes 2*N fp32 values instead (not counted here). Our
    // bytes are theirs minus 4*D*bpe; FLOPs are a different per-element convention.

    #[test]
    fn tracelens_falconsai_layer_norm() {
        // tracelens_h100/Falconsai_nsfw_image_detection__1016002_perf_report_csvs/Normalization.csv
        // (same row in tracelens_mi300): aten::layer_norm op_shape (4, 197, 768) bf16,
        // is_affine True, has_bias True, GFLOPS_first=0.003030528,
        // Data Moved (MB)_first=2.3173828125
        let w = LayerNormSpec { rows: 4 * 197, cols: 768, dtype: Precision::Bf16, affine: true }
            .work()
            .unwrap();
        // ours: (788*768 + 2*768)*2 + 788*768*2 = 1,213,440 + 1,210,368 = 2,423,808
        assert_eq!(w.bytes(), 2_423_808.0);
        // TraceLens: 2,429,952 B = ours + 4*768*2
        assert_eq!(2.317_382_812_5 * MIB, 2_429_952.0);
        assert_eq!(w.bytes() + 4.0 * 768.0 * 2.0, 2.317_382_812_5 * MIB);
        // TraceLens FLOPs: 5*605,184 + 6*768 = 3,030,528; ours 7*605,184 + 4*788 = 4,239,440
        assert_eq!(5.0 * 605_184.0 + 6.0 * 768.0, 0.003_030_528e9);
        assert_eq!(w.flops, 4_239_440.0);
    }

    #[test]
    fn tracelens_bert_layer_norm() {
        // tracelens_h100/gaunernst_bert-small-uncased__1016001_perf_report_csvs/Normalization.csv
        // (same row in tracelens_mi300): aten::layer_norm op_shape (1, 141, 512) bf16,
        // affine with bias, GFLOPS_first=0.000364032, Data Moved (MB)_first=0.28125
        let w = LayerNormSpec { rows: 141, cols: 512, dtype: Precision::Bf16, affine: true }
            .work()
            .unwrap();
        // ours: (72,192 + 1,024)*2 + 72,192*2 = 146,432 + 144,384 = 290,816
        assert_eq!(w.bytes(), 290_816.0);
        // TraceLens: 0.28125 MiB = 294,912 B = ours + 4*512*2
        assert_eq!(w.bytes() + 4.0 * 512.0 * 2.0, 0.281_25 * MIB);
        assert_eq!(5.0 * 72_192.0 + 6.0 * 512.0, 0.000_364_032e9);
    }
}
