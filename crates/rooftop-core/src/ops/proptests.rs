//! Property tests over every work model: for arbitrary `u64` dimensions (zeros and
//! `u64::MAX` included) `work()` never panics, and when it succeeds FLOPs and bytes are
//! finite and non-negative, the formulas are non-empty and bytes are positive.

use super::attention::{AttentionSpec, CausalMode, Pass};
use super::conv::Conv2dSpec;
use super::copy::CopySpec;
use super::elementwise::ElementwiseSpec;
use super::gemm::GemmSpec;
use super::norm::{LayerNormSpec, RmsNormSpec};
use super::quant::{QuantGemmSpec, WeightFormat};
use super::reduction::ReductionSpec;
use super::softmax::{SoftmaxPasses, SoftmaxSpec};
use super::{OpError, Work};
use crate::units::{ExecUnit, Precision};
use proptest::prelude::*;

/// Dimensions biased towards the edges: 0, 1, small, large and `u64::MAX`.
fn dim() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1u64),
        1u64..=4096,
        any::<u64>(),
        Just(u64::MAX),
        (1u64 << 32)..(1u64 << 33),
    ]
}

fn precision() -> impl Strategy<Value = Precision> {
    prop::sample::select(Precision::ALL.to_vec())
}

fn opt_precision() -> impl Strategy<Value = Option<Precision>> {
    prop::option::of(precision())
}

fn unit() -> impl Strategy<Value = Option<ExecUnit>> {
    prop::option::of(prop::sample::select(vec![ExecUnit::Vector, ExecUnit::Matrix]))
}

fn causal() -> impl Strategy<Value = CausalMode> {
    prop::sample::select(vec![CausalMode::None, CausalMode::TopLeft, CausalMode::BottomRight])
}

fn pass() -> impl Strategy<Value = Pass> {
    prop::sample::select(vec![Pass::Forward, Pass::Backward])
}

fn weight_format() -> impl Strategy<Value = WeightFormat> {
    prop_oneof![
        Just(WeightFormat::Q4_0),
        Just(WeightFormat::Q8_0),
        (0u32..=20, dim(), precision(), any::<bool>()).prop_map(
            |(bits, group_size, scale_dtype, zero_point)| {
                WeightFormat::Affine { bits, group_size, scale_dtype, zero_point }
            }
        ),
    ]
}

/// The invariants every successful result satisfies; errors must be one of ours.
fn check(r: Result<Work, OpError>) -> Result<(), TestCaseError> {
    if let Ok(w) = r {
        prop_assert!(w.flops.is_finite() && w.flops >= 0.0, "flops {}", w.flops);
        prop_assert!(w.bytes_read.is_finite() && w.bytes_read >= 0.0, "read {}", w.bytes_read);
        prop_assert!(
            w.bytes_written.is_finite() && w.bytes_written > 0.0,
            "written {}",
            w.bytes_written
        );
        prop_assert!(w.bytes().is_finite());
        prop_assert!(!w.arithmetic_intensity().is_nan());
        prop_assert!(
            !w.shape.is_empty() && !w.flops_formula.is_empty() && !w.bytes_formula.is_empty()
        );
        prop_assert!(!w.assumptions.is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn gemm_never_panics(m in dim(), n in dim(), k in dim(), batch in dim(), dtype in precision(),
                         out_dtype in opt_precision(), bias in any::<bool>(), unit in unit()) {
        check(GemmSpec { m, n, k, batch, dtype, out_dtype, bias, unit }.work())?;
    }

    #[test]
    fn quant_never_panics(m in dim(), n in dim(), k in dim(), act_dtype in precision(),
                          format in weight_format(), out_dtype in opt_precision(),
                          dequant in precision()) {
        let spec = QuantGemmSpec { m, n, k, act_dtype, format, out_dtype };
        check(spec.work())?;
        if let Ok(f) = spec.dequant_fusion(dequant) {
            for t in std::iter::once(&f.minimal).chain(f.as_circulated.as_ref()) {
                prop_assert!(t.unfused_bytes.is_finite() && t.unfused_bytes > 0.0);
                prop_assert!(t.fused_bytes.is_finite() && t.fused_bytes > 0.0);
                prop_assert!(t.saving.is_finite() && t.saving > 0.0);
            }
        }
    }

    #[test]
    fn norms_and_softmax_never_panic(rows in dim(), cols in dim(), dtype in precision(),
                                     weight_dtype in opt_precision(), affine in any::<bool>(),
                                     three in any::<bool>()) {
        check(RmsNormSpec { rows, cols, dtype, weight_dtype }.work())?;
        check(LayerNormSpec { rows, cols, dtype, affine }.work())?;
        let passes = if three { SoftmaxPasses::Three } else { SoftmaxPasses::One };
        check(SoftmaxSpec { rows, cols, dtype, passes }.work())?;
        check(ReductionSpec { rows, cols, dtype, out_dtype: weight_dtype }.work())?;
        check(CopySpec { elements: rows, dtype }.work())?;
    }

    #[test]
    fn elementwise_never_panics(elements in dim(), inputs in any::<u32>(), outputs in any::<u32>(),
                                dtype in precision(),
                                fpe in prop_oneof![any::<f64>(), 0.0f64..16.0],
                                broadcast in prop::option::of(dim())) {
        check(ElementwiseSpec { elements, inputs, outputs, dtype, flops_per_element: fpe,
                                broadcast_elements: broadcast }.work())?;
    }

    #[test]
    fn attention_never_panics(batch in dim(), heads_q in dim(), heads_kv in dim(), seq_q in dim(),
                              seq_kv in dim(), head_dim in dim(), head_dim_v in prop::option::of(dim()),
                              causal in causal(), dtype in precision(), pass in pass()) {
        check(AttentionSpec { batch, heads_q, heads_kv, seq_q, seq_kv, head_dim, head_dim_v,
                              causal, dtype, pass }.work())?;
    }

    #[test]
    fn attention_causal_never_exceeds_full(sq in 1u64..=1_000_000, skv in 1u64..=1_000_000,
                                           causal in causal()) {
        let pairs = super::attention::unmasked_pairs(sq, skv, causal);
        prop_assert!(pairs <= u128::from(sq) * u128::from(skv));
        // Bottom-right keeps at least as many pairs as top-left when Sq <= Skv.
        if sq <= skv {
            prop_assert!(super::attention::unmasked_pairs(sq, skv, CausalMode::BottomRight)
                >= super::attention::unmasked_pairs(sq, skv, CausalMode::TopLeft));
        }
    }

    #[test]
    fn conv_never_panics(n in dim(), c in dim(), h in dim(), w in dim(), k in dim(), r in dim(),
                         s in dim(), stride in (dim(), dim()), pad in (dim(), dim()),
                         dilation in (dim(), dim()), groups in dim(), dtype in precision(),
                         bias in any::<bool>()) {
        check(Conv2dSpec { n, c, h, w, k, r, s, stride, pad, dilation, groups, dtype, bias }.work())?;
    }
}
