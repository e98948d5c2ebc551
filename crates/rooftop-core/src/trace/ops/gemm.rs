//! GEMM ops (`mm`, `addmm`, `bmm`, `baddbmm`, `_scaled_mm`): TraceLens `GEMM`.

use super::args::{
    as_i64, bpe_of, custom_work, finish, mul, prefer_core, sum, to_u64, udim, Args, R,
};
use super::{
    dtype_precision, ExecUnit, GemmShape, GemmSpec, GemmView, Kind, OpClass, OpModel, ParamValue,
    Params, Precision, Table,
};

// --- GEMM ------------------------------------------------------------------------------

/// TraceLens `GEMM`: FLOPs `B*(2*M*N*K + M*N if bias)`; bytes
/// `B*(M*K + K*N + M*N + N if bias)*bpe` with every operand in A's element size (the
/// output of an fp8 `_scaled_mm` in 2 bytes).
#[allow(clippy::many_single_char_names)]
pub(super) fn gemm(kind: Kind, a: &Args) -> R<OpModel> {
    // (A index, B index, batched, bias)
    let (ia, ib, batched) = match kind {
        Kind::Mm | Kind::ScaledMm => (0, 1, false),
        Kind::Addmm => (1, 2, false),
        Kind::Bmm => (0, 1, true),
        _ => (1, 2, true), // baddbmm
    };
    let bias = match kind {
        Kind::Addmm | Kind::Baddbmm => true,
        Kind::ScaledMm => a.has_tensor(4),
        _ => false,
    };
    let sa = a.dims(ia)?;
    let sb = a.dims(ib)?;
    let (bt, m, k, n) = if batched {
        if sa.len() != 3 || sb.len() != 3 {
            return Err(format!("batched matmul expects 3-D operands, got {sa:?} and {sb:?}"));
        }
        (udim(&sa, 0, "B")?, udim(&sa, 1, "M")?, udim(&sa, 2, "K")?, udim(&sb, 2, "N")?)
    } else {
        if sa.len() != 2 || sb.len() != 2 {
            return Err(format!("matmul expects 2-D operands, got {sa:?} and {sb:?}"));
        }
        (1, udim(&sa, 0, "M")?, udim(&sa, 1, "K")?, udim(&sb, 1, "N")?)
    };
    let (ta, tb) = (a.dtype(ia)?, a.dtype(ib)?);
    let bpe = bpe_of(&ta)?;
    let out_bpe = if kind == Kind::ScaledMm && bpe == 1 { 2 } else { bpe };
    let mn = mul(&[m, n])?;
    let flops = mul(&[bt, sum(&[mul(&[2, m, n, k])?, if bias { mn } else { 0 }])?])?;
    let read = mul(&[
        bt,
        sum(&[mul(&[m, k, bpe])?, mul(&[k, n, bpe])?, if bias { n * out_bpe } else { 0 }])?,
    ])?;
    let written = mul(&[bt, mn, out_bpe])?;
    let bytes = sum(&[read, written])?;

    let precision = dtype_precision(&ta).unwrap_or(Precision::Fp32);
    let core = if kind == Kind::ScaledMm || (bias && bt > 1) || dtype_precision(&ta).is_none() {
        None
    } else {
        let mut spec = GemmSpec::new(to_u64(m, "M")?, to_u64(n, "N")?, to_u64(k, "K")?, precision);
        spec.batch = to_u64(bt, "B")?;
        spec.bias = bias;
        spec.work().ok()
    };
    let work = prefer_core(core, flops, bytes, || {
        let unit = if precision == Precision::Fp32 { ExecUnit::Vector } else { ExecUnit::Matrix };
        custom_work(
            OpClass::Gemm,
            format!("B={bt} M={m} N={n} K={k} {}", precision.as_str()),
            flops,
            format!(
                "B*(2*M*N*K{}) = {bt}*(2*{m}*{n}*{k}{})",
                if bias { " + M*N" } else { "" },
                if bias { format!(" + {m}*{n}") } else { String::new() }
            ),
            precision,
            unit,
            read,
            written,
            format!(
                "B*(M*K + K*N{})*{bpe} read + B*M*N*{out_bpe} written = {read} + {written} B",
                if bias { " + N" } else { "" }
            ),
            vec!["every operand in A's element size (TraceLens GEMM.bytes_func)".to_string()],
        )
    });
    let mut p = Params::default();
    p.push("M", ParamValue::Int(as_i64(m)));
    p.push("N", ParamValue::Int(as_i64(n)));
    p.push("K", ParamValue::Int(as_i64(k)));
    p.push("bias", ParamValue::Bool(bias));
    p.push("stride_A", a.strides(ia));
    p.push("stride_B", a.strides(ib));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(ta), Some(tb)]));
    p.push("B", ParamValue::Int(as_i64(bt)));
    let shape = GemmShape {
        m: to_u64(m, "M")?,
        n: to_u64(n, "N")?,
        batch: to_u64(bt, "B")?,
        view: GemmView::Torch,
    };
    Ok(finish(Table::Gemm, p, work, Some(shape)))
}
