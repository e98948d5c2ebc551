//! Work models of XLA ops from their HLO: the FLOPs and bytes of one execution, with
//! the formula, for the roofline tables and the XLA op summary.
//!
//! - **GEMM** (`dot`, a fusion around a `dot` such as XLA's Triton GEMM fusions, and the
//!   BLAS custom calls `__cublas$gemm` / `__cublas$lt$matmul*`, which XLA also uses on
//!   ROCm for hipBLASLt): with the dot dimension numbers, `B` = product of the batch
//!   dimensions, `K` = product of the contracting dimensions, `M` / `N` = product of the
//!   other dimensions of the left / right operand; FLOPs `2*B*M*N*K` (the core
//!   [`GemmSpec`] model). Bytes are what the op reads and writes in HBM: its operands
//!   and its result (a custom call's trailing `u8`/`s8` workspace left out), which is
//!   also how XLA's cost analysis counts a fusion (checked against XProf's
//!   `hlo_stats` in the tests). A fusion may read less than the dot's operands (a
//!   broadcast constant operand is made on chip), so the GEMM's own byte formula is
//!   replaced where they differ, and the assumption says so.
//! - **Convolution** (`convolution`, convolution fusions, and the cuDNN/MIOpen custom
//!   calls `__cudnn$convForward`, `...BackwardInput`, `...BackwardFilter`,
//!   `...BiasActivationForward`), any number of spatial dimensions: FLOPs
//!   `2 * |Y| * Cin_per_group * prod(kernel spatial)` with `Y` the forward output
//!   (PyTorch `flop_counter` / TraceLens `CONV`; padding taps are counted, so this is an
//!   upper bound where the window is padded); bytes as for GEMMs.
//! - **Fused attention** (Transformer Engine `te_fused_attn_forward_ffi` /
//!   `te_fused_attn_backward_ffi`): the FFI attributes give batch, heads (query and
//!   KV groups), sequence lengths, head dims and mask; the core [`AttentionSpec`] model
//!   counts the FLOPs (`4*B*Hq*pairs*D` forward, 2.5× that backward) and bytes. NVTE
//!   mask types (`transformer_engine/common/include/transformer_engine/fused_attn.h`):
//!   0 none, 1 padding, 2 causal (top-left), 3 padding + causal, 4 causal bottom-right,
//!   5 padding + causal bottom-right; padding masks are counted at the maximum sequence
//!   lengths (the real lengths are runtime data), an upper bound.
//! - **Memory-bound ops** (every other op with known shapes, for the XLA op summary):
//!   bytes = operands + result, no FLOPs counted — the memory roof.
//!
//! Counts are exact checked `u128`; a shape that does not fit gives a
//! [`OpModelError::BadArgs`], never a panic.

use super::hlo::{HloInstr, HloShape};
use crate::analysis::{GemmShape, GemmView};
use crate::ops::attention::{AttentionSpec, CausalMode, Pass};
use crate::ops::gemm::GemmSpec;
use crate::ops::{OpClass, Work};
use crate::trace::ops::{OpModel, OpModelError, ParamValue, Params, Table};
use crate::units::{ExecUnit, Precision};

/// What kind of model an instruction gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gemm,
    Conv(ConvPass),
    Attention(Pass),
}

/// Which convolution a cuDNN custom call computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConvPass {
    Forward,
    BackwardInput,
    BackwardFilter,
}

fn kind(i: &HloInstr) -> Option<Kind> {
    let core = i.core();
    if let Some(t) = core.custom_call_target.as_deref() {
        if t.starts_with("te_fused_attn_forward") {
            return Some(Kind::Attention(Pass::Forward));
        }
        if t.starts_with("te_fused_attn_backward") {
            return Some(Kind::Attention(Pass::Backward));
        }
        if t.starts_with("__cudnn$conv") && core.conv.is_some() {
            let pass = if t.contains("BackwardInput") {
                ConvPass::BackwardInput
            } else if t.contains("BackwardFilter") {
                ConvPass::BackwardFilter
            } else {
                ConvPass::Forward
            };
            return Some(Kind::Conv(pass));
        }
        if t.starts_with("__cublas") && core.dot.is_some() {
            return Some(Kind::Gemm);
        }
        return None;
    }
    if core.dot.is_some() && core.opcode == "dot" {
        return Some(Kind::Gemm);
    }
    if core.conv.is_some() && core.opcode == "convolution" {
        return Some(Kind::Conv(ConvPass::Forward));
    }
    None
}

/// The roofline table of an instruction (`None`: no compute model; the XLA op summary
/// still gives it a memory model).
pub fn table_of(i: &HloInstr) -> Option<Table> {
    Some(match kind(i)? {
        Kind::Gemm => Table::Gemm,
        Kind::Conv(ConvPass::Forward) => Table::ConvFwd,
        Kind::Conv(_) => Table::ConvBwd,
        Kind::Attention(Pass::Forward) => Table::SdpaFwd,
        Kind::Attention(Pass::Backward) => Table::SdpaBwd,
    })
}

/// The model of one execution of `i` (GEMM, convolution or fused attention).
///
/// # Errors
/// [`OpModelError::Unmodelled`] for instructions without a compute model,
/// [`OpModelError::BadArgs`] when the shapes or attributes do not fit one.
pub fn model(i: &HloInstr) -> Result<OpModel, OpModelError> {
    let bad = |reason: String| OpModelError::BadArgs { op: i.name.clone(), reason };
    match kind(i) {
        None => Err(OpModelError::Unmodelled(i.name.clone())),
        Some(Kind::Gemm) => gemm(i).map_err(bad),
        Some(Kind::Conv(pass)) => conv(i, pass).map_err(bad),
        Some(Kind::Attention(pass)) => attention(i, pass).map_err(bad),
    }
}

type R<T> = Result<T, String>;

fn u64_of(x: u128, what: &str) -> R<u64> {
    u64::try_from(x).map_err(|_| format!("{what} = {x} does not fit in 64 bits"))
}

fn i64_of(x: u128) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

/// The result shapes an op writes: a custom call's tuple without its trailing
/// `u8`/`s8` workspace, else the whole result.
fn written_shapes(i: &HloInstr) -> Vec<&HloShape> {
    if !i.shape.is_tuple() {
        return vec![&i.shape];
    }
    let mut v: Vec<&HloShape> = i.shape.tuple.iter().collect();
    if i.opcode == "custom-call"
        && v.len() > 1
        && v.last().is_some_and(|s| s.dtype == "u8" || s.dtype == "s8")
    {
        v.pop();
    }
    v
}

/// Bytes read (operands) and written (result) by `i` in HBM, each once.
pub fn io_bytes(i: &HloInstr) -> Option<(u128, u128)> {
    let read = i.operand_bytes()?;
    let written = written_shapes(i).iter().try_fold(0u128, |acc, s| acc.checked_add(s.bytes()?))?;
    Some((read, written))
}

fn prod(dims: &[i64], idx: &[i64], what: &str) -> R<u128> {
    idx.iter().try_fold(1u128, |acc, &a| {
        let d = usize::try_from(a)
            .ok()
            .and_then(|a| dims.get(a))
            .ok_or_else(|| format!("{what}: dimension {a} is not in {dims:?}"))?;
        let d = u128::try_from(*d).map_err(|_| format!("{what}: negative dimension {d}"))?;
        acc.checked_mul(d).ok_or_else(|| format!("{what} overflows"))
    })
}

fn rest(rank: usize, a: &[i64], b: &[i64]) -> Vec<i64> {
    (0..rank)
        .filter_map(|d| i64::try_from(d).ok())
        .filter(|d| !a.contains(d) && !b.contains(d))
        .collect()
}

/// A GEMM as its dot states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GemmDims {
    pub batch: u128,
    pub m: u128,
    pub n: u128,
    pub k: u128,
    pub lhs_dtype: String,
    pub rhs_dtype: String,
    pub out_dtype: String,
    /// The output is row-major (M is the slow dimension), as PyTorch states its GEMMs.
    pub row_major_out: bool,
    /// The output dims of the dot (for tile counts), major to minor.
    pub out_dims: Vec<i64>,
}

/// The GEMM dimensions of a dot-like instruction.
///
/// # Errors
/// When it has no dot dimension numbers or its shapes do not agree with them.
// M, N, K are the names the formulas use.
#[allow(clippy::many_single_char_names)]
pub fn gemm_dims(i: &HloInstr) -> R<GemmDims> {
    let d = i.core();
    let dn = d.dot.as_ref().ok_or("no dot dimension numbers")?;
    let [lhs, rhs, ..] = d.operands.as_slice() else {
        return Err(format!("a dot needs two operands, {} given", d.operands.len()));
    };
    let batch = prod(&lhs.dims, &dn.lhs_batch, "lhs batch")?;
    let rbatch = prod(&rhs.dims, &dn.rhs_batch, "rhs batch")?;
    let k = prod(&lhs.dims, &dn.lhs_contracting, "lhs contracting")?;
    let rk = prod(&rhs.dims, &dn.rhs_contracting, "rhs contracting")?;
    if batch != rbatch || k != rk {
        return Err(format!(
            "lhs {} and rhs {} disagree on batch ({batch} vs {rbatch}) or contraction ({k} vs \
             {rk})",
            lhs.text(),
            rhs.text()
        ));
    }
    let m = prod(&lhs.dims, &rest(lhs.dims.len(), &dn.lhs_batch, &dn.lhs_contracting), "M")?;
    let n = prod(&rhs.dims, &rest(rhs.dims.len(), &dn.rhs_batch, &dn.rhs_contracting), "N")?;
    let out = d.shape.first_array();
    Ok(GemmDims {
        batch,
        m,
        n,
        k,
        lhs_dtype: lhs.dtype.clone(),
        rhs_dtype: rhs.dtype.clone(),
        out_dtype: out.dtype.clone(),
        row_major_out: out.is_row_major(),
        out_dims: out.dims.clone(),
    })
}

/// Who computes the GEMM: `triton` (XLA's Triton GEMM fusions), `blas` (the
/// `__cublas$gemm` custom call: cuBLAS, or hipBLASLt/rocBLAS on ROCm), `blaslt`
/// (`__cublas$lt$matmul*`), else the opcode (`dot`, `fusion`).
fn gemm_impl(i: &HloInstr) -> String {
    if let Some(t) = i.custom_call_target.as_deref() {
        return if t.starts_with("__cublas$lt") { "blaslt" } else { "blas" }.to_string();
    }
    if i.fusion_backend_kind.as_deref().is_some_and(|k| k.contains("triton")) {
        return "triton".to_string();
    }
    i.opcode.clone()
}

/// Replaces `w`'s bytes with the op's HBM reads and writes when they differ.
fn use_io_bytes(w: &mut Work, i: &HloInstr) {
    let Some((read, written)) = io_bytes(i) else { return };
    let (r, wr) = (read as f64, written as f64);
    if w.bytes_read == r && w.bytes_written == wr {
        return;
    }
    w.bytes_read = r;
    w.bytes_written = wr;
    w.bytes_formula =
        format!("HLO operands {read} B read + result {written} B written (`{}`)", i.name);
    w.assumptions.push(
        "bytes are the op's HLO operands and result, each crossing HBM once (as XLA's cost \
         analysis counts a fusion); operands made on chip inside a fusion are not read"
            .to_string(),
    );
}

fn gemm(i: &HloInstr) -> R<OpModel> {
    let g = gemm_dims(i)?;
    let precision = super::hlo::dtype_precision(&g.lhs_dtype)
        .ok_or_else(|| format!("no roofline precision for element type `{}`", g.lhs_dtype))?;
    let out = super::hlo::dtype_precision(&g.out_dtype).unwrap_or(precision);
    let mut spec =
        GemmSpec::new(u64_of(g.m, "M")?, u64_of(g.n, "N")?, u64_of(g.k, "K")?, precision);
    spec.batch = u64_of(g.batch, "B")?;
    spec.out_dtype = Some(out);
    let mut work = spec.work().map_err(|e| e.to_string())?;
    use_io_bytes(&mut work, i);
    let mut p = Params::default();
    p.0.push(("M", ParamValue::Int(i64_of(g.m))));
    p.0.push(("N", ParamValue::Int(i64_of(g.n))));
    p.0.push(("K", ParamValue::Int(i64_of(g.k))));
    p.0.push(("B", ParamValue::Int(i64_of(g.batch))));
    p.0.push((
        "dtypes",
        ParamValue::Dtypes(vec![
            Some(g.lhs_dtype.clone()),
            Some(g.rhs_dtype.clone()),
            Some(g.out_dtype.clone()),
        ]),
    ));
    p.0.push(("impl", ParamValue::Str(gemm_impl(i))));
    let shape = GemmShape {
        m: u64_of(g.m, "M")?,
        n: u64_of(g.n, "N")?,
        batch: u64_of(g.batch, "B")?,
        view: if g.row_major_out { GemmView::Torch } else { GemmView::Blas },
    };
    Ok(OpModel {
        table: Table::Gemm,
        flops: work.flops,
        bytes: work.bytes(),
        params: p,
        work,
        gemm: Some(shape),
    })
}

fn dim_at(s: &HloShape, a: i64, what: &str) -> R<u128> {
    usize::try_from(a)
        .ok()
        .and_then(|a| s.dims.get(a))
        .and_then(|&d| u128::try_from(d).ok())
        .ok_or_else(|| format!("{what}: dimension {a} is not in {}", s.text()))
}

// x, w, y are the names the formulas use.
#[allow(clippy::many_single_char_names)]
fn conv(i: &HloInstr, pass: ConvPass) -> R<OpModel> {
    let d = i.core();
    let cd = d.conv.as_ref().ok_or("no convolution dimension numbers")?;
    let result = d.shape.first_array();
    let op = |k: usize| d.operands.get(k).ok_or_else(|| format!("operand {k} missing"));
    // (forward input x, filter w, forward output y) in the op's roles.
    let (x, w, y) = match pass {
        ConvPass::Forward => (op(0)?, op(1)?, result),
        ConvPass::BackwardInput => (result, op(1)?, op(0)?),
        ConvPass::BackwardFilter => (op(0)?, result, op(1)?),
    };
    let y_elems = y.elements().ok_or_else(|| format!("bad output shape {}", y.text()))?;
    let cin = dim_at(w, cd.kernel_input_feature, "kernel input feature")?;
    let spatial = prod(&w.dims, &cd.kernel_spatial, "kernel spatial")?;
    let flops = [2u128, y_elems, cin, spatial]
        .iter()
        .try_fold(1u128, |a, &b| a.checked_mul(b))
        .ok_or("FLOPs overflow")?;
    let dtype = if pass == ConvPass::BackwardInput { y.dtype.as_str() } else { x.dtype.as_str() };
    let mut precision = super::hlo::dtype_precision(dtype)
        .ok_or_else(|| format!("no roofline precision for element type `{dtype}`"))?;
    let mut assumptions =
        vec!["padding taps are counted as multiply-adds (an upper bound for padded windows)"
            .to_string()];
    if precision == Precision::Fp32 {
        precision = Precision::Tf32;
        assumptions.push(
            "FP32 convolution modelled as TF32 on the matrix unit (cuDNN's default math, as \
             for PyTorch convolutions)"
                .to_string(),
        );
    }
    let (read, written) = io_bytes(i).ok_or("unknown operand or result size")?;
    assumptions
        .push("bytes are the op's HLO operands and result, each crossing HBM once".to_string());
    let pass_name = match pass {
        ConvPass::Forward => "forward",
        ConvPass::BackwardInput => "backward input",
        ConvPass::BackwardFilter => "backward filter",
    };
    let work = Work {
        class: OpClass::Conv,
        shape: format!("x {} * w {} -> y {} ({pass_name})", x.text(), w.text(), y.text()),
        flops: flops as f64,
        precision,
        unit: ExecUnit::Matrix,
        bytes_read: read as f64,
        bytes_written: written as f64,
        flops_formula: format!(
            "2*|Y|*Cin_per_group*prod(kernel spatial) = 2*{y_elems}*{cin}*{spatial}"
        ),
        bytes_formula: format!(
            "HLO operands {read} B read + result {written} B written (`{}`)",
            i.name
        ),
        assumptions,
    };
    let mut p = Params::default();
    p.0.push(("input", ParamValue::Ints(x.dims.clone())));
    p.0.push(("kernel", ParamValue::Ints(w.dims.clone())));
    p.0.push(("output", ParamValue::Ints(y.dims.clone())));
    p.0.push(("stride", ParamValue::Ints(cd.window.iter().map(|w| w.stride).collect())));
    p.0.push((
        "padding",
        ParamValue::Ints(cd.window.iter().flat_map(|w| [w.padding_low, w.padding_high]).collect()),
    ));
    p.0.push(("dilation", ParamValue::Ints(cd.window.iter().map(|w| w.window_dilation).collect())));
    p.0.push(("groups", ParamValue::Int(cd.feature_group_count.max(1))));
    p.0.push(("dtypes", ParamValue::Dtypes(vec![Some(x.dtype.clone()), Some(w.dtype.clone())])));
    p.0.push(("pass", ParamValue::Str(pass_name.to_string())));
    let table = if pass == ConvPass::Forward { Table::ConvFwd } else { Table::ConvBwd };
    Ok(OpModel { table, flops: work.flops, bytes: work.bytes(), params: p, work, gemm: None })
}

fn attr_u64(i: &HloInstr, keys: &[&str]) -> R<u64> {
    for k in keys {
        if let Some(v) = i.attr(k) {
            return v
                .trim()
                .parse::<u64>()
                .map_err(|_| format!("attribute `{k}` = `{v}` is not a count"));
        }
    }
    Err(format!(
        "no `{}` attribute (is this a Transformer Engine FFI call?)",
        keys.first().copied().unwrap_or("?")
    ))
}

/// NVTE_QKV_Layout names (transformer_engine fused_attn.h), for the report.
fn qkv_layout_name(v: &str) -> String {
    let names = [
        "sb3hd",
        "sbh3d",
        "sbhd_sb2hd",
        "sbhd_sbh2d",
        "sbhd_sbhd_sbhd",
        "bs3hd",
        "bsh3d",
        "bshd_bs2hd",
        "bshd_bsh2d",
        "bshd_bshd_bshd",
        "t3hd",
        "th3d",
        "thd_t2hd",
        "thd_th2d",
        "thd_thd_thd",
    ];
    v.trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| names.get(n))
        .map_or_else(|| format!("layout {v}"), |s| (*s).to_string())
}

fn attention(i: &HloInstr, pass: Pass) -> R<OpModel> {
    let b = attr_u64(i, &["input_batch"])?;
    let hq = attr_u64(i, &["attn_heads"])?;
    let hkv = attr_u64(i, &["num_gqa_groups"]).unwrap_or(hq);
    let sq = attr_u64(i, &["q_max_seqlen"])?;
    let skv = attr_u64(i, &["kv_max_seqlen"])?;
    let d = attr_u64(i, &["qk_head_dim", "head_dim"])?;
    let dv = attr_u64(i, &["v_head_dim"]).unwrap_or(d);
    let mask = i.attr("mask_type").map_or(0, |m| m.trim().parse::<i64>().unwrap_or(-1));
    let causal = match mask {
        0 | 1 => CausalMode::None,
        2 | 3 => CausalMode::TopLeft,
        4 | 5 => CausalMode::BottomRight,
        m => return Err(format!("mask_type {m} has no attention model (arbitrary mask)")),
    };
    let window = |k: &str| i.attr(k).and_then(|v| v.trim().parse::<i64>().ok()).unwrap_or(-1);
    if window("window_size_left") >= 0
        || (window("window_size_right") > 0 && causal == CausalMode::None)
    {
        return Err("sliding-window attention has no model yet".to_string());
    }
    let dtype = i.operands.first().map(|s| s.dtype.clone()).ok_or("no operands")?;
    let precision = super::hlo::dtype_precision(&dtype)
        .ok_or_else(|| format!("no roofline precision for element type `{dtype}`"))?;
    let spec = AttentionSpec {
        batch: b,
        heads_q: hq,
        heads_kv: hkv,
        seq_q: sq,
        seq_kv: skv,
        head_dim: d,
        head_dim_v: Some(dv),
        causal,
        dtype: precision,
        pass,
    };
    let mut work = spec.work().map_err(|e| e.to_string())?;
    if matches!(mask, 1 | 3 | 5) {
        work.assumptions.push(
            "padding mask: counted at the maximum sequence lengths (real lengths are runtime \
             data), an upper bound"
                .to_string(),
        );
    }
    let dropout =
        i.attr("dropout_probability").and_then(|v| v.trim().parse::<f64>().ok()).unwrap_or(0.0);
    let mut p = Params::default();
    for (k, v) in [
        ("B", b),
        ("N_Q", sq),
        ("H_Q", hq),
        ("N_KV", skv),
        ("H_KV", hkv),
        ("d_h_qk", d),
        ("d_h_v", dv),
    ] {
        p.0.push((k, ParamValue::Int(i64::try_from(v).unwrap_or(i64::MAX))));
    }
    p.0.push(("dropout", ParamValue::Float(dropout)));
    p.0.push((
        "causal",
        ParamValue::Str(
            match causal {
                CausalMode::None => "none",
                CausalMode::TopLeft => "top-left",
                CausalMode::BottomRight => "bottom-right",
            }
            .to_string(),
        ),
    ));
    p.0.push(("dtypes", ParamValue::Dtypes(vec![Some(dtype)])));
    if let Some(l) = i.attr("qkv_layout") {
        p.0.push(("layout", ParamValue::Str(qkv_layout_name(l))));
    }
    let table = if pass == Pass::Forward { Table::SdpaFwd } else { Table::SdpaBwd };
    Ok(OpModel { table, flops: work.flops, bytes: work.bytes(), params: p, work, gemm: None })
}

/// A memory-only model of an op with known shapes and no compute model: its operands
/// read and result written once, no FLOPs counted.
pub fn memory_work(i: &HloInstr) -> Option<Work> {
    let (read, written) = io_bytes(i)?;
    if read == 0 && written == 0 {
        return None;
    }
    let lname = i.name.to_ascii_lowercase();
    let class =
        if i.opcode.starts_with("copy") || lname.contains("transpose") || lname.contains("copy") {
            OpClass::Copy
        } else if lname.contains("reduce") || i.opcode == "reduce" {
            OpClass::Reduction
        } else {
            OpClass::Elementwise
        };
    Some(Work {
        class,
        shape: format!("{} -> {}", operands_text(i), i.shape.text()),
        flops: 0.0,
        precision: Precision::Fp32,
        unit: ExecUnit::Vector,
        bytes_read: read as f64,
        bytes_written: written as f64,
        flops_formula: "not counted (memory model)".to_string(),
        bytes_formula: format!("HLO operands {read} B read + result {written} B written"),
        assumptions: vec![
            "memory model: each operand read and the result written once; the op's FLOPs are \
             not counted, so only the memory roof applies"
                .to_string(),
        ],
    })
}

/// Operand shapes as HLO text, comma-separated.
pub fn operands_text(i: &HloInstr) -> String {
    let v: Vec<String> = i.operands.iter().map(HloShape::text).collect();
    format!("({})", v.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::xla::hlo::{ConvDims, DotDims, WindowDim};

    fn s(d: &str, dims: &[i64]) -> HloShape {
        HloShape::array(d, dims)
    }

    /// The fixture's `dot.16` inside `gemm_fusion_dot`: lhs bf16[4096,2,1024], rhs
    /// bf16[2,1024,6144], lhs_contracting {2}, rhs_contracting {1}, lhs_batch {1},
    /// rhs_batch {0} → B = 2, M = 4096, N = 6144, K = 1024.
    fn gemm_fusion() -> HloInstr {
        let dot = HloInstr {
            name: "dot.16".into(),
            opcode: "dot".into(),
            shape: s("f32", &[2, 4096, 6144]),
            operands: vec![s("bf16", &[4096, 2, 1024]), s("bf16", &[2, 1024, 6144])],
            dot: Some(DotDims {
                lhs_contracting: vec![2],
                rhs_contracting: vec![1],
                lhs_batch: vec![1],
                rhs_batch: vec![0],
            }),
            ..HloInstr::default()
        };
        HloInstr {
            name: "gemm_fusion_dot".into(),
            opcode: "fusion".into(),
            fusion_kind: Some("kCustom".into()),
            fusion_backend_kind: Some("__triton_nested_gemm_fusion".into()),
            shape: s("f32", &[2, 4096, 6144]),
            operands: vec![s("bf16", &[4096, 2, 1024]), s("bf16", &[2, 1024, 6144])],
            inner: Some(Box::new(dot)),
            ..HloInstr::default()
        }
    }

    #[test]
    fn gemm_fusion_counts_from_the_dot_and_bytes_from_the_fusion() {
        let m = model(&gemm_fusion()).unwrap();
        assert_eq!(m.table, Table::Gemm);
        // 2*B*M*N*K = 2*2*4096*6144*1024.
        assert_eq!(m.flops, 2.0 * 2.0 * 4096.0 * 6144.0 * 1024.0);
        // A 4096*2*1024*2 + B 2*1024*6144*2 read, C 2*4096*6144*4 (f32) written.
        assert_eq!(m.work.bytes_read, (4096 * 2 * 1024 * 2 + 2 * 1024 * 6144 * 2) as f64);
        assert_eq!(m.work.bytes_written, (2 * 4096 * 6144 * 4) as f64);
        assert_eq!(m.params.get("M"), Some(&ParamValue::Int(4096)));
        assert_eq!(m.params.get("B"), Some(&ParamValue::Int(2)));
        assert_eq!(m.gemm.unwrap().view, GemmView::Torch);
    }

    #[test]
    fn a_broadcast_operand_is_not_read() {
        // gemm_fusion_dot.1: the dot's lhs is a broadcast made inside the fusion; the
        // fusion reads one bf16[2048,4,1536] operand and writes f32[4,4096,2048].
        let mut f = gemm_fusion();
        f.operands = vec![s("bf16", &[2048, 4, 1536])];
        f.shape = s("f32", &[4, 4096, 2048]);
        let inner = f.inner.as_mut().unwrap();
        inner.operands = vec![s("bf16", &[4096, 4, 1536]), s("bf16", &[2048, 4, 1536])];
        inner.shape = s("f32", &[4, 4096, 2048]);
        inner.dot = Some(DotDims {
            lhs_contracting: vec![2],
            rhs_contracting: vec![2],
            lhs_batch: vec![1],
            rhs_batch: vec![1],
        });
        let m = model(&f).unwrap();
        // 2*4*4096*2048*1536.
        assert_eq!(m.flops, 2.0 * 4.0 * 4096.0 * 2048.0 * 1536.0);
        assert_eq!(m.work.bytes_read, (2048 * 4 * 1536 * 2) as f64);
        assert_eq!(m.work.bytes_written, (4 * 4096 * 2048 * 4) as f64);
        assert!(m.work.assumptions.iter().any(|a| a.contains("on chip")));
    }

    #[test]
    fn blas_custom_call_skips_the_workspace() {
        // custom-call.1: bf16[4096,6144] x bf16[2048,6144]^T (contracting {1},{1}).
        let i = HloInstr {
            name: "custom-call.1".into(),
            opcode: "custom-call".into(),
            custom_call_target: Some("__cublas$gemm".into()),
            shape: HloShape {
                dtype: "tuple".into(),
                tuple: vec![s("bf16", &[4096, 2048]), s("s8", &[67_108_864])],
                ..HloShape::default()
            },
            operands: vec![s("bf16", &[4096, 6144]), s("bf16", &[2048, 6144])],
            dot: Some(DotDims {
                lhs_contracting: vec![1],
                rhs_contracting: vec![1],
                ..DotDims::default()
            }),
            ..HloInstr::default()
        };
        let m = model(&i).unwrap();
        assert_eq!(m.flops, 2.0 * 4096.0 * 2048.0 * 6144.0);
        assert_eq!(m.work.bytes_written, (4096 * 2048 * 2) as f64);
        assert_eq!(m.work.bytes_read, ((4096 + 2048) * 6144 * 2) as f64);
    }

    fn te_attn(target: &str, mask: &str) -> HloInstr {
        let attrs = [
            ("attn_heads", "16"),
            ("input_batch", "2"),
            ("num_gqa_groups", "16"),
            ("q_max_seqlen", "2048"),
            ("kv_max_seqlen", "2048"),
            ("qk_head_dim", "128"),
            ("v_head_dim", "128"),
            ("mask_type", mask),
            ("dropout_probability", "1.000000e-01"),
            ("qkv_layout", "5"),
            ("window_size_left", "-1"),
            ("window_size_right", "-1"),
        ];
        HloInstr {
            name: "te".into(),
            opcode: "custom-call".into(),
            custom_call_target: Some(target.into()),
            operands: vec![s("bf16", &[2, 2048, 3, 16, 128])],
            attrs: attrs.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect(),
            ..HloInstr::default()
        }
    }

    #[test]
    fn transformer_engine_attention_from_ffi_attributes() {
        let f = model(&te_attn("te_fused_attn_forward_ffi", "2")).unwrap();
        assert_eq!(f.table, Table::SdpaFwd);
        // Causal top-left, Sq = Skv = 2048: 2048*2049/2 = 2_098_176 pairs;
        // 2*B*H*pairs*(D + Dv) = 2*2*16*2_098_176*256.
        assert_eq!(f.flops, 2.0 * 2.0 * 16.0 * 2_098_176.0 * 256.0);
        assert_eq!(f.params.get("layout"), Some(&ParamValue::Str("bs3hd".into())));
        let b = model(&te_attn("te_fused_attn_backward_ffi", "2")).unwrap();
        assert_eq!(b.table, Table::SdpaBwd);
        // Five matmuls: 2*B*H*pairs*(3*D + 2*Dv) = 2.5x forward.
        assert_eq!(b.flops, 2.0 * 2.0 * 16.0 * 2_098_176.0 * 640.0);
        let none = model(&te_attn("te_fused_attn_forward_ffi", "0")).unwrap();
        assert_eq!(none.flops, 4.0 * 2.0 * 16.0 * 2048.0 * 2048.0 * 128.0);
        assert!(model(&te_attn("te_fused_attn_forward_ffi", "6")).is_err());
        let mut missing = te_attn("te_fused_attn_forward_ffi", "2");
        missing.attrs.retain(|(k, _)| k != "attn_heads");
        assert!(matches!(model(&missing), Err(OpModelError::BadArgs { .. })));
    }

    #[test]
    fn convolution_any_rank() {
        // NHWC conv: x f32[8,32,32,64], w HWIO f32[3,3,64,128], y f32[8,32,32,128].
        let i = HloInstr {
            name: "conv".into(),
            opcode: "convolution".into(),
            shape: s("bf16", &[8, 32, 32, 128]),
            operands: vec![s("bf16", &[8, 32, 32, 64]), s("bf16", &[3, 3, 64, 128])],
            conv: Some(ConvDims {
                input_batch: 0,
                input_feature: 3,
                input_spatial: vec![1, 2],
                kernel_input_feature: 2,
                kernel_output_feature: 3,
                kernel_spatial: vec![0, 1],
                output_batch: 0,
                output_feature: 3,
                output_spatial: vec![1, 2],
                window: vec![
                    WindowDim {
                        size: 3,
                        stride: 1,
                        padding_low: 1,
                        padding_high: 1,
                        window_dilation: 1,
                        base_dilation: 1
                    };
                    2
                ],
                feature_group_count: 1,
                batch_group_count: 1,
            }),
            ..HloInstr::default()
        };
        let m = model(&i).unwrap();
        assert_eq!(m.table, Table::ConvFwd);
        // 2 * (8*32*32*128) * 64 * 9.
        assert_eq!(m.flops, 2.0 * 8.0 * 32.0 * 32.0 * 128.0 * 64.0 * 9.0);
        assert_eq!(m.work.bytes_read, ((8 * 32 * 32 * 64 + 9 * 64 * 128) * 2) as f64);
    }

    #[test]
    fn bad_shapes_are_errors_not_panics() {
        let mut g = gemm_fusion();
        g.inner.as_mut().unwrap().dot.as_mut().unwrap().lhs_contracting = vec![7];
        assert!(matches!(model(&g), Err(OpModelError::BadArgs { .. })));
        let mut g = gemm_fusion();
        g.inner.as_mut().unwrap().operands[1] = s("bf16", &[2, 999, 6144]);
        assert!(model(&g).is_err());
        let plain = HloInstr { name: "x".into(), opcode: "add".into(), ..HloInstr::default() };
        assert!(matches!(model(&plain), Err(OpModelError::Unmodelled(_))));
        let big = HloInstr {
            name: "big".into(),
            opcode: "dot".into(),
            operands: vec![s("f32", &[i64::MAX, i64::MAX]), s("f32", &[i64::MAX, i64::MAX])],
            dot: Some(DotDims {
                lhs_contracting: vec![1],
                rhs_contracting: vec![0],
                ..DotDims::default()
            }),
            ..HloInstr::default()
        };
        assert!(model(&big).is_err());
    }

    #[test]
    fn memory_model_for_fusions() {
        // loop_reduce_fusion.1: reads f32[2,4096,6144], writes bf16[2,2048,3,16,128].
        let i = HloInstr {
            name: "loop_reduce_fusion.1".into(),
            opcode: "fusion".into(),
            shape: s("bf16", &[2, 2048, 3, 16, 128]),
            operands: vec![s("f32", &[2, 4096, 6144])],
            ..HloInstr::default()
        };
        let w = memory_work(&i).unwrap();
        assert_eq!(w.class, OpClass::Reduction);
        assert_eq!(w.bytes_read, (2 * 4096 * 6144 * 4) as f64);
        assert_eq!(w.bytes_written, (2 * 2048 * 3 * 16 * 128 * 2) as f64);
        assert_eq!(w.flops, 0.0);
    }
}
