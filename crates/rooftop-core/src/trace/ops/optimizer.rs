//! The parameter lists of an optimizer's `_foreach_*` ops when the profiler did not
//! record them.
//!
//! PyTorch 2.11 records the tensor lists of `_foreach_*` ops as `[]` (`Input Dims`
//! `[[], []]`), so the optimizer step — a quarter of an eager training step on a small
//! transformer — would have no work model. The sizes are elsewhere in the same trace: the
//! backward pass ends with one `torch::autograd::AccumulateGrad` per parameter, whose
//! `Input Dims` is the gradient's shape (the parameter's) and whose `Input type` its
//! dtype. The lists of the optimizer step that follows are those parameters (the
//! parameters, their gradients and the optimizer's state: one shape list).
//!
//! The recovery is checked, not assumed: PyTorch's multi-tensor kernels
//! (`multi_tensor_apply_kernel`, `aten/src/ATen/native/cuda/MultiTensorApply.cuh`) give
//! each block one chunk of `kChunkSize` = 65,536 elements of one tensor, so the op's
//! kernels launch Σ ⌈numel / 65,536⌉ blocks over all their launches. The recovered list
//! is used only when that count equals the blocks the op's kernels launched; otherwise
//! the op stays without a model and says why (several backward passes before one step —
//! gradient accumulation — or parameters without gradients, for instance).

use super::{listed_model, OpModel, OpModelError};
use crate::trace::model::{Dims, GpuEvent, OpArgs, TraceModel};
use std::sync::Arc;

/// PyTorch's multi-tensor apply chunk, elements per block.
pub const CHUNK_ELEMENTS: u128 = 65_536;

const ACCUMULATE_GRAD: &str = "torch::autograd::AccumulateGrad";

/// One backward pass's parameters: the shapes of its `AccumulateGrad` ops, in order.
#[derive(Debug, Clone)]
struct GradRun {
    /// Start of the last `AccumulateGrad` of the run, ns.
    last_ts: i64,
    shapes: Arc<Vec<Vec<i64>>>,
}

/// The backward passes' parameter lists of a trace, by time.
#[derive(Debug, Clone, Default)]
pub struct GradRuns {
    runs: Vec<GradRun>,
}

impl GradRuns {
    /// The runs of `model`: consecutive `AccumulateGrad` ops with no `_foreach_*` op
    /// between them. Empty (and nothing scanned twice) when no `_foreach_*` op lacks its
    /// lists.
    pub fn new(model: &TraceModel) -> GradRuns {
        let mut foreach: Vec<i64> = Vec::new();
        let mut grads: Vec<(i64, &[i64])> = Vec::new();
        let mut needed = false;
        for o in &model.ops {
            if super::misc::is_foreach(&o.name) {
                foreach.push(o.ts_ns);
                needed |= lists_missing(&o.args);
            } else if &*o.name == ACCUMULATE_GRAD {
                if let Some(Dims::Tensor(s)) = o.args.input_dims.first() {
                    grads.push((o.ts_ns, s));
                }
            }
        }
        if !needed || grads.is_empty() {
            return GradRuns::default();
        }
        foreach.sort_unstable();
        grads.sort_by_key(|g| g.0);
        let mut runs: Vec<GradRun> = Vec::new();
        let mut current: Vec<Vec<i64>> = Vec::new();
        let mut prev_ts: Option<i64> = None;
        for (ts, shape) in grads {
            // A `_foreach_*` op between this gradient and the previous one closes the run.
            if let Some(p) = prev_ts {
                let k = foreach.partition_point(|&f| f <= p);
                if foreach.get(k).is_some_and(|&f| f < ts) {
                    runs.push(GradRun {
                        last_ts: p,
                        shapes: Arc::new(std::mem::take(&mut current)),
                    });
                }
            }
            current.push(shape.to_vec());
            prev_ts = Some(ts);
        }
        if let Some(p) = prev_ts {
            runs.push(GradRun { last_ts: p, shapes: Arc::new(current) });
        }
        GradRuns { runs }
    }

    /// The last run that ended before `ts`.
    fn before(&self, ts: i64) -> Option<&GradRun> {
        let k = self.runs.partition_point(|r| r.last_ts < ts);
        k.checked_sub(1).and_then(|k| self.runs.get(k))
    }
}

/// Whether an op's first tensor list was recorded without its tensors.
fn lists_missing(a: &OpArgs) -> bool {
    a.input_types.first().is_some_and(|t| t == "TensorList")
        && match a.input_dims.first() {
            Some(Dims::Tensor(s)) => s.is_empty(),
            Some(Dims::List(l)) => l.is_empty(),
            None => true,
        }
}

/// The model of `_foreach_*` op `op` from the parameters of the backward pass before it,
/// when its lists were not recorded and its kernels launched a block count that matches
/// them (module docs); `None` when the op is not such an op or launched no
/// multi-tensor kernel (nothing to check, no GPU time to model).
pub fn recovered(
    model: &TraceModel,
    op: usize,
    runs: &GradRuns,
) -> Option<Result<OpModel, OpModelError>> {
    let o = model.ops.get(op)?;
    if !super::misc::is_foreach(&o.name) || !lists_missing(&o.args) {
        return None;
    }
    let blocks: u128 = crate::trace::attrib::subtree_events(model, op)
        .iter()
        .filter_map(|&e| model.gpu.get(e as usize))
        .filter(|e| e.name.contains("multi_tensor_apply_kernel"))
        .filter_map(GpuEvent::grid)
        .map(|g| g.iter().map(|&d| u128::from(d)).product::<u128>())
        .sum();
    if blocks == 0 {
        return None;
    }
    let bad = |reason: String| OpModelError::BadArgs { op: o.name.to_string(), reason };
    let Some(run) = runs.before(o.ts_ns) else {
        return Some(Err(bad(
            "the trace records the tensor lists without their shapes (`Input Dims` `[]`) \
             and no backward pass (AccumulateGrad ops) precedes the op to recover them from"
                .to_string(),
        )));
    };
    let mut chunks = 0u128;
    let mut elements = 0u128;
    for s in run.shapes.iter() {
        let n = match super::args::numel(s) {
            Ok(n) => n,
            Err(e) => return Some(Err(bad(e))),
        };
        elements = elements.saturating_add(n);
        chunks = chunks.saturating_add(n.div_ceil(CHUNK_ELEMENTS));
    }
    if chunks != blocks {
        return Some(Err(bad(format!(
            "the trace records the tensor lists without their shapes; the {} parameters of \
             the backward pass before it ({elements} elements) would launch {chunks} blocks \
             of {CHUNK_ELEMENTS} elements, its kernels launched {blocks}, so they are not \
             its lists",
            run.shapes.len()
        ))));
    }
    let mut args: OpArgs = (*o.args).clone();
    for (d, t) in args.input_dims.iter_mut().zip(&args.input_types) {
        if t == "TensorList" {
            *d = Dims::List(run.shapes.as_ref().clone());
        }
    }
    Some(listed_model(model, op, &args).map(|mut m| {
        m.work.assumptions.push(format!(
            "the lists' {} tensors ({elements} elements) are the parameters of the backward \
             pass before the op (its AccumulateGrad shapes), checked against the {blocks} \
             blocks of {CHUNK_ELEMENTS} elements its kernels launched",
            run.shapes.len()
        ));
        m
    }))
}
