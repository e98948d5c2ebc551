//! The critical-path graph of one window of one rank, built as HTA builds it
//! (`hta/analyzers/critical_path_analysis.py`, `CPGraph`), and its longest path.
//!
//! Nodes are the start and the end of every CPU op, runtime call and GPU event in the
//! window; an edge's weight is time (ns). The rules, HTA's:
//! - **Window**: CPU ops and runtime calls that start inside it and last longer than 0;
//!   GPU events whose launching runtime call does; `cuda_sync` events whose runtime call
//!   does, and every `Stream Wait Event`.
//! - **CPU threads**: each thread's ops, runtime calls and annotations form a call stack
//!   (start/end events sorted by time; at equal times ends first, then longer starts
//!   first). A depth-first walk links each event's start (and, on the way back, its end)
//!   to the last node seen, weighted by the time between; such an edge is attributed to
//!   the source event when the source is a start, to the destination when both are ends,
//!   else to the enclosing event. Consecutive top-level ops of a thread are linked by a
//!   zero-weight dependency. The edge into the end of a blocking runtime call
//!   (`cudaDeviceSynchronize`, `cudaStreamSynchronize`, `cudaEventQuery`,
//!   `cudaEventSynchronize`, `cudaMemcpy`, `cudaMemcpyAsync`) weighs 0: the wait is the
//!   GPU's, carried by a sync edge.
//! - **GPU**: each event's start → end (its duration). Kernels are visited in start
//!   order (syncs at their end). A kernel gets a **launch-delay** edge from its runtime
//!   call's start when the stream's launch queue was empty at the launch (length 1 after
//!   it, 0 once the kernel started), the stream's previous kernel had ended before the
//!   launch, and any event dependency had too; otherwise a **kernel-kernel** edge from
//!   the stream's previous kernel's end. Queue lengths are counted as in
//!   [`super::launch::queue_series`], over HTA's launch calls ([`is_hta_launch`]) and
//!   the whole trace.
//! - **Syncs**: `Context Sync` adds a zero-weight edge from the last kernel of every
//!   stream to the end of its runtime call, `Stream Sync` from the last kernel of its
//!   stream; `Event Sync` from the last kernel launched on the recorded event's stream
//!   before the `cudaEventRecord`; `Stream Wait Event` makes the next kernel launched on
//!   the waiting stream (same thread) depend on that kernel.
//! - Weights of −1 µs or less are set to 0 (HTA, non-strict mode); the longest path is
//!   networkx's `dag_longest_path` (a path restarts where every incoming path is
//!   negative).
//!
//! The what-if graph adds HTA's optional zero-weight launch edges (every kernel after
//! its launch call), so that a kernel never starts before its launch when weights
//! change.

use super::super::model::{GpuKind, SyncKind, TraceModel};
use super::Span;
use foldhash::HashMap;

/// An event of the trace that has nodes or receives an edge's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EvRef {
    /// `TraceModel::ops[i]`.
    Op(u32),
    /// `TraceModel::runtime[i]`.
    Runtime(u32),
    /// `TraceModel::annotations[i]` (a CPU annotation; no nodes, receives time).
    Annotation(u32),
    /// `TraceModel::gpu[i]`.
    Gpu(u32),
}

/// What an edge stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// The span of an op, runtime call or GPU event (HTA `critical_path_operator`).
    Operator,
    /// Zero-weight order between top-level ops of a thread.
    Dependency,
    /// Launch call start → kernel start.
    LaunchDelay,
    /// Previous kernel's end → kernel start on one stream.
    KernelKernel,
    /// GPU → CPU or GPU → GPU synchronisation, zero weight.
    Sync,
}

impl EvRef {
    /// The kind as a number below 4, and the index.
    fn pack(self) -> (u8, u32) {
        match self {
            EvRef::Op(i) => (0, i),
            EvRef::Runtime(i) => (1, i),
            EvRef::Annotation(i) => (2, i),
            EvRef::Gpu(i) => (3, i),
        }
    }

    /// The inverse of [`EvRef::pack`] (the kind's low two bits).
    fn unpack(kind: u8, i: u32) -> EvRef {
        match kind & 3 {
            0 => EvRef::Op(i),
            1 => EvRef::Runtime(i),
            2 => EvRef::Annotation(i),
            _ => EvRef::Gpu(i),
        }
    }
}

/// A node: an event's start or end. 16 bytes (an [`EvRef`] and a flag beside a time
/// took 24): a long window has millions, at the analysis's memory peak.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub ts: i64,
    index: u32,
    /// The event's kind ([`EvRef::pack`]), plus [`START`] for a start.
    tag: u8,
}

/// [`Node::tag`]'s bit for an event's start.
const START: u8 = 4;
/// [`Edge`]'s tag for no attributed event.
const NO_EVENT: u8 = 4;

impl Node {
    pub fn new(ts: i64, ev: EvRef, is_start: bool) -> Node {
        let (kind, index) = ev.pack();
        Node { ts, index, tag: kind | if is_start { START } else { 0 } }
    }

    pub fn ev(&self) -> EvRef {
        EvRef::unpack(self.tag, self.index)
    }

    pub fn is_start(&self) -> bool {
        self.tag & START != 0
    }

    /// The graph's node order: by time, starts before ends, then by event ([`EvRef`]'s
    /// order: kind, then index).
    fn order(&self) -> (i64, u64) {
        let end = u64::from(!self.is_start());
        (self.ts, end << 40 | u64::from(self.tag & 3) << 32 | u64::from(self.index))
    }
}

/// An edge. 24 bytes (with an `Option<EvRef>` it took 32).
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    pub from: u32,
    pub to: u32,
    pub weight: i64,
    pub kind: EdgeKind,
    /// The attributed event's kind ([`EvRef::pack`]), or [`NO_EVENT`].
    ev_kind: u8,
    ev_index: u32,
}

impl Edge {
    pub fn new(from: u32, to: u32, weight: i64, kind: EdgeKind, attributed: Option<EvRef>) -> Edge {
        let (ev_kind, ev_index) = attributed.map_or((NO_EVENT, 0), EvRef::pack);
        Edge { from, to, weight, kind, ev_kind, ev_index }
    }

    /// The event the edge's time belongs to (operator and kernel-kernel edges).
    pub fn attributed(&self) -> Option<EvRef> {
        (self.ev_kind != NO_EVENT).then(|| EvRef::unpack(self.ev_kind, self.ev_index))
    }
}

/// The graph.
#[derive(Debug, Clone, Default)]
pub struct CpGraph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    start_of: NodeIds,
    end_of: NodeIds,
    /// Per node, its latest outgoing edge (`NONE` if none) and how many it has; per
    /// edge, the one added before it from the same node. A second edge between two
    /// nodes replaces the first, as in a networkx `DiGraph`: most nodes have a few
    /// outgoing edges, looked through; the edges of a node with more
    /// ([`LIST_MAX`], a kernel that many syncs wait for) are also kept by pair.
    last_out: Vec<u32>,
    out_count: Vec<u8>,
    prev_out: Vec<u32>,
    /// (src, dst) → edge index, for the edges of nodes with more than [`LIST_MAX`].
    busy_pairs: HashMap<(u32, u32), u32>,
}

/// Outgoing edges of a node looked through for an earlier edge to the same node; the
/// edges of a node with more are found by pair (so that adding an edge stays O(1)).
const LIST_MAX: u8 = 8;

/// No node or no edge.
const NONE: u32 = u32::MAX;

/// A node id per event, in one table per kind of event, indexed as the model is
/// (dense: a graph has nodes for most events of its window).
#[derive(Debug, Clone, Default)]
struct NodeIds {
    op: Vec<u32>,
    runtime: Vec<u32>,
    annotation: Vec<u32>,
    gpu: Vec<u32>,
}

impl NodeIds {
    fn table(&self, ev: EvRef) -> (&[u32], u32) {
        match ev {
            EvRef::Op(i) => (&self.op, i),
            EvRef::Runtime(i) => (&self.runtime, i),
            EvRef::Annotation(i) => (&self.annotation, i),
            EvRef::Gpu(i) => (&self.gpu, i),
        }
    }

    fn get(&self, ev: EvRef) -> Option<u32> {
        let (t, i) = self.table(ev);
        t.get(i as usize).copied().filter(|&id| id != NONE)
    }

    fn set(&mut self, ev: EvRef, id: u32) {
        let (t, i) = match ev {
            EvRef::Op(i) => (&mut self.op, i),
            EvRef::Runtime(i) => (&mut self.runtime, i),
            EvRef::Annotation(i) => (&mut self.annotation, i),
            EvRef::Gpu(i) => (&mut self.gpu, i),
        };
        let i = i as usize;
        if t.len() <= i {
            t.resize(i + 1, NONE);
        }
        t[i] = id;
    }
}

/// Runtime calls HTA treats as blocking the CPU.
fn is_blocking(name: &str) -> bool {
    matches!(
        name,
        "cudaDeviceSynchronize"
            | "cudaStreamSynchronize"
            | "cudaEventQuery"
            | "cudaEventSynchronize"
            | "cudaMemcpy"
            | "cudaMemcpyAsync"
    )
}

/// The launch calls HTA's queue length and launch-delay edges count
/// (`TraceSymbolTable.get_runtime_launch_events_query`).
pub fn is_hta_launch(name: &str) -> bool {
    matches!(
        name,
        "cudaLaunchKernel"
            | "cudaLaunchKernelExC"
            | "cuLaunchKernel"
            | "cudaMemcpyAsync"
            | "cudaMemsetAsync"
            | "hipLaunchKernel"
            | "hipExtModuleLaunchKernel"
            | "hipMemsetAsync"
            | "hipMemcpyAsync"
            | "hipMemcpyWithStream"
    )
}

impl CpGraph {
    /// Nodes for the starts and ends of `evs` (`(ts, dur, event)`), which are given back
    /// before the nodes are sorted.
    fn add_events(&mut self, evs: Vec<(i64, i64, EvRef)>) {
        let n = evs.len();
        self.nodes.reserve(2 * n);
        self.nodes.extend(evs.iter().map(|&(ts, _, ev)| Node::new(ts, ev, true)));
        self.nodes.extend(evs.iter().map(|&(ts, dur, ev)| Node::new(ts + dur, ev, false)));
        drop(evs);
        // Node ids in time order (HTA sorts its node table by time): by (time, starts
        // before ends, event). The starts and the ends are each nearly in order already:
        // the stable sort finds them as runs and merges them (with room for half of
        // them; a start list and an end list beside the nodes took as much as the nodes).
        self.nodes.sort_by_key(Node::order);
        for (id, node) in self.nodes.iter().enumerate() {
            if node.is_start() {
                self.start_of.set(node.ev(), id as u32);
            } else {
                self.end_of.set(node.ev(), id as u32);
            }
        }
        // Room at once for about as many edges as nodes (a graph has about one edge per
        // node): grown by doubling, the copies left behind are holes in the heap, at the
        // analysis's peak.
        self.edges.reserve(self.nodes.len());
        self.prev_out.reserve(self.nodes.len());
        self.last_out.resize(self.nodes.len(), NONE);
        self.out_count.resize(self.nodes.len(), 0);
    }

    pub fn start(&self, ev: EvRef) -> Option<u32> {
        self.start_of.get(ev)
    }

    pub fn end(&self, ev: EvRef) -> Option<u32> {
        self.end_of.get(ev)
    }

    /// Adds an edge; its weight is the time between the nodes unless it is a dependency
    /// or sync edge or `zero`.
    fn edge(&mut self, from: u32, to: u32, kind: EdgeKind, zero: bool, attributed: Option<EvRef>) {
        if from == to {
            return;
        }
        let w = if zero || matches!(kind, EdgeKind::Dependency | EdgeKind::Sync) {
            0
        } else {
            self.nodes[to as usize].ts - self.nodes[from as usize].ts
        };
        // HTA (non-strict): weights of -1 µs or less are set to 0.
        let weight = if w <= -1000 { 0 } else { w };
        let e = Edge::new(from, to, weight, kind, attributed);
        if let Some(i) = self.edge_index(from, to) {
            self.edges[i] = e;
            return;
        }
        let f = from as usize;
        if self.last_out.len() <= f {
            self.last_out.resize(f + 1, NONE);
            self.out_count.resize(f + 1, 0);
        }
        let index = self.edges.len() as u32;
        self.prev_out.push(self.last_out[f]);
        self.last_out[f] = index;
        self.edges.push(e);
        // Counted up to one past the list's limit (a byte per node).
        let before = self.out_count[f];
        if before <= LIST_MAX {
            self.out_count[f] = before + 1;
        }
        if before >= LIST_MAX {
            if before == LIST_MAX {
                // The node's earlier edges join the map.
                let mut i = self.prev_out[index as usize];
                while i != NONE {
                    self.busy_pairs.insert((from, self.edges[i as usize].to), i);
                    i = self.prev_out[i as usize];
                }
            }
            self.busy_pairs.insert((from, to), index);
        }
    }

    /// The longest path (node ids in order) and its length, ns; `None` when the graph
    /// has a cycle. `weight(i, e)` gives the weight of edge `i`.
    pub fn longest_path(&self, weight: &dyn Fn(usize, &Edge) -> i64) -> Option<(Vec<u32>, i64)> {
        let n = self.nodes.len();
        let mut indeg = vec![0u32; n];
        // Incoming edges and successors of every node in edge order, as two flat
        // (compressed-row) tables rather than two vectors per node.
        let (preds, succs) = self.adjacency();
        for e in &self.edges {
            indeg[e.to as usize] += 1;
        }
        // Kahn's algorithm, smallest node id first among the ready ones.
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<u32>> =
            (0..n as u32).filter(|&v| indeg[v as usize] == 0).map(std::cmp::Reverse).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(std::cmp::Reverse(v)) = ready.pop() {
            order.push(v);
            for &s in succs.row(v) {
                indeg[s as usize] -= 1;
                if indeg[s as usize] == 0 {
                    ready.push(std::cmp::Reverse(s));
                }
            }
        }
        if order.len() != n {
            return None;
        }
        // dist[v] = (length, predecessor node); a node with no non-negative incoming
        // path starts a path of its own.
        let mut dist: Vec<(i64, u32)> = (0..n as u32).map(|v| (0, v)).collect();
        for &v in &order {
            let mut best: Option<(i64, u32)> = None;
            for &ei in preds.row(v) {
                let e = &self.edges[ei as usize];
                let d = dist[e.from as usize].0 + weight(ei as usize, e);
                if best.is_none_or(|(b, _)| d > b) {
                    best = Some((d, e.from));
                }
            }
            dist[v as usize] = match best {
                Some((d, u)) if d >= 0 => (d, u),
                _ => (0, v),
            };
        }
        let mut end = *order.first()?;
        for &v in &order {
            if dist[v as usize].0 > dist[end as usize].0 {
                end = v;
            }
        }
        let len = dist[end as usize].0;
        let mut path = vec![end];
        let mut v = end;
        while dist[v as usize].1 != v {
            v = dist[v as usize].1;
            path.push(v);
        }
        path.reverse();
        Some((path, len))
    }

    /// Per node, the indices of its incoming edges and the nodes its outgoing edges
    /// reach, each in edge order.
    fn adjacency(&self) -> (Csr, Csr) {
        let n = self.nodes.len();
        let preds = Csr::new(n, self.edges.iter().enumerate().map(|(i, e)| (e.to, i as u32)));
        let succs = Csr::new(n, self.edges.iter().map(|e| (e.from, e.to)));
        (preds, succs)
    }

    /// The edge from `a` to `b`.
    pub fn edge_between(&self, a: u32, b: u32) -> Option<&Edge> {
        self.edge_index(a, b).map(|i| &self.edges[i])
    }

    /// The index of the edge from `a` to `b`.
    pub fn edge_index(&self, a: u32, b: u32) -> Option<usize> {
        if self.out_count.get(a as usize).is_some_and(|&n| n > LIST_MAX) {
            return self.busy_pairs.get(&(a, b)).map(|&i| i as usize);
        }
        let mut i = self.last_out.get(a as usize).copied().unwrap_or(NONE);
        while i != NONE {
            if self.edges[i as usize].to == b {
                return Some(i as usize);
            }
            i = self.prev_out[i as usize];
        }
        None
    }
}

/// Rows of `u32` for nodes `0..n` in one vector (compressed sparse rows).
struct Csr {
    /// Row `v` is `items[start[v]..start[v + 1]]`.
    start: Vec<u32>,
    items: Vec<u32>,
}

impl Csr {
    /// The rows of `(row, item)` pairs, each row's items in the pairs' order. Each row
    /// is filled from its end, the pairs taken from the last: its end moves back to its
    /// start, and no cursor per row is needed beside the starts.
    fn new(n: usize, pairs: impl DoubleEndedIterator<Item = (u32, u32)> + Clone) -> Csr {
        let mut start = vec![0u32; n + 1];
        for (row, _) in pairs.clone() {
            start[row as usize] += 1;
        }
        // start[v] = the end of row v (start[n] = the total: no row n).
        let mut total = 0;
        for s in &mut start {
            total += *s;
            *s = total;
        }
        let mut items = vec![0; total as usize];
        for (row, item) in pairs.rev() {
            let s = &mut start[row as usize];
            *s -= 1;
            items[*s as usize] = item;
        }
        Csr { start, items }
    }

    fn row(&self, v: u32) -> &[u32] {
        &self.items[self.start[v as usize] as usize..self.start[v as usize + 1] as usize]
    }
}

/// The call-stack tree's root (no event).
const ROOT: usize = usize::MAX;

/// No child (no sibling) in [`thread_edges`]' tree.
const NO_CHILD: u32 = u32::MAX;

/// HTA's depth-first walk state for one thread.
struct Walk {
    last_node: Option<u32>,
    last_high: Option<u32>,
    depth: u32,
    last_parent: Option<EvRef>,
}

/// A GPU event or a `cuda_sync` event, visited in time order.
#[derive(Clone, Copy)]
enum Item {
    Gpu(u32),
    Sync(u32),
}

/// Queue-length changes of one stream: `(ts, +1 or −1, GPU event index)`.
type QueueChanges = HashMap<(i64, i64), Vec<(i64, i8, u32)>>;

/// One entry of a thread's call stack.
#[derive(Debug, Clone, Copy)]
struct StackEv {
    ts: i64,
    dur: i64,
    ev: EvRef,
}

/// Builds the graph of `window`. `zero_launch_edges` adds HTA's optional zero-weight
/// launch edges (for what-if simulation).
pub fn build(model: &TraceModel, window: Span, zero_launch_edges: bool) -> CpGraph {
    let in_window = |ts: i64, dur: i64| window.contains(ts) && dur > 0;
    let mut g = CpGraph::default();

    // Clipped events.
    let mut threads: HashMap<(i64, i64), Vec<StackEv>> = HashMap::default();
    let mut node_evs: Vec<(i64, i64, EvRef)> = Vec::new();
    for (i, o) in model.ops.iter().enumerate() {
        if in_window(o.ts_ns, o.dur_ns) {
            let ev = EvRef::Op(i as u32);
            threads.entry((o.pid, o.tid)).or_default().push(StackEv {
                ts: o.ts_ns,
                dur: o.dur_ns,
                ev,
            });
            node_evs.push((o.ts_ns, o.dur_ns, ev));
        }
    }
    let rt_in: Vec<bool> = model.runtime.iter().map(|r| in_window(r.ts_ns, r.dur_ns)).collect();
    for (i, r) in model.runtime.iter().enumerate() {
        if rt_in[i] {
            let ev = EvRef::Runtime(i as u32);
            threads.entry((r.pid, r.tid)).or_default().push(StackEv {
                ts: r.ts_ns,
                dur: r.dur_ns,
                ev,
            });
            node_evs.push((r.ts_ns, r.dur_ns, ev));
        }
    }
    // CPU annotations shape the call stacks but have no nodes. Their thread is the one
    // whose ops they enclose; the model does not keep an annotation's thread, so each is
    // given to every thread with an op inside it (found by binary search in the
    // thread's sorted op starts: many annotations over many ops stay n log n).
    let op_starts: HashMap<(i64, i64), Vec<i64>> = threads
        .iter()
        .map(|(k, v)| {
            let mut s: Vec<i64> =
                v.iter().filter(|e| matches!(e.ev, EvRef::Op(_))).map(|e| e.ts).collect();
            s.sort_unstable();
            (*k, s)
        })
        .collect();
    for (i, a) in model.annotations.iter().enumerate() {
        if a.on_gpu || !in_window(a.ts_ns, a.dur_ns) {
            continue;
        }
        let end = a.ts_ns + a.dur_ns;
        for (k, v) in &mut threads {
            let starts = op_starts.get(k).map_or(&[][..], Vec::as_slice);
            let first = starts.partition_point(|&t| t < a.ts_ns);
            if starts.get(first).is_some_and(|&t| t < end) {
                v.push(StackEv { ts: a.ts_ns, dur: a.dur_ns, ev: EvRef::Annotation(i as u32) });
            }
        }
    }
    drop(op_starts);
    let gpu_in: Vec<bool> = model
        .gpu
        .iter()
        .map(|e| e.runtime.is_some_and(|r| rt_in.get(r as usize).copied().unwrap_or(false)))
        .collect();
    for (i, e) in model.gpu.iter().enumerate() {
        if gpu_in[i] {
            node_evs.push((e.ts_ns, e.dur_ns, EvRef::Gpu(i as u32)));
        }
    }
    g.add_events(node_evs);

    // CPU call stacks.
    let mut keys: Vec<(i64, i64)> = threads.keys().copied().collect();
    keys.sort_unstable();
    for k in keys {
        if let Some(evs) = threads.remove(&k) {
            thread_edges(model, &mut g, &evs);
        }
    }

    gpu_edges(model, &mut g, &gpu_in, &rt_in, zero_launch_edges);
    g
}

/// Two sorted lists merged: `(true, i)` for `first[i]`, `(false, j)` for `second[j]`;
/// `first`'s next item comes ahead when `ahead(first[i], second[j])`.
fn merge_by<'x, A, B>(
    first: &'x [A],
    second: &'x [B],
    ahead: impl Fn(&A, &B) -> bool + 'x,
) -> impl Iterator<Item = (bool, usize)> + 'x {
    let (mut at_first, mut at_second) = (0, 0);
    std::iter::from_fn(move || {
        let take_first = match (first.get(at_first), second.get(at_second)) {
            (Some(x), Some(y)) => ahead(x, y),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        if take_first {
            at_first += 1;
            Some((true, at_first - 1))
        } else {
            at_second += 1;
            Some((false, at_second - 1))
        }
    })
}

/// HTA's `_construct_graph_from_call_stack` for one thread.
fn thread_edges(model: &TraceModel, g: &mut CpGraph, evs: &[StackEv]) {
    // Start/end points: at equal times ends first; starts longer first; ends shorter
    // first (HTA `compare_events` for events longer than 0).
    // Starts: earlier event first; ends: later event first. Sorted apart and merged, as
    // indices into `evs` (4 bytes a point, not 32: a thread can hold most of a trace).
    // Every key ends with the index, so a stable sort gives the one order there is. A
    // thread's events are events of the window, far fewer than 2^32 (the critical path
    // refuses windows of more than `MAX_NODES` nodes before building the graph).
    let n = u32::try_from(evs.len()).unwrap_or(u32::MAX);
    let mut starts: Vec<u32> = (0..n).collect();
    let mut ends: Vec<u32> = starts.clone();
    starts.sort_by_key(|&i| {
        let e = &evs[i as usize];
        (e.ts, -e.dur, e.ev, i)
    });
    ends.sort_by_key(|&i| {
        let e = &evs[i as usize];
        (e.ts + e.dur, e.dur, std::cmp::Reverse(e.ev), i)
    });
    let end_of = |i: u32| evs[i as usize].ts + evs[i as usize].dur;
    let pts = merge_by(&starts, &ends, |&s, &e| evs[s as usize].ts < end_of(e))
        .map(|(start, k)| (start, if start { starts[k] } else { ends[k] } as usize));
    // Tree: per node its last child, per child the child before it (slot `evs.len()`
    // is the root's): children are walked last first, the order they are pushed in.
    let root = evs.len();
    let slot = |p: usize| if p == ROOT { root } else { p };
    let mut last_child = vec![NO_CHILD; evs.len() + 1];
    let mut prev_sibling = vec![NO_CHILD; evs.len()];
    let mut parent = vec![ROOT; evs.len()];
    let mut stack: Vec<usize> = Vec::new();
    for (start, i) in pts {
        if start {
            let p = stack.last().copied().unwrap_or(ROOT);
            parent[i] = p;
            prev_sibling[i] = last_child[slot(p)];
            last_child[slot(p)] = i as u32;
            stack.push(i);
        } else {
            stack.pop();
        }
    }
    // Pushes the children of `p` so that the first is popped first.
    let push_children = |todo: &mut Vec<(usize, bool)>, p: usize| {
        let mut c = last_child[slot(p)];
        while c != NO_CHILD {
            todo.push((c as usize, false));
            c = prev_sibling[c as usize];
        }
    };
    // Depth-first walk with HTA's enter/exit rules.
    let mut w = Walk { last_node: None, last_high: None, depth: 0, last_parent: None };
    let parent_ev = |i: usize| (parent[i] != ROOT).then(|| evs[parent[i]].ev);
    // Explicit stack of (node, entered?) to avoid recursion on deep stacks.
    let mut todo: Vec<(usize, bool)> = Vec::new();
    push_children(&mut todo, ROOT);
    while let Some((i, exiting)) = todo.pop() {
        let ev = evs[i].ev;
        let nodes = (g.start(ev), g.end(ev));
        if exiting {
            if let (Some(_), Some(end)) = nodes {
                w.depth = w.depth.saturating_sub(1);
                if let Some(last) = w.last_node {
                    let zero = matches!(ev, EvRef::Runtime(r)
                        if model.runtime.get(r as usize).is_some_and(|x| is_blocking(&x.name)));
                    let attributed = attribution(g, last, end, w.last_parent);
                    g.edge(last, end, EdgeKind::Operator, zero, attributed);
                }
                if w.depth == 0 {
                    w.last_node = None;
                    w.last_high = Some(end);
                } else {
                    w.last_node = Some(end);
                    w.last_parent = parent_ev(i);
                }
            }
            continue;
        }
        if let (Some(start), Some(_)) = nodes {
            if w.depth == 0 {
                if let Some(h) = w.last_high {
                    g.edge(h, start, EdgeKind::Dependency, true, None);
                }
            }
            w.depth += 1;
            if let Some(last) = w.last_node {
                let attributed = attribution(g, last, start, w.last_parent);
                g.edge(last, start, EdgeKind::Operator, false, attributed);
            }
            w.last_node = Some(start);
            w.last_parent = parent_ev(i);
        }
        todo.push((i, true));
        push_children(&mut todo, i);
    }
}

/// HTA `_attribute_edge` for an operator edge `src → dst`.
fn attribution(g: &CpGraph, src: u32, dst: u32, src_parent: Option<EvRef>) -> Option<EvRef> {
    let (s, d) = (g.nodes[src as usize], g.nodes[dst as usize]);
    if s.is_start() {
        Some(s.ev())
    } else if !d.is_start() {
        Some(d.ev())
    } else {
        src_parent
    }
}

/// GPU kernel, launch, kernel-kernel and sync edges (HTA `_construct_graph_from_kernels`).
fn gpu_edges(model: &TraceModel, g: &mut CpGraph, gpu_in: &[bool], rt_in: &[bool], zero: bool) {
    // Queue length after each launch call and after each kernel start, over HTA's launch
    // calls, on the whole trace.
    let hta_model_launch = |gi: usize| -> Option<u32> {
        let ge = &model.gpu[gi];
        let r = ge.runtime?;
        is_hta_launch(&model.runtime.get(r as usize)?.name).then_some(r)
    };
    let mut q_runtime: HashMap<u32, i64> = HashMap::default();
    let mut q_kernel: HashMap<u32, i64> = HashMap::default();
    {
        // Changes per stream with the event they belong to.
        let mut per: QueueChanges = HashMap::default();
        for (i, ge) in model.gpu.iter().enumerate() {
            if let Some(r) = hta_model_launch(i) {
                let v = per.entry((ge.device, ge.stream)).or_default();
                v.push((model.runtime[r as usize].ts_ns, 1, i as u32));
                v.push((ge.ts_ns, -1, i as u32));
            }
        }
        for v in per.values_mut() {
            v.sort_unstable_by_key(|&(ts, d, i)| (ts, -d, i));
            let mut len = 0i64;
            for &(_, d, i) in v.iter() {
                len += i64::from(d);
                // Only the window's kernels are looked up.
                if !gpu_in[i as usize] {
                    continue;
                }
                if d > 0 {
                    if let Some(r) = model.gpu[i as usize].runtime {
                        q_runtime.insert(r, len);
                    }
                } else {
                    q_kernel.insert(i, len);
                }
            }
        }
    }

    // Event record → the last launch on its stream before it; wait → next launch. Only
    // traces with `cuda_sync` events need them.
    let has_syncs = !model.syncs.is_empty();
    let launches_by_stream =
        if has_syncs { launches_by_stream(model, &hta_model_launch) } else { Launches::default() };
    let record_src = if has_syncs {
        event_record_sources(model, &launches_by_stream)
    } else {
        HashMap::default()
    };
    let runtime_by_corr: HashMap<i64, u32> = if has_syncs {
        model
            .runtime
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.correlation.map(|c| (c, i as u32)))
            .collect()
    } else {
        HashMap::default()
    };

    // Items: kernels in the window (by start) and syncs (by end).
    let mut items: Vec<(i64, u8, u32, Item)> = Vec::new();
    for (i, e) in model.gpu.iter().enumerate() {
        if gpu_in[i] {
            items.push((e.ts_ns, 0, i as u32, Item::Gpu(i as u32)));
        }
    }
    for (i, s) in model.syncs.iter().enumerate() {
        let rt_ok = s.runtime.is_some_and(|r| rt_in.get(r as usize).copied().unwrap_or(false));
        if rt_ok || s.kind == SyncKind::StreamWaitEvent {
            items.push((s.ts_ns + s.dur_ns, 1, i as u32, Item::Sync(i as u32)));
        }
    }
    items.sort_unstable_by_key(|&(t, k, i, _)| (t, k, i));

    let mut last: HashMap<(i64, i64), u32> = HashMap::default();
    let mut kernel_sync: HashMap<u32, u32> = HashMap::default();
    for &(_, _, _, item) in &items {
        match item {
            Item::Sync(si) => {
                let s = &model.syncs[si as usize];
                let runtime_end = s.runtime.and_then(|r| g.end(EvRef::Runtime(r)));
                match s.kind {
                    SyncKind::Context => {
                        if let Some(re) = runtime_end {
                            let mut ends: Vec<u32> = last.values().copied().collect();
                            ends.sort_unstable();
                            for n in ends {
                                g.edge(n, re, EdgeKind::Sync, true, None);
                            }
                        }
                    }
                    SyncKind::Stream => {
                        if let (Some(re), Some(&n)) = (runtime_end, last.get(&(s.device, s.stream)))
                        {
                            g.edge(n, re, EdgeKind::Sync, true, None);
                        }
                    }
                    SyncKind::Event | SyncKind::StreamWaitEvent => {
                        let Some(src_kernel) = s
                            .wait_on_record_correlation
                            .and_then(|c| runtime_by_corr.get(&c))
                            .and_then(|r| record_src.get(r))
                            .copied()
                        else {
                            continue;
                        };
                        if s.kind == SyncKind::StreamWaitEvent {
                            let Some(wait_rt) = s.runtime else { continue };
                            if let Some(dest) = next_launch(
                                model,
                                &launches_by_stream,
                                wait_rt,
                                (s.device, s.stream),
                            ) {
                                kernel_sync.insert(dest, src_kernel);
                            }
                        } else if let (Some(re), Some(src_end)) =
                            (runtime_end, g.end(EvRef::Gpu(src_kernel)))
                        {
                            g.edge(src_end, re, EdgeKind::Sync, true, None);
                        }
                    }
                    SyncKind::Other => {}
                }
            }
            Item::Gpu(gi) => {
                let ev = EvRef::Gpu(gi);
                let (Some(start), Some(end)) = (g.start(ev), g.end(ev)) else { continue };
                g.edge(start, end, EdgeKind::Operator, false, Some(ev));
                let ge = &model.gpu[gi as usize];
                let key = (ge.device, ge.stream);
                let mut sync_end = None;
                if let Some(src) = kernel_sync.remove(&gi) {
                    if let Some(se) = g.end(EvRef::Gpu(src)) {
                        g.edge(se, start, EdgeKind::Sync, true, None);
                        sync_end = Some(g.nodes[se as usize].ts);
                    }
                }
                let Some(r) = ge.runtime else { continue };
                let rt_ts = model.runtime[r as usize].ts_ns;
                let prev = last.get(&key).copied();
                let prev_ts = prev.map(|p| g.nodes[p as usize].ts);
                let launch = q_runtime.get(&r) == Some(&1)
                    && q_kernel.get(&gi) == Some(&0)
                    && prev_ts.is_none_or(|t| t < rt_ts)
                    && sync_end.is_none_or(|t| t < rt_ts);
                let rt_start = g.start(EvRef::Runtime(r));
                let mut launched = false;
                if launch {
                    if let Some(rs) = rt_start {
                        g.edge(rs, start, EdgeKind::LaunchDelay, false, None);
                        launched = true;
                    }
                } else if let (Some(p), Some(pt)) = (prev, prev_ts) {
                    if sync_end.is_none_or(|t| t < pt) {
                        let prev_ev = g.nodes[p as usize].ev();
                        g.edge(p, start, EdgeKind::KernelKernel, false, Some(prev_ev));
                    }
                }
                if zero && !launched {
                    if let Some(rs) = rt_start {
                        // HTA adds this edge only where none links the pair yet.
                        if g.edge_between(rs, start).is_none() {
                            g.edge(rs, start, EdgeKind::LaunchDelay, true, None);
                        }
                    }
                }
                last.insert(key, end);
            }
        }
    }
}

/// HTA launch calls per (device, stream) of their GPU event, in launch-time order:
/// `(runtime start, runtime index, pid, tid, gpu index)`.
type Launches = HashMap<(i64, i64), Vec<(i64, u32, i64, i64, u32)>>;

fn launches_by_stream(model: &TraceModel, hta_launch: &dyn Fn(usize) -> Option<u32>) -> Launches {
    let mut out: Launches = HashMap::default();
    for (i, ge) in model.gpu.iter().enumerate() {
        if ge.kind == GpuKind::Kernel || ge.kind == GpuKind::Memcpy || ge.kind == GpuKind::Memset {
            if let Some(r) = hta_launch(i) {
                let rt = &model.runtime[r as usize];
                out.entry((ge.device, ge.stream))
                    .or_default()
                    .push((rt.ts_ns, r, rt.pid, rt.tid, i as u32));
            }
        }
    }
    for v in out.values_mut() {
        v.sort_unstable();
    }
    out
}

/// For each `cudaEventRecord` call whose stream a sync event names: the GPU event of the
/// last launch on that stream before the record.
fn event_record_sources(model: &TraceModel, launches: &Launches) -> HashMap<u32, u32> {
    let by_corr: HashMap<i64, u32> = model
        .runtime
        .iter()
        .enumerate()
        .filter(|(_, r)| &*r.name == "cudaEventRecord" || &*r.name == "hipEventRecord")
        .filter_map(|(i, r)| r.correlation.map(|c| (c, i as u32)))
        .collect();
    let mut out = HashMap::default();
    for s in &model.syncs {
        let (Some(c), Some(stream)) = (s.wait_on_record_correlation, s.wait_on_stream) else {
            continue;
        };
        let Some(&rec) = by_corr.get(&c) else { continue };
        if out.contains_key(&rec) {
            continue;
        }
        let ts = model.runtime[rec as usize].ts_ns;
        if let Some(v) = launches.get(&(s.device, stream)) {
            let k = v.partition_point(|l| l.0 <= ts);
            if k > 0 {
                out.insert(rec, v[k - 1].4);
            }
        }
    }
    out
}

/// The GPU event of the first launch on `stream` from the wait call's thread after it.
fn next_launch(
    model: &TraceModel,
    launches: &Launches,
    wait_rt: u32,
    stream: (i64, i64),
) -> Option<u32> {
    let w = model.runtime.get(wait_rt as usize)?;
    let v = launches.get(&stream)?;
    let k = v.partition_point(|l| l.0 < w.ts_ns);
    v[k..].iter().find(|l| l.2 == w.pid && l.3 == w.tid).map(|l| l.4)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes and edges stay packed: a long window has millions of each, at the
    /// analysis's memory peak.
    #[test]
    fn nodes_and_edges_are_packed() {
        assert_eq!((std::mem::size_of::<Node>(), std::mem::size_of::<Edge>()), (16, 24));
        for ev in [EvRef::Op(7), EvRef::Runtime(0), EvRef::Annotation(u32::MAX), EvRef::Gpu(3)] {
            for start in [true, false] {
                let n = Node::new(-5, ev, start);
                assert_eq!((n.ts, n.ev(), n.is_start()), (-5, ev, start));
            }
            assert_eq!(Edge::new(1, 2, 3, EdgeKind::Operator, Some(ev)).attributed(), Some(ev));
        }
        assert_eq!(Edge::new(1, 2, 3, EdgeKind::Sync, None).attributed(), None);
    }

    /// A second edge between two nodes replaces the first in place, for nodes with a
    /// few outgoing edges (looked through) and with many (found by pair), across the
    /// change from one to the other.
    #[test]
    fn a_second_edge_between_two_nodes_replaces_the_first() {
        let mut g = CpGraph::default();
        let evs: Vec<(i64, i64, EvRef)> =
            (0..30).map(|i| (i64::from(i) * 10, 5, EvRef::Op(i))).collect();
        g.add_events(evs);
        let n = g.nodes.len() as u32;
        // Node 0 reaches every other node (many edges); node 1 reaches three.
        for to in 1..n {
            g.edge(0, to, EdgeKind::Operator, false, None);
        }
        for to in [2, 3, 4] {
            g.edge(1, to, EdgeKind::Operator, false, None);
        }
        let before = g.edges.len();
        for (from, to) in [(0, 1), (0, 5), (0, n - 1), (1, 3)] {
            let i = g.edge_index(from, to).unwrap();
            g.edge(from, to, EdgeKind::Sync, false, None);
            assert_eq!(g.edges.len(), before, "{from} -> {to}");
            assert_eq!(g.edge_index(from, to), Some(i));
            assert_eq!((g.edges[i].from, g.edges[i].to), (from, to));
            assert_eq!(g.edges[i].kind, EdgeKind::Sync);
        }
        // Every edge is found where it is, and no other pair is.
        for (i, e) in g.edges.iter().enumerate() {
            assert_eq!(g.edge_index(e.from, e.to), Some(i));
        }
        assert_eq!(g.edge_index(1, 5), None);
        assert_eq!(g.edge_index(2, 0), None);
        assert_eq!(g.edge_index(n + 5, 0), None);
    }
}
