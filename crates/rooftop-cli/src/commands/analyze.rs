//! `rooftop analyze OP ...`: one operation on one device through the core pipeline:
//! the flags become an op spec of `rooftop_core::ops` (its `work()`), a
//! `KernelRequest`, and `rooftop_core::analysis::analyze` (whose docs show the same in
//! Rust).

use crate::args::{
    AnalyzeArgs, AttentionArgs, Causal, Common, ConvArgs, CopyArgs, ElementwiseArgs, GemmArgs,
    OpCommand, RowsArgs, SoftmaxArgs, View,
};
use crate::error::{CliError, Result};
use rooftop_core::analysis::{analyze, GemmShape, GemmView, KernelRequest};
use rooftop_core::occupancy::KernelResources;
use rooftop_core::ops::attention::{AttentionSpec, CausalMode, Pass};
use rooftop_core::ops::conv::Conv2dSpec;
use rooftop_core::ops::copy::CopySpec;
use rooftop_core::ops::elementwise::ElementwiseSpec;
use rooftop_core::ops::norm::{LayerNormSpec, RmsNormSpec};
use rooftop_core::ops::quant::{DequantFusion, WeightFormat};
use rooftop_core::ops::reduction::ReductionSpec;
use rooftop_core::ops::request::GemmRequest;
use rooftop_core::ops::softmax::{SoftmaxPasses, SoftmaxSpec};
use rooftop_core::ops::{OpError, Work};
use rooftop_core::units::{ns_from_us, Precision};
use rooftop_report::Format;

pub fn run(catalog: super::CatalogRef<'_>, args: &AnalyzeArgs, fmt: Format) -> Result<String> {
    let mut fusion = None;
    let (work, common, gemm) = match &args.op {
        OpCommand::Gemm(g) => {
            let (work, common, shape, f) = gemm_work(g)?;
            fusion = f;
            (work, common, shape)
        }
        OpCommand::Attention(a) => (attention_work(a)?, &a.common, None),
        OpCommand::Rmsnorm(r) => (rmsnorm_work(r)?, &r.common, None),
        OpCommand::Layernorm(r) => (layernorm_work(r)?, &r.common, None),
        OpCommand::Softmax(s) => (softmax_work(s)?, &s.common, None),
        OpCommand::Elementwise(e) => (elementwise_work(e)?, &e.common, None),
        OpCommand::Reduction(r) => (reduction_work(r)?, &r.common, None),
        OpCommand::Copy(c) => (copy_work(c)?, &c.common, None),
        OpCommand::Conv2d(c) => (conv_work(c)?, &c.common, None),
    };
    let device = catalog.find(&common.device)?;
    let mut req = KernelRequest::new(work);
    req.time_ns = common
        .time_us
        .map(ns_from_us)
        .transpose()
        .map_err(|e| CliError::input(format!("--time-us {e}")))?;
    req.kernel_name.clone_from(&common.kernel);
    req.gemm = gemm;
    req.resources = resources(common)?;
    req.dequant_fusion = fusion;
    let analysis = analyze(device, &req).map_err(|e| CliError::input(e.to_string()))?;
    match fmt {
        // The HTML report draws every roof of the device, so it takes the spec.
        Format::Html => {
            Ok(rooftop_report::html::analyses(std::slice::from_ref(&analysis), Some(device)))
        }
        Format::Perfetto => Err(crate::output::no_perfetto("analyze")),
        _ => Ok(rooftop_report::analyses(fmt, std::slice::from_ref(&analysis))?),
    }
}

fn precision(flag: &str, value: &str) -> Result<Precision> {
    value.parse::<Precision>().map_err(|e| CliError::input(format!("{flag}: {e}")))
}

fn op(r: std::result::Result<Work, OpError>) -> Result<Work> {
    r.map_err(|e| CliError::input(e.to_string()))
}

fn resources(c: &Common) -> Result<Option<KernelResources>> {
    let Some(block) = c.block else { return Ok(None) };
    if block == 0 {
        return Err(CliError::input("--block must be at least 1 thread"));
    }
    Ok(Some(KernelResources {
        threads_per_block: block,
        regs_per_thread: c.regs,
        agprs: c.agprs,
        sgprs: c.sgprs,
        smem_bytes: c.smem.unwrap_or(0),
        wave_size: c.wave_size,
    }))
}

/// A GEMM's work, its shape for the tile math and, for quantized weights, the fused vs
/// unfused dequantization traffic.
type GemmParts<'a> = (Work, &'a Common, Option<GemmShape>, Option<DequantFusion>);

fn gemm_work(g: &GemmArgs) -> Result<GemmParts<'_>> {
    let weights = match (&g.wbits, &g.wformat) {
        (Some(bits), None) => Some(WeightFormat::affine(
            *bits,
            g.group,
            g.scale_dtype.as_deref().map(|d| precision("--scale-dtype", d)).transpose()?,
            g.zero_point,
        )),
        (None, Some(f)) => Some(f.parse().map_err(|e| CliError::input(format!("--wformat {e}")))?),
        _ => None,
    };
    let request = GemmRequest {
        m: g.m,
        n: g.n,
        k: g.k,
        batch: g.batch,
        dtype: precision("--dtype", &g.dtype)?,
        out_dtype: g.out_dtype.as_deref().map(|d| precision("--out-dtype", d)).transpose()?,
        bias: g.bias,
        vector_units: g.vector_units,
        matrix_units: g.matrix_units,
        weights,
        view: match g.view {
            View::Blas => GemmView::Blas,
            View::Torch => GemmView::Torch,
        },
    };
    let p = request.parts().map_err(|e| CliError::input(format!("gemm: {e}")))?;
    Ok((p.work, &g.common, Some(p.shape), p.fusion))
}

fn attention_work(a: &AttentionArgs) -> Result<Work> {
    op(AttentionSpec {
        batch: a.batch,
        heads_q: a.heads,
        heads_kv: a.kv_heads.unwrap_or(a.heads),
        seq_q: a.seq_q,
        seq_kv: a.seq_kv.unwrap_or(a.seq_q),
        head_dim: a.head_dim,
        head_dim_v: a.head_dim_v,
        causal: match a.causal {
            Causal::None => CausalMode::None,
            Causal::TopLeft => CausalMode::TopLeft,
            Causal::BottomRight => CausalMode::BottomRight,
        },
        dtype: precision("--dtype", &a.dtype)?,
        pass: if a.backward { Pass::Backward } else { Pass::Forward },
    }
    .work())
}

fn rmsnorm_work(r: &RowsArgs) -> Result<Work> {
    op(RmsNormSpec {
        rows: r.rows,
        cols: r.cols,
        dtype: precision("--dtype", &r.dtype)?,
        weight_dtype: None,
    }
    .work())
}

fn layernorm_work(r: &RowsArgs) -> Result<Work> {
    op(LayerNormSpec {
        rows: r.rows,
        cols: r.cols,
        dtype: precision("--dtype", &r.dtype)?,
        affine: true,
    }
    .work())
}

fn softmax_work(s: &SoftmaxArgs) -> Result<Work> {
    let passes =
        SoftmaxPasses::try_from(s.passes).map_err(|e| CliError::input(format!("--passes {e}")))?;
    op(SoftmaxSpec { rows: s.rows, cols: s.cols, dtype: precision("--dtype", &s.dtype)?, passes }
        .work())
}

fn elementwise_work(e: &ElementwiseArgs) -> Result<Work> {
    op(ElementwiseSpec {
        elements: e.elements,
        inputs: e.inputs,
        outputs: e.outputs,
        dtype: precision("--dtype", &e.dtype)?,
        flops_per_element: e.flops_per_element,
        broadcast_elements: None,
    }
    .work())
}

fn reduction_work(r: &RowsArgs) -> Result<Work> {
    let dtype = precision("--dtype", &r.dtype)?;
    op(ReductionSpec { rows: r.rows, cols: r.cols, dtype, out_dtype: None }.work())
}

fn copy_work(c: &CopyArgs) -> Result<Work> {
    op(CopySpec { elements: c.elements, dtype: precision("--dtype", &c.dtype)? }.work())
}

fn conv_work(c: &ConvArgs) -> Result<Work> {
    op(Conv2dSpec {
        n: c.n,
        c: c.c,
        h: c.h,
        w: c.w,
        k: c.k,
        r: c.r,
        s: c.s,
        stride: (c.stride, c.stride),
        pad: (c.pad, c.pad),
        dilation: (c.dilation, c.dilation),
        groups: c.groups,
        dtype: precision("--dtype", &c.dtype)?,
        bias: c.bias,
    }
    .work())
}
