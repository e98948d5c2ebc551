//! `rooftop.analyze(op, device=..., **shape)`: what `rooftop analyze OP --flag ...` does
//! (`crates/rooftop-cli/src/commands/analyze.rs`): the keyword arguments become an op
//! spec of `rooftop_core::ops` (its `work()`), a `KernelRequest`, and
//! `rooftop_core::analysis::analyze`.
//!
//! The keywords are the CLI's flags with `-` as `_` (`--time-us` is `time_us`), with the
//! same defaults; Python hands them over as one JSON object, which serde checks
//! (an unknown keyword or a wrong type is one sentence naming it).

use crate::tools::AnalysisContent;
use crate::{find_device, load_catalog, Content, Error, Report, Result};
use pyo3::prelude::*;
use rooftop_core::analysis::{analyze as analyze_request, GemmShape, GemmView, KernelRequest};
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
use rooftop_core::ops::Work;
use rooftop_core::units::{ns_from_us, Precision};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// The ops `rooftop analyze` takes, as its subcommands name them.
pub(crate) const OPS: &[&str] = &[
    "gemm",
    "attention",
    "rmsnorm",
    "layernorm",
    "softmax",
    "elementwise",
    "reduction",
    "copy",
    "conv2d",
];

/// The options every op shares (the CLI's `Common` but `--device`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Common {
    time_us: Option<f64>,
    kernel: Option<String>,
    block: Option<u32>,
    regs: Option<u32>,
    agprs: Option<u32>,
    sgprs: Option<u32>,
    smem: Option<u64>,
    wave_size: Option<u32>,
}

const COMMON_KEYS: &[&str] =
    &["time_us", "kernel", "block", "regs", "agprs", "sgprs", "smem", "wave_size"];

fn one() -> u64 {
    1
}
fn one_u32() -> u32 {
    1
}
fn bf16() -> String {
    "bf16".to_string()
}
fn fp32() -> String {
    "fp32".to_string()
}
fn one_f64() -> f64 {
    1.0
}
fn one_u8() -> u8 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Gemm {
    m: u64,
    n: u64,
    k: u64,
    #[serde(default = "one")]
    batch: u64,
    #[serde(default = "bf16")]
    dtype: String,
    out_dtype: Option<String>,
    #[serde(default)]
    bias: bool,
    wbits: Option<u32>,
    group: Option<u64>,
    scale_dtype: Option<String>,
    #[serde(default)]
    zero_point: bool,
    wformat: Option<String>,
    #[serde(default)]
    view: View,
    #[serde(default)]
    vector_units: bool,
    #[serde(default)]
    matrix_units: bool,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum View {
    #[default]
    Blas,
    Torch,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Attention {
    #[serde(default = "one")]
    batch: u64,
    heads: u64,
    kv_heads: Option<u64>,
    seq_q: u64,
    seq_kv: Option<u64>,
    head_dim: u64,
    head_dim_v: Option<u64>,
    #[serde(default)]
    causal: Causal,
    #[serde(default)]
    backward: bool,
    #[serde(default = "bf16")]
    dtype: String,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Causal {
    #[default]
    None,
    #[serde(alias = "top_left")]
    TopLeft,
    #[serde(alias = "bottom_right")]
    BottomRight,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rows {
    #[allow(clippy::struct_field_names)]
    rows: u64,
    cols: u64,
    #[serde(default = "bf16")]
    dtype: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Softmax {
    rows: u64,
    cols: u64,
    #[serde(default = "bf16")]
    dtype: String,
    #[serde(default = "one_u8")]
    passes: u8,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Elementwise {
    elements: u64,
    #[serde(default = "one_u32")]
    inputs: u32,
    #[serde(default = "one_u32")]
    outputs: u32,
    #[serde(default = "one_f64")]
    flops_per_element: f64,
    #[serde(default = "bf16")]
    dtype: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Copy {
    elements: u64,
    #[serde(default = "fp32")]
    dtype: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Conv {
    n: u64,
    c: u64,
    h: u64,
    w: u64,
    k: u64,
    r: u64,
    s: u64,
    #[serde(default = "one")]
    stride: u64,
    #[serde(default)]
    pad: u64,
    #[serde(default = "one")]
    dilation: u64,
    #[serde(default = "one")]
    groups: u64,
    #[serde(default)]
    bias: bool,
    #[serde(default = "bf16")]
    dtype: String,
}

/// Analyses one operation on one device: `rooftop analyze OP`.
#[pyfunction]
#[pyo3(signature = (op, device, params_json, device_files=Vec::new()))]
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn analyze(
    py: Python<'_>,
    op: String,
    device: String,
    params_json: String,
    device_files: Vec<PathBuf>,
) -> PyResult<Report> {
    Ok(py.detach(|| run(&op, &device, &params_json, &device_files))?)
}

fn run(op: &str, device: &str, params_json: &str, device_files: &[PathBuf]) -> Result<Report> {
    let mut params: Map<String, Value> = serde_json::from_str(params_json)
        .map_err(|e| Error::input(format!("analyze {op}: the keyword arguments: {e}")))?;
    // `None` is the keyword not given, as a missing flag.
    params.retain(|_, v| !v.is_null());
    let common_map: Map<String, Value> =
        COMMON_KEYS.iter().filter_map(|k| params.remove_entry(*k)).collect();
    let common: Common = from(op, common_map)?;
    let (work, gemm, fusion) = work(op, params)?;
    let catalog = load_catalog(device_files)?;
    let spec = find_device(&catalog, device)?;
    let mut req = KernelRequest::new(work);
    req.time_ns = common
        .time_us
        .map(ns_from_us)
        .transpose()
        .map_err(|e| Error::input(format!("time_us {e}")))?;
    req.kernel_name.clone_from(&common.kernel);
    req.gemm = gemm;
    req.resources = resources(&common)?;
    req.dequant_fusion = fusion;
    let analysis = analyze_request(&spec, &req).map_err(|e| Error::input(e.to_string()))?;
    Ok(Report::new(
        Content::Analysis(Box::new(AnalysisContent { analysis, device: spec })),
        Vec::new(),
    ))
}

/// Deserializes one op's keywords, naming the op in the error.
fn from<T: DeserializeOwned>(op: &str, map: Map<String, Value>) -> Result<T> {
    serde_json::from_value(Value::Object(map))
        .map_err(|e| Error::input(format!("analyze {op}: {e}")))
}

type Parts = (Work, Option<GemmShape>, Option<DequantFusion>);

fn work(op: &str, p: Map<String, Value>) -> Result<Parts> {
    let plain = |w: Work| (w, None, None);
    Ok(match op {
        "gemm" => gemm_work(&from(op, p)?)?,
        "attention" => plain(attention_work(&from(op, p)?)?),
        "rmsnorm" => {
            let r: Rows = from(op, p)?;
            let dtype = precision("dtype", &r.dtype)?;
            plain(ok(RmsNormSpec { rows: r.rows, cols: r.cols, dtype, weight_dtype: None }.work())?)
        }
        "layernorm" => {
            let r: Rows = from(op, p)?;
            let dtype = precision("dtype", &r.dtype)?;
            plain(ok(LayerNormSpec { rows: r.rows, cols: r.cols, dtype, affine: true }.work())?)
        }
        "softmax" => {
            let s: Softmax = from(op, p)?;
            let passes = SoftmaxPasses::try_from(s.passes)
                .map_err(|e| Error::input(format!("passes {e}")))?;
            let dtype = precision("dtype", &s.dtype)?;
            plain(ok(SoftmaxSpec { rows: s.rows, cols: s.cols, dtype, passes }.work())?)
        }
        "elementwise" => {
            let e: Elementwise = from(op, p)?;
            plain(ok(ElementwiseSpec {
                elements: e.elements,
                inputs: e.inputs,
                outputs: e.outputs,
                dtype: precision("dtype", &e.dtype)?,
                flops_per_element: e.flops_per_element,
                broadcast_elements: None,
            }
            .work())?)
        }
        "reduction" => {
            let r: Rows = from(op, p)?;
            let dtype = precision("dtype", &r.dtype)?;
            plain(ok(ReductionSpec { rows: r.rows, cols: r.cols, dtype, out_dtype: None }.work())?)
        }
        "copy" => {
            let c: Copy = from(op, p)?;
            plain(ok(
                CopySpec { elements: c.elements, dtype: precision("dtype", &c.dtype)? }.work()
            )?)
        }
        "conv2d" => plain(conv_work(&from(op, p)?)?),
        other => {
            return Err(Error::input(format!(
                "unknown op `{other}`: expected one of {}",
                OPS.join(", ")
            )))
        }
    })
}

fn precision(name: &str, value: &str) -> Result<Precision> {
    value.parse::<Precision>().map_err(|e| Error::input(format!("{name}: {e}")))
}

fn ok(r: std::result::Result<Work, rooftop_core::ops::OpError>) -> Result<Work> {
    r.map_err(|e| Error::input(e.to_string()))
}

fn resources(c: &Common) -> Result<Option<KernelResources>> {
    let Some(block) = c.block else {
        let needs_block = [
            ("regs", c.regs.is_some()),
            ("agprs", c.agprs.is_some()),
            ("sgprs", c.sgprs.is_some()),
            ("smem", c.smem.is_some()),
            ("wave_size", c.wave_size.is_some()),
        ];
        if let Some((name, _)) = needs_block.iter().find(|(_, given)| *given) {
            return Err(Error::input(format!("{name} needs block (threads per block)")));
        }
        return Ok(None);
    };
    if block == 0 {
        return Err(Error::input("block must be at least 1 thread"));
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

fn gemm_work(g: &Gemm) -> Result<Parts> {
    if g.wbits.is_none() {
        let given = [
            ("group", g.group.is_some()),
            ("scale_dtype", g.scale_dtype.is_some()),
            ("zero_point", g.zero_point),
        ];
        if let Some((name, _)) = given.iter().find(|(_, on)| *on) {
            return Err(Error::input(format!("{name} needs wbits (quantized weights)")));
        }
    }
    let weights = match (&g.wbits, &g.wformat) {
        (Some(_), Some(_)) => {
            return Err(Error::input("wbits and wformat exclude each other: give one"))
        }
        (Some(bits), None) => Some(WeightFormat::affine(
            *bits,
            g.group,
            g.scale_dtype.as_deref().map(|d| precision("scale_dtype", d)).transpose()?,
            g.zero_point,
        )),
        (None, Some(f)) => Some(f.parse().map_err(|e| Error::input(format!("wformat {e}")))?),
        (None, None) => None,
    };
    let request = GemmRequest {
        m: g.m,
        n: g.n,
        k: g.k,
        batch: g.batch,
        dtype: precision("dtype", &g.dtype)?,
        out_dtype: g.out_dtype.as_deref().map(|d| precision("out_dtype", d)).transpose()?,
        bias: g.bias,
        vector_units: g.vector_units,
        matrix_units: g.matrix_units,
        weights,
        view: match g.view {
            View::Blas => GemmView::Blas,
            View::Torch => GemmView::Torch,
        },
    };
    let p = request.parts().map_err(|e| Error::input(format!("gemm: {e}")))?;
    Ok((p.work, Some(p.shape), p.fusion))
}

fn attention_work(a: &Attention) -> Result<Work> {
    ok(AttentionSpec {
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
        dtype: precision("dtype", &a.dtype)?,
        pass: if a.backward { Pass::Backward } else { Pass::Forward },
    }
    .work())
}

fn conv_work(c: &Conv) -> Result<Work> {
    ok(Conv2dSpec {
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
        dtype: precision("dtype", &c.dtype)?,
        bias: c.bias,
    }
    .work())
}
