//! The events of the critical-path window laid out in lanes, with the path marked: what
//! the HTML report draws (one step's timeline with the critical path highlighted).
//!
//! Lanes: per CPU thread, its outermost ops in the window and the ops one level down;
//! per GPU stream, its events. Items on the path are marked, and the path's launch delays
//! and kernel-kernel gaps are items of their own on the stream they precede. At most
//! [`MAX_ITEMS`] items: every item on the path, then the longest of the others.

use super::super::model::{GpuKind, TraceModel};
use super::cp_graph::{CpGraph, Edge, EdgeKind, EvRef};
use super::Span;
use foldhash::HashSet;
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

/// Where an item's name comes from: it is copied only for the items kept.
#[derive(Clone, Copy)]
enum NameOf {
    Op(u32),
    Gpu(u32),
}

/// An item before the cut to [`MAX_ITEMS`]: its lane's key, and the item less its
/// lane and name.
struct Candidate {
    key: (u8, i64, i64, u32),
    name: NameOf,
    start_us: f64,
    dur_us: f64,
    on_path: bool,
    kind: &'static str,
}

/// The timeline of `span` with the path `edges` of graph `g` marked.
pub fn build(model: &TraceModel, g: &CpGraph, edges: &[&Edge], span: Span) -> StepTimeline {
    let on: HashSet<EvRef> = edges.iter().filter_map(|e| e.attributed).collect();
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
        let key = (0, o.pid, o.tid, d);
        lanes.insert(key, 0);
        raw.push(Candidate {
            key,
            name: NameOf::Op(i as u32),
            start_us: o.ts_ns as f64 / 1e3,
            dur_us: o.dur_ns as f64 / 1e3,
            on_path: on.contains(&EvRef::Op(i as u32)),
            kind: "cpu_op",
        });
    }
    for n in &g.nodes {
        let EvRef::Gpu(i) = n.ev else { continue };
        if !n.is_start {
            continue;
        }
        let Some(ge) = model.gpu.get(i as usize) else { continue };
        let key = (1, ge.device, ge.stream, 0);
        lanes.insert(key, 0);
        raw.push(Candidate {
            key,
            name: NameOf::Gpu(i),
            start_us: ge.ts_ns as f64 / 1e3,
            dur_us: ge.dur_ns as f64 / 1e3,
            on_path: on.contains(&n.ev),
            kind: match ge.kind {
                GpuKind::Kernel => "kernel",
                GpuKind::Memcpy => "memcpy",
                GpuKind::Memset => "memset",
            },
        });
    }
    for e in edges {
        if !matches!(e.kind, EdgeKind::LaunchDelay | EdgeKind::KernelKernel) || e.weight <= 0 {
            continue;
        }
        let to = g.nodes[e.to as usize];
        let EvRef::Gpu(i) = to.ev else { continue };
        let Some(ge) = model.gpu.get(i as usize) else { continue };
        let key = (1, ge.device, ge.stream, 0);
        lanes.insert(key, 0);
        raw.push(Candidate {
            key,
            name: NameOf::Gpu(i),
            start_us: g.nodes[e.from as usize].ts as f64 / 1e3,
            dur_us: e.weight as f64 / 1e3,
            on_path: true,
            kind: if e.kind == EdgeKind::LaunchDelay { "launch_delay" } else { "kernel_gap" },
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
        .map(|&i| {
            let c = &raw[i as usize];
            TimelineItem {
                lane: lanes[&c.key],
                name: match c.name {
                    NameOf::Op(i) => model.ops[i as usize].name.to_string(),
                    NameOf::Gpu(i) => model.gpu[i as usize].name.to_string(),
                },
                start_us: c.start_us,
                dur_us: c.dur_us,
                on_path: c.on_path,
                kind: c.kind,
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
