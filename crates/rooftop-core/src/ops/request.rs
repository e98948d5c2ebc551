//! A GEMM as a front end asks for it (`rooftop analyze gemm`, the Python `analyze`):
//! the sizes, precisions and weight format already typed, and one place that turns them
//! into the work, the tile-math shape and the dequantization traffic, with the rules both
//! front ends must share (sizes whose FLOPs overflow 64-bit arithmetic are refused, a
//! quantized GEMM has no batch or bias, group quantization defaults to groups of 128
//! with fp16 scales).

use super::gemm::GemmSpec;
use super::quant::{DequantFusion, QuantGemmSpec, WeightFormat};
use super::{OpError, Work};
use crate::analysis::{GemmShape, GemmView};
use crate::units::{ExecUnit, Precision};

/// Group size of `--wbits` group quantization when none is given (GPTQ's and AWQ's
/// usual 128).
pub const DEFAULT_GROUP_SIZE: u64 = 128;

/// One GEMM request: `C = A·B` with A `m`×`k` and B `k`×`n`, `batch` times.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmRequest {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    /// Input (activation) precision.
    pub dtype: Precision,
    /// Output precision, when not `dtype`.
    pub out_dtype: Option<Precision>,
    pub bias: bool,
    /// Run on the vector units (the default for fp32 only, see
    /// [`super::gemm::GemmSpec::work`]).
    pub vector_units: bool,
    /// Run on the matrix units (for fp32: MFMA FP32 on CDNA; every other precision runs
    /// there by default).
    pub matrix_units: bool,
    /// Quantized weights (`None`: dense B in `dtype`).
    pub weights: Option<WeightFormat>,
    /// In which view `m` and `n` are given.
    pub view: GemmView,
}

/// What a [`GemmRequest`] gives: the work, the shape for the tile math and, for
/// quantized weights, the fused vs unfused dequantization traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmParts {
    pub work: Work,
    pub shape: GemmShape,
    pub fusion: Option<DequantFusion>,
}

impl GemmRequest {
    /// A dense GEMM: batch 1, output in `dtype`, no bias, matrix units, BLAS view.
    pub fn new(m: u64, n: u64, k: u64, dtype: Precision) -> GemmRequest {
        GemmRequest {
            m,
            n,
            k,
            batch: 1,
            dtype,
            out_dtype: None,
            bias: false,
            vector_units: false,
            matrix_units: false,
            weights: None,
            view: GemmView::Blas,
        }
    }

    /// The work, shape and dequantization traffic of this GEMM.
    ///
    /// # Errors
    /// A zero size; `2·batch·M·N·K` past 64-bit arithmetic; batch or bias with quantized
    /// weights; a weight format the quantized GEMM model refuses; both units asked for.
    pub fn parts(&self) -> Result<GemmParts, OpError> {
        if self.vector_units && self.matrix_units {
            return Err(OpError::Invalid(
                "vector units and matrix units exclude each other: ask for one".to_string(),
            ));
        }
        // 2·batch·M·N·K FLOPs must be a count, not an overflow: refused, as STREAM or
        // any calculator refuses a size past its arithmetic.
        if [2, self.batch, self.m, self.n, self.k]
            .into_iter()
            .try_fold(1u64, u64::checked_mul)
            .is_none()
        {
            return Err(OpError::Overflow(format!(
                "batch {} M {} N {} K {}: 2*batch*M*N*K FLOPs overflow 64-bit arithmetic \
                 (over 1.8e19); no device runs such a GEMM",
                self.batch, self.m, self.n, self.k
            )));
        }
        let (work, fusion) = if let Some(format) = self.weights {
            if self.batch != 1 || self.bias {
                return Err(OpError::Invalid(
                    "batch and bias are not supported for quantized GEMMs".to_string(),
                ));
            }
            let spec = QuantGemmSpec {
                m: self.m,
                n: self.n,
                k: self.k,
                act_dtype: self.dtype,
                format,
                out_dtype: self.out_dtype,
            };
            // Dequantizing to the activation precision is what an unfused pipeline
            // does.
            (spec.work()?, spec.dequant_fusion(self.dtype).ok())
        } else {
            let spec = GemmSpec {
                m: self.m,
                n: self.n,
                k: self.k,
                batch: self.batch,
                dtype: self.dtype,
                out_dtype: self.out_dtype,
                bias: self.bias,
                unit: if self.vector_units {
                    Some(ExecUnit::Vector)
                } else {
                    self.matrix_units.then_some(ExecUnit::Matrix)
                },
            };
            (spec.work()?, None)
        };
        let shape = GemmShape { m: self.m, n: self.n, batch: self.batch, view: self.view };
        Ok(GemmParts { work, shape, fusion })
    }
}

impl WeightFormat {
    /// `bits`-bit group quantization with the defaults front ends use: groups of
    /// [`DEFAULT_GROUP_SIZE`] along K and fp16 scales.
    pub fn affine(
        bits: u32,
        group_size: Option<u64>,
        scale_dtype: Option<Precision>,
        zero_point: bool,
    ) -> WeightFormat {
        WeightFormat::Affine {
            bits,
            group_size: group_size.unwrap_or(DEFAULT_GROUP_SIZE),
            scale_dtype: scale_dtype.unwrap_or(Precision::Fp16),
            zero_point,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dense_gemm_counts_2mnk_flops_and_one_pass_over_a_b_c() {
        // 2·64·32·16 = 65,536 FLOPs; bf16: (64·16 + 16·32 + 64·32)·2 = 7,168 bytes.
        let p = GemmRequest::new(64, 32, 16, Precision::Bf16).parts().unwrap();
        assert_eq!(p.work.flops, 65_536.0);
        assert_eq!(p.work.bytes(), 7_168.0);
        assert_eq!(p.shape, GemmShape { m: 64, n: 32, batch: 1, view: GemmView::Blas });
        assert!(p.fusion.is_none());
    }

    #[test]
    fn sizes_past_64_bit_flops_and_quantized_batches_are_refused() {
        let huge = GemmRequest::new(u64::MAX, 2, 2, Precision::Fp16).parts();
        assert!(matches!(huge, Err(OpError::Overflow(m)) if m.contains("overflow 64-bit")));
        // 2·2^31·2^31·2 = 2^64: one past the largest u64.
        let edge = GemmRequest::new(1 << 31, 1 << 31, 2, Precision::Fp16).parts();
        assert!(matches!(edge, Err(OpError::Overflow(_))));
        let mut q = GemmRequest::new(1, 4096, 4096, Precision::Fp16);
        q.weights = Some(WeightFormat::affine(4, None, None, false));
        assert!(q.parts().unwrap().fusion.is_some());
        q.batch = 2;
        assert!(matches!(q.parts(), Err(OpError::Invalid(_))));
    }

    #[test]
    fn group_quantization_defaults_to_groups_of_128_with_fp16_scales() {
        assert_eq!(
            WeightFormat::affine(4, None, None, true),
            WeightFormat::Affine {
                bits: 4,
                group_size: 128,
                scale_dtype: Precision::Fp16,
                zero_point: true
            }
        );
    }
}
