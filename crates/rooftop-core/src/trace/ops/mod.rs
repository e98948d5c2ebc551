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
//! [`OpModelError`], never a panic. Ops without a model are [`OpModelError::Unmodelled`]:
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

mod args;
mod attention;
mod category;
mod conv;
mod coverage;
mod elementwise;
mod embedding;
mod gemm;
mod misc;
mod norm;
pub mod optimizer;
mod params;
mod pool;
mod reduction;
mod softmax;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_more;
mod triton;

use args::Args;
use attention::sdpa;
use conv::{conv, conv_bwd};
use elementwise::{binary, unary};
use gemm::gemm;
use norm::{norm, norm_bwd, rms_norm};
use reduction::reduce;

pub use category::{
    categorize, categorize_in, categorize_kernel, categorize_kernel_shared, categorize_op,
    is_comm_kernel, is_comm_kernel_shared, tracelens_category, Category, CategoryMemo, Table,
};
pub use coverage::{
    model_coverage, model_coverage_memo, shapes_recorded, ModelCoverage, UncoveredRow,
};
pub use params::{ParamValue, Params};

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
    /// `argmax`/`argmin`: a reduction whose output is `long`.
    ArgReduce,
    /// `_softmax`, `_log_softmax`, `_safe_softmax` (`log` for the log variant).
    Softmax {
        log: bool,
    },
    /// `_softmax_backward_data`, `_log_softmax_backward_data`.
    SoftmaxBwd {
        log: bool,
    },
    /// `cat` of a tensor list along one axis.
    Cat,
    /// `index_select(self, dim, index)`.
    IndexSelect,
    /// `embedding(weight, indices, ...)`.
    Embedding,
    /// `embedding_dense_backward` / `embedding_backward(grad, indices, num_weights, ...)`.
    EmbeddingBwd,
    /// `_embedding_bag` / `embedding_bag(weight, indices, offsets, ..., mode, ...)`.
    EmbeddingBag,
    /// fbgemm's table-batched (split) embedding lookups.
    SplitEmbedding,
    /// Old cuDNN/MIOpen convolution backward ops (`cudnn_convolution_backward`,
    /// `_input`, `_weight`).
    ConvBwdLegacy(conv::Legacy),
    /// Pooling forward and backward.
    Pool(pool::PoolKind),
    /// Element-wise ops outside TraceLens's two tables (comparisons, fills, random,
    /// dropout, `where`, losses, multi-tensor `_foreach_*`).
    Other(misc::Misc),
    /// A Triton kernel `torch.compile` generated, launched as its own op.
    Triton,
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
        "aten::sum" | "aten::mean" | "aten::max" | "aten::min" | "aten::amax" | "aten::amin"
        | "aten::all" | "aten::any" | "aten::prod" => Kind::Reduce,
        "aten::argmax" | "aten::argmin" => Kind::ArgReduce,
        "aten::_softmax" | "aten::_safe_softmax" => Kind::Softmax { log: false },
        "aten::_log_softmax" => Kind::Softmax { log: true },
        "aten::_softmax_backward_data" => Kind::SoftmaxBwd { log: false },
        "aten::_log_softmax_backward_data" => Kind::SoftmaxBwd { log: true },
        "aten::cat" | "aten::_cat" => Kind::Cat,
        "aten::index_select" => Kind::IndexSelect,
        "aten::embedding" => Kind::Embedding,
        "aten::embedding_dense_backward" | "aten::embedding_backward" => Kind::EmbeddingBwd,
        "aten::_embedding_bag" | "aten::embedding_bag" | "aten::_embedding_bag_forward_only" => {
            Kind::EmbeddingBag
        }
        n => {
            if let Some(l) = conv::legacy(n) {
                Kind::ConvBwdLegacy(l)
            } else if let Some(p) = pool::kind(n) {
                Kind::Pool(p)
            } else if let Some(m) = misc::kind(n) {
                Kind::Other(m)
            } else if triton::is_triton_op(n) {
                Kind::Triton
            } else if embedding::is_split_embedding(n) {
                Kind::SplitEmbedding
            } else {
                Kind::Inference(super::inference::table_of(n)?)
            }
        }
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
            Kind::ConvBwd | Kind::ConvBwdLegacy(_) => Table::ConvBwd,
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
            Kind::Reduce | Kind::ArgReduce => Table::Reduce,
            Kind::Softmax { .. } | Kind::SoftmaxBwd { .. } => Table::Softmax,
            Kind::Cat | Kind::IndexSelect => Table::DataMovement,
            Kind::Embedding | Kind::EmbeddingBwd | Kind::EmbeddingBag | Kind::SplitEmbedding => {
                Table::Embedding
            }
            Kind::Pool(_) => Table::Pool,
            Kind::Other(_) => Table::Elementwise,
            Kind::Triton => Table::Triton,
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
pub fn model_op_in(model: &TraceModel, i: usize) -> Result<OpModel, OpModelError> {
    if model.xla.is_some() {
        return super::xla::model_op(model, i);
    }
    let Some(o) = model.ops.get(i) else {
        return Err(OpModelError::Unmodelled(format!("op {i}")));
    };
    listed_model(model, i, &o.args)
}

/// The model of op `i` of a PyTorch trace with `args` in place of its recorded ones (the
/// optimizer's recovered lists, [`optimizer::recovered`]).
pub(super) fn listed_model(
    model: &TraceModel,
    i: usize,
    args: &OpArgs,
) -> Result<OpModel, OpModelError> {
    let Some(o) = model.ops.get(i) else {
        return Err(OpModelError::Unmodelled(format!("op {i}")));
    };
    // A tensor list's dtype is not recorded (`TensorList`): its element size is in the
    // name of the kernel the op launched (`OpaqueType<2>`, `Functor<float, …>`).
    let listed = matches!(args.input_types.first().map(String::as_str), Some("TensorList"));
    let kind = kind_of(&o.name);
    if listed && matches!(kind, Some(Kind::Cat | Kind::Other(misc::Misc::Foreach(_)))) {
        let bpe = super::attrib::subtree_events(model, i).iter().find_map(|&e| {
            let k = &model.gpu.get(e as usize)?.name;
            embedding::opaque_bytes(k).or_else(|| misc::functor_bytes(k))
        });
        let a = Args { args };
        let res = match kind {
            Some(Kind::Other(misc::Misc::Foreach(per))) => misc::foreach(&a, per, bpe),
            _ => embedding::cat(&a, bpe),
        };
        return res.map_err(|reason| OpModelError::BadArgs { op: o.name.to_string(), reason });
    }
    model_op(&o.name, args)
}

/// Whether an op's model depends on the trace around it (its kernels, its step, its
/// descendants), so that calls with equal arguments can differ.
pub fn context_dependent(name: &str) -> bool {
    super::inference::context_dependent(name)
        || matches!(name, "aten::cat" | "aten::_cat")
        || misc::is_foreach(name)
}

/// The model of op `i` of `model` with what the trace around it says: the inference
/// models that need the step or the model config ([`super::inference::Context`]), then
/// [`model_op_in`].
pub fn model_in_context(
    model: &TraceModel,
    i: usize,
    ctx: &super::inference::Context,
) -> Result<OpModel, OpModelError> {
    ctx.model(model, i).unwrap_or_else(|| model_op_in(model, i))
}

/// The work models of one trace's ops, each built once per distinct (op name, argument
/// record) and shared by the tables and the coverage: the reader shares one
/// [`OpArgs`] between ops with equal arguments, so a training step's thousands of calls
/// of a few shapes build a few models. An XLA op's model is its HLO instruction's, built
/// once per instruction (every execution of a module shares its instructions). Ops whose
/// model depends on the trace around them ([`context_dependent`]) are modelled per call,
/// as [`model_in_context`] does.
#[derive(Debug)]
pub struct ModelMemo<'m> {
    model: &'m TraceModel,
    ctx: &'m super::inference::Context,
    by_args: foldhash::HashMap<(&'m str, *const OpArgs), std::rc::Rc<OpModelResult>>,
    by_instr: foldhash::HashMap<*const super::xla::hlo::HloInstr, std::rc::Rc<OpModelResult>>,
}

/// A model or why there is none.
pub type OpModelResult = Result<OpModel, OpModelError>;

impl<'m> ModelMemo<'m> {
    /// An empty memo for `model`'s ops, with `ctx` for the models that need it.
    pub fn new(model: &'m TraceModel, ctx: &'m super::inference::Context) -> ModelMemo<'m> {
        ModelMemo {
            model,
            ctx,
            by_args: foldhash::HashMap::default(),
            by_instr: foldhash::HashMap::default(),
        }
    }

    /// The trace the memo models.
    pub fn model(&self) -> &'m TraceModel {
        self.model
    }

    /// The models' context.
    pub fn context(&self) -> &'m super::inference::Context {
        self.ctx
    }

    /// [`model_in_context`] of op `i`.
    pub fn get(&mut self, i: usize) -> std::rc::Rc<OpModelResult> {
        let (model, ctx) = (self.model, self.ctx);
        let build = || std::rc::Rc::new(model_in_context(model, i, ctx));
        match model.ops.get(i) {
            Some(o) if !context_dependent(&o.name) => match model.xla.as_deref() {
                // The model of an XLA op is its instruction's alone (`xla::model_op`).
                Some(x) => match x.instr_of(i) {
                    Some(instr) => self
                        .by_instr
                        .entry(std::sync::Arc::as_ptr(instr))
                        .or_insert_with(build)
                        .clone(),
                    None => build(),
                },
                None => self
                    .by_args
                    .entry((o.name.as_ref(), std::sync::Arc::as_ptr(&o.args)))
                    .or_insert_with(build)
                    .clone(),
            },
            _ => build(),
        }
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
pub enum OpModelError {
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
/// [`OpModelError::Unmodelled`] for ops without a model, [`OpModelError::BadArgs`] when the
/// recorded arguments are missing or do not fit the model (no shapes recorded, a dtype
/// without a known size, a convolution whose filter does not fit its input).
pub fn model_op(name: &str, args: &OpArgs) -> Result<OpModel, OpModelError> {
    let kind = kind_of(name).ok_or_else(|| OpModelError::Unmodelled(name.to_string()))?;
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
        Kind::Reduce => reduce(name, &a, None),
        Kind::ArgReduce => reduce(name, &a, Some("long int")),
        Kind::Softmax { log } => softmax::forward(log, &a),
        Kind::SoftmaxBwd { log } => softmax::backward(log, &a),
        Kind::Cat => embedding::cat(&a, None),
        Kind::IndexSelect => embedding::index_select(&a),
        Kind::Embedding => embedding::embedding(&a),
        Kind::EmbeddingBwd => embedding::embedding_bwd(name, &a),
        Kind::EmbeddingBag => embedding::embedding_bag(name, &a),
        Kind::SplitEmbedding => embedding::split_embedding(name, &a),
        Kind::ConvBwdLegacy(l) => conv::conv_bwd_legacy(l, &a),
        Kind::Pool(p) => pool::pool(p, &a),
        Kind::Other(m) => misc::model(m, &a),
        Kind::Triton => triton::triton(name, &a),
        Kind::Inference(_) => super::inference::model_args(name, args)
            .unwrap_or_else(|| Err(format!("no inference model for `{name}`"))),
    };
    res.map_err(|reason| OpModelError::BadArgs { op: name.to_string(), reason })
}
