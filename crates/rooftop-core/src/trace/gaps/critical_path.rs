//! The critical path of one window of one rank (graph rules in [`super::cp_graph`]): its
//! length, what bounds it (HTA's `bound_by`: CPU, GPU compute, GPU communication,
//! kernel-kernel overhead, launch overhead), the events on it in order, the ops ranked
//! by their share, and what-if scaling of chosen ops.
//!
//! - **Window**: the `instance`-th CPU annotation named `annotation`, or else whose name
//!   contains it (HTA's `critical_path_analysis(annotation, instance_id)` matches
//!   substrings), by start time; by default the first `ProfilerStep#` annotation, else
//!   the last inference-engine step annotation ([`crate::trace::inference::steps`]), else
//!   the whole trace.
//! - **Length**: the sum of the path's edge weights (HTA's summed `duration`). Zero-weight
//!   dependency and sync edges join CPU and GPU segments, so the length can be shorter
//!   than the time from the path's first node to its last.
//! - **Events**: each operator edge belongs to one trace event (HTA's attribution);
//!   consecutive edges of one event are one entry, with the event's name and start as
//!   the trace gives them. Launch delays and kernel-kernel gaps are entries of their own,
//!   named after the kernel they precede.
//! - **By op**: CPU time goes to the innermost op (a runtime call's time to the op that
//!   made it); a kernel's time, and the delay or gap before it, to the op that launched
//!   it — for a graph replay, the op that launched its position during the capture, when
//!   the capture is in the trace ([`super::graphs::capture_map`]).
//! - **What-if** (`NAME=FACTOR`): every operator edge of an event named `NAME` (an op, a
//!   runtime call or a kernel; a trailing `*` matches a prefix), of the events nested in
//!   such an op, and of the GPU events those launched, is scaled by `FACTOR`; the longest
//!   path is computed again.
//!   Both lengths come from the graph with HTA's zero-weight launch edges, so that no
//!   kernel starts before its launch; delays and gaps keep their measured lengths.

use super::super::model::TraceModel;
use super::super::ops::is_comm_kernel_shared;
use super::cp_graph::{build, CpGraph, Edge, EdgeKind, EvRef};
use super::step_timeline::{self, StepTimeline};
use super::Span;
use foldhash::HashMap as FastMap;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::str::FromStr;
use std::sync::Arc;

/// The largest `--what-if` factor accepted. A factor scales an op's time; a thousand
/// times slower is already past anything a change to the code makes, and larger ones
/// (`1e9`, likely meant as `1e-9`) only give a path of kiloseconds and a change in the
/// billions of percent, numbers that answer no question.
pub const MAX_WHAT_IF_FACTOR: f64 = 1000.0;

/// A what-if request: scale `target`'s time by `factor`.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIfSpec {
    pub target: String,
    pub factor: f64,
}

impl FromStr for WhatIfSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, f) = s.rsplit_once('=').ok_or_else(|| {
            format!("what-if '{s}': expected NAME=FACTOR, e.g. 'aten::mm=0.5' (half the time)")
        })?;
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("what-if '{s}': the op name before '=' is empty"));
        }
        let factor: f64 = f.trim().parse().map_err(|_| {
            format!(
                "what-if '{s}': the factor '{}' is not a number (0.5 halves the time)",
                f.trim()
            )
        })?;
        if !factor.is_finite() || factor < 0.0 {
            return Err(format!("what-if '{s}': the factor must be a finite number ≥ 0"));
        }
        if factor > MAX_WHAT_IF_FACTOR {
            return Err(format!(
                "what-if '{s}': the factor {} is over {MAX_WHAT_IF_FACTOR}: it multiplies the \
                 op's time (0.5 halves it, 2 doubles it), so a larger one models no change a \
                 program could make",
                f.trim()
            ));
        }
        Ok(WhatIfSpec { target: name.to_string(), factor })
    }
}

/// Settings of the critical-path section.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CpOptions {
    /// Annotation to take the window from (exact name, else substring); `None`: the
    /// first `ProfilerStep#`, else the last engine step, else the whole trace.
    pub annotation: Option<String>,
    /// Which instance of the annotation (0-based, by start time).
    pub instance: usize,
    pub what_if: Vec<WhatIfSpec>,
}

/// The window analysed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpWindow {
    /// The annotation it is, when it is one.
    pub annotation: Option<String>,
    pub start_us: f64,
    pub end_us: f64,
    /// How it was chosen, in words.
    pub basis: String,
}

/// One entry of the path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpEvent {
    /// The trace's name of the event (for delays and gaps: the kernel after them),
    /// shared with the model (a path repeats the same names many times).
    pub name: Arc<str>,
    /// The event's start as the trace gives it (for delays and gaps: their start), µs.
    pub ts: f64,
    /// The event's duration (delays and gaps: their length), µs.
    pub dur_us: f64,
    /// Time of this entry on the path, µs.
    pub on_path_us: f64,
    /// `cpu_op`, `runtime`, `annotation`, `kernel`, `memcpy`, `memset`, `launch_delay`,
    /// `kernel_gap`.
    pub kind: &'static str,
    /// GPU stream, for GPU events and the delays before them.
    pub stream: Option<i64>,
    /// Where this entry lies on the path (first segment's start, last segment's end), µs.
    pub path_start_us: f64,
    pub path_end_us: f64,
}

/// A name's share of the path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpRank {
    pub name: String,
    pub us: f64,
    pub percent: f64,
    /// Path entries counted.
    pub entries: u64,
}

/// One `bound_by` class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundShare {
    /// HTA's names: `cpu_bound`, `gpu_compute_bound`, `gpu_communication_bound`,
    /// `gpu_kernel_kernel_overhead`, `gpu_kernel_launch_overhead`.
    pub bound_by: &'static str,
    pub us: f64,
    pub percent: f64,
}

/// The result of one what-if request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    pub target: String,
    pub factor: f64,
    /// Trace events whose time was scaled.
    pub matched_events: u64,
    /// The path length without scaling, on the what-if graph, µs.
    pub baseline_us: f64,
    pub length_us: f64,
    pub saving_us: f64,
    pub saving_percent: f64,
    /// The op (by the same rule as [`CriticalPath::by_op`]) with the most time on the new
    /// path.
    pub new_top_op: Option<String>,
}

/// The critical-path section of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CriticalPath {
    pub window: CpWindow,
    /// Sum of the path's edge weights, µs.
    pub length_us: f64,
    pub nodes: u64,
    pub edges: u64,
    pub bound_by: Vec<BoundShare>,
    pub events: Vec<CpEvent>,
    /// By trace event name, largest first.
    pub ranked: Vec<CpRank>,
    /// By op, largest first.
    pub by_op: Vec<CpRank>,
    pub what_if: Vec<WhatIf>,
    /// The window's events in lanes with the path marked, for the HTML report (not in
    /// the JSON: the path itself is `events`).
    #[serde(skip_serializing)]
    pub timeline: StepTimeline,
}

/// Above this many nodes the section is not computed (a window of the whole of a very
/// large trace, about 1 GB of JSON): pick a step with `--cp-window`.
pub const MAX_NODES: usize = 4_000_000;

/// The window of `opts` in `model`.
///
/// # Errors
/// When the annotation is not in the trace or has fewer instances.
pub fn window(model: &TraceModel, opts: &CpOptions) -> Result<(Span, CpWindow), crate::InputError> {
    window_or_why(model, opts).map_err(crate::InputError)
}

/// [`window`], with the reason as text.
fn window_or_why(model: &TraceModel, opts: &CpOptions) -> Result<(Span, CpWindow), String> {
    let cpu_annotations = |pred: &dyn Fn(&str) -> bool| {
        let mut v: Vec<usize> = model
            .annotations
            .iter()
            .enumerate()
            .filter(|(_, a)| !a.on_gpu && pred(&a.name))
            .map(|(i, _)| i)
            .collect();
        v.sort_by_key(|&i| (model.annotations[i].ts_ns, i));
        v
    };
    let from = |i: usize, basis: String| {
        let a = &model.annotations[i];
        (
            Span { start_ns: a.ts_ns, end_ns: a.ts_ns + a.dur_ns },
            CpWindow {
                annotation: Some(a.name.clone()),
                start_us: a.ts_ns as f64 / 1e3,
                end_us: (a.ts_ns + a.dur_ns) as f64 / 1e3,
                basis,
            },
        )
    };
    if let Some(name) = &opts.annotation {
        // Exact names first (`ProfilerStep#7` would otherwise also match `…#70`).
        let exact = cpu_annotations(&|n: &str| n == name.as_str());
        let found = if exact.is_empty() {
            cpu_annotations(&|n: &str| n.contains(name.as_str()))
        } else {
            exact
        };
        return match found.get(opts.instance) {
            Some(&i) => Ok(from(
                i,
                format!("instance {} of the CPU annotations containing '{name}'", opts.instance),
            )),
            None if found.is_empty() => {
                Err(format!("no CPU annotation in the trace contains '{name}'"))
            }
            None => Err(format!(
                "the trace has {} containing '{name}'; instance {} does not exist (instances \
                 count from 0)",
                crate::diagnose::count(found.len() as u64, "CPU annotation", "CPU annotations"),
                opts.instance
            )),
        };
    }
    let steps = cpu_annotations(&|n: &str| n.starts_with("ProfilerStep#"));
    if let Some(&i) = steps.first() {
        return Ok(from(i, "the first ProfilerStep annotation".to_string()));
    }
    // Inference engines annotate their steps instead: the last one is the steadiest.
    let engine =
        cpu_annotations(&|n: &str| super::super::inference::steps::parse_step(n).is_some());
    if let Some(&i) = engine.last() {
        return Ok(from(i, "the last engine step annotation".to_string()));
    }
    let starts = model
        .ops
        .iter()
        .map(|o| (o.ts_ns, o.ts_ns + o.dur_ns))
        .chain(model.runtime.iter().map(|r| (r.ts_ns, r.ts_ns + r.dur_ns)))
        .chain(model.gpu.iter().map(|g| (g.ts_ns, g.ts_ns + g.dur_ns)));
    let (s, e) = starts.fold((i64::MAX, i64::MIN), |(s, e), (a, b)| (s.min(a), e.max(b)));
    if s > e {
        return Err("the trace has no events".to_string());
    }
    Ok((
        Span { start_ns: s, end_ns: e },
        CpWindow {
            annotation: None,
            start_us: s as f64 / 1e3,
            end_us: e as f64 / 1e3,
            basis: "the whole trace (no ProfilerStep annotation)".to_string(),
        },
    ))
}

fn ev_name(model: &TraceModel, ev: EvRef) -> &str {
    match ev {
        EvRef::Op(i) => model.ops.get(i as usize).map_or("", |o| o.name.as_ref()),
        EvRef::Runtime(i) => model.runtime.get(i as usize).map_or("", |r| r.name.as_ref()),
        EvRef::Annotation(i) => model.annotations.get(i as usize).map_or("", |a| a.name.as_str()),
        EvRef::Gpu(i) => model.gpu.get(i as usize).map_or("", |g| g.name.as_ref()),
    }
}

/// [`ev_name`], shared with the model where the model shares it (an annotation's name
/// is copied).
fn ev_name_shared(model: &TraceModel, ev: EvRef) -> Arc<str> {
    let shared = match ev {
        EvRef::Op(i) => model.ops.get(i as usize).map(|o| &o.name),
        EvRef::Runtime(i) => model.runtime.get(i as usize).map(|r| &r.name),
        EvRef::Gpu(i) => model.gpu.get(i as usize).map(|g| &g.name),
        EvRef::Annotation(_) => None,
    };
    shared.map_or_else(|| ev_name(model, ev).into(), Arc::clone)
}

fn ev_span(model: &TraceModel, ev: EvRef) -> (i64, i64) {
    match ev {
        EvRef::Op(i) => model.ops.get(i as usize).map_or((0, 0), |o| (o.ts_ns, o.dur_ns)),
        EvRef::Runtime(i) => model.runtime.get(i as usize).map_or((0, 0), |r| (r.ts_ns, r.dur_ns)),
        EvRef::Annotation(i) => {
            model.annotations.get(i as usize).map_or((0, 0), |a| (a.ts_ns, a.dur_ns))
        }
        EvRef::Gpu(i) => model.gpu.get(i as usize).map_or((0, 0), |g| (g.ts_ns, g.dur_ns)),
    }
}

fn ev_kind(model: &TraceModel, ev: EvRef) -> &'static str {
    match ev {
        EvRef::Op(_) => "cpu_op",
        EvRef::Runtime(_) => "runtime",
        EvRef::Annotation(_) => "annotation",
        EvRef::Gpu(i) => model.gpu.get(i as usize).map_or("kernel", |g| g.kind.as_str()),
    }
}

/// HTA's `bound_by` of an edge (`None` for zero-weight dependency and sync edges).
fn bound_by(model: &TraceModel, e: &Edge) -> Option<&'static str> {
    match e.kind {
        EdgeKind::KernelKernel => Some("gpu_kernel_kernel_overhead"),
        EdgeKind::LaunchDelay => Some("gpu_kernel_launch_overhead"),
        EdgeKind::Dependency | EdgeKind::Sync => None,
        EdgeKind::Operator => match e.attributed()? {
            EvRef::Gpu(i)
                if model.gpu.get(i as usize).is_some_and(|g| is_comm_kernel_shared(&g.name)) =>
            {
                Some("gpu_communication_bound")
            }
            EvRef::Gpu(_) => Some("gpu_compute_bound"),
            _ => Some("cpu_bound"),
        },
    }
}

/// The op that launched GPU event `i`: its own, or for a graph replay the op that
/// launched its position during the capture.
fn gpu_op(model: &TraceModel, captured: &HashMap<u32, u32>, i: u32) -> Option<u32> {
    model.gpu.get(i as usize).and_then(|x| x.op).or_else(|| captured.get(&i).copied())
}

/// The op an edge's time is credited to in [`CriticalPath::by_op`].
fn credited_op<'a>(
    model: &'a TraceModel,
    captured: &HashMap<u32, u32>,
    g: &CpGraph,
    e: &Edge,
) -> &'a str {
    let gpu_op = |i: u32| gpu_op(model, captured, i);
    let op = match e.kind {
        EdgeKind::LaunchDelay | EdgeKind::KernelKernel => match g.nodes[e.to as usize].ev() {
            EvRef::Gpu(i) => gpu_op(i),
            _ => None,
        },
        _ => match e.attributed() {
            Some(EvRef::Op(i)) => Some(i),
            Some(EvRef::Runtime(r)) => model.runtime.get(r as usize).and_then(|x| x.op),
            Some(EvRef::Gpu(i)) => gpu_op(i),
            Some(EvRef::Annotation(i)) => {
                return model.annotations.get(i as usize).map_or("", |a| a.name.as_str())
            }
            None => None,
        },
    };
    op.and_then(|o| model.ops.get(o as usize)).map_or("(no op)", |o| o.name.as_ref())
}

fn rank(map: FastMap<&str, (i64, u64)>, total: i64) -> Vec<CpRank> {
    let mut v: Vec<CpRank> = map
        .into_iter()
        .map(|(name, (ns, n))| CpRank {
            name: name.to_string(),
            us: ns as f64 / 1e3,
            percent: if total > 0 { ns as f64 / total as f64 * 100.0 } else { 0.0 },
            entries: n,
        })
        .collect();
    v.sort_by(|a, b| b.us.total_cmp(&a.us).then(a.name.cmp(&b.name)));
    v
}

/// The critical path of `model` with `opts`.
///
/// # Errors
/// When the window cannot be found, the window is too large ([`MAX_NODES`]), or the
/// graph has a cycle.
pub fn critical_path(
    model: &TraceModel,
    opts: &CpOptions,
) -> Result<CriticalPath, crate::InputError> {
    critical_path_or_why(model, opts).map_err(crate::InputError)
}

/// How many entries the path's `edges` make: one per run of operator edges of one event
/// and one per launch delay or kernel gap (edges of no time make none), as
/// [`critical_path_or_why`] makes them.
fn entries(edges: &[&Edge]) -> usize {
    let mut n = 0;
    let mut last: Option<EvRef> = None;
    for e in edges.iter().filter(|e| e.weight != 0) {
        match e.kind {
            EdgeKind::Operator => {
                let Some(ev) = e.attributed() else { continue };
                n += usize::from(last != Some(ev));
                last = Some(ev);
            }
            EdgeKind::LaunchDelay | EdgeKind::KernelKernel => {
                n += 1;
                last = None;
            }
            EdgeKind::Dependency | EdgeKind::Sync => {}
        }
    }
    n
}

/// [`critical_path`], with the reason as text.
fn critical_path_or_why(model: &TraceModel, opts: &CpOptions) -> Result<CriticalPath, String> {
    let (span, win) = window_or_why(model, opts)?;
    // Two nodes per CPU event (and at most one GPU event per launch call): refuse before
    // building a graph too large for the memory budget.
    let cpu_events = model.ops.iter().filter(|o| span.contains(o.ts_ns) && o.dur_ns > 0).count()
        + model.runtime.iter().filter(|r| span.contains(r.ts_ns) && r.dur_ns > 0).count();
    if 2 * cpu_events > MAX_NODES {
        return Err(format!(
            "the window ({}) holds {cpu_events} CPU events, more than the {} the critical path \
             is computed for; choose one step with --cp-window",
            win.basis,
            MAX_NODES / 2
        ));
    }
    let g = build(model, span, false);
    if g.nodes.is_empty() {
        return Err(
            "the window holds no CPU op, runtime call or launched GPU event (the trace has no \
             runtime calls, or the window is empty)"
                .to_string(),
        );
    }
    if g.nodes.len() > MAX_NODES {
        return Err(format!(
            "the window has {} graph nodes (more than {MAX_NODES}); choose one step with \
             --cp-window",
            g.nodes.len()
        ));
    }
    let captured = super::graphs::capture_map(model);
    let (path, len) = g.longest_path(&|_, e| e.weight).ok_or_else(|| {
        "the critical-path graph has a cycle (inconsistent timestamps)".to_string()
    })?;
    let edges: Vec<&Edge> = path.windows(2).filter_map(|w| g.edge_between(w[0], w[1])).collect();

    let mut bound: BTreeMap<&'static str, i64> = BTreeMap::new();
    // Room for the entries at once, exactly (grown by doubling, the copies left behind
    // are holes in the heap; room for one per edge, 46 MB for 2,500 JAX copies, came
    // fresh from the system where the graph's freed memory would do).
    let mut events: Vec<CpEvent> = Vec::with_capacity(entries(&edges));
    let mut last_ev: Option<EvRef> = None;
    // Keyed by names borrowed from the model: one string per row, not per edge.
    let mut by_name: FastMap<&str, (i64, u64)> = FastMap::default();
    let mut by_op: FastMap<&str, (i64, u64)> = FastMap::default();
    for e in &edges {
        if let Some(b) = bound_by(model, e) {
            *bound.entry(b).or_default() += e.weight;
        }
        if e.weight == 0 {
            continue;
        }
        let op = by_op.entry(credited_op(model, &captured, &g, e)).or_default();
        op.0 += e.weight;
        op.1 += 1;
        match e.kind {
            EdgeKind::Operator => {
                let Some(ev) = e.attributed() else { continue };
                let to_us = g.nodes[e.to as usize].ts as f64 / 1e3;
                if last_ev == Some(ev) {
                    if let Some(x) = events.last_mut() {
                        x.on_path_us += e.weight as f64 / 1e3;
                        x.path_end_us = to_us;
                    }
                } else {
                    let (ts, dur) = ev_span(model, ev);
                    events.push(CpEvent {
                        name: ev_name_shared(model, ev),
                        ts: ts as f64 / 1e3,
                        dur_us: dur as f64 / 1e3,
                        on_path_us: e.weight as f64 / 1e3,
                        kind: ev_kind(model, ev),
                        stream: match ev {
                            EvRef::Gpu(i) => model.gpu.get(i as usize).map(|x| x.stream),
                            _ => None,
                        },
                        path_start_us: g.nodes[e.from as usize].ts as f64 / 1e3,
                        path_end_us: to_us,
                    });
                    let n = by_name.entry(ev_name(model, ev)).or_default();
                    n.1 += 1;
                }
                let n = by_name.entry(ev_name(model, ev)).or_default();
                n.0 += e.weight;
                last_ev = Some(ev);
            }
            EdgeKind::LaunchDelay | EdgeKind::KernelKernel => {
                let to = g.nodes[e.to as usize];
                let from = g.nodes[e.from as usize];
                let kind =
                    if e.kind == EdgeKind::LaunchDelay { "launch_delay" } else { "kernel_gap" };
                events.push(CpEvent {
                    name: ev_name_shared(model, to.ev()),
                    ts: from.ts as f64 / 1e3,
                    dur_us: e.weight as f64 / 1e3,
                    on_path_us: e.weight as f64 / 1e3,
                    kind,
                    stream: match to.ev() {
                        EvRef::Gpu(i) => model.gpu.get(i as usize).map(|x| x.stream),
                        _ => None,
                    },
                    path_start_us: from.ts as f64 / 1e3,
                    path_end_us: to.ts as f64 / 1e3,
                });
                let label = if e.kind == EdgeKind::LaunchDelay {
                    "(launch delay)"
                } else {
                    "(kernel-kernel gap)"
                };
                let n = by_name.entry(label).or_default();
                n.0 += e.weight;
                n.1 += 1;
                last_ev = None;
            }
            EdgeKind::Dependency | EdgeKind::Sync => {}
        }
    }
    debug_assert_eq!(events.len(), entries(&edges));
    let bound_by = bound
        .into_iter()
        .map(|(b, ns)| BoundShare {
            bound_by: b,
            us: ns as f64 / 1e3,
            percent: if len > 0 { ns as f64 / len as f64 * 100.0 } else { 0.0 },
        })
        .collect();
    let what_if = if opts.what_if.is_empty() {
        Vec::new()
    } else {
        let gz = build(model, span, true);
        opts.what_if.iter().map(|w| what_if(model, &captured, &gz, w)).collect()
    };
    let timeline = step_timeline::build(model, &g, &edges, span);
    Ok(CriticalPath {
        timeline,
        window: win,
        length_us: len as f64 / 1e3,
        nodes: g.nodes.len() as u64,
        edges: g.edges.len() as u64,
        bound_by,
        events,
        ranked: rank(by_name, len),
        by_op: rank(by_op, len),
        what_if,
    })
}

/// Which of `opts.what_if` name something in the critical path's window of `model`: an
/// op (or an op inside one so named), a runtime call, a GPU event or an annotation that
/// overlaps the window, the kinds of event the what-if scales. Cheaper than the path
/// itself: a run over many ranks checks each rank's targets while it reads them. The
/// error is the window's (`--cp-window` names no annotation of the trace).
///
/// # Errors
/// When the window is not in the trace.
pub fn what_if_found(model: &TraceModel, opts: &CpOptions) -> Result<Vec<bool>, crate::InputError> {
    let (span, _) = window(model, opts)?;
    let within =
        |ts: i64, dur: i64| ts < span.end_ns && ts.saturating_add(dur.max(0)) > span.start_ns;
    let captured = super::graphs::capture_map(model);
    let found = opts
        .what_if
        .iter()
        .map(|w| {
            let t = w.target.as_str();
            let mut memo = HashMap::new();
            let ops = (0..model.ops.len()).filter_map(|i| u32::try_from(i).ok());
            ops.filter(|&i| within(model.ops[i as usize].ts_ns, model.ops[i as usize].dur_ns))
                .any(|i| op_matches(model, i, t, &mut memo))
                || model.runtime.iter().filter(|r| within(r.ts_ns, r.dur_ns)).any(|r| {
                    matches(t, &r.name) || r.op.is_some_and(|o| op_matches(model, o, t, &mut memo))
                })
                || model.gpu.iter().enumerate().filter(|(_, g)| within(g.ts_ns, g.dur_ns)).any(
                    |(i, g)| {
                        matches(t, &g.name)
                            || u32::try_from(i)
                                .ok()
                                .and_then(|i| gpu_op(model, &captured, i))
                                .is_some_and(|o| op_matches(model, o, t, &mut memo))
                    },
                )
                || model
                    .annotations
                    .iter()
                    .filter(|a| within(a.ts_ns, a.dur_ns))
                    .any(|a| matches(t, &a.name))
        })
        .collect();
    Ok(found)
}

fn matches(target: &str, name: &str) -> bool {
    match target.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == target,
    }
}

/// Whether op `i` or one of its ancestors is named like `target`.
fn op_matches(model: &TraceModel, i: u32, target: &str, memo: &mut HashMap<u32, bool>) -> bool {
    if let Some(&m) = memo.get(&i) {
        return m;
    }
    let mut chain = Vec::new();
    let mut cur = Some(i);
    let mut found = false;
    while let Some(c) = cur {
        if let Some(&m) = memo.get(&c) {
            found = m;
            break;
        }
        chain.push(c);
        let Some(o) = model.ops.get(c as usize) else { break };
        if matches(target, &o.name) {
            found = true;
            break;
        }
        cur = o.parent.filter(|&p| p != c);
        if chain.len() > model.ops.len() {
            break;
        }
    }
    for c in chain {
        memo.insert(c, found);
    }
    found
}

fn what_if(
    model: &TraceModel,
    captured: &HashMap<u32, u32>,
    g: &CpGraph,
    w: &WhatIfSpec,
) -> WhatIf {
    let mut memo = HashMap::new();
    let mut scaled: HashSet<EvRef> = HashSet::new();
    let mut hit = |ev: EvRef| -> bool {
        let yes = match ev {
            EvRef::Op(i) => op_matches(model, i, &w.target, &mut memo),
            EvRef::Runtime(r) => model.runtime.get(r as usize).is_some_and(|x| {
                matches(&w.target, &x.name)
                    || x.op.is_some_and(|o| op_matches(model, o, &w.target, &mut memo))
            }),
            EvRef::Gpu(i) => model.gpu.get(i as usize).is_some_and(|x| {
                matches(&w.target, &x.name)
                    || gpu_op(model, captured, i)
                        .is_some_and(|o| op_matches(model, o, &w.target, &mut memo))
            }),
            EvRef::Annotation(i) => {
                model.annotations.get(i as usize).is_some_and(|a| matches(&w.target, &a.name))
            }
        };
        if yes {
            scaled.insert(ev);
        }
        yes
    };
    let factors: Vec<f64> = g
        .edges
        .iter()
        .map(|e| match (e.kind, e.attributed()) {
            (EdgeKind::Operator, Some(ev)) if hit(ev) => w.factor,
            _ => 1.0,
        })
        .collect();
    let base = g.longest_path(&|_, e| e.weight).map_or(0, |p| p.1);
    let scaled_path = g.longest_path(&|i, e| (e.weight as f64 * factors[i]).round() as i64);
    let (len, new_top_op) = match scaled_path {
        Some((path, len)) => {
            let mut ops: FastMap<&str, i64> = FastMap::default();
            for p in path.windows(2) {
                if let Some(i) = g.edge_index(p[0], p[1]) {
                    let e = &g.edges[i];
                    *ops.entry(credited_op(model, captured, g, e)).or_default() +=
                        (e.weight as f64 * factors[i]).round() as i64;
                }
            }
            let top = ops
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
                .map(|x| x.0.to_string());
            (len, top)
        }
        None => (base, None),
    };
    WhatIf {
        target: w.target.clone(),
        factor: w.factor,
        matched_events: scaled.len() as u64,
        baseline_us: base as f64 / 1e3,
        length_us: len as f64 / 1e3,
        saving_us: (base - len) as f64 / 1e3,
        saving_percent: if base > 0 { (base - len) as f64 / base as f64 * 100.0 } else { 0.0 },
        new_top_op,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{Annotation, CpuOp, GpuEvent, RuntimeCall, SyncEvent, SyncKind};

    /// Op A [0,92) launches k1 (call [10,15), kernel [20,80)) and waits in
    /// cudaDeviceSynchronize [30,90) (a Context Sync); op B [95,106) launches k2 (call
    /// [96,98), kernel [100,110)). One ProfilerStep [0,120).
    fn model() -> TraceModel {
        let us = |x: i64| x * 1000;
        let op = |name: &str, ts: i64, dur: i64, launched: Vec<u32>| CpuOp {
            name: name.into(),
            ts_ns: us(ts),
            dur_ns: us(dur),
            launched,
            ..CpuOp::default()
        };
        let rt = |name: &str, ts: i64, dur: i64, corr: i64, op: u32| RuntimeCall {
            name: name.into(),
            ts_ns: us(ts),
            dur_ns: us(dur),
            correlation: Some(corr),
            op: Some(op),
            ..RuntimeCall::default()
        };
        let k = |name: &str, ts: i64, dur: i64, r: u32, op: u32| GpuEvent {
            name: name.into(),
            ts_ns: us(ts),
            dur_ns: us(dur),
            stream: 7,
            runtime: Some(r),
            op: Some(op),
            ..GpuEvent::default()
        };
        TraceModel {
            ops: vec![op("aten::A", 0, 92, vec![0]), op("aten::B", 95, 11, vec![1])],
            runtime: vec![
                rt("cudaLaunchKernel", 10, 5, 1, 0),
                rt("cudaDeviceSynchronize", 30, 60, 2, 0),
                rt("cudaLaunchKernel", 96, 2, 3, 1),
            ],
            gpu: vec![k("k1", 20, 60, 0, 0), k("k2", 100, 10, 2, 1)],
            syncs: vec![SyncEvent {
                kind: SyncKind::Context,
                ts_ns: us(80),
                dur_ns: us(10),
                stream: -1,
                correlation: Some(2),
                runtime: Some(1),
                ..SyncEvent::default()
            }],
            annotations: vec![Annotation {
                name: "ProfilerStep#1".to_string(),
                ts_ns: 0,
                dur_ns: us(120),
                on_gpu: false,
            }],
            ..TraceModel::default()
        }
    }

    #[test]
    fn hand_computed_path() {
        let cp = critical_path(&model(), &CpOptions::default()).unwrap();
        assert_eq!(cp.window.annotation.as_deref(), Some("ProfilerStep#1"));
        // A → launch (10) → k1 (launch delay 10, kernel 60) → sync edge to the end of
        // cudaDeviceSynchronize (0) → A's end (2) → B (dependency 0, 1) → launch delay
        // (4) → k2 (10): 97 µs. The CPU path through the sync call is 30 µs; B's own end
        // (106) is behind k2's (110).
        assert_eq!(cp.length_us, 97.0);
        let b = |k: &str| cp.bound_by.iter().find(|x| x.bound_by == k).map_or(0.0, |x| x.us);
        assert_eq!(b("cpu_bound"), 13.0);
        assert_eq!(b("gpu_kernel_launch_overhead"), 14.0);
        assert_eq!(b("gpu_compute_bound"), 70.0);
        let names: Vec<(&str, &str)> = cp.events.iter().map(|e| (e.kind, &*e.name)).collect();
        assert_eq!(
            names,
            vec![
                ("cpu_op", "aten::A"),
                ("launch_delay", "k1"),
                ("kernel", "k1"),
                ("cpu_op", "aten::A"),
                ("cpu_op", "aten::B"),
                ("launch_delay", "k2"),
                ("kernel", "k2"),
            ]
        );
        assert_eq!((cp.events[2].ts, cp.events[2].on_path_us), (20.0, 60.0));
        // By op: A's CPU 12 + k1's delay and time 70; B's CPU 1 + k2's 14.
        assert_eq!(cp.by_op[0].name, "aten::A");
        assert_eq!(cp.by_op[0].us, 82.0);
        assert_eq!(cp.by_op[1].us, 15.0);
        assert!(!cp.timeline.items.is_empty());
    }

    #[test]
    fn what_if_halves_a() {
        let opts = CpOptions {
            what_if: vec!["aten::A=0.5".parse().unwrap(), "k2=0".parse().unwrap()],
            ..CpOptions::default()
        };
        let cp = critical_path(&model(), &opts).unwrap();
        // A's edges (10 → 5, 2 → 1), its launch call and k1 (60 → 30) halved; the launch
        // delays keep 10 and 4: 5 + 10 + 30 + 0 + 1 + 0 + 1 + 4 + 10 = 61.
        let w = &cp.what_if[0];
        assert_eq!((w.baseline_us, w.length_us, w.saving_us), (97.0, 61.0, 36.0));
        // aten::A, its two runtime calls (launch, sync) and k1.
        assert_eq!(w.matched_events, 4);
        // k2 free: the path to B's start (82) then B's own CPU time (1 + 2 + 8) beats the
        // launch delay and the free kernel (1 + 4 + 0): 93.
        assert_eq!(cp.what_if[1].length_us, 93.0);
        assert!("aten::A".parse::<WhatIfSpec>().is_err());
        assert!("=2".parse::<WhatIfSpec>().is_err());
        assert!("x=nan".parse::<WhatIfSpec>().is_err());
    }

    #[test]
    fn windows() {
        let m = model();
        let named =
            CpOptions { annotation: Some("Step".into()), instance: 0, ..CpOptions::default() };
        assert!(window(&m, &named).is_ok());
        let missing =
            CpOptions { annotation: Some("Step".into()), instance: 3, ..CpOptions::default() };
        assert!(window(&m, &missing).unwrap_err().0.contains("instance 3"));
        let none = CpOptions { annotation: Some("nope".into()), ..CpOptions::default() };
        assert!(window(&m, &none).is_err());
        assert!(window(&TraceModel::default(), &CpOptions::default()).is_err());
    }

    /// A what-if factor is bounded: up to 1000× the op's time, not 1e9× (which printed
    /// a path of 860 ks and a change of -40355318719%).
    #[test]
    fn what_if_factor_is_bounded() {
        assert_eq!("aten::addmm=1000".parse::<WhatIfSpec>().map(|w| w.factor), Ok(1000.0));
        assert_eq!("aten::addmm=0".parse::<WhatIfSpec>().map(|w| w.factor), Ok(0.0));
        let e = "aten::addmm=1e9".parse::<WhatIfSpec>().unwrap_err();
        assert!(e.starts_with("what-if 'aten::addmm=1e9': the factor 1e9 is over 1000"), "{e}");
        assert!("aten::addmm=1000.5".parse::<WhatIfSpec>().is_err());
    }
}
