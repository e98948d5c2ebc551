//! Time per `nn.Module`, as a tree, forward and backward.
//!
//! - **Modules**: `python_function` frames named `nn.Module: X_n` (the profiler's
//!   `with_stack` / `with_modules`), or, when the trace has none, CPU annotations named
//!   `nn.Module: X_n`. Calls nest by time on their thread; a call's **path** is the names
//!   from the outermost module down (`ViTModel_0/ViTEncoder_0/ViTLayer_3`), and calls are
//!   summed by path, so the steps of a trace add up.
//! - **Forward** time of a call: its CPU wall time, and the summed durations of the GPU
//!   events launched by runtime calls on its thread during it.
//! - **Backward** time: the summed durations of the GPU events launched under each
//!   `autograd::engine::evaluate_function: …` op, credited to the module of the forward
//!   op with the same autograd `Sequence number` (the innermost module around that
//!   forward op). Backward work whose forward op ran outside every module is reported
//!   as unattributed.
//! - A node's times include its descendants'; `self` times do not.

use super::super::attrib::subtree_events;
use super::super::model::TraceModel;
use foldhash::HashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// One module path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModuleNode {
    /// `/`-joined names from the outermost module.
    pub path: String,
    /// The last name of the path (`Linear_3`).
    pub name: String,
    /// 0 for outermost modules.
    pub depth: u32,
    pub calls: u64,
    /// Summed CPU wall time of the calls, µs.
    pub cpu_us: f64,
    /// Summed GPU time launched in the forward calls, µs (descendants included).
    pub forward_gpu_us: f64,
    /// The same without the child modules' time.
    pub self_forward_gpu_us: f64,
    /// Summed GPU time of the backward of its forward ops, µs (descendants included).
    pub backward_gpu_us: f64,
    pub self_backward_gpu_us: f64,
}

/// The module section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Modules {
    /// Where the module calls came from: `python_function`, `annotation`, or `none`.
    pub source: String,
    pub calls: u64,
    /// In depth-first order, children by forward + backward GPU time, largest first.
    pub nodes: Vec<ModuleNode>,
    /// GPU time of outermost modules, forward and backward, µs.
    pub forward_gpu_us: f64,
    pub backward_gpu_us: f64,
    /// Backward GPU time whose forward op ran outside every module, µs.
    pub unattributed_backward_us: f64,
}

/// One module call on a thread (`thread: None` for annotations, which have none).
#[derive(Debug, Clone)]
struct Call {
    name: String,
    ts: i64,
    end: i64,
    thread: Option<(i64, i64)>,
    parent: Option<usize>,
    path: usize,
}

const PREFIX: &str = "nn.Module: ";

/// Calls nested per thread; `path` ids index the returned path list.
fn calls(model: &TraceModel) -> (String, Vec<Call>, Vec<(String, u32)>) {
    let (source, mut calls): (&str, Vec<Call>) = if model.modules.is_empty() {
        let v = model
            .annotations
            .iter()
            .filter(|a| !a.on_gpu && a.name.starts_with(PREFIX))
            .map(|a| Call {
                name: a.name[PREFIX.len()..].to_string(),
                ts: a.ts_ns,
                end: a.ts_ns + a.dur_ns,
                thread: None,
                parent: None,
                path: 0,
            })
            .collect::<Vec<_>>();
        (if v.is_empty() { "none" } else { "annotation" }, v)
    } else {
        let v = model
            .modules
            .iter()
            .map(|m| Call {
                name: m.name.clone(),
                ts: m.ts_ns,
                end: m.ts_ns + m.dur_ns,
                thread: Some((m.pid, m.tid)),
                parent: None,
                path: 0,
            })
            .collect();
        ("python_function", v)
    };
    calls.sort_by(|a, b| {
        (a.thread, a.ts, std::cmp::Reverse(a.end)).cmp(&(b.thread, b.ts, std::cmp::Reverse(b.end)))
    });
    let mut stack: Vec<usize> = Vec::new();
    let mut paths: Vec<(String, u32)> = Vec::new();
    // (parent path id or MAX, name) → path id: repeated paths cost no allocation.
    let mut path_id: HashMap<(usize, String), usize> = HashMap::default();
    for i in 0..calls.len() {
        if i > 0 && calls[i].thread != calls[i - 1].thread {
            stack.clear();
        }
        while let Some(&t) = stack.last() {
            if calls[t].ts <= calls[i].ts && calls[i].end <= calls[t].end {
                break;
            }
            stack.pop();
        }
        calls[i].parent = stack.last().copied();
        let parent_path = calls[i].parent.map_or(usize::MAX, |p| calls[p].path);
        let key = (parent_path, std::mem::take(&mut calls[i].name));
        let id = if let Some(&id) = path_id.get(&key) {
            id
        } else {
            let path = if calls[i].parent.is_some() {
                format!("{}/{}", paths[parent_path].0, key.1)
            } else {
                key.1.clone()
            };
            paths.push((path, stack.len() as u32));
            path_id.insert(key.clone(), paths.len() - 1);
            paths.len() - 1
        };
        calls[i].name = key.1;
        calls[i].path = id;
        stack.push(i);
    }
    (source.to_string(), calls, paths)
}

/// The innermost call containing `ts` on `thread` (any thread for annotation calls).
fn innermost(calls: &[Call], thread: (i64, i64), ts: i64) -> Option<usize> {
    // Calls are sorted by (thread, ts); annotations (thread None) sort first.
    let key = |c: &Call| (c.thread, c.ts);
    let mut best = None;
    for t in [None, Some(thread)] {
        let hi = calls.partition_point(|c| key(c) <= (t, ts));
        let lo = calls.partition_point(|c| c.thread < t);
        let mut i = if hi > lo { Some(hi - 1) } else { None };
        while let Some(k) = i {
            if calls[k].end >= ts {
                best =
                    Some(best.map_or(k, |b: usize| if calls[k].ts >= calls[b].ts { k } else { b }));
                break;
            }
            i = calls[k].parent;
        }
    }
    best
}

/// The module section of `model`.
pub fn modules(model: &TraceModel) -> Modules {
    let (source, calls, paths) = calls(model);
    if calls.is_empty() {
        return Modules { source, ..Modules::default() };
    }
    let mut fwd = vec![0i64; paths.len()];
    let mut bwd = vec![0i64; paths.len()];
    let mut cpu = vec![0i64; paths.len()];
    let mut count = vec![0u64; paths.len()];
    for c in &calls {
        cpu[c.path] += c.end - c.ts;
        count[c.path] += 1;
    }
    // Forward: each GPU event's launch is credited to its innermost call and, through
    // the paths, to every enclosing one (summed below by path prefix).
    let mut fwd_self = vec![0i64; paths.len()];
    for g in &model.gpu {
        let Some(r) = g.runtime.and_then(|r| model.runtime.get(r as usize)) else { continue };
        if let Some(c) = innermost(&calls, (r.pid, r.tid), r.ts_ns) {
            fwd_self[calls[c].path] += g.dur_ns;
        }
    }
    // Backward: sequence number → forward op → its module path (only when the trace has
    // a backward pass).
    let mut fwd_op_of_seq: HashMap<i64, usize> = HashMap::default();
    let is_bwd_root = |name: &str| name.starts_with("autograd::engine::evaluate_function");
    let has_bwd = model.ops.iter().any(|o| is_bwd_root(&o.name));
    let mut in_bwd = vec![false; if has_bwd { model.ops.len() } else { 0 }];
    for (i, o) in model.ops.iter().enumerate().take(in_bwd.len()) {
        let parent_bwd = o.parent.is_some_and(|p| (p as usize) < i && in_bwd[p as usize]);
        in_bwd[i] = parent_bwd || is_bwd_root(&o.name);
        if !in_bwd[i] {
            if let Some(s) = o.sequence_number {
                fwd_op_of_seq.entry(s).or_insert(i);
            }
        }
    }
    let mut bwd_self = vec![0i64; paths.len()];
    let mut unattributed = 0i64;
    for (i, o) in model.ops.iter().enumerate().take(in_bwd.len()) {
        if !is_bwd_root(&o.name) || o.parent.is_some_and(|p| in_bwd[p as usize]) {
            continue;
        }
        let gpu: i64 = subtree_events(model, i).iter().map(|&e| model.gpu[e as usize].dur_ns).sum();
        if gpu == 0 {
            continue;
        }
        // The sequence number is on the root or its first descendant that has one.
        let mut seq = o.sequence_number;
        let mut stack: Vec<u32> = o.children.clone();
        while seq.is_none() {
            let Some(c) = stack.pop() else { break };
            if let Some(co) = model.ops.get(c as usize) {
                seq = co.sequence_number;
                stack.extend(co.children.iter().rev());
            }
        }
        let module = seq.and_then(|s| fwd_op_of_seq.get(&s)).and_then(|&f| {
            let fo = &model.ops[f];
            innermost(&calls, (fo.pid, fo.tid), fo.ts_ns)
        });
        match module {
            Some(c) => bwd_self[calls[c].path] += gpu,
            None => unattributed += gpu,
        }
    }
    // Totals by path prefix: a path's total is its own plus every path under it.
    let mut by_path: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, (p, _)) in paths.iter().enumerate() {
        by_path.insert(p.as_str(), i);
    }
    let total = |own: &[i64], i: usize| -> i64 {
        let p = paths[i].0.as_str();
        let prefix = format!("{p}/");
        own[i]
            + by_path
                .range(prefix.as_str()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
                .map(|(_, &j)| own[j])
                .sum::<i64>()
    };
    for i in 0..paths.len() {
        fwd[i] = total(&fwd_self, i);
        bwd[i] = total(&bwd_self, i);
    }
    let node = |i: usize| ModuleNode {
        path: paths[i].0.clone(),
        name: paths[i].0.rsplit('/').next().unwrap_or_default().to_string(),
        depth: paths[i].1,
        calls: count[i],
        cpu_us: cpu[i] as f64 / 1e3,
        forward_gpu_us: fwd[i] as f64 / 1e3,
        self_forward_gpu_us: fwd_self[i] as f64 / 1e3,
        backward_gpu_us: bwd[i] as f64 / 1e3,
        self_backward_gpu_us: bwd_self[i] as f64 / 1e3,
    };
    // Depth-first order, children by GPU time.
    let mut children: BTreeMap<Option<usize>, Vec<usize>> = BTreeMap::new();
    for (i, (p, _)) in paths.iter().enumerate() {
        let parent = p.rsplit_once('/').and_then(|(pre, _)| by_path.get(pre).copied());
        children.entry(parent).or_default().push(i);
    }
    for v in children.values_mut() {
        v.sort_by(|&a, &b| (fwd[b] + bwd[b]).cmp(&(fwd[a] + bwd[a])).then(a.cmp(&b)));
    }
    let mut nodes = Vec::with_capacity(paths.len());
    let mut todo: Vec<usize> = children.get(&None).cloned().unwrap_or_default();
    todo.reverse();
    while let Some(i) = todo.pop() {
        nodes.push(node(i));
        if let Some(c) = children.get(&Some(i)) {
            todo.extend(c.iter().rev());
        }
    }
    let roots = children.get(&None).cloned().unwrap_or_default();
    Modules {
        source,
        calls: calls.len() as u64,
        forward_gpu_us: roots.iter().map(|&i| fwd[i]).sum::<i64>() as f64 / 1e3,
        backward_gpu_us: roots.iter().map(|&i| bwd[i]).sum::<i64>() as f64 / 1e3,
        unattributed_backward_us: unattributed as f64 / 1e3,
        nodes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{CpuOp, GpuEvent, ModuleCall, RuntimeCall};

    #[test]
    fn forward_and_backward_tree() {
        // Net_0 [0,100) contains Linear_0 [10,40) and Linear_1 [50,90). Launches: at 5
        // (Net only, 3 µs kernel), 20 (Linear_0, 10 µs), 60 (Linear_1, 7 µs). Forward op
        // aten::addmm at 20 (seq 1, in Linear_0); backward root at 200 with a child of
        // seq 1 launching a 4 µs kernel; another backward root with seq 9 (no forward
        // op) launching 2 µs: unattributed.
        let m = TraceModel {
            modules: vec![
                ModuleCall {
                    name: "Net_0".into(),
                    ts_ns: 0,
                    dur_ns: 100_000,
                    ..ModuleCall::default()
                },
                ModuleCall {
                    name: "Linear_0".into(),
                    ts_ns: 10_000,
                    dur_ns: 30_000,
                    ..ModuleCall::default()
                },
                ModuleCall {
                    name: "Linear_1".into(),
                    ts_ns: 50_000,
                    dur_ns: 40_000,
                    ..ModuleCall::default()
                },
            ],
            ops: vec![
                CpuOp {
                    name: "aten::addmm".into(),
                    ts_ns: 20_000,
                    dur_ns: 5_000,
                    sequence_number: Some(1),
                    ..CpuOp::default()
                },
                CpuOp {
                    name: "autograd::engine::evaluate_function: AddmmBackward0".into(),
                    ts_ns: 200_000,
                    dur_ns: 10_000,
                    children: vec![2],
                    ..CpuOp::default()
                },
                CpuOp {
                    name: "AddmmBackward0".into(),
                    ts_ns: 201_000,
                    dur_ns: 5_000,
                    sequence_number: Some(1),
                    parent: Some(1),
                    launched: vec![3],
                    ..CpuOp::default()
                },
                CpuOp {
                    name: "autograd::engine::evaluate_function: XBackward0".into(),
                    ts_ns: 300_000,
                    dur_ns: 1_000,
                    sequence_number: Some(9),
                    launched: vec![4],
                    ..CpuOp::default()
                },
            ],
            runtime: [5, 20, 60, 202, 300]
                .iter()
                .map(|&t| RuntimeCall { ts_ns: t * 1000, dur_ns: 1000, ..RuntimeCall::default() })
                .collect(),
            gpu: [(3, 0), (10, 1), (7, 2), (4, 3), (2, 4)]
                .iter()
                .map(|&(d, r)| GpuEvent {
                    dur_ns: d * 1000,
                    runtime: Some(r),
                    ..GpuEvent::default()
                })
                .collect(),
            ..TraceModel::default()
        };
        let r = modules(&m);
        assert_eq!(r.source, "python_function");
        let paths: Vec<&str> = r.nodes.iter().map(|n| n.path.as_str()).collect();
        // Children by GPU time: Linear_0 (10 fwd + 4 bwd) before Linear_1 (7).
        assert_eq!(paths, vec!["Net_0", "Net_0/Linear_0", "Net_0/Linear_1"]);
        let net = &r.nodes[0];
        assert_eq!((net.forward_gpu_us, net.self_forward_gpu_us), (20.0, 3.0));
        assert_eq!((net.backward_gpu_us, net.self_backward_gpu_us), (4.0, 0.0));
        assert_eq!(net.cpu_us, 100.0);
        assert_eq!(r.nodes[1].backward_gpu_us, 4.0);
        assert_eq!(r.nodes[1].depth, 1);
        assert_eq!((r.forward_gpu_us, r.backward_gpu_us), (20.0, 4.0));
        assert_eq!(r.unattributed_backward_us, 2.0);
    }
}
