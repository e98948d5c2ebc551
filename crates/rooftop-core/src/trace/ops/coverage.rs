//! How much of a trace's GPU time the work models cover: the share of the
//! non-communication kernel time whose kernels belong to an op with a FLOPs/bytes model,
//! and the rest, one row per op and reason.
//!
//! A kernel belongs to the op that launched it (for a CUDA/HIP graph replay whose
//! capture is in the trace: the op that launched its position during the capture,
//! [`crate::trace::gaps::graphs::capture_map`]). It is covered when that op or one of
//! its ancestors has a model that fits its recorded arguments: a modelled op's numbers
//! hold the work of everything it calls (`aten::linear` → `aten::addmm`,
//! `vllm::moe_forward` → its kernels). Communication kernels (NCCL/RCCL, custom
//! all-reduce) are left out of both sides: their floor is the link, not a work model.
//! Memcpy and memset events are not kernels and are left out too.
//!
//! An uncovered kernel's row names the innermost op whose name has a model but whose
//! arguments do not fit it (with the model's reason: no shapes recorded, a list size
//! not recorded, ...), else the op that launched it (`no work model for …`), else
//! `(no op)` with why it has none.

use super::{op_table_in, ModelMemo, OpModelError};
use crate::trace::inference::Context;
use crate::trace::model::{GpuKind, TraceModel};
use foldhash::{HashMap, HashSet};
use serde::Serialize;
use std::sync::Arc;

/// Kernel time outside every work model, for one op name and reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UncoveredRow {
    /// The op (or `(no op)`).
    pub op: String,
    /// Why it has no FLOPs or bytes.
    pub reason: String,
    pub kernels: u64,
    /// Summed kernel durations, µs.
    pub time_us: f64,
    /// Share of the non-communication kernel time, percent.
    pub percent: f64,
}

/// The work models' coverage of one trace.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ModelCoverage {
    /// Summed durations of the non-communication kernels, µs.
    pub kernel_time_us: f64,
    /// The part of it in ops with a FLOPs/bytes model, µs.
    pub modelled_us: f64,
    /// `modelled_us / kernel_time_us` in percent; `None` without kernels.
    pub percent: Option<f64>,
    /// Whether the trace recorded op shapes (`record_shapes=True`): some op has a
    /// recorded `Input Dims` entry. `None` for profiles without PyTorch ops.
    pub shapes_recorded: Option<bool>,
    /// The uncovered time by op and reason, largest first.
    pub uncovered: Vec<UncoveredRow>,
}

/// Whether `model`'s ops carry recorded shapes; `None` when it has no CPU ops.
pub fn shapes_recorded(model: &TraceModel) -> Option<bool> {
    if model.ops.is_empty() || model.xla.is_some() {
        return None;
    }
    Some(model.ops.iter().any(|o| !o.args.input_dims.is_empty()))
}

/// Whether an op is modelled: `Some(Ok(()))`, `Some(Err(reason))` when its name has a model
/// its arguments do not fit, `None` when its name has none.
/// The reasons are shared: a trace's many ops give a few distinct reasons.
type Verdict = Option<Result<(), Arc<str>>>;

/// An op's index and the index of its graph replay's step ([`NO_STEP`]: none), the key
/// of the per-op tables (8 bytes: one entry per op of a long trace).
type OpStep = (u32, u32);

/// No graph replay step.
const NO_STEP: u32 = u32::MAX;

fn op_step(op: u32, step: Option<usize>) -> OpStep {
    // A step index is below the number of events, which op indices (u32) bound.
    (op, step.map_or(NO_STEP, |s| u32::try_from(s).unwrap_or(NO_STEP - 1)))
}

/// A value per [`OpStep`]: by op in a vector for the keys without a step (all of them
/// but a graph replay's), in a hash map for the rest. A long trace has an entry for
/// most of its ops: a vector is made once, where a hash map is rebuilt at each doubling.
struct PerOp<V> {
    plain: Vec<Option<V>>,
    stepped: HashMap<OpStep, V>,
}

impl<V> PerOp<V> {
    fn new(ops: usize) -> Self {
        PerOp {
            plain: std::iter::repeat_with(|| None).take(ops).collect(),
            stepped: HashMap::default(),
        }
    }

    fn get_or_insert_with(&mut self, key: OpStep, make: impl FnOnce() -> V) -> &mut V {
        match self.plain.get_mut(key.0 as usize).filter(|_| key.1 == NO_STEP) {
            Some(slot) => slot.get_or_insert_with(make),
            None => self.stepped.entry(key).or_insert_with(make),
        }
    }
}

/// The coverage of `model`'s kernel time by the work models `ctx` gives.
pub fn model_coverage(model: &TraceModel, ctx: &Context) -> ModelCoverage {
    model_coverage_memo(&mut ModelMemo::new(model, ctx))
}

/// What a kernel's op chain gives: covered, or the uncovered row it counts in.
#[derive(Clone, Copy)]
enum Outcome {
    Covered,
    Row(u32),
}

/// The uncovered rows in first-seen order, found by (op, reason).
#[derive(Default)]
struct Rows {
    rows: Vec<((String, String), (u64, i64))>,
    index: HashMap<(String, String), u32>,
}

impl Rows {
    fn id(&mut self, key: (String, String)) -> u32 {
        let rows = &mut self.rows;
        *self.index.entry(key).or_insert_with_key(|k| {
            rows.push((k.clone(), (0, 0)));
            // As many rows as ops and names at most: below u32::MAX.
            (rows.len() - 1) as u32
        })
    }
}

/// [`model_coverage`] with the models `memo` built already (the tables' ones).
pub fn model_coverage_memo(memo: &mut ModelMemo<'_>) -> ModelCoverage {
    let (model, ctx) = (memo.model(), memo.context());
    let captured = crate::trace::gaps::graphs::capture_map(model);
    let shapes = shapes_recorded(model);
    // Per (op, step of a graph replay): Ok(()) when modelled, Err(reason) when its name
    // has a model that does not fit, None when its name has none.
    let mut verdicts: PerOp<Verdict> = PerOp::new(model.ops.len());
    let mut reasons: HashSet<Arc<str>> = HashSet::default();
    let mut shared = move |reason: String| -> Arc<str> {
        if let Some(r) = reasons.get(reason.as_str()) {
            return Arc::clone(r);
        }
        let r: Arc<str> = reason.into();
        reasons.insert(Arc::clone(&r));
        r
    };
    let mut verdict = |i: usize, replay_ts: Option<i64>| -> Verdict {
        let step = replay_ts.and_then(|t| ctx.step_index_at(t));
        verdicts
            .get_or_insert_with(op_step(i as u32, step), || {
                op_table_in(model, i)?;
                let m = match replay_ts.and_then(|t| ctx.model_at(model, i, t)) {
                    Some(m) => std::rc::Rc::new(m),
                    None => memo.get(i),
                };
                Some(match &*m {
                    Ok(_) => Ok(()),
                    Err(_) if shapes == Some(false) => {
                        Err(shared("the trace records no shapes (record_shapes=True)".to_string()))
                    }
                    Err(OpModelError::BadArgs { reason, .. }) => Err(shared(reason.clone())),
                    Err(e) => Err(shared(e.to_string())),
                })
            })
            .clone()
    };
    let mut total_ns = 0i64;
    let mut covered_ns = 0i64;
    let mut rows = Rows::default();
    // Kernels of one op (and replay step) share their outcome; kernels outside every op
    // share their row per launching call name.
    let mut outcomes: PerOp<Outcome> = PerOp::new(model.ops.len());
    let mut no_op: HashMap<Option<&str>, u32> = HashMap::default();
    // The last op's outcome: an op's kernels mostly follow one another.
    let mut last: Option<(OpStep, Outcome)> = None;
    for (gi, ev) in model.gpu.iter().enumerate() {
        if ev.kind != GpuKind::Kernel || super::is_comm_kernel_shared(&ev.name) {
            continue;
        }
        let dur = ev.dur_ns.max(0);
        total_ns += dur;
        let replay = captured.get(&(gi as u32)).copied();
        // A replayed kernel runs in the step of its replay, not of its capture.
        let replay_ts =
            replay.and(ev.runtime).and_then(|r| model.runtime.get(r as usize)).map(|r| r.ts_ns);
        let outcome = match replay.or(ev.op) {
            None => {
                let r = *no_op.entry(ev.launcher.as_deref()).or_insert_with(|| {
                    rows.id(("(no op)".to_string(), no_op_reason(model, ev.launcher.as_deref())))
                });
                Outcome::Row(r)
            }
            Some(first) => {
                let key = op_step(first, replay_ts.and_then(|t| ctx.step_index_at(t)));
                match last {
                    Some((k, o)) if k == key => o,
                    _ => {
                        let o = *outcomes.get_or_insert_with(key, || {
                            chain_outcome(model, first, replay_ts, &mut verdict, &mut rows)
                        });
                        last = Some((key, o));
                        o
                    }
                }
            }
        };
        match outcome {
            Outcome::Covered => covered_ns += dur,
            Outcome::Row(r) => {
                let r = &mut rows.rows[r as usize].1;
                r.0 += 1;
                r.1 += dur;
            }
        }
    }
    let pct = |ns: i64| if total_ns > 0 { ns as f64 / total_ns as f64 * 100.0 } else { 0.0 };
    let mut uncovered: Vec<UncoveredRow> = rows
        .rows
        .into_iter()
        .filter(|(_, (kernels, _))| *kernels > 0)
        .map(|((op, reason), (kernels, ns))| UncoveredRow {
            op,
            reason,
            kernels,
            time_us: ns as f64 / 1e3,
            percent: pct(ns),
        })
        .collect();
    uncovered.sort_by(|a, b| b.time_us.total_cmp(&a.time_us).then_with(|| a.op.cmp(&b.op)));
    ModelCoverage {
        kernel_time_us: total_ns as f64 / 1e3,
        modelled_us: covered_ns as f64 / 1e3,
        percent: (total_ns > 0).then(|| pct(covered_ns)),
        shapes_recorded: shapes_recorded(model),
        uncovered,
    }
}

/// Why a kernel launched by `launcher` outside every CPU op has no op.
fn no_op_reason(model: &TraceModel, launcher: Option<&str>) -> String {
    match (launcher, model.xla.is_some()) {
        (_, true) => "no XLA op names this kernel".to_string(),
        (Some(l), _) if crate::trace::gaps::is_graph_launch(l) => format!(
            "replayed by `{l}` outside any CPU op, and the graph's capture is not in the trace"
        ),
        (Some(l), _) => format!("launched by `{l}` outside any CPU op"),
        (None, _) => "no runtime call or op is linked to the kernel".to_string(),
    }
}

/// The outcome of the kernels of op `first`: covered when it or an ancestor is
/// modelled, else the row of the innermost op whose model does not fit (or of `first`).
fn chain_outcome(
    model: &TraceModel,
    first: u32,
    replay_ts: Option<i64>,
    verdict: &mut impl FnMut(usize, Option<i64>) -> Verdict,
    rows: &mut Rows,
) -> Outcome {
    let mut cur = Some(first);
    let mut bad: Option<(String, String)> = None;
    let mut guard = model.ops.len() + 1;
    while let Some(i) = cur {
        guard = guard.saturating_sub(1);
        if guard == 0 {
            break;
        }
        match verdict(i as usize, replay_ts) {
            Some(Ok(())) => return Outcome::Covered,
            Some(Err(reason)) if bad.is_none() => {
                bad = Some((model.ops[i as usize].name.to_string(), reason.to_string()));
            }
            _ => {}
        }
        cur = model.ops.get(i as usize).and_then(|o| o.parent);
    }
    let key = bad.unwrap_or_else(|| {
        let name = model.ops.get(first as usize).map_or("(no op)", |o| o.name.as_ref());
        (name.to_string(), format!("no work model for `{name}`"))
    });
    Outcome::Row(rows.id(key))
}
