//! FP8 / FP4 quantisation ops of inference engines (activations quantised before a
//! low-precision GEMM), modelled as the memory-bound passes they are.
//!
//! Ops: vLLM `_C::static_scaled_fp8_quant`, `_C::dynamic_scaled_fp8_quant`,
//! `_C::dynamic_per_token_scaled_fp8_quant`, `_C::per_token_group_fp8_quant`,
//! `_C::scaled_fp4_quant`, SGLang `sgl_kernel::sgl_per_token_group_quant_fp8`,
//! `sgl_kernel::sgl_per_tensor_quant_fp8`, `sgl_kernel::sgl_per_token_quant_fp8`, and the
//! engines' other `…quant…` ops that are not GEMMs (dequantisation passes: there the
//! 16/32-bit tensor is the output, and the same sums hold).
//! Their tensor arguments are the input, the quantised output and the scales in an order
//! that differs between ops, so the model reads every tensor argument once:
//! - the **input** is the largest 16- or 32-bit floating-point tensor; its elements `N`;
//! - bytes: every tensor argument, `numel × element size` (the input read, the output
//!   and scales written; a 4-bit output is stored two per byte, which its recorded
//!   shape already shows);
//! - FLOPs: `N` for a static scale (one multiply per element), `2·N` for dynamic
//!   scales (the max reduction, then the multiply).

use super::super::model::{Dims, OpArgs};
use super::super::ops::{dtype_bytes, OpModel, ParamValue, Params, Table};
use crate::ops::{OpClass, Work};
use crate::units::{ExecUnit, Precision};

/// Whether `name` is a quantisation op this module models: the ops above, and any other
/// engine op (`_C::`, `_rocm_C::`, `sgl_kernel::`) named `…quant…` that is not a GEMM
/// (dequantisation and other quantisation kernels; `vllm::gemm_with_dynamic_quant` is a
/// GEMM).
pub fn is_quant(name: &str) -> bool {
    let engine = name.starts_with("_C::")
        || name.starts_with("_rocm_C::")
        || name.starts_with("sgl_kernel::");
    if engine && name.contains("quant") && !name.contains("gemm") && !name.contains("_mm") {
        return true;
    }
    matches!(
        name,
        "_C::static_scaled_fp8_quant"
            | "_C::dynamic_scaled_fp8_quant"
            | "_C::dynamic_per_token_scaled_fp8_quant"
            | "_C::per_token_group_fp8_quant"
            | "_C::scaled_fp4_quant"
            | "sgl_kernel::sgl_per_token_group_quant_fp8"
            | "sgl_kernel::sgl_per_tensor_quant_fp8"
            | "sgl_kernel::sgl_per_token_quant_fp8"
    )
}

fn is_dynamic(name: &str) -> bool {
    !name.contains("static") && name != "sgl_kernel::sgl_per_tensor_quant_fp8"
}

/// The model of one call.
///
/// # Errors
/// When no 16/32-bit float tensor is recorded, or a tensor's element size is unknown.
pub(crate) fn quant_model(name: &str, a: &OpArgs) -> Result<OpModel, String> {
    let mut bytes = 0.0;
    let mut input: Option<(u128, String)> = None;
    let mut out_dtype = None;
    for (i, d) in a.input_dims.iter().enumerate() {
        let Dims::Tensor(shape) = d else { continue };
        if shape.is_empty() {
            continue;
        }
        let dtype = a.input_types.get(i).cloned().unwrap_or_default();
        let n = shape
            .iter()
            .try_fold(1u128, |acc, &x| u128::try_from(x).ok().and_then(|x| acc.checked_mul(x)));
        let n = n.ok_or_else(|| format!("argument {i} has a bad shape {shape:?}"))?;
        let bpe = dtype_bytes(&dtype)
            .ok_or_else(|| format!("argument {i}: unknown element size of `{dtype}`"))?;
        bytes += n as f64 * f64::from(bpe);
        let wide = matches!(dtype.as_str(), "c10::BFloat16" | "c10::Half" | "float");
        if wide && input.as_ref().is_none_or(|(m, _)| n > *m) {
            input = Some((n, dtype));
        } else if bpe == 1 && out_dtype.is_none() {
            out_dtype = Some(dtype);
        }
    }
    let (n, in_dtype) = input.ok_or_else(|| {
        format!("`{name}`: no BFloat16/Half/float input tensor among the recorded arguments")
    })?;
    let per = if is_dynamic(name) { 2.0 } else { 1.0 };
    let flops = per * n as f64;
    let work = Work {
        class: OpClass::Elementwise,
        shape: format!("N={n} {in_dtype} → {}", out_dtype.as_deref().unwrap_or("?")),
        flops,
        precision: Precision::Fp32,
        unit: ExecUnit::Vector,
        bytes_read: n as f64 * f64::from(dtype_bytes(&in_dtype).unwrap_or(2)),
        bytes_written: bytes - n as f64 * f64::from(dtype_bytes(&in_dtype).unwrap_or(2)),
        flops_formula: format!("{per}*N = {per}*{n}"),
        bytes_formula: "Σ over tensor arguments of numel × element size".to_string(),
        assumptions: vec![format!(
            "{} scale: {} FLOP per element",
            if is_dynamic(name) { "dynamic" } else { "static" },
            per
        )],
    };
    let mut params = Params::default();
    params.0.push(("elements", ParamValue::Int(i64::try_from(n).unwrap_or(i64::MAX))));
    params.0.push(("dtypes", ParamValue::Dtypes(vec![Some(in_dtype), out_dtype])));
    Ok(OpModel { table: Table::Quant, params, flops, bytes, work, gemm: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_per_token_fp8() {
        // vLLM: (out [T, H] fp8, input [T, H] bf16, scales [T, 1] float, scale_ub None).
        let a = OpArgs {
            input_dims: vec![
                Dims::Tensor(vec![16, 4096]),
                Dims::Tensor(vec![16, 4096]),
                Dims::Tensor(vec![16, 1]),
                Dims::Tensor(vec![]),
            ],
            input_types: vec![
                "c10::Float8_e4m3fn".into(),
                "c10::BFloat16".into(),
                "float".into(),
                String::new(),
            ],
            ..OpArgs::default()
        };
        let m = quant_model("_C::dynamic_per_token_scaled_fp8_quant", &a).unwrap();
        // 65536 elements: 2 B read, 1 B written; 16 scales of 4 B.
        assert_eq!(m.bytes, 65536.0 * 3.0 + 64.0);
        assert_eq!(m.flops, 131_072.0);
        assert_eq!(m.table, Table::Quant);
        let s = quant_model("_C::static_scaled_fp8_quant", &a).unwrap();
        assert_eq!(s.flops, 65536.0);
        assert!(is_quant("_C::per_token_group_dequant_fp8"));
        assert!(!is_quant("_C::cutlass_scaled_mm"));
        assert!(!is_quant("vllm::gemm_with_dynamic_quant"));
        assert!(!is_quant("aten::quantize_per_tensor"));
    }
}
