//! The events of the critical-path window laid out in lanes, with the path marked: what
//! the HTML report draws (one step's timeline with the critical path highlighted).
//!
//! Lanes: per CPU thread, its outermost ops in the window and the ops one level down;
//! per GPU stream, its events. Items on the path are marked, and the path's launch delays
//! and kernel-kernel gaps are items of their own on the stream they precede. At most
//! [`MAX_ITEMS`] items: every item on the path, then the longest of the others.

use super::super::model::{GpuEvent, TraceModel};
use super::cp_graph::{CpGraph, Edge, EdgeKind, EvRef};
use super::Span;
use serde::Serialize;
use std::collections::BTreeMap;

/// Items kept at most.
pub const MAX_ITEMS: usize = 6000;

/// One drawn item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelineItem {
    pub lane: u32,
    pub name: String,
    pub start_us: f64,
    pub dur_us: f64,
    pub on_path: bool,
    /// `cpu_op`, `kernel`, `memcpy`, `memset`, `launch_delay`, `kernel_gap`.
    pub kind: &'static str,
}

/// The window's timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct StepTimeline {
    pub start_us: f64,
    pub end_us: f64,
    /// Lane names, top to bottom.
    pub lanes: Vec<String>,
    pub items: Vec<TimelineItem>,
    /// Items left out (beyond [`MAX_ITEMS`]).
    pub dropped: u64,
}

/// Depth of every op below the outermost op of its thread inside the window, capped at
/// 2 (only 0, 1 and "deeper" matter here). One pass: a parent comes before its child in
/// the sorted ops, so its depth is known when the child's is computed; a parent that
/// starts outside the window ends the chain, as it does for the walk up the ancestors.
fn depths_in(model: &TraceModel, span: Span) -> Vec<u8> {
    let mut depth = vec![0u8; model.ops.len()];
    for (i, o) in model.ops.iter().enumerate() {
        let parent = o.parent.filter(|&p| (p as usize) < i).map(|p| p as usize);
        if let Some(p) = parent.filter(|&p| span.contains(model.ops[p].ts_ns)) {
            depth[i] = depth[p].saturating_add(1).min(2);
        }
    }
    depth
}

/// Where an item comes from: everything but its length is read again, from the model
/// and the graph, for the items kept only (a window can hold millions of candidates).
#[derive(Clone, Copy)]
enum Source {
    /// An op (index in the model) at this depth below its thread's outermost op.
    Op(u32, u32),
    /// A GPU event (index in the model) that is the start of a node.
    Gpu(u32),
    /// A launch-delay or kernel-kernel edge of the path (index in `edges`) and the GPU
    /// event it ends at.
    Delay(u32, u32),
}

/// An item before the cut to [`MAX_ITEMS`].
#[derive(Clone, Copy)]
struct Candidate {
    source: Source,
    dur_us: f64,
    on_path: bool,
}

/// A GPU event's lane key.
fn gpu_key(ge: &GpuEvent) -> (u8, i64, i64, u32) {
    (1, ge.device, ge.stream, 0)
}

/// The timeline of `span` with the path `edges` of graph `g` marked.
pub fn build(model: &TraceModel, g: &CpGraph, edges: &[&Edge], span: Span) -> StepTimeline {
    // The ops and GPU events the path's edges are attributed to (a flag per event: the
    // path of a long window has hundreds of thousands).
    let mut on_op = vec![false; model.ops.len()];
    let mut on_gpu = vec![false; model.gpu.len()];
    for e in edges {
        let flag = match e.attributed() {
            Some(EvRef::Op(i)) => on_op.get_mut(i as usize),
            Some(EvRef::Gpu(i)) => on_gpu.get_mut(i as usize),
            _ => None,
        };
        if let Some(f) = flag {
            *f = true;
        }
    }
    let mut lanes: BTreeMap<(u8, i64, i64, u32), u32> = BTreeMap::new();
    let mut raw: Vec<Candidate> = Vec::new();
    let depths = depths_in(model, span);
    for (i, o) in model.ops.iter().enumerate() {
        if !span.contains(o.ts_ns) || o.dur_ns <= 0 {
            continue;
        }
        let d = u32::from(depths[i]);
        if d > 1 {
            continue;
        }
        lanes.insert((0, o.pid, o.tid, d), 0);
        raw.push(Candidate {
            source: Source::Op(i as u32, d),
            dur_us: o.dur_ns as f64 / 1e3,
            on_path: on_op[i],
        });
    }
    for n in &g.nodes {
        let EvRef::Gpu(i) = n.ev() else { continue };
        if !n.is_start() {
            continue;
        }
        let Some(ge) = model.gpu.get(i as usize) else { continue };
        lanes.insert(gpu_key(ge), 0);
        raw.push(Candidate {
            source: Source::Gpu(i),
            dur_us: ge.dur_ns as f64 / 1e3,
            on_path: on_gpu[i as usize],
        });
    }
    for (k, e) in edges.iter().enumerate() {
        if !matches!(e.kind, EdgeKind::LaunchDelay | EdgeKind::KernelKernel) || e.weight <= 0 {
            continue;
        }
        let EvRef::Gpu(i) = g.nodes[e.to as usize].ev() else { continue };
        let Some(ge) = model.gpu.get(i as usize) else { continue };
        lanes.insert(gpu_key(ge), 0);
        raw.push(Candidate {
            source: Source::Delay(k as u32, i),
            dur_us: e.weight as f64 / 1e3,
            on_path: true,
        });
    }
    let mut names = Vec::with_capacity(lanes.len());
    for (n, (k, v)) in lanes.iter_mut().enumerate() {
        *v = n as u32;
        names.push(match k {
            (0, pid, tid, 0) => format!("CPU {pid}/{tid}"),
            (0, pid, tid, _) => format!("CPU {pid}/{tid} (nested)"),
            (_, dev, stream, _) => format!("GPU {dev} stream {stream}"),
        });
    }
    let total = raw.len();
    // Path items first, then the longest, ties in the order found: the first
    // MAX_ITEMS selected in linear time (a window can hold millions of candidates),
    // then put in that order.
    let mut order: Vec<u32> = (0..total as u32).collect();
    let first = |a: &u32, b: &u32| {
        let (x, y) = (&raw[*a as usize], &raw[*b as usize]);
        y.on_path.cmp(&x.on_path).then(y.dur_us.total_cmp(&x.dur_us)).then(a.cmp(b))
    };
    if order.len() > MAX_ITEMS {
        order.select_nth_unstable_by(MAX_ITEMS - 1, first);
        order.truncate(MAX_ITEMS);
    }
    order.sort_unstable_by(first);
    let mut items: Vec<TimelineItem> = order
        .iter()
        .map(|&at| {
            let cand = raw[at as usize];
            let (key, name, start_ns, kind) = match cand.source {
                Source::Op(op, depth) => {
                    let o = &model.ops[op as usize];
                    ((0, o.pid, o.tid, depth), &o.name, o.ts_ns, "cpu_op")
                }
                Source::Gpu(gpu) => {
                    let ge = &model.gpu[gpu as usize];
                    (gpu_key(ge), &ge.name, ge.ts_ns, ge.kind.as_str())
                }
                Source::Delay(edge, gpu) => {
                    let edge = edges[edge as usize];
                    let ge = &model.gpu[gpu as usize];
                    let kind = if edge.kind == EdgeKind::LaunchDelay {
                        "launch_delay"
                    } else {
                        "kernel_gap"
                    };
                    (gpu_key(ge), &ge.name, g.nodes[edge.from as usize].ts, kind)
                }
            };
            TimelineItem {
                lane: lanes[&key],
                name: name.to_string(),
                start_us: start_ns as f64 / 1e3,
                dur_us: cand.dur_us,
                on_path: cand.on_path,
                kind,
            }
        })
        .collect();
    items.sort_by(|a, b| a.lane.cmp(&b.lane).then(a.start_us.total_cmp(&b.start_us)));
    StepTimeline {
        start_us: span.start_ns as f64 / 1e3,
        end_us: span.end_ns as f64 / 1e3,
        lanes: names,
        dropped: (total - items.len()) as u64,
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::CpuOp;

    /// 100,000 strictly nested ops (each the parent of the next): depth is found in one
    /// pass. Walking up the ancestors per op, as before, is ~5e9 steps here (minutes);
    /// the expected depths are written by hand: 0, 1, then capped at 2.
    #[test]
    fn depth_of_a_deep_stack_in_one_pass() {
        let n: u32 = 100_000;
        let ops: Vec<CpuOp> = (0..n)
            .map(|i| CpuOp {
                ts_ns: i64::from(i),
                dur_ns: 2 * i64::from(n - i),
                parent: i.checked_sub(1),
                ..CpuOp::default()
            })
            .collect();
        let model = TraceModel { ops, ..TraceModel::default() };
        let d = depths_in(&model, Span { start_ns: 0, end_ns: 3 * i64::from(n) });
        assert_eq!(&d[..3], &[0, 1, 2]);
        assert!(d[3..].iter().all(|&x| x == 2));
        // A window starting inside the stack: the op at its start is outermost there.
        let d = depths_in(&model, Span { start_ns: 500, end_ns: 3 * i64::from(n) });
        assert_eq!(&d[500..503], &[0, 1, 2]);
    }

    /// One op on thread 1/1 (0–100 µs), two launch calls in it (10–15 and 20–25 µs) and
    /// their kernels on stream 7 (30–50 and 60–70 µs), with a launch delay (launch start to the first
    /// kernel's start: 10 µs long 20) and a kernel-kernel gap (first kernel's end to the
    /// second's start: 50 µs long 10) on the path, and an operator edge attributed to the
    /// first kernel. Written by hand: two lanes; on the GPU lane, in start order, the
    /// delay (named as the kernel after it), the first kernel, the gap, the second
    /// kernel; the op and the second kernel are off the path.
    #[test]
    fn gpu_items_and_the_paths_delays_are_drawn_on_their_stream() {
        use super::super::cp_graph::build as graph;
        use crate::trace::{GpuEvent, RuntimeCall};
        let us = |x: i64| x * 1000;
        let op = CpuOp {
            name: "aten::mm".into(),
            ts_ns: 0,
            dur_ns: us(100),
            pid: 1,
            tid: 1,
            ..CpuOp::default()
        };
        let launch = |ts: i64| RuntimeCall {
            name: "cudaLaunchKernel".into(),
            ts_ns: us(ts),
            dur_ns: us(5),
            pid: 1,
            tid: 1,
            op: Some(0),
            ..RuntimeCall::default()
        };
        let kernel = |name: &str, ts: i64, dur: i64, runtime: u32| GpuEvent {
            name: name.into(),
            ts_ns: us(ts),
            dur_ns: us(dur),
            stream: 7,
            runtime: Some(runtime),
            op: Some(0),
            ..GpuEvent::default()
        };
        let model = TraceModel {
            ops: vec![op],
            runtime: vec![launch(10), launch(20)],
            gpu: vec![kernel("k1", 30, 20, 0), kernel("k2", 60, 10, 1)],
            ..TraceModel::default()
        };
        let span = Span { start_ns: 0, end_ns: us(100) };
        let g = graph(&model, span, false);
        let node = |ev: EvRef, start: bool| {
            if start { g.start(ev) } else { g.end(ev) }.expect("the event has its node")
        };
        let (k1, k2) = (EvRef::Gpu(0), EvRef::Gpu(1));
        let edge = |from: u32, to: u32, weight: i64, kind: EdgeKind, attributed| {
            Edge::new(from, to, weight, kind, attributed)
        };
        let path = [
            edge(
                node(EvRef::Runtime(0), true),
                node(k1, true),
                us(20),
                EdgeKind::LaunchDelay,
                None,
            ),
            edge(node(k1, true), node(k1, false), us(20), EdgeKind::Operator, Some(k1)),
            edge(node(k1, false), node(k2, true), us(10), EdgeKind::KernelKernel, None),
        ];
        let edges: Vec<&Edge> = path.iter().collect();
        let t = build(&model, &g, &edges, span);
        assert_eq!(t.lanes, vec!["CPU 1/1".to_string(), "GPU 0 stream 7".to_string()]);
        let got: Vec<(u32, &str, f64, f64, bool, &str)> = t
            .items
            .iter()
            .map(|x| (x.lane, x.name.as_str(), x.start_us, x.dur_us, x.on_path, x.kind))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, "aten::mm", 0.0, 100.0, false, "cpu_op"),
                (1, "k1", 10.0, 20.0, true, "launch_delay"),
                (1, "k1", 30.0, 20.0, true, "kernel"),
                (1, "k2", 50.0, 10.0, true, "kernel_gap"),
                (1, "k2", 60.0, 10.0, false, "kernel"),
            ]
        );
        assert_eq!(t.dropped, 0);
    }

    /// 7,000 ops one after another on one thread, none on the path, op i lasting
    /// 1 + i mod 3 µs: the 6,000 kept are the 2,333 of 3 µs and the 2,333 of 2 µs, then
    /// of the 1 µs ops (i a multiple of 3) the first 1,334 in file order (i ≤ 3,999);
    /// they are drawn in start order.
    #[test]
    fn the_longest_items_are_kept_and_ties_go_to_the_earlier() {
        let n: i64 = 7000;
        let ops: Vec<CpuOp> = (0..n)
            .map(|i| CpuOp {
                name: format!("op{i}").into(),
                ts_ns: i * 10_000,
                dur_ns: (1 + i % 3) * 1000,
                pid: 1,
                tid: 1,
                ..CpuOp::default()
            })
            .collect();
        let model = TraceModel { ops, ..TraceModel::default() };
        let span = Span { start_ns: 0, end_ns: n * 10_000 };
        let t = build(&model, &CpGraph::default(), &[], span);
        assert_eq!(t.items.len(), MAX_ITEMS);
        assert_eq!(t.dropped, 1000);
        assert_eq!(t.lanes, vec!["CPU 1/1".to_string()]);
        let kept: Vec<i64> = (0..n).filter(|i| i % 3 != 0 || *i <= 3999).collect();
        assert_eq!(kept.len(), MAX_ITEMS);
        let names: Vec<&str> = t.items.iter().map(|x| x.name.as_str()).collect();
        let expected: Vec<String> = kept.iter().map(|i| format!("op{i}")).collect();
        assert_eq!(names, expected);
        assert!(t.items.iter().all(|x| !x.on_path && x.kind == "cpu_op" && x.lane == 0));
    }
}
