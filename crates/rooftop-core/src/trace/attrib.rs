//! Which GPU events belong to which CPU op, and their busy time.
//!
//! - **Direct** events of an op: launched by runtime calls made directly inside it (not
//!   inside a child op) — `CpuOp::launched`. TraceLens's `total_direct_kernel_time` of a
//!   "kernel launcher" op.
//! - **Subtree** events: the direct events of the op and of all its descendants.
//!   TraceLens's per-op "Kernel Time (µs)" in its roofline tables
//!   (`TreePerfAnalyzer.compute_perf_metrics`).
//!
//! Time is the **busy time**: the length of the union of the events' `[ts, ts + dur]`
//! intervals (TraceLens `GPUEventAnalyser.compute_metrics()["busy_time"]`), so kernels
//! that overlap on different streams count once. Kernels, memcpys and memsets all count,
//! as in TraceLens (a convolution's `Memset (Device)` is part of its time).
//!
//! Invariant relied on: `TraceModel::ops` is sorted by (pid, tid, ts, longer first), so
//! every child has a larger index than its parent; links that break it are ignored,
//! which also makes a malformed (cyclic) tree harmless.

use super::model::TraceModel;
use serde::Serialize;

/// GPU time of one CPU op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct OpGpuTime {
    /// Busy time of the events the op launched directly, ns.
    pub direct_ns: i64,
    /// Busy time of the events of the op's whole subtree, ns.
    pub subtree_ns: i64,
    pub direct_count: u32,
    pub subtree_count: u32,
}

/// The GPU events (indices into `TraceModel::gpu`) op `op` launched directly.
pub fn direct_events(model: &TraceModel, op: usize) -> &[u32] {
    model.ops.get(op).map_or(&[], |o| o.launched.as_slice())
}

/// The GPU events of op `op` and all its descendants, in GPU start-time order (ties in
/// launch order).
pub fn subtree_events(model: &TraceModel, op: usize) -> Vec<u32> {
    let mut out = Vec::new();
    // Allocated only when the op has children (most ops asked about have none).
    let mut stack = Vec::new();
    let mut next = Some(op);
    while let Some(i) = next.take().or_else(|| stack.pop()) {
        let Some(o) = model.ops.get(i) else { continue };
        // Room first: a filtered iterator's size is not known, and the vector grew a
        // step at a time (most ops ask for one vector of a few events).
        out.reserve(o.launched.len());
        out.extend(o.launched.iter().copied().filter(|&e| (e as usize) < model.gpu.len()));
        for &c in o.children.iter().rev() {
            let c = c as usize;
            if c > i {
                stack.push(c);
            }
        }
    }
    out.sort_by_key(|&e| model.gpu[e as usize].ts_ns);
    out
}

/// Busy time (length of the union) of `[start, end)` intervals, ns.
///
/// Intervals with `end < start` count as empty.
pub fn busy_of_intervals(intervals: &mut [(i64, i64)]) -> i64 {
    intervals.sort_unstable();
    let mut total: i64 = 0;
    let mut cur: Option<(i64, i64)> = None;
    for &(s, e) in intervals.iter() {
        let e = e.max(s);
        match cur {
            Some((cs, ce)) if s <= ce => cur = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total = total.saturating_add(ce - cs);
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    if let Some((cs, ce)) = cur {
        total = total.saturating_add(ce - cs);
    }
    total
}

/// Busy time of GPU events (indices into `TraceModel::gpu`), ns. Unknown indices are
/// skipped.
pub fn busy_ns(model: &TraceModel, events: &[u32]) -> i64 {
    let intervals = events
        .iter()
        .filter_map(|&e| model.gpu.get(e as usize))
        .map(|g| (g.ts_ns, g.ts_ns.saturating_add(g.dur_ns.max(0))));
    // Most ops launch a few events (this is asked once per op): their intervals on the
    // stack, not in an allocation.
    let mut few = [(0i64, 0i64); SMALL];
    if events.len() <= SMALL {
        let mut n = 0;
        for (slot, iv) in few.iter_mut().zip(intervals) {
            *slot = iv;
            n += 1;
        }
        return busy_of_intervals(&mut few[..n]);
    }
    let mut iv: Vec<(i64, i64)> = Vec::with_capacity(events.len());
    iv.extend(intervals);
    busy_of_intervals(&mut iv)
}

/// Events whose intervals [`busy_ns`] keeps on the stack.
const SMALL: usize = 8;

/// Direct and subtree GPU time of op `op`.
pub fn op_gpu_time(model: &TraceModel, op: usize) -> OpGpuTime {
    let direct = direct_events(model, op);
    let sub = subtree_events(model, op);
    OpGpuTime {
        direct_ns: busy_ns(model, direct),
        subtree_ns: busy_ns(model, &sub),
        direct_count: u32::try_from(direct.len()).unwrap_or(u32::MAX),
        subtree_count: u32::try_from(sub.len()).unwrap_or(u32::MAX),
    }
}

/// [`op_gpu_time`] of every op, indexed like `TraceModel::ops`.
pub fn all_op_gpu_times(model: &TraceModel) -> Vec<OpGpuTime> {
    (0..model.ops.len()).map(|i| op_gpu_time(model, i)).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::trace::model::{CpuOp, GpuEvent, GpuKind, OpArgs};

    pub(crate) fn op(name: &str, ts: i64, dur: i64, parent: Option<u32>) -> CpuOp {
        CpuOp {
            name: name.into(),
            ts_ns: ts,
            dur_ns: dur,
            pid: 1,
            tid: 1,
            external_id: None,
            seq: None,
            sequence_number: None,
            args: OpArgs::default().into(),
            parent,
            children: Vec::new(),
            launched: Vec::new(),
            comm: None,
        }
    }

    pub(crate) fn kernel(name: &str, ts: i64, dur: i64, stream: i64, op: u32) -> GpuEvent {
        GpuEvent {
            kind: GpuKind::Kernel,
            name: name.into(),
            ts_ns: ts,
            dur_ns: dur,
            device: 0,
            stream,
            correlation: None,
            external_id: None,
            launch: None,
            bytes: None,
            launcher: None,
            op: Some(op),
            runtime: None,
            comm: None,
        }
    }

    /// Links children and launched lists from `parent` / `op` fields.
    pub(crate) fn link(mut m: TraceModel) -> TraceModel {
        for i in 0..m.ops.len() {
            if let Some(p) = m.ops[i].parent {
                m.ops[p as usize].children.push(u32::try_from(i).unwrap());
            }
        }
        for (i, g) in m.gpu.clone().iter().enumerate() {
            if let Some(o) = g.op {
                m.ops[o as usize].launched.push(u32::try_from(i).unwrap());
            }
        }
        m
    }

    #[test]
    fn union_of_intervals_by_hand() {
        // [0,10) ∪ [5,12) ∪ [12,20) ∪ [30,31) = 20 + 1
        let mut iv = vec![(12, 20), (0, 10), (30, 31), (5, 12)];
        assert_eq!(busy_of_intervals(&mut iv), 21);
        assert_eq!(busy_of_intervals(&mut []), 0);
        assert_eq!(busy_of_intervals(&mut [(5, 3)]), 0);
    }

    proptest::proptest! {
        /// The union is at most the sum of the lengths and at least the longest one.
        #[test]
        fn union_is_bounded(iv in proptest::collection::vec((0i64..1_000_000, 0i64..10_000), 0..50)) {
            let mut v: Vec<(i64, i64)> = iv.iter().map(|&(s, d)| (s, s + d)).collect();
            let total: i64 = iv.iter().map(|&(_, d)| d).sum();
            let longest = iv.iter().map(|&(_, d)| d).max().unwrap_or(0);
            let busy = busy_of_intervals(&mut v);
            proptest::prop_assert!(busy <= total && busy >= longest);
        }
    }

    #[test]
    fn direct_and_subtree() {
        // conv (0) ⊃ cudnn_conv (1) launches k0, k1; conv launches add k2 directly.
        // k0 [100,110) and k1 [105,125) overlap on two streams: busy 25; k2 [130,134).
        let m = link(TraceModel {
            ops: vec![
                op("aten::convolution", 0, 1000, None),
                op("aten::cudnn_convolution", 10, 500, Some(0)),
            ],
            gpu: vec![
                kernel("k0", 100, 10, 7, 1),
                kernel("k1", 105, 20, 8, 1),
                kernel("add", 130, 4, 7, 0),
            ],
            ..TraceModel::default()
        });
        let conv = op_gpu_time(&m, 0);
        assert_eq!(
            conv,
            OpGpuTime { direct_ns: 4, subtree_ns: 29, direct_count: 1, subtree_count: 3 }
        );
        let cud = op_gpu_time(&m, 1);
        assert_eq!(
            cud,
            OpGpuTime { direct_ns: 25, subtree_ns: 25, direct_count: 2, subtree_count: 2 }
        );
        assert_eq!(subtree_events(&m, 0), vec![0, 1, 2]);
        assert_eq!(all_op_gpu_times(&m).len(), 2);
        assert_eq!(op_gpu_time(&m, 99), OpGpuTime::default());
    }

    #[test]
    fn cyclic_links_are_ignored() {
        let mut m = link(TraceModel {
            ops: vec![op("a", 0, 10, None), op("b", 1, 5, Some(0))],
            gpu: vec![kernel("k", 2, 1, 7, 1)],
            ..TraceModel::default()
        });
        m.ops[1].children.push(0);
        m.ops[1].launched.push(42);
        assert_eq!(subtree_events(&m, 0), vec![0]);
    }
}
