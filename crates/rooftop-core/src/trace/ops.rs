//! Op classification and the per-op work models of the trace tables.
//!
//! - [`Category`]: our coarse category of an op or kernel (GEMM, CONV, SDPA, ...), with
//!   stable names; [`categorize_op`], [`categorize_kernel`]. [`tracelens_category`] gives
//!   TraceLens's own label (`GEMM`, `CONV_fwd`, `NORM_fwd`, `elementwise`, `other`, ...) for
//!   the ops-summary tables that are checked against its CSVs.
//! - [`model_op`]: from a CPU op's name and recorded arguments (`Input Dims`, `Input type`,
//!   `Input Strides`, `Concrete Inputs`) to the parameters TraceLens prints, the FLOPs and
//!   bytes of one call, and a [`Work`] for the roofline.
//!
//! The formulas are those of TraceLens `PerfModel/perf_model.py` (AMD-AGI/TraceLens), so
//! that our tables agree with its `GEMM.csv`, `SDPA_fwd.csv`, `CONV_fwd.csv`,
//! `Normalization.csv` and `BinaryElementwise.csv`; where we believe TraceLens is wrong
//! we keep our number and say why in `docs/differences-from-tracelens.md` (causal
//! attention counts exact pairs, SDPA bytes use the real element size, a convolution's
//! bias is counted when present, `is_training`/`is_affine` are read from the arguments,
//! reductions read their `dim`, backward passes honour `output_mask`). Where a
//! `rooftop_core::ops` model gives the same numbers (dense GEMM, attention, conv2d,
//! element-wise) its [`Work`] is used as is, so the formulas and assumptions the roofline
//! prints are the shared ones; attention backward is that model outright.
//!
//! Modelled ops, by table: GEMM (`mm`, `addmm`, `bmm`, `baddbmm`, `_scaled_mm`), SDPA_fwd
//! (`_scaled_dot_product_{flash,efficient,cudnn}_attention`, `flash_attn`), SDPA_bwd (the
//! three `aten` backwards), CONV_fwd/bwd (`convolution`, `convolution_backward`),
//! Normalization (layer, batch, group, instance and fused RMS norm; layer and batch norm
//! backward), BinaryElementwise, UnaryElementwise, Reduce (`sum`, `mean`, `max`, `min`,
//! `amax`, `amin`).
//!
//! Counting is exact `u128` with checked arithmetic; a bad or missing argument is a
//! [`ModelError`], never a panic. Ops without a model are [`ModelError::Unmodelled`]:
//! their rows carry times but no invented numbers.

use super::model::{CpuOp, Dims, OpArgs, TraceModel};
use crate::analysis::{GemmShape, GemmView};
use crate::ops::attention::{AttentionSpec, CausalMode, Pass};
use crate::ops::conv::Conv2dSpec;
use crate::ops::elementwise::ElementwiseSpec;
use crate::ops::gemm::GemmSpec;
use crate::ops::{OpClass, Work};
use crate::units::{ExecUnit, Precision};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use std::fmt::Write as _;

// ---------------------------------------------------------------------------------------
// Categories
// ---------------------------------------------------------------------------------------

/// Our category of an op or a kernel. Serialized with [`Category::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    Gemm,
    Conv,
    Sdpa,
    Normalization,
    Elementwise,
    Reduce,
    Softmax,
    Comm,
    Memcpy,
    /// Mixture-of-experts layers (grouped GEMMs with routing).
    Moe,
    /// Activation quantisation (FP8/FP4).
    Quant,
    Other,
}

impl Category {
    /// Every category, in display order.
    pub const ALL: [Category; 12] = [
        Category::Gemm,
        Category::Moe,
        Category::Conv,
        Category::Sdpa,
        Category::Normalization,
        Category::Elementwise,
        Category::Reduce,
        Category::Softmax,
        Category::Comm,
        Category::Memcpy,
        Category::Quant,
        Category::Other,
    ];

    /// The stable name (`GEMM`, `CONV`, `SDPA`, `Normalization`, `Elementwise`, `Reduce`,
    /// `Softmax`, `Comm`, `Memcpy`, `Other`).
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Gemm => "GEMM",
            Category::Conv => "CONV",
            Category::Sdpa => "SDPA",
            Category::Normalization => "Normalization",
            Category::Elementwise => "Elementwise",
            Category::Reduce => "Reduce",
            Category::Softmax => "Softmax",
            Category::Comm => "Comm",
            Category::Memcpy => "Memcpy",
            Category::Moe => "MoE",
            Category::Quant => "Quant",
            Category::Other => "Other",
        }
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Category {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The table (TraceLens report sheet) a modelled op's rows go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    Gemm,
    SdpaFwd,
    SdpaBwd,
    ConvFwd,
    ConvBwd,
    Normalization,
    BinaryElementwise,
    UnaryElementwise,
    Reduce,
    /// MoE layers ([`super::inference::moe`]).
    Moe,
    /// Paged attention of inference engines ([`super::inference::attention`]).
    InferenceAttention,
    /// Activation quantisation ([`super::inference::quant`]).
    Quant,
}

impl Table {
    /// Every table, in report order.
    pub const ALL: [Table; 12] = [
        Table::Gemm,
        Table::Moe,
        Table::SdpaFwd,
        Table::SdpaBwd,
        Table::ConvFwd,
        Table::ConvBwd,
        Table::Normalization,
        Table::BinaryElementwise,
        Table::UnaryElementwise,
        Table::Reduce,
        Table::InferenceAttention,
        Table::Quant,
    ];

    /// The name TraceLens gives the sheet / CSV (`GEMM`, `SDPA_fwd`, `CONV_fwd`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Gemm => "GEMM",
            Table::SdpaFwd => "SDPA_fwd",
            Table::SdpaBwd => "SDPA_bwd",
            Table::ConvFwd => "CONV_fwd",
            Table::ConvBwd => "CONV_bwd",
            Table::Normalization => "Normalization",
            Table::BinaryElementwise => "BinaryElementwise",
            Table::UnaryElementwise => "UnaryElementwise",
            Table::Reduce => "Reduce",
            Table::Moe => "MoE",
            Table::InferenceAttention => "InferenceAttention",
            Table::Quant => "Quant",
        }
    }

    /// The category of the table's ops.
    pub fn category(self) -> Category {
        match self {
            Table::Gemm => Category::Gemm,
            Table::SdpaFwd | Table::SdpaBwd | Table::InferenceAttention => Category::Sdpa,
            Table::ConvFwd | Table::ConvBwd => Category::Conv,
            Table::Normalization => Category::Normalization,
            Table::BinaryElementwise | Table::UnaryElementwise => Category::Elementwise,
            Table::Reduce => Category::Reduce,
            Table::Moe => Category::Moe,
            Table::Quant => Category::Quant,
        }
    }
}

/// Which model an op name selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Mm,
    Addmm,
    Bmm,
    Baddbmm,
    ScaledMm,
    /// q, k, v in (B, H, N, d); dropout and causal at these `Concrete Inputs` indices.
    SdpaBhnd {
        dropout: usize,
        causal: usize,
        flash: bool,
    },
    /// Backward of the `aten::` SDPA ops: q, k, v at 1..=3 in (B, H, N, d).
    SdpaBwd {
        dropout: usize,
        causal: usize,
        flash: bool,
    },
    /// `flash_attn` layout (B, N, H, d); dropout and causal indices.
    FlashAttn {
        dropout: usize,
        causal: usize,
    },
    Conv,
    ConvBwd,
    LayerNorm,
    BatchNorm,
    GroupNorm,
    NativeGroupNorm,
    InstanceNorm,
    RmsNorm,
    LayerNormBwd,
    BatchNormBwd,
    CudnnBatchNormBwd,
    Binary,
    Unary,
    Reduce,
    /// An inference op modelled in [`super::inference`], in this table.
    Inference(Table),
}

fn kind_of(name: &str) -> Option<Kind> {
    let k = match name {
        "aten::mm" => Kind::Mm,
        "aten::addmm" => Kind::Addmm,
        "aten::bmm" => Kind::Bmm,
        "aten::baddbmm" => Kind::Baddbmm,
        "aten::_scaled_mm" => Kind::ScaledMm,
        "aten::_scaled_dot_product_flash_attention" => {
            Kind::SdpaBhnd { dropout: 3, causal: 4, flash: true }
        }
        "aten::_scaled_dot_product_efficient_attention"
        | "aten::_scaled_dot_product_cudnn_attention" => {
            Kind::SdpaBhnd { dropout: 5, causal: 6, flash: false }
        }
        "aten::_scaled_dot_product_flash_attention_backward" => {
            Kind::SdpaBwd { dropout: 10, causal: 11, flash: true }
        }
        "aten::_scaled_dot_product_efficient_attention_backward" => {
            Kind::SdpaBwd { dropout: 9, causal: 11, flash: false }
        }
        "aten::_scaled_dot_product_cudnn_attention_backward" => {
            Kind::SdpaBwd { dropout: 13, causal: 14, flash: false }
        }
        "flash_attn::_flash_attn_forward" | "FlashAttnFunc" => {
            Kind::FlashAttn { dropout: 3, causal: 5 }
        }
        "aten::convolution" => Kind::Conv,
        "aten::convolution_backward" => Kind::ConvBwd,
        "aten::layer_norm"
        | "aten::native_layer_norm"
        | "aten::miopen_layer_norm"
        | "aten::cudnn_layer_norm" => Kind::LayerNorm,
        "aten::batch_norm"
        | "aten::native_batch_norm"
        | "aten::miopen_batch_norm"
        | "aten::cudnn_batch_norm" => Kind::BatchNorm,
        "aten::group_norm" | "aten::miopen_group_norm" | "aten::cudnn_group_norm" => {
            Kind::GroupNorm
        }
        "aten::native_group_norm" => Kind::NativeGroupNorm,
        "aten::instance_norm"
        | "aten::native_instance_norm"
        | "aten::miopen_instance_norm"
        | "aten::cudnn_instance_norm" => Kind::InstanceNorm,
        "aten::_fused_rms_norm" => Kind::RmsNorm,
        "aten::native_layer_norm_backward" | "aten::layer_norm_backward" => Kind::LayerNormBwd,
        "aten::native_batch_norm_backward" | "aten::batch_norm_backward" => Kind::BatchNormBwd,
        "aten::cudnn_batch_norm_backward" | "aten::miopen_batch_norm_backward" => {
            Kind::CudnnBatchNormBwd
        }
        "aten::div"
        | "aten::div_"
        | "aten::mul"
        | "aten::mul_"
        | "aten::add"
        | "aten::add_"
        | "aten::sigmoid_backward"
        | "aten::threshold_backward" => Kind::Binary,
        "aten::copy" | "aten::copy_" | "aten::clamp_min" | "aten::clamp_min_"
        | "aten::clamp_max" | "aten::clamp_max_" | "aten::sigmoid" | "aten::rsqrt"
        | "aten::silu" | "aten::neg" | "aten::pow" | "aten::silu_" | "aten::sigmoid_"
        | "aten::relu" | "aten::relu_" | "aten::gelu" | "aten::tanh" | "aten::tanh_"
        | "aten::exp" | "aten::log" | "aten::sqrt" | "aten::abs" | "aten::erf"
        | "aten::reciprocal" | "aten::clamp" | "aten::clamp_" | "aten::sin" | "aten::cos" => {
            Kind::Unary
        }
        "aten::sum" | "aten::mean" | "aten::max" | "aten::min" | "aten::amax" | "aten::amin" => {
            Kind::Reduce
        }
        n => Kind::Inference(super::inference::table_of(n)?),
    };
    Some(k)
}

impl Kind {
    fn table(self) -> Table {
        match self {
            Kind::Mm | Kind::Addmm | Kind::Bmm | Kind::Baddbmm | Kind::ScaledMm => Table::Gemm,
            Kind::SdpaBhnd { .. } | Kind::FlashAttn { .. } => Table::SdpaFwd,
            Kind::SdpaBwd { .. } => Table::SdpaBwd,
            Kind::Conv => Table::ConvFwd,
            Kind::ConvBwd => Table::ConvBwd,
            Kind::LayerNorm
            | Kind::BatchNorm
            | Kind::GroupNorm
            | Kind::NativeGroupNorm
            | Kind::InstanceNorm
            | Kind::RmsNorm
            | Kind::LayerNormBwd
            | Kind::BatchNormBwd
            | Kind::CudnnBatchNormBwd => Table::Normalization,
            Kind::Binary => Table::BinaryElementwise,
            Kind::Unary => Table::UnaryElementwise,
            Kind::Reduce => Table::Reduce,
            Kind::Inference(t) => t,
        }
    }
}

/// The table a modelled op name goes to; `None` when we have no model for it.
pub fn op_table(name: &str) -> Option<Table> {
    kind_of(name).map(Kind::table)
}

/// The table op `i` of `model` goes to: by name for PyTorch ops, from its HLO
/// instruction for XLA ops ([`super::xla::op_table`]).
pub fn op_table_in(model: &TraceModel, i: usize) -> Option<Table> {
    if model.xla.is_some() {
        return super::xla::op_table(model, i);
    }
    model.ops.get(i).and_then(|o| op_table(&o.name))
}

/// The model of op `i` of `model`: [`model_op`] for PyTorch ops, the HLO work models
/// for XLA ops ([`super::xla::model_op`]).
pub fn model_op_in(model: &TraceModel, i: usize) -> Result<OpModel, ModelError> {
    if model.xla.is_some() {
        return super::xla::model_op(model, i);
    }
    match model.ops.get(i) {
        Some(o) => model_op(&o.name, &o.args),
        None => Err(ModelError::Unmodelled(format!("op {i}"))),
    }
}

/// Kernel names of NCCL/RCCL collectives (and their ROCm MSCCL variants).
pub fn is_comm_kernel(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.contains("nccl")
        || l.contains("rccl")
        || l.contains("msccl")
        || super::inference::comm::is_custom_allreduce(name)
}

/// Our category of one GPU event by its name, when the name alone says it.
///
/// NCCL/RCCL → Comm; `Memcpy …`/`Memset …` → Memcpy; GEMM library kernels (any family
/// [`crate::gemm_tiles::parse_kernel_name`] recognises, except implicit-GEMM
/// convolutions) → GEMM; convolution kernels → CONV; flash/fused attention → SDPA;
/// softmax → Softmax; norms → Normalization; PyTorch element-wise and reduce kernels.
pub fn categorize_kernel(name: &str) -> Option<Category> {
    if is_comm_kernel(name) {
        return Some(Category::Comm);
    }
    if name.starts_with("Memcpy") || name.starts_with("Memset") {
        return Some(Category::Memcpy);
    }
    let l = name.to_ascii_lowercase();
    if l.contains("fused_moe") || l.contains("moe_align") || l.starts_with("moe_") {
        return Some(Category::Moe);
    }
    if l.contains("flash") || l.contains("fmha") || l.contains("attention") || l.contains("attn") {
        return Some(Category::Sdpa);
    }
    if l.contains("softmax") {
        return Some(Category::Softmax);
    }
    if l.contains("norm") && !l.contains("normal") && !l.contains("elementwise") {
        return Some(Category::Normalization);
    }
    if (l.contains("conv") && !l.contains("convert"))
        || l.contains("fprop")
        || l.contains("dgrad")
        || l.contains("wgrad")
    {
        return Some(Category::Conv);
    }
    if let Some(info) = crate::gemm_tiles::parse_kernel_name(name) {
        return Some(if info.implicit_conv { Category::Conv } else { Category::Gemm });
    }
    if l.contains("reduce_kernel") || l.contains("reduction") {
        return Some(Category::Reduce);
    }
    if l.contains("quant") && (l.contains("fp8") || l.contains("fp4")) {
        return Some(Category::Quant);
    }
    if l.contains("elementwise") || l.contains("triton_poi") {
        return Some(Category::Elementwise);
    }
    None
}

/// Our category of a CPU op, from its name and (for ops we do not know by name) the name
/// of the first GPU event it launched.
///
/// An element-wise or unknown op whose first kernel is a copy or a collective is Memcpy
/// or Comm (`aten::copy_` of a host tensor, `aten::_local_scalar_dense`).
pub fn categorize_op(name: &str, first_kernel: Option<&str>) -> Category {
    let by_kernel = first_kernel.and_then(categorize_kernel);
    let c = categorize_by_name(name).unwrap_or(Category::Other);
    match (c, by_kernel) {
        (Category::Elementwise, Some(k @ (Category::Memcpy | Category::Comm)))
        | (Category::Other, Some(k)) => k,
        _ => c,
    }
}

fn categorize_by_name(name: &str) -> Option<Category> {
    if let Some(k) = kind_of(name) {
        return Some(k.table().category());
    }
    let l = name.to_ascii_lowercase();
    let by_name = match name {
        "aten::linear"
        | "aten::matmul"
        | "aten::einsum"
        | "aten::addbmm"
        | "aten::addmv"
        | "aten::mv"
        | "aten::dot"
        | "aten::_addmm_activation" => Some(Category::Gemm),
        "aten::scaled_dot_product_attention"
        | "aten::_flash_attention_forward"
        | "aten::_efficient_attention_forward"
        | "aten::_flash_attention_backward"
        | "aten::_efficient_attention_backward" => Some(Category::Sdpa),
        "aten::_softmax"
        | "aten::softmax"
        | "aten::_log_softmax"
        | "aten::log_softmax"
        | "aten::_softmax_backward_data"
        | "aten::_log_softmax_backward_data" => Some(Category::Softmax),
        _ => None,
    };
    if by_name.is_some() {
        return by_name;
    }
    if l.contains("scaled_dot_product") || l.contains("flash_attn") || l.contains("attention") {
        return Some(Category::Sdpa);
    }
    if l.contains("convolution") || l.starts_with("aten::conv") || l.contains("cudnn_conv") {
        return Some(Category::Conv);
    }
    if l.contains("_norm") || l.contains("layernorm") || l.contains("rmsnorm") {
        return Some(Category::Normalization);
    }
    if l.contains("softmax") {
        return Some(Category::Softmax);
    }
    if l.starts_with("nccl:") || l.starts_with("c10d::") || l.contains("record_param_comms") {
        return Some(Category::Comm);
    }
    None
}

/// Our category of a CPU op by its name alone (see [`categorize_in`] to use its kernels).
pub fn categorize(op: &CpuOp) -> Category {
    categorize_op(&op.name, None)
}

/// Our category of op `op` of `model`, using the name of the first GPU event it launched
/// directly for ops not known by name (`aten::gelu` → its element-wise kernel).
pub fn categorize_in(model: &TraceModel, op: usize) -> Category {
    if model.xla.is_some() {
        return super::xla::category(model, op);
    }
    let Some(o) = model.ops.get(op) else { return Category::Other };
    let first =
        o.launched.first().and_then(|&e| model.gpu.get(e as usize)).map(|g| g.name.as_str());
    categorize_op(&o.name, first)
}

/// TraceLens's category label of a kernel-launching op, as in its `ops_summary.csv`
/// (`torch_op_mapping.categorize_torch_op`): the op's perf-model category by name
/// (`GEMM`, `CONV_fwd`, `CONV_bwd`, `SDPA_fwd`, `SDPA_bwd`, `NORM_fwd`, `NORM_bwd`,
/// `elementwise`, `reduce`), `triton` / `record_param_comms` by prefix, then from the
/// first kernel's name when it starts with `void at::native` (`elementwise`, `reduce`,
/// `multi_tensor_apply`), else `other`.
pub fn tracelens_category(name: &str, first_kernel: Option<&str>) -> &'static str {
    let by_name = match name {
        "aten::mm"
        | "aten::addmm"
        | "aten::_scaled_mm"
        | "aten::bmm"
        | "aten::baddbmm"
        | "tex_ts::te_gemm_ts"
        | "trtllm::cublas_scaled_mm"
        | "vllm::gemm_with_dynamic_quant"
        | "bitsandbytes::int8_linear_matmul" => Some("GEMM"),
        "aten::convolution"
        | "aten::miopen_convolution"
        | "aten::cudnn_convolution"
        | "ConvBias_"
        | "ConvBiasReLU_" => Some("CONV_fwd"),
        "aten::convolution_backward" | "ConvBias_Backward" | "ConvBiasReLU_Backward" => {
            Some("CONV_bwd")
        }
        "FlashAttnFunc"
        | "flash_attn::_flash_attn_forward"
        | "flash_attn::_flash_attn_varlen_forward"
        | "aten::_scaled_dot_product_cudnn_attention"
        | "aten::_scaled_dot_product_efficient_attention"
        | "aten::_scaled_dot_product_flash_attention"
        | "aten::_efficient_attention_forward"
        | "aiter::_flash_attn_forward"
        | "aiter::mha_fwd"
        | "flash_attn_3::fwd" => Some("SDPA_fwd"),
        "flash_attn::_flash_attn_backward"
        | "flash_attn::_flash_attn_varlen_backward"
        | "FlashAttnFuncBackward"
        | "aten::_scaled_dot_product_cudnn_attention_backward"
        | "aten::_scaled_dot_product_efficient_attention_backward"
        | "aten::_scaled_dot_product_flash_attention_backward"
        | "aten::_efficient_attention_backward"
        | "aiter::_flash_attn_backward"
        | "aiter::mha_bwd" => Some("SDPA_bwd"),
        "aten::norm" | "aten::linalg_norm" | "aten::std" | "aten::var" | "aten::logsumexp"
        | "aten::cumsum" | "aten::cumprod" => Some("reduce"),
        _ => None,
    };
    if let Some(c) = by_name {
        return c;
    }
    match kind_of(name) {
        Some(
            Kind::LayerNorm
            | Kind::BatchNorm
            | Kind::GroupNorm
            | Kind::NativeGroupNorm
            | Kind::InstanceNorm
            | Kind::RmsNorm,
        ) => return "NORM_fwd",
        Some(Kind::Binary | Kind::Unary) => return "elementwise",
        Some(Kind::Reduce) => return "reduce",
        _ => {}
    }
    if name.ends_with("_norm_backward") && name.starts_with("aten::") {
        return "NORM_bwd";
    }
    if name.starts_with("triton") {
        return "triton";
    }
    if name.starts_with("record_param_comms") {
        return "record_param_comms";
    }
    if let Some(k) = first_kernel {
        if k.starts_with("void at::native") {
            for (needle, cat) in [
                ("elementwise", "elementwise"),
                ("reduce", "reduce"),
                ("multi_tensor_apply", "multi_tensor_apply"),
            ] {
                if k.contains(needle) {
                    return cat;
                }
            }
        }
    }
    "other"
}

// ---------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------

/// One parameter value of a table row.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A shape, stride or per-axis list.
    Ints(Vec<i64>),
    /// Data types; `None` where the op does not state one (output of a binary op).
    Dtypes(Vec<Option<String>>),
}

impl ParamValue {
    /// The value as TraceLens prints it in its CSVs (Python `repr` of tuples, `True`,
    /// `None` as an empty cell).
    pub fn tracelens_repr(&self) -> String {
        match self {
            ParamValue::Null => String::new(),
            ParamValue::Bool(b) => if *b { "True" } else { "False" }.to_string(),
            ParamValue::Int(i) => i.to_string(),
            ParamValue::Float(x) => format!("{x:?}"),
            ParamValue::Str(s) => s.clone(),
            ParamValue::Ints(v) => {
                let items: Vec<String> = v.iter().map(i64::to_string).collect();
                py_tuple(&items)
            }
            ParamValue::Dtypes(v) => {
                let items: Vec<String> = v
                    .iter()
                    .map(|d| d.as_ref().map_or_else(|| "None".to_string(), |s| format!("'{s}'")))
                    .collect();
                py_tuple(&items)
            }
        }
    }
}

fn py_tuple(items: &[String]) -> String {
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

impl Serialize for ParamValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ParamValue::Null => s.serialize_none(),
            ParamValue::Bool(b) => s.serialize_bool(*b),
            ParamValue::Int(i) => s.serialize_i64(*i),
            ParamValue::Float(x) => s.serialize_f64(*x),
            ParamValue::Str(v) => s.serialize_str(v),
            ParamValue::Ints(v) => {
                let mut seq = s.serialize_seq(Some(v.len()))?;
                for x in v {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
            ParamValue::Dtypes(v) => {
                let mut seq = s.serialize_seq(Some(v.len()))?;
                for x in v {
                    seq.serialize_element(x)?;
                }
                seq.end()
            }
        }
    }
}

/// The parameters of a row, in TraceLens's order. Serialized as a JSON object.
///
/// Names are TraceLens's `param: …` columns, except that its `dtype_A_B`,
/// `dtype_input_weight`, `dtype_in_out` and `dtype_in1_in2_out` are all `dtypes`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params(pub Vec<(&'static str, ParamValue)>);

impl Params {
    /// The value of `key`, if the row has it.
    pub fn get(&self, key: &str) -> Option<&ParamValue> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    fn push(&mut self, key: &'static str, value: ParamValue) {
        self.0.push((key, value));
    }

    /// A key that identifies the parameter values (for grouping calls into rows).
    pub fn group_key(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.0 {
            let _ = write!(s, "{k}={};", v.tracelens_repr());
        }
        s
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

// ---------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------

/// The model of one call of an op.
#[derive(Debug, Clone, PartialEq)]
pub struct OpModel {
    pub table: Table,
    pub params: Params,
    /// FLOPs of one call.
    pub flops: f64,
    /// Bytes one call moves (read + written).
    pub bytes: f64,
    /// The same FLOPs and bytes with precision, unit and formulas, for the roofline.
    pub work: Work,
    /// The matmul in PyTorch's view, for tile/wave efficiency (GEMM table only).
    pub gemm: Option<GemmShape>,
}

/// Why an op has no model numbers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// No work model for this op name.
    #[error("no work model for `{0}`")]
    Unmodelled(String),
    /// The op has a model but its recorded arguments do not fit it.
    #[error("`{op}`: {reason}")]
    BadArgs { op: String, reason: String },
}

/// Bytes per element of a PyTorch dtype as Kineto writes it (`c10::BFloat16`, `float`,
/// `long int`, `Scalar`, ...). TraceLens `name2bpe`, extended to the other integer and
/// complex types; a `Scalar` argument counts as one 4-byte element, as in TraceLens.
pub fn dtype_bytes(dtype: &str) -> Option<u32> {
    let b = match dtype.to_ascii_lowercase().as_str() {
        "double" | "long int" | "long" | "int64" | "c10::complex<float>" | "unsigned long" => 8,
        "float" | "scalar" | "int" | "unsigned int" | "c10::complex<c10::half>" => 4,
        "c10::half" | "c10::bfloat16" | "short int" | "short" => 2,
        "c10::float8_e4m3fnuz"
        | "c10::float8_e4m3fn"
        | "c10::float8_e5m2"
        | "c10::float8_e5m2fnuz"
        | "unsigned char"
        | "signed char"
        | "bool"
        | "fp8" => 1,
        "c10::complex<double>" => 16,
        _ => return None,
    };
    Some(b)
}

/// The precision whose roof applies to a PyTorch dtype's matrix math.
pub fn dtype_precision(dtype: &str) -> Option<Precision> {
    let p = match dtype.to_ascii_lowercase().as_str() {
        "double" => Precision::Fp64,
        "float" => Precision::Fp32,
        "c10::half" => Precision::Fp16,
        "c10::bfloat16" => Precision::Bf16,
        "c10::float8_e4m3fnuz"
        | "c10::float8_e4m3fn"
        | "c10::float8_e5m2"
        | "c10::float8_e5m2fnuz" => Precision::Fp8,
        "signed char" | "unsigned char" => Precision::Int8,
        _ => return None,
    };
    Some(p)
}

/// The model of one call of `name` with `args`.
///
/// # Errors
/// [`ModelError::Unmodelled`] for ops without a model, [`ModelError::BadArgs`] when the
/// recorded arguments are missing or do not fit the model (no shapes recorded, a dtype
/// without a known size, a convolution whose filter does not fit its input).
pub fn model_op(name: &str, args: &OpArgs) -> Result<OpModel, ModelError> {
    let kind = kind_of(name).ok_or_else(|| ModelError::Unmodelled(name.to_string()))?;
    let a = Args { args };
    let res = match kind {
        Kind::Mm | Kind::Addmm | Kind::Bmm | Kind::Baddbmm | Kind::ScaledMm => gemm(kind, &a),
        Kind::SdpaBhnd { .. } | Kind::SdpaBwd { .. } | Kind::FlashAttn { .. } => sdpa(kind, &a),
        Kind::Conv => conv(&a),
        Kind::ConvBwd => conv_bwd(&a),
        Kind::LayerNorm
        | Kind::BatchNorm
        | Kind::GroupNorm
        | Kind::NativeGroupNorm
        | Kind::InstanceNorm => norm(kind, &a),
        Kind::RmsNorm => rms_norm(&a),
        Kind::LayerNormBwd | Kind::BatchNormBwd | Kind::CudnnBatchNormBwd => norm_bwd(kind, &a),
        Kind::Binary => binary(&a),
        Kind::Unary => unary(&a),
        Kind::Reduce => reduce(name, &a),
        Kind::Inference(_) => super::inference::model_args(name, args)
            .unwrap_or_else(|| Err(format!("no inference model for `{name}`"))),
    };
    res.map_err(|reason| ModelError::BadArgs { op: name.to_string(), reason })
}

type R<T> = Result<T, String>;

/// Checked access to the recorded arguments.
struct Args<'a> {
    args: &'a OpArgs,
}

impl Args<'_> {
    /// The dims of tensor argument `i` (empty for scalars and `None`).
    fn dims(&self, i: usize) -> R<Vec<i64>> {
        match self.args.input_dims.get(i) {
            Some(Dims::Tensor(d)) => Ok(d.clone()),
            Some(Dims::List(_)) => Err(format!("argument {i} is a tensor list, not a tensor")),
            None => Err(format!(
                "argument {i} has no recorded shape ({} recorded; was the trace taken with \
                 record_shapes=True?)",
                self.args.input_dims.len()
            )),
        }
    }

    /// Whether argument `i` is a tensor with at least one dimension.
    fn has_tensor(&self, i: usize) -> bool {
        matches!(self.args.input_dims.get(i), Some(Dims::Tensor(d)) if !d.is_empty())
    }

    fn dtype(&self, i: usize) -> R<String> {
        self.args
            .input_types
            .get(i)
            .cloned()
            .ok_or_else(|| format!("argument {i} has no recorded type"))
    }

    /// Strides of argument `i`; `None` when not recorded (older traces).
    fn strides(&self, i: usize) -> ParamValue {
        match self.args.input_strides.get(i) {
            Some(Dims::Tensor(d)) => ParamValue::Ints(d.clone()),
            _ => ParamValue::Null,
        }
    }

    fn concrete(&self, i: usize) -> Option<&str> {
        self.args.concrete_inputs.get(i).map(String::as_str)
    }
}

/// Element count of a shape (1 for a scalar's empty shape), exactly.
fn numel(shape: &[i64]) -> R<u128> {
    shape.iter().try_fold(1u128, |acc, &d| {
        let d = u128::try_from(d).map_err(|_| format!("negative dimension {d} in {shape:?}"))?;
        acc.checked_mul(d).ok_or_else(|| format!("element count of {shape:?} overflows"))
    })
}

/// A dimension as an unsigned count.
fn udim(shape: &[i64], i: usize, what: &str) -> R<u128> {
    let d = *shape.get(i).ok_or_else(|| format!("{what}: shape {shape:?} has no axis {i}"))?;
    u128::try_from(d).map_err(|_| format!("{what}: negative dimension {d}"))
}

fn mul(factors: &[u128]) -> R<u128> {
    factors
        .iter()
        .try_fold(1u128, |acc, &f| acc.checked_mul(f))
        .ok_or_else(|| "count overflows 128 bits".to_string())
}

fn sum(terms: &[u128]) -> R<u128> {
    terms
        .iter()
        .try_fold(0u128, |acc, &t| acc.checked_add(t))
        .ok_or_else(|| "count overflows 128 bits".to_string())
}

fn bpe_of(dtype: &str) -> R<u128> {
    dtype_bytes(dtype)
        .map(u128::from)
        .ok_or_else(|| format!("unknown element size of dtype `{dtype}`"))
}

fn to_u64(x: u128, what: &str) -> R<u64> {
    u64::try_from(x).map_err(|_| format!("{what} = {x} does not fit in 64 bits"))
}

fn as_i64(x: u128) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

/// Parses a Python bool from `Concrete Inputs` (`True`/`False`).
fn parse_bool(s: Option<&str>) -> Option<bool> {
    match s?.trim() {
        "True" | "true" | "1" => Some(true),
        "False" | "false" | "0" => Some(false),
        _ => None,
    }
}

/// Parses `[True, False, True]` into booleans.
fn parse_bool_list(s: &str) -> Option<Vec<bool>> {
    let inner = s.trim().trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    inner.split(',').filter(|p| !p.trim().is_empty()).map(|p| parse_bool(Some(p))).collect()
}

/// Parses `[16, 16]`, `(1,)` or a bare `3` into integers; `None` for `''` or garbage.
fn parse_int_list(s: &str) -> Option<Vec<i64>> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    let inner = t.trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    let mut out = Vec::new();
    for part in inner.split(',') {
        let p = part.trim();
        if p.is_empty() {
            continue;
        }
        out.push(p.parse::<i64>().ok()?);
    }
    Some(out)
}

/// A Work built from exact counts (for models the core crate does not have).
#[allow(clippy::too_many_arguments)]
fn custom_work(
    class: OpClass,
    shape: String,
    flops: u128,
    flops_formula: String,
    precision: Precision,
    unit: ExecUnit,
    read: u128,
    written: u128,
    bytes_formula: String,
    assumptions: Vec<String>,
) -> Work {
    Work {
        class,
        shape,
        flops: flops as f64,
        precision,
        unit,
        bytes_read: read as f64,
        bytes_written: written as f64,
        flops_formula,
        bytes_formula,
        assumptions,
    }
}

/// Uses the core model's Work when it gives exactly our numbers, else `fallback`.
fn prefer_core(
    core: Option<Work>,
    flops: u128,
    bytes: u128,
    fallback: impl FnOnce() -> Work,
) -> Work {
    match core {
        Some(w) if w.flops == flops as f64 && (w.bytes_read + w.bytes_written) == bytes as f64 => w,
        _ => fallback(),
    }
}

/// The precision a vector kernel computes in for `storage` (FP64 stays FP64, everything
/// else widens to FP32, as PyTorch's opmath types do).
fn vector_precision(dtype: &str) -> Precision {
    if dtype_precision(dtype) == Some(Precision::Fp64) {
        Precision::Fp64
    } else {
        Precision::Fp32
    }
}

fn finish(table: Table, params: Params, work: Work, gemm: Option<GemmShape>) -> OpModel {
    OpModel { table, flops: work.flops, bytes: work.bytes(), params, work, gemm }
}

// --- GEMM ------------------------------------------------------------------------------

/// TraceLens `GEMM`: FLOPs `B*(2*M*N*K + M*N if bias)`; bytes
/// `B*(M*K + K*N + M*N + N if bias)*bpe` with every operand in A's element size (the
/// output of an fp8 `_scaled_mm` in 2 bytes).
#[allow(clippy::many_single_char_names)]
fn gemm(kind: Kind, a: &Args) -> R<OpModel> {
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

// --- SDPA ------------------------------------------------------------------------------

/// TraceLens `SDPA`: FLOPs `2*B*H_Q*N_Q*N_KV*(d_qk + d_v)` (the two matmuls; the softmax is
/// not counted); bytes `(Q + K + V + O)*bpe`. Causal masks count the exact unmasked pairs
/// (top-left for `aten::` SDPA, bottom-right for `flash_attn`), where TraceLens halves.
#[allow(clippy::many_single_char_names)]
fn sdpa(kind: Kind, a: &Args) -> R<OpModel> {
    // Axis order of (B, H, N, d) in the recorded shapes, index of q.
    let (q0, idx, dropout_i, causal_i, flash, mode, bwd) = match kind {
        Kind::SdpaBhnd { dropout, causal, flash } => {
            (0, [0, 1, 2, 3], dropout, causal, flash, CausalMode::TopLeft, false)
        }
        Kind::SdpaBwd { dropout, causal, flash } => {
            (1, [0, 1, 2, 3], dropout, causal, flash, CausalMode::TopLeft, true)
        }
        Kind::FlashAttn { dropout, causal } => {
            (0, [0, 2, 1, 3], dropout, causal, true, CausalMode::BottomRight, false)
        }
        _ => return Err("not an attention op".to_string()),
    };
    let (q, k, v) = (a.dims(q0)?, a.dims(q0 + 1)?, a.dims(q0 + 2)?);
    if q.len() != 4 || k.len() != 4 || v.len() != 4 {
        return Err(format!("attention expects 4-D q, k, v; got {q:?}, {k:?}, {v:?}"));
    }
    let g = |s: &[i64], j: usize, w: &str| udim(s, idx[j], w);
    let (b, hq, nq, dqk) =
        (g(&q, 0, "B")?, g(&q, 1, "H_Q")?, g(&q, 2, "N_Q")?, g(&q, 3, "d_h_qk")?);
    let (bk, hkv, nkv, dk) = (g(&k, 0, "B")?, g(&k, 1, "H_KV")?, g(&k, 2, "N_KV")?, g(&k, 3, "d")?);
    let (bv, hv, nv, dv) = (g(&v, 0, "B")?, g(&v, 1, "H_V")?, g(&v, 2, "N_V")?, g(&v, 3, "d_h_v")?);
    if b != bk || b != bv || hkv != hv || nkv != nv || dqk != dk {
        return Err(format!("q, k, v shapes do not match: {q:?}, {k:?}, {v:?}"));
    }
    let dropout = a.concrete(dropout_i).and_then(|s| s.trim().parse::<f64>().ok()).unwrap_or(0.0);
    let causal = parse_bool(a.concrete(causal_i)).unwrap_or(false);
    let tq = a.dtype(q0)?;
    let tk = a.dtype(q0 + 1)?;
    let bpe = bpe_of(&tq)?;
    let mode = if causal { mode } else { CausalMode::None };
    let pairs =
        crate::ops::attention::unmasked_pairs(to_u64(nq, "N_Q")?, to_u64(nkv, "N_KV")?, mode);
    let flops = mul(&[2, b, hq, pairs, sum(&[dqk, dv])?])?;
    let precision = dtype_precision(&tq);
    let core = precision.and_then(|p| {
        let spec = AttentionSpec {
            batch: u64::try_from(b).ok()?,
            heads_q: u64::try_from(hq).ok()?,
            heads_kv: u64::try_from(hkv).ok()?,
            seq_q: u64::try_from(nq).ok()?,
            seq_kv: u64::try_from(nkv).ok()?,
            head_dim: u64::try_from(dqk).ok()?,
            head_dim_v: Some(u64::try_from(dv).ok()?),
            causal: mode,
            dtype: p,
            pass: if bwd { Pass::Backward } else { Pass::Forward },
        };
        spec.work().ok()
    });
    let read = mul(&[
        b,
        sum(&[mul(&[nq, hq, dqk])?, mul(&[nkv, hkv, dqk])?, mul(&[nkv, hkv, dv])?])?,
        bpe,
    ])?;
    let written = mul(&[b, nq, hq, dv, bpe])?;
    if bwd {
        // The backward pass is the core model's (five matmuls with the recompute of S,
        // the reads of O, dO and the logsumexp); see the module docs.
        let work = core.ok_or_else(|| format!("no backward attention model for dtype `{tq}`"))?;
        return Ok(finish(
            Table::SdpaBwd,
            sdpa_params(&[b, nq, hq, nkv, hkv, dqk, dv], dropout, causal, flash, tq, tk),
            work,
            None,
        ));
    }
    let work = match core {
        // The core model skips rows of Q/K/V a causal mask never uses; take it whenever
        // its FLOPs agree (it is the same count) and keep its exact bytes.
        Some(w) if w.flops == flops as f64 => w,
        _ => custom_work(
            OpClass::Attention,
            format!("B={b} H_Q={hq} H_KV={hkv} N_Q={nq} N_KV={nkv} d={dqk}/{dv}"),
            flops,
            format!("2*B*H_Q*pairs*(d_qk + d_v) = 2*{b}*{hq}*{pairs}*({dqk} + {dv})"),
            precision.unwrap_or(Precision::Fp32),
            if precision.is_none_or(|p| p == Precision::Fp32) {
                ExecUnit::Vector
            } else {
                ExecUnit::Matrix
            },
            read,
            written,
            format!("(Q + K + V)*{bpe} read + O*{bpe} written = {read} + {written} B"),
            vec!["the score matrix stays on chip (fused attention)".to_string()],
        ),
    };
    let p = sdpa_params(&[b, nq, hq, nkv, hkv, dqk, dv], dropout, causal, flash, tq, tk);
    Ok(finish(Table::SdpaFwd, p, work, None))
}

fn sdpa_params(
    dims: &[u128; 7],
    dropout: f64,
    causal: bool,
    flash: bool,
    tq: String,
    tk: String,
) -> Params {
    let mut p = Params::default();
    for (name, &d) in ["B", "N_Q", "H_Q", "N_KV", "H_KV", "d_h_qk", "d_h_v"].into_iter().zip(dims) {
        p.push(name, ParamValue::Int(as_i64(d)));
    }
    p.push("dropout", ParamValue::Float(dropout));
    p.push("causal", ParamValue::Bool(causal));
    p.push("flash_impl", ParamValue::Bool(flash));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(tq), Some(tk)]));
    p
}

// --- CONV ------------------------------------------------------------------------------

/// TraceLens `CONV` (after PyTorch's `flop_counter`): FLOPs `2*prod(out)*prod(w[1:])`
/// (`2*prod(x)*prod(w[1:])` transposed) plus `prod(out)` bias adds; bytes
/// `(prod(x) + prod(w) + C_out if bias + prod(out))*bpe`. The bias counts when the op
/// has one (TraceLens never sees it on `aten::convolution`).
#[allow(clippy::too_many_lines, clippy::many_single_char_names)]
/// A convolution's geometry as `aten::convolution` (and its backward) record it.
struct ConvGeom {
    x: Vec<i64>,
    w: Vec<i64>,
    out: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
}

/// Reads input `xi`, weight `wi` and the scalar arguments from `c0` on (stride, padding,
/// dilation, transposed, output_padding, groups); computes the output shape (PyTorch
/// `Conv*d` / `ConvTranspose*d` docs) in `i128`, so no geometry overflows.
#[allow(clippy::many_single_char_names)]
fn conv_geom(a: &Args, xi: usize, wi: usize, c0: usize) -> R<ConvGeom> {
    let x = a.dims(xi)?;
    let w = a.dims(wi)?;
    if x.len() < 3 || x.len() > 5 || w.len() != x.len() {
        return Err(format!(
            "convolution expects 3-D to 5-D input and matching weight, got {x:?} and {w:?}"
        ));
    }
    let nd = x.len() - 2;
    let axis_list = |i: usize, default: i64, what: &str| -> R<Vec<i64>> {
        let v = match a.concrete(i) {
            Some(s) if !s.trim().is_empty() => {
                parse_int_list(s).ok_or_else(|| format!("cannot read {what} `{s}`"))?
            }
            _ => vec![default; nd],
        };
        match v.len() {
            1 => Ok(vec![v[0]; nd]),
            l if l == nd => Ok(v),
            _ => Err(format!("{what} {v:?} does not have {nd} entries")),
        }
    };
    let stride = axis_list(c0, 1, "stride")?;
    let padding = axis_list(c0 + 1, 0, "padding")?;
    let dilation = axis_list(c0 + 2, 1, "dilation")?;
    let transposed = parse_bool(a.concrete(c0 + 3)).unwrap_or(false);
    let output_padding = axis_list(c0 + 4, 0, "output_padding")?;
    let groups: i64 = match a.concrete(c0 + 5) {
        Some(s) if !s.trim().is_empty() => {
            s.trim().parse().map_err(|_| format!("cannot read groups `{s}`"))?
        }
        _ => 1,
    };
    if groups < 1 {
        return Err(format!("groups must be at least 1, got {groups}"));
    }
    let wide = |v: i128, what: &str| i64::try_from(v).map_err(|_| format!("{what} overflows"));
    let c_out = if transposed {
        wide(i128::from(w[1]) * i128::from(groups), "output channels")?
    } else {
        w[0]
    };
    let mut out = vec![x[0], c_out];
    for i in 0..nd {
        let [inp, k, s, p, d, op] =
            [x[i + 2], w[i + 2], stride[i], padding[i], dilation[i], output_padding[i]]
                .map(i128::from);
        if s < 1 || d < 1 || k < 1 || inp < 0 || p < 0 || op < 0 {
            return Err(format!("invalid convolution geometry on axis {i}"));
        }
        let o = if transposed {
            (inp - 1) * s - 2 * p + d * (k - 1) + op + 1
        } else {
            let span = d * (k - 1) + 1;
            if span > inp + 2 * p {
                return Err(format!(
                    "the dilated filter spans {span} elements but the padded input has {}",
                    inp + 2 * p
                ));
            }
            (inp + 2 * p - span) / s + 1
        };
        if o < 1 {
            return Err(format!("output extent {o} on axis {i}"));
        }
        out.push(wide(o, "output extent")?);
    }
    Ok(ConvGeom { x, w, out, stride, padding, dilation, transposed, output_padding, groups })
}

fn conv_params(a: &Args, g: ConvGeom, xi: usize, wi: usize, bias: bool) -> R<Params> {
    let nd = g.x.len() - 2;
    let mut p = Params::default();
    p.push("convNd", ParamValue::Str(format!("conv{nd}d")));
    p.push("input_shape", ParamValue::Ints(g.x));
    p.push("filter_shape", ParamValue::Ints(g.w));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(a.dtype(xi)?), Some(a.dtype(wi)?)]));
    p.push("input_stride", a.strides(xi));
    p.push("weight_stride", a.strides(wi));
    p.push("bias", ParamValue::Bool(bias));
    p.push("stride", ParamValue::Ints(g.stride));
    p.push("padding", ParamValue::Ints(g.padding));
    p.push("dilation", ParamValue::Ints(g.dilation));
    p.push("transposed_conv", ParamValue::Bool(g.transposed));
    p.push("output_padding", ParamValue::Ints(g.output_padding));
    p.push("groups", ParamValue::Int(g.groups));
    Ok(p)
}

fn conv(a: &Args) -> R<OpModel> {
    let g = conv_geom(a, 0, 1, 3)?;
    let bias = a.has_tensor(2);
    let ConvGeom { x, w, out, stride, padding, dilation, transposed, groups, .. } = &g;
    let (transposed, groups, nd) = (*transposed, *groups, x.len() - 2);
    let dtype = a.dtype(0)?;
    let bpe = bpe_of(&dtype)?;
    let (nx, nw, no) = (numel(x)?, numel(w)?, numel(out)?);
    let per_elem = mul(&[2, numel(&w[1..])?])?;
    let conv_flops = mul(&[if transposed { nx } else { no }, per_elem])?;
    let flops = sum(&[conv_flops, if bias { no } else { 0 }])?;
    let c_out = udim(out, 1, "C_out")?;
    let read = mul(&[sum(&[nx, nw, if bias { c_out } else { 0 }])?, bpe])?;
    let written = mul(&[no, bpe])?;
    let bytes = sum(&[read, written])?;
    let precision = dtype_precision(&dtype);
    let core = match (nd, transposed, precision) {
        (2, false, Some(p)) => {
            let spec = Conv2dSpec {
                n: u64::try_from(x[0]).unwrap_or(0),
                c: u64::try_from(x[1]).unwrap_or(0),
                h: u64::try_from(x[2]).unwrap_or(0),
                w: u64::try_from(x[3]).unwrap_or(0),
                k: u64::try_from(w[0]).unwrap_or(0),
                r: u64::try_from(w[2]).unwrap_or(0),
                s: u64::try_from(w[3]).unwrap_or(0),
                stride: (stride[0].unsigned_abs(), stride[1].unsigned_abs()),
                pad: (padding[0].unsigned_abs(), padding[1].unsigned_abs()),
                dilation: (dilation[0].unsigned_abs(), dilation[1].unsigned_abs()),
                groups: groups.unsigned_abs(),
                dtype: p,
                bias,
            };
            spec.work().ok()
        }
        _ => None,
    };
    let work = prefer_core(core, flops, bytes, || {
        let p = precision.unwrap_or(Precision::Fp32);
        // FP32 convolutions run as TF32 on the matrix unit (cuDNN's allow_tf32 default).
        let p = if p == Precision::Fp32 { Precision::Tf32 } else { p };
        custom_work(
            OpClass::Conv,
            format!("x={x:?} w={w:?} out={out:?}"),
            flops,
            format!(
                "2*prod(out)*prod(w[1:]){} = {conv_flops}{}",
                if bias { " + prod(out)" } else { "" },
                if bias { format!(" + {no}") } else { String::new() }
            ),
            p,
            ExecUnit::Matrix,
            read,
            written,
            format!(
                "(x + w{})*{bpe} read + out*{bpe} written = {read} + {written} B",
                if bias { " + C_out" } else { "" }
            ),
            vec!["input, weight and output cross DRAM once".to_string()],
        )
    });
    let p = conv_params(a, g, 0, 1, bias)?;
    Ok(finish(Table::ConvFwd, p, work, None))
}

/// Convolution backward (`aten::convolution_backward`): each requested gradient
/// (`output_mask`) costs what TraceLens's `CONV.flops_bwd_func` counts — the input and
/// the weight gradient one forward convolution each (`2*prod(out)*prod(w[1:])`), the bias
/// gradient `prod(out)` adds. Bytes: input gradient reads dY and W and writes dX; weight
/// gradient reads dY and X and writes dW; bias gradient reads dY and writes `C_out`, all
/// in the input's element size (TraceLens adds the bias-gradient bytes as elements).
#[allow(clippy::many_single_char_names)]
fn conv_bwd(a: &Args) -> R<OpModel> {
    // grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    // output_padding, groups, output_mask
    let g = conv_geom(a, 1, 2, 4)?;
    let mask = a.concrete(10).and_then(parse_bool_list).unwrap_or_else(|| vec![true, true, false]);
    let m = |i: usize| mask.get(i).copied().unwrap_or(false);
    let (nx, nw, no) = (numel(&g.x)?, numel(&g.w)?, numel(&g.out)?);
    let conv_flops =
        mul(&[if g.transposed { nx } else { no }, 2, numel(g.w.get(1..).unwrap_or(&[]))?])?;
    let c_out = udim(&g.out, 1, "C_out")?;
    let dtype = a.dtype(1)?;
    let bpe = bpe_of(&dtype)?;
    let mut flops = 0u128;
    let (mut read, mut written) = (0u128, 0u128);
    if m(0) {
        flops = sum(&[flops, conv_flops])?;
        read = sum(&[read, no, nw])?;
        written = sum(&[written, nx])?;
    }
    if m(1) {
        flops = sum(&[flops, conv_flops])?;
        read = sum(&[read, no, nx])?;
        written = sum(&[written, nw])?;
    }
    if m(2) {
        flops = sum(&[flops, no])?;
        read = sum(&[read, no])?;
        written = sum(&[written, c_out])?;
    }
    let (read, written) = (mul(&[read, bpe])?, mul(&[written, bpe])?);
    let p = dtype_precision(&dtype).unwrap_or(Precision::Fp32);
    let p = if p == Precision::Fp32 { Precision::Tf32 } else { p };
    let work = custom_work(
        OpClass::Conv,
        format!("x={:?} w={:?} out={:?} backward", g.x, g.w, g.out),
        flops,
        format!(
            "dX {} + dW {} + db {} = {flops}",
            if m(0) { conv_flops } else { 0 },
            if m(1) { conv_flops } else { 0 },
            if m(2) { no } else { 0 }
        ),
        p,
        ExecUnit::Matrix,
        read,
        written,
        format!(
            "{read} read + {written} written B (dX: dY + W → dX; dW: dY + X → dW; db: dY → C_out)"
        ),
        vec!["each tensor crosses DRAM once per gradient that uses it".to_string()],
    );
    let mut params = conv_params(a, g, 1, 2, m(2))?;
    params.push("output_mask", ParamValue::Str(format!("{mask:?}")));
    Ok(finish(Table::ConvBwd, params, work, None))
}

// --- Normalization ---------------------------------------------------------------------

/// TraceLens `Normalization`: FLOPs `3*C + 3*E if training + 3*C + 2*E`; bytes
/// `E*bpe_in + E*bpe_out + T*C*bpe_in` with `T = 2 (mean, var) + 1 if affine (+1 if bias)
/// + 2 if training`, E the elements, C the channels (LayerNorm: the normalized size).
fn norm(kind: Kind, a: &Args) -> R<OpModel> {
    let shape = a.dims(0)?;
    if shape.is_empty() {
        return Err("normalization of a scalar".to_string());
    }
    let e = numel(&shape)?;
    let (channels, affine, has_bias, training) = match kind {
        Kind::LayerNorm => {
            let ns = a
                .concrete(1)
                .and_then(parse_int_list)
                .ok_or_else(|| "layer_norm: normalized_shape not recorded".to_string())?;
            (numel(&ns)?, a.has_tensor(2), a.has_tensor(3), true)
        }
        Kind::BatchNorm | Kind::InstanceNorm => {
            let training = parse_bool(a.concrete(5)).unwrap_or(true);
            (udim(&shape, 1, "C")?, a.has_tensor(1), true, training)
        }
        Kind::GroupNorm => (udim(&shape, 1, "C")?, a.has_tensor(2), true, true),
        _ => (udim(&shape, 1, "C")?, a.has_tensor(1), true, true), // native_group_norm
    };
    let dtype = a.dtype(0)?;
    let bpe = bpe_of(&dtype)?;
    let c3 = mul(&[3, channels])?;
    let flops = sum(&[c3, if training { mul(&[3, e])? } else { 0 }, c3, mul(&[2, e])?])?;
    let tensors: u128 =
        2 + u128::from(affine) * (1 + u128::from(has_bias)) + if training { 2 } else { 0 };
    let read = sum(&[mul(&[e, bpe])?, mul(&[tensors, channels, bpe])?])?;
    let written = mul(&[e, bpe])?;
    let work = custom_work(
        OpClass::LayerNorm,
        format!("{shape:?} C={channels}"),
        flops,
        format!(
            "3*C{} + 3*C + 2*E = 3*{channels}{} + 3*{channels} + 2*{e}",
            if training { " + 3*E" } else { "" },
            if training { format!(" + 3*{e}") } else { String::new() }
        ),
        vector_precision(&dtype),
        ExecUnit::Vector,
        read,
        written,
        format!("E*{bpe} + {tensors}*C*{bpe} read + E*{bpe} written = {read} + {written} B"),
        vec!["activations cross DRAM once; statistics and parameters are read once per channel \
             (TraceLens Normalization model)"
            .to_string()],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(shape));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(dtype), None]));
    p.push("stride_input", a.strides(0));
    p.push("stride_output", ParamValue::Null);
    p.push("num_channels", ParamValue::Int(as_i64(channels)));
    p.push("has_bias", ParamValue::Bool(has_bias));
    p.push("is_affine", ParamValue::Bool(affine));
    p.push("is_training", ParamValue::Bool(training));
    Ok(finish(Table::Normalization, p, work, None))
}

/// Normalization backward, TraceLens `Normalization.flops_func_bwd` / `bytes_func_bwd`:
/// FLOPs `4*E` (the dot products) `+ 5*E` for the input gradient in training `+ 2*E` for
/// the input gradient from running statistics `+ 3*C` to recompute `invstd` when not
/// training; bytes: dY and X read, dX written (X only in training), `invstd` read in
/// training, the weight read and its gradient (and the bias's) written when affine.
fn norm_bwd(kind: Kind, a: &Args) -> R<OpModel> {
    let (xi, channels, affine, has_bias, training, mask) = if kind == Kind::LayerNormBwd {
        // grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask
        let ns = a
            .concrete(2)
            .and_then(parse_int_list)
            .ok_or_else(|| "layer_norm_backward: normalized_shape not recorded".to_string())?;
        let mask = a.concrete(7).and_then(parse_bool_list).unwrap_or_else(|| vec![true; 3]);
        let m = |i: usize| mask.get(i).copied().unwrap_or(false);
        (1, numel(&ns)?, m(1), m(2), true, mask)
    } else {
        // native: grad_out, input, weight, running_mean, running_var, save_mean,
        // save_invstd, train, eps, output_mask; cudnn/miopen: input, grad_output,
        // weight, ... (training only).
        let native = kind == Kind::BatchNormBwd;
        let xi = usize::from(native);
        let shape = a.dims(xi)?;
        let training = if native { parse_bool(a.concrete(7)).unwrap_or(true) } else { true };
        let mask = if native {
            a.concrete(9).and_then(parse_bool_list).unwrap_or_else(|| vec![true; 3])
        } else {
            vec![true; 3]
        };
        let affine = a.has_tensor(2);
        let m2 = mask.get(2).copied().unwrap_or(false);
        (xi, udim(&shape, 1, "C")?, affine, affine && m2, training, mask)
    };
    let shape = a.dims(xi)?;
    let e = numel(&shape)?;
    let dx = mask.first().copied().unwrap_or(true);
    let dtype = a.dtype(xi)?;
    let bpe = bpe_of(&dtype)?;
    let mut flops = sum(&[mul(&[4, e])?, if training { 0 } else { mul(&[3, channels])? }])?;
    if dx {
        flops = sum(&[flops, mul(&[if training { 5 } else { 2 }, e])?])?;
    }
    let read = sum(&[
        mul(&[e, bpe])?,
        if dx && training { mul(&[e, bpe])? } else { 0 },
        if training { mul(&[channels, bpe])? } else { 0 },
        if affine { mul(&[channels, bpe])? } else { 0 },
    ])?;
    let written = sum(&[
        if dx { mul(&[e, bpe])? } else { 0 },
        if affine && training { mul(&[channels, bpe, if has_bias { 2 } else { 1 }])? } else { 0 },
    ])?;
    let work = custom_work(
        OpClass::LayerNorm,
        format!("{shape:?} C={channels} backward"),
        flops,
        format!(
            "4*E{}{} = {flops}",
            if dx {
                if training {
                    " + 5*E"
                } else {
                    " + 2*E"
                }
            } else {
                ""
            },
            if training { "" } else { " + 3*C" }
        ),
        vector_precision(&dtype),
        ExecUnit::Vector,
        read,
        written,
        format!("{read} read + {written} written B"),
        vec!["activations cross DRAM once per use (TraceLens Normalization backward model)"
            .to_string()],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(shape));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(dtype), None]));
    p.push("stride_input", a.strides(xi));
    p.push("stride_output", ParamValue::Null);
    p.push("num_channels", ParamValue::Int(as_i64(channels)));
    p.push("has_bias", ParamValue::Bool(has_bias));
    p.push("is_affine", ParamValue::Bool(affine));
    p.push("is_training", ParamValue::Bool(training));
    p.push("output_mask", ParamValue::Str(format!("{mask:?}")));
    Ok(finish(Table::Normalization, p, work, None))
}

/// TraceLens `RMSNorm` (`aten::_fused_rms_norm`): FLOPs `(E/C)*(2*C + 2) + E*(2 if
/// affine else 1)`; bytes `E*bpe + E*bpe + C*bpe if affine`.
fn rms_norm(a: &Args) -> R<OpModel> {
    let shape = a.dims(0)?;
    let e = numel(&shape)?;
    let ns = a
        .concrete(1)
        .and_then(parse_int_list)
        .ok_or_else(|| "rms_norm: normalized_shape not recorded".to_string())?;
    let c = numel(&ns)?;
    if c == 0 || e % c != 0 {
        return Err(format!("normalized_shape {ns:?} does not divide {shape:?}"));
    }
    let affine = a.has_tensor(2);
    let dtype = a.dtype(0)?;
    let bpe = bpe_of(&dtype)?;
    let flops =
        sum(&[mul(&[e / c, sum(&[mul(&[2, c])?, 2])?])?, mul(&[e, if affine { 2 } else { 1 }])?])?;
    let read = sum(&[mul(&[e, bpe])?, if affine { mul(&[c, bpe])? } else { 0 }])?;
    let written = mul(&[e, bpe])?;
    let work = custom_work(
        OpClass::RmsNorm,
        format!("{shape:?} C={c}"),
        flops,
        format!(
            "(E/C)*(2*C + 2) + E*{} = ({e}/{c})*(2*{c} + 2) + {e}*{}",
            if affine { 2 } else { 1 },
            if affine { 2 } else { 1 }
        ),
        vector_precision(&dtype),
        ExecUnit::Vector,
        read,
        written,
        format!(
            "E*{bpe}{} read + E*{bpe} written = {read} + {written} B",
            if affine { format!(" + C*{bpe}") } else { String::new() }
        ),
        vec!["each row is read once and stays on chip".to_string()],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(shape));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(dtype), None]));
    p.push("stride_input", a.strides(0));
    p.push("stride_output", ParamValue::Null);
    p.push("num_channels", ParamValue::Int(as_i64(c)));
    p.push("has_bias", ParamValue::Bool(false));
    p.push("is_affine", ParamValue::Bool(affine));
    p.push("is_training", ParamValue::Bool(false));
    Ok(finish(Table::Normalization, p, work, None))
}

// --- Element-wise ----------------------------------------------------------------------

/// NumPy broadcast of two shapes.
fn broadcast(s1: &[i64], s2: &[i64]) -> R<Vec<i64>> {
    let n = s1.len().max(s2.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let d1 = if i + s1.len() >= n { s1[i + s1.len() - n] } else { 1 };
        let d2 = if i + s2.len() >= n { s2[i + s2.len() - n] } else { 1 };
        if d1 != d2 && d1 != 1 && d2 != 1 {
            return Err(format!("shapes {s1:?} and {s2:?} do not broadcast"));
        }
        out.push(d1.max(d2));
    }
    Ok(out)
}

/// TraceLens `BinaryElementwise`: FLOPs = output elements (the broadcast shape); bytes
/// `n1*bpe1 + n2*bpe2 + n_out*bpe_out`, the output in the stated dtype, else the larger
/// input element size when both inputs are tensors, else the first input's.
fn binary(a: &Args) -> R<OpModel> {
    let s1 = a.dims(0)?;
    let s2 = a.dims(1)?;
    let (t1, t2) = (a.dtype(0)?, a.dtype(1)?);
    let out_dtype = if a.has_tensor(2) { a.args.input_types.get(2).cloned() } else { None };
    let (b1, b2) = (bpe_of(&t1)?, bpe_of(&t2)?);
    let bo = match &out_dtype {
        Some(t) => bpe_of(t)?,
        None if !s1.is_empty() && !s2.is_empty() => b1.max(b2),
        None => b1,
    };
    let so = broadcast(&s1, &s2)?;
    let (n1, n2, no) = (numel(&s1)?, numel(&s2)?, numel(&so)?);
    let read = sum(&[mul(&[n1, b1])?, mul(&[n2, b2])?])?;
    let written = mul(&[no, bo])?;
    let bytes = sum(&[read, written])?;
    let core = match dtype_precision(&t1) {
        Some(p) if t1 == t2 && bo == b1 && n1 == no && !s2.is_empty() => {
            let mut spec = ElementwiseSpec::binary(u64::try_from(no).unwrap_or(0), p, 1.0);
            if n2 != no {
                spec.broadcast_elements = u64::try_from(n2).ok();
            }
            spec.work().ok()
        }
        _ => None,
    };
    let work = prefer_core(core, no, bytes, || {
        custom_work(
            OpClass::Elementwise,
            format!("{s1:?} op {s2:?} -> {so:?}"),
            no,
            format!("n_out = {no}"),
            vector_precision(&t1),
            ExecUnit::Vector,
            read,
            written,
            format!("n1*{b1} + n2*{b2} read + n_out*{bo} written = {read} + {written} B"),
            vec!["each input is read once at its own size, the output written once".to_string()],
        )
    });
    let mut p = Params::default();
    p.push("shape_in1", ParamValue::Ints(s1));
    p.push("shape_in2", ParamValue::Ints(s2));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(t1), Some(t2), out_dtype]));
    p.push("stride_input1", a.strides(0));
    p.push("stride_input2", a.strides(1));
    p.push("stride_output", if a.has_tensor(2) { a.strides(2) } else { ParamValue::Null });
    Ok(finish(Table::BinaryElementwise, p, work, None))
}

/// TraceLens `UnaryElementwise`: FLOPs = elements; bytes `E*bpe_in + E*bpe_out`, the
/// output in the second tensor argument's dtype when there is one.
#[allow(clippy::many_single_char_names)]
fn unary(a: &Args) -> R<OpModel> {
    let s = a.dims(0)?;
    let t = a.dtype(0)?;
    let out_dtype = if a.has_tensor(1) { a.args.input_types.get(1).cloned() } else { None };
    let bi = bpe_of(&t)?;
    let bo = match &out_dtype {
        Some(o) => bpe_of(o)?,
        None => bi,
    };
    let e = numel(&s)?;
    let read = mul(&[e, bi])?;
    let written = mul(&[e, bo])?;
    let bytes = sum(&[read, written])?;
    let core = match dtype_precision(&t) {
        Some(p) if bi == bo => {
            ElementwiseSpec::unary(u64::try_from(e).unwrap_or(0), p, 1.0).work().ok()
        }
        _ => None,
    };
    let work = prefer_core(core, e, bytes, || {
        custom_work(
            OpClass::Elementwise,
            format!("{s:?}"),
            e,
            format!("E = {e}"),
            vector_precision(&t),
            ExecUnit::Vector,
            read,
            written,
            format!("E*{bi} read + E*{bo} written = {read} + {written} B"),
            vec!["the input is read once, the output written once".to_string()],
        )
    });
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(s));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(t), out_dtype]));
    p.push("stride_input", a.strides(0));
    p.push("stride_output", if a.has_tensor(1) { a.strides(1) } else { ParamValue::Null });
    Ok(finish(Table::UnaryElementwise, p, work, None))
}

/// TraceLens `Reduce`: FLOPs = input elements; bytes `in*bpe + out*bpe`. The output shape
/// comes from the `dim` and `keepdim` arguments (TraceLens never reads them from a
/// Kineto trace and always counts one output element).
#[allow(clippy::many_single_char_names)]
fn reduce(name: &str, a: &Args) -> R<OpModel> {
    let s = a.dims(0)?;
    let t = a.dtype(0)?;
    let bpe = bpe_of(&t)?;
    let e = numel(&s)?;
    // sum/mean(self, dim, keepdim, dtype); amax/amin(self, dim, keepdim); max/min(self[, dim, keepdim]).
    let dims = a.concrete(1).and_then(parse_int_list);
    let keepdim = parse_bool(a.concrete(2)).unwrap_or(false);
    let out_shape: Vec<i64> = match dims {
        Some(d) if !d.is_empty() => {
            let nd = i64::try_from(s.len()).unwrap_or(i64::MAX);
            let mut axes: Vec<usize> = Vec::new();
            for x in d {
                let ax = if x < 0 { x + nd } else { x };
                let ax = usize::try_from(ax).ok().filter(|&i| i < s.len());
                axes.push(ax.ok_or_else(|| format!("{name}: dim {x} out of range for {s:?}"))?);
            }
            s.iter()
                .enumerate()
                .filter_map(
                    |(i, &v)| {
                        if axes.contains(&i) {
                            keepdim.then_some(1)
                        } else {
                            Some(v)
                        }
                    },
                )
                .collect()
        }
        _ => Vec::new(),
    };
    let eo = numel(&out_shape)?;
    let read = mul(&[e, bpe])?;
    let written = mul(&[eo, bpe])?;
    let work = custom_work(
        OpClass::Reduction,
        format!("{s:?} -> {out_shape:?}"),
        e,
        format!("E_in = {e}"),
        vector_precision(&t),
        ExecUnit::Vector,
        read,
        written,
        format!("E_in*{bpe} read + E_out*{bpe} written = {read} + {written} B"),
        vec!["the input is read once, the output written once".to_string()],
    );
    let mut p = Params::default();
    p.push("op_shape", ParamValue::Ints(s));
    p.push("out_shape", ParamValue::Ints(out_shape));
    p.push("dtypes", ParamValue::Dtypes(vec![Some(t), None]));
    p.push("stride_input", a.strides(0));
    Ok(finish(Table::Reduce, p, work, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(d: &[i64]) -> Dims {
        Dims::Tensor(d.to_vec())
    }

    fn args(dims: Vec<Dims>, types: &[&str], strides: Vec<Dims>, concrete: &[&str]) -> OpArgs {
        OpArgs {
            input_dims: dims,
            input_types: types.iter().map(|s| (*s).to_string()).collect(),
            input_strides: strides,
            concrete_inputs: concrete.iter().map(|s| (*s).to_string()).collect(),
        }
    }

    const BF: &str = "c10::BFloat16";

    /// Hand arithmetic for `aten::addmm` [768], [788,768], [768,768] (TraceLens GEMM.csv,
    /// H100 ViT row 1: 0.930167808 GFLOPS, 3.43505859375 MB).
    #[test]
    fn addmm_matches_hand_arithmetic() {
        let a = args(
            vec![t(&[768]), t(&[788, 768]), t(&[768, 768]), t(&[]), t(&[])],
            &[BF, BF, BF, "Scalar", "Scalar"],
            vec![t(&[1]), t(&[768, 1]), t(&[1, 768]), t(&[]), t(&[])],
            &["", "", "", "1", "1"],
        );
        let m = model_op("aten::addmm", &a).unwrap();
        // 2*788*768*768 + 788*768
        assert_eq!(m.flops, 930_167_808.0);
        // (788*768 + 768*768 + 768 + 788*768)*2 = 3_601_920 = 3.43505859375 MiB
        assert_eq!(m.bytes, 3_601_920.0);
        assert_eq!(m.params.get("M"), Some(&ParamValue::Int(788)));
        assert_eq!(m.params.get("stride_A").unwrap().tracelens_repr(), "(768, 1)");
        assert_eq!(
            m.params.get("dtypes").unwrap().tracelens_repr(),
            "('c10::BFloat16', 'c10::BFloat16')"
        );
        assert_eq!(m.table, Table::Gemm);
        assert_eq!(m.work.class, OpClass::Gemm);
    }

    /// `aten::_scaled_dot_product_flash_attention` 4×12×197×64: 4*12*2*197*197*(64+64)
    /// = 476_884_992 FLOPs; 4 tensors of 605_184 bf16 elements = 4_841_472 B.
    #[test]
    fn sdpa_matches_hand_arithmetic() {
        let q = t(&[4, 12, 197, 64]);
        let a = args(
            vec![q.clone(), q.clone(), q, t(&[]), t(&[]), t(&[]), t(&[])],
            &[BF, BF, BF, "Scalar", "Scalar", "Scalar", "Scalar"],
            vec![],
            &["", "", "", "0.", "False", "False", "0.125"],
        );
        let m = model_op("aten::_scaled_dot_product_flash_attention", &a).unwrap();
        assert_eq!(m.flops, 476_884_992.0);
        assert_eq!(m.bytes, 4_841_472.0);
        assert_eq!(m.params.get("dropout").unwrap().tracelens_repr(), "0.0");
        assert_eq!(m.params.get("causal"), Some(&ParamValue::Bool(false)));
    }

    /// Causal attention counts the exact pairs N*(N+1)/2, not N²/2.
    #[test]
    fn causal_sdpa_counts_exact_pairs() {
        let q = t(&[1, 1, 4, 8]);
        let a = args(
            vec![q.clone(), q.clone(), q],
            &[BF, BF, BF],
            vec![],
            &["", "", "", "0.0", "True"],
        );
        let m = model_op("aten::_scaled_dot_product_flash_attention", &a).unwrap();
        // pairs = 4*5/2 = 10; 2*1*1*10*(8+8)
        assert_eq!(m.flops, 320.0);
    }

    /// ViT patch embedding: x (4,3,224,224), w (768,3,16,16), bias (768), stride 16:
    /// out (4,768,14,14) = 602_112; 2*602_112*768 = 924_844_032 FLOPs + 602_112 bias adds.
    #[test]
    fn conv_counts_bias_when_present() {
        let a = args(
            vec![
                t(&[4, 3, 224, 224]),
                t(&[768, 3, 16, 16]),
                t(&[768]),
                t(&[]),
                t(&[]),
                t(&[]),
                t(&[]),
                t(&[]),
                t(&[]),
            ],
            &[
                BF,
                BF,
                BF,
                "ScalarList",
                "ScalarList",
                "ScalarList",
                "Scalar",
                "ScalarList",
                "Scalar",
            ],
            vec![],
            &["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"],
        );
        let m = model_op("aten::convolution", &a).unwrap();
        assert_eq!(m.flops, 924_844_032.0 + 602_112.0);
        // (602_112 + 589_824 + 768 + 602_112)*2
        assert_eq!(m.bytes, 3_589_632.0);
        assert_eq!(m.params.get("stride").unwrap().tracelens_repr(), "(16, 16)");
        assert_eq!(m.params.get("convNd"), Some(&ParamValue::Str("conv2d".into())));
    }

    /// LayerNorm (4,197,768) affine with bias: 3*768 + 3*605184 + 3*768 + 2*605184 =
    /// 3_030_528 FLOPs; 605184*2*2 + 6*768*2 = 2_429_952 B (TraceLens 2.3173828125 MB).
    #[test]
    fn layer_norm_matches_tracelens_formula() {
        let a = args(
            vec![t(&[4, 197, 768]), t(&[]), t(&[768]), t(&[768]), t(&[]), t(&[])],
            &[BF, "ScalarList", BF, BF, "Scalar", "Scalar"],
            vec![],
            &["", "[768]", "", "", "1e-12", "True"],
        );
        let m = model_op("aten::layer_norm", &a).unwrap();
        assert_eq!(m.flops, 3_030_528.0);
        assert_eq!(m.bytes, 2_429_952.0);
        assert_eq!(m.params.get("num_channels"), Some(&ParamValue::Int(768)));
    }

    /// add_ (4,768,14,14) + (1,768,1,1): 602112 FLOPs; (602112 + 768 + 602112)*2 B.
    #[test]
    fn broadcast_add() {
        let a = args(
            vec![t(&[4, 768, 14, 14]), t(&[1, 768, 1, 1]), t(&[])],
            &[BF, BF, "Scalar"],
            vec![],
            &["", "", "1"],
        );
        let m = model_op("aten::add_", &a).unwrap();
        assert_eq!(m.flops, 602_112.0);
        assert_eq!(m.bytes, 2_409_984.0);
        assert_eq!(
            m.params.get("dtypes").unwrap().tracelens_repr(),
            "('c10::BFloat16', 'c10::BFloat16', None)"
        );
        // A Python scalar operand counts as one 4-byte element (TraceLens).
        let s = args(
            vec![t(&[10]), t(&[]), t(&[])],
            &["float", "Scalar", "Scalar"],
            vec![],
            &["", "2", "1"],
        );
        let m = model_op("aten::mul", &s).unwrap();
        assert_eq!(m.bytes, 10.0 * 4.0 + 4.0 + 10.0 * 4.0);
    }

    #[test]
    fn reduce_reads_dim() {
        let a = args(
            vec![t(&[8, 16]), t(&[]), t(&[])],
            &["float", "ScalarList", "Scalar"],
            vec![],
            &["", "[-1]", "False"],
        );
        let m = model_op("aten::sum", &a).unwrap();
        assert_eq!(m.flops, 128.0);
        assert_eq!(m.bytes, 128.0 * 4.0 + 8.0 * 4.0);
    }

    /// Conv backward of the ViT patch embedding with all three gradients:
    /// 2 × 924_844_032 + 602_112 FLOPs; dX: dY + W → X, dW: dY + X → W, db: dY → 768.
    #[test]
    #[allow(clippy::many_single_char_names)]
    fn conv_backward_by_hand() {
        let a = args(
            vec![t(&[4, 768, 14, 14]), t(&[4, 3, 224, 224]), t(&[768, 3, 16, 16]), t(&[])],
            &[BF, BF, BF, "ScalarList"],
            vec![],
            &[
                "",
                "",
                "",
                "[768]",
                "[16, 16]",
                "[0, 0]",
                "[1, 1]",
                "False",
                "[0, 0]",
                "1",
                "[True, True, True]",
            ],
        );
        let m = model_op("aten::convolution_backward", &a).unwrap();
        assert_eq!(m.table, Table::ConvBwd);
        assert_eq!(m.flops, 2.0 * 924_844_032.0 + 602_112.0);
        let (x, w, o) = (602_112.0, 589_824.0, 602_112.0);
        assert_eq!(m.work.bytes_read, 2.0 * ((o + w) + (o + x) + o));
        assert_eq!(m.work.bytes_written, 2.0 * (x + w + 768.0));
        // Only the weight gradient.
        let mut b = a.clone();
        b.concrete_inputs[10] = "[False, True, False]".to_string();
        assert_eq!(model_op("aten::convolution_backward", &b).unwrap().flops, 924_844_032.0);
    }

    /// Flash attention backward, 1×8×141×64 non-causal: the core model's five matmuls,
    /// 2*B*H*N*N*(3*d + 2*d) = 2*8*141*141*320.
    #[test]
    fn sdpa_backward_uses_core_model() {
        let q = t(&[1, 8, 141, 64]);
        let a = args(
            vec![q.clone(), q.clone(), q.clone(), q.clone(), q, t(&[1, 8, 141])],
            &[BF; 6],
            vec![],
            &["", "", "", "", "", "", "", "", "141", "141", "0.0", "False"],
        );
        let m = model_op("aten::_scaled_dot_product_flash_attention_backward", &a).unwrap();
        assert_eq!(m.table, Table::SdpaBwd);
        assert_eq!(m.flops, 2.0 * 8.0 * 141.0 * 141.0 * 320.0);
        assert_eq!(m.params.get("N_Q"), Some(&ParamValue::Int(141)));
    }

    /// Layer norm backward, (4,197,768), all gradients: 4E + 5E FLOPs; bytes
    /// dY + X + invstd + weight read, dX + dW + db written.
    #[test]
    fn layer_norm_backward_by_hand() {
        let x = t(&[4, 197, 768]);
        let a = args(
            vec![
                x.clone(),
                x,
                t(&[]),
                t(&[4, 197, 1]),
                t(&[4, 197, 1]),
                t(&[768]),
                t(&[768]),
                t(&[]),
            ],
            &[BF, BF, "ScalarList", "float", "float", BF, BF, "ScalarList"],
            vec![],
            &["", "", "[768]", "", "", "", "", "[True, True, True]"],
        );
        let m = model_op("aten::native_layer_norm_backward", &a).unwrap();
        let e = 605_184.0;
        assert_eq!(m.flops, 9.0 * e);
        assert_eq!(m.work.bytes_read, (2.0 * e + 768.0 + 768.0) * 2.0);
        assert_eq!(m.work.bytes_written, (e + 2.0 * 768.0) * 2.0);
    }

    proptest::proptest! {
        /// Any recorded arguments give a model or an error, never a panic; a model's
        /// FLOPs and bytes are finite and non-negative.
        #[test]
        fn models_never_panic(
            name in proptest::sample::select(MODELLED.to_vec()),
            dims in proptest::collection::vec(
                proptest::collection::vec(proptest::prop_oneof![-3i64..5000, proptest::num::i64::ANY], 0..6),
                0..12,
            ),
            types in proptest::collection::vec(
                proptest::sample::select(vec![BF, "float", "Scalar", "", "long int", "weird"]),
                0..12,
            ),
            concrete in proptest::collection::vec(
                proptest::sample::select(vec!["", "1", "0", "-1", "True", "False", "[1, 1]", "[0]", "[2, 2, 2]", "[True, False, True]", "[-1]", "0.5", "[", "x"]),
                0..16,
            ),
        ) {
            let a = OpArgs {
                input_dims: dims.into_iter().map(Dims::Tensor).collect(),
                input_types: types.iter().map(|s| (*s).to_string()).collect(),
                input_strides: vec![],
                concrete_inputs: concrete.iter().map(|s| (*s).to_string()).collect(),
            };
            if let Ok(m) = model_op(name, &a) {
                proptest::prop_assert!(m.flops.is_finite() && m.flops >= 0.0);
                proptest::prop_assert!(m.bytes.is_finite() && m.bytes >= 0.0);
            }
        }
    }

    const MODELLED: [&str; 22] = [
        "aten::mm",
        "aten::addmm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::_scaled_mm",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_flash_attention_backward",
        "flash_attn::_flash_attn_forward",
        "aten::convolution",
        "aten::convolution_backward",
        "aten::layer_norm",
        "aten::batch_norm",
        "aten::group_norm",
        "aten::native_group_norm",
        "aten::_fused_rms_norm",
        "aten::native_layer_norm_backward",
        "aten::native_batch_norm_backward",
        "aten::add",
        "aten::gelu",
        "aten::sum",
        "aten::amax",
    ];

    /// Odd arguments are errors, never panics.
    #[test]
    fn odd_args_do_not_panic() {
        let names = [
            "aten::mm",
            "aten::addmm",
            "aten::bmm",
            "aten::baddbmm",
            "aten::_scaled_mm",
            "aten::_scaled_dot_product_flash_attention",
            "flash_attn::_flash_attn_forward",
            "aten::convolution",
            "aten::layer_norm",
            "aten::batch_norm",
            "aten::native_group_norm",
            "aten::_fused_rms_norm",
            "aten::add",
            "aten::copy_",
            "aten::convolution_backward",
            "aten::_scaled_dot_product_efficient_attention_backward",
            "aten::native_layer_norm_backward",
            "aten::native_batch_norm_backward",
            "aten::cudnn_batch_norm_backward",
            "aten::sum",
        ];
        let cases = vec![
            OpArgs::default(),
            args(vec![t(&[])], &["Scalar"], vec![], &["1"]),
            args(
                vec![Dims::List(vec![vec![2, 3]]), t(&[3])],
                &["TensorList", "float"],
                vec![],
                &["", ""],
            ),
            args(
                vec![t(&[-1, 3]), t(&[3, -2]), t(&[0, 0, 0])],
                &["float", "weird", "float"],
                vec![],
                &["[", "x", "True"],
            ),
            args(
                vec![t(&[i64::MAX, i64::MAX, i64::MAX, i64::MAX]); 4],
                &[BF; 4],
                vec![],
                &["", "", "", "[1, 1]", "[0]", "[1]", "False", "[0]", "0"],
            ),
        ];
        for n in names {
            for c in &cases {
                let _ = model_op(n, c);
            }
        }
        assert!(matches!(
            model_op("aten::view", &OpArgs::default()),
            Err(ModelError::Unmodelled(_))
        ));
    }

    #[test]
    fn categories() {
        assert_eq!(categorize_op("aten::addmm", None), Category::Gemm);
        assert_eq!(categorize_op("aten::_flash_attention_forward", None), Category::Sdpa);
        assert_eq!(categorize_op("aten::cudnn_convolution", None), Category::Conv);
        assert_eq!(
            categorize_op(
                "aten::gelu",
                Some("void at::native::vectorized_elementwise_kernel<4, Gelu>")
            ),
            Category::Elementwise
        );
        assert_eq!(
            categorize_op("aten::_local_scalar_dense", Some("Memcpy DtoH (Device -> Pageable)")),
            Category::Memcpy
        );
        assert_eq!(
            categorize_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)"),
            Some(Category::Comm)
        );
        assert_eq!(
            tracelens_category(
                "aten::_flash_attention_forward",
                Some("void pytorch_flash::flash_fwd_kernel")
            ),
            "other"
        );
        assert_eq!(tracelens_category("aten::native_layer_norm", None), "NORM_fwd");
        assert_eq!(
            tracelens_category("aten::all", Some("void at::native::reduce_kernel<512, 1>")),
            "reduce"
        );
        assert_eq!(
            tracelens_category(
                "aten::cat",
                Some("void at::native::(anonymous namespace)::CatArrayBatchedCopy")
            ),
            "other"
        );
        assert_eq!(tracelens_category("aten::cudnn_convolution", None), "CONV_fwd");
        assert_eq!(Category::Normalization.as_str(), "Normalization");
        assert_eq!(
            categorize_op("aten::copy_", Some("Memcpy HtoD (Pageable -> Device)")),
            Category::Memcpy
        );
        assert_eq!(
            categorize_op("aten::cudnn_convolution", Some("Memset (Device)")),
            Category::Conv
        );
        assert_eq!(tracelens_category("aten::native_layer_norm_backward", None), "NORM_bwd");
        assert_eq!(categorize_kernel("void at::native::normal_kernel<float>"), None);
        assert_eq!(categorize_kernel("void convert_fp8_kernel<float>"), None);
        assert_eq!(
            categorize_kernel("void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>"),
            Some(Category::Conv)
        );
    }
}
