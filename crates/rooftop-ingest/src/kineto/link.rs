//! Turns the parsed events into a [`TraceModel`]: nests CPU ops per thread by time,
//! finds each runtime call's op, and links each GPU activity to the runtime call that
//! launched it (by `correlation`, then `External id`, then launch flows).
//!
//! Rules (the linking of
//! docs/reference/input-formats.md#pytorch-profiler-kineto-trace-json):
//! - An op's parent is the innermost op on the same (pid, tid) whose closed interval
//!   contains it; ops are visited by start time, longer first, so a parent that starts
//!   at the same time as its child comes first.
//! - A runtime call belongs to the innermost op on its thread that contains it; when one
//!   of the enclosing ops has the call's `External id`, the innermost such op wins (a
//!   zero-length launch at an op's boundary is otherwise ambiguous).
//! - A GPU activity's launch is the runtime call with its `correlation`; else the op
//!   with its `External id`; else the runtime call at the other end of an `ac2g` /
//!   `async` flow that ends (or starts) on it. One launch may have several activities
//!   (`cudaGraphLaunch`, `hipGraphLaunch`).
//! - On ROCm the launch carries grid, block and shared memory; they are copied to the
//!   kernel when it lacks them. `hipExtModuleLaunchKernel` gives a global work size in
//!   work-items (its HIP signature: `globalWorkSizeX`, `localWorkSizeX`), converted to
//!   workgroups.

use super::collect::{FlowEnd, Runtime};
use super::error::Warnings;
use super::hash::FxMap as HashMap;
use super::parse::Parsed;
use rayon::slice::ParallelSliceMut;
use rooftop_core::trace::{
    Annotation, CpuOp, GpuEvent, LaunchPool, MemoryEvent, ModuleCall, RuntimeCall, Schema,
    SyncEvent, TraceModel,
};
use std::hash::BuildHasherDefault;

/// Checks the GPU activities (sorted by start) before any analysis sees them: an exact
/// duplicate (same device, stream, start, duration, kind, name and correlation: the
/// same activity written twice) is dropped and counted in a warning. Activities that
/// merely overlap on one stream are kept: the kernels of a CUDA graph replay run
/// concurrently under their launch stream (the H200 graph fixture has two), so the
/// analyses themselves take overlap as no idle time, never a negative one.
fn check_streams(gpu: &mut Vec<GpuEvent>, warnings: &mut super::error::Warnings) {
    let before = gpu.len();
    gpu.dedup_by(|b, a| {
        a.ts_ns == b.ts_ns
            && a.dur_ns == b.dur_ns
            && a.device == b.device
            && a.stream == b.stream
            && a.kind == b.kind
            && a.correlation == b.correlation
            && a.name == b.name
    });
    let dropped = (before - gpu.len()) as u64;
    if dropped > 0 {
        warnings.add_n("duplicate_gpu_event", dropped, None, || {
            format!("{dropped} GPU activity copies dropped: each repeated another exactly (same stream, start, duration and name)")
        });
    }
}

/// Builds the model; `buf` is only used to state positions in warnings.
pub(crate) fn build(
    parsed: Parsed,
    buf: &[u8],
    release: &(dyn Fn(usize, usize) + Sync),
) -> TraceModel {
    let Parsed { top, events } = parsed;
    let mut warnings = events.warnings;
    let schema =
        if events.legacy_events > events.current_events { Schema::Legacy } else { Schema::Current };
    let devices = if let Some(d) = top.devices {
        d
    } else {
        warnings.add("missing_device_properties", None, || {
            "the trace has no `deviceProperties`: the GPU is not named in it".to_string()
        });
        Vec::new()
    };

    // Unstable sorts do not allocate a copy of the vector (a stable parallel sort
    // would); file order breaks ties, carried in `parent` / `op` until linking sets
    // them. Ops and GPU activities already in order (Kineto writes a thread's ops by
    // start time, and most traces' ops are one thread's) are left as they are: a sort
    // with file order breaking ties keeps them so, and the check costs a pass at most
    // (none for the ops: nesting checks as it goes). The stable sorts below are left
    // as they were: skipping them when sorted changed which freed memory later
    // allocations reuse, and the 27.9 MB trace's run then touched 350 more pages.
    // The ops (sorted, then nested: one thread) and the runtime calls and GPU
    // activities (sorted, streams checked) need nothing of each other until linking.
    let (mut ops, mut runtimes, mut gpu) = (events.ops, events.runtimes, events.gpu);
    rayon::join(
        || sort_and_nest(&mut ops),
        || {
            runtimes.par_sort_by_key(|r| (r.pid, r.tid, r.ts_ns));
            if !gpu.is_sorted_by_key(|g| (g.ts_ns, g.device, g.stream)) {
                for (i, g) in gpu.iter_mut().enumerate() {
                    g.op = Some(i as u32);
                }
                gpu.par_sort_unstable_by_key(|g| (g.ts_ns, g.device, g.stream, g.op));
                for g in &mut gpu {
                    g.op = None;
                }
            }
            check_streams(&mut gpu, &mut warnings);
        },
    );
    // Which op made each runtime call, and which call (or op) launched each GPU
    // activity: both read what is sorted above and nothing of each other.
    let (runtime_op, launches) = rayon::join(
        || attribute(&ops, &runtimes),
        || link_gpu(&gpu, &runtimes, &ops, &events.flow_starts, &events.flow_ends),
    );

    // The GPU activities' links into the ops, beside the sorts of the rest of the
    // model (which read neither).
    let ((), (annotations, syncs, modules, memory)) = rayon::join(
        || attach_gpu(&mut gpu, &mut ops, &runtimes, &runtime_op, &launches, &mut warnings),
        || sort_rest(events.annotations, events.syncs, events.modules, events.memory, &runtimes),
    );
    let runtime: Vec<RuntimeCall> = runtimes
        .into_iter()
        .zip(runtime_op)
        .map(|(r, op)| RuntimeCall {
            name: r.name,
            ts_ns: r.ts_ns,
            dur_ns: r.dur_ns,
            pid: r.pid,
            tid: r.tid,
            correlation: r.correlation,
            op,
        })
        .collect();
    TraceModel {
        schema,
        devices,
        ops,
        gpu,
        annotations,
        rank: top.rank,
        world_size: top.world_size,
        base_time_ns: top.base_time_ns,
        warnings: warnings.finish(buf, release),
        xla: None,
        runtime,
        syncs,
        modules,
        memory,
    }
}

/// Sets each GPU activity's launch, runtime call and op, and each op's `launched` (in
/// launch order); warns of activities without a launch or an op.
fn attach_gpu(
    gpu: &mut [GpuEvent],
    ops: &mut [CpuOp],
    runtimes: &[Runtime],
    runtime_op: &[Option<u32>],
    launches: &[Link],
    warnings: &mut Warnings,
) {
    let mut no_launch = 0u64;
    let mut no_op = 0u64;
    let mut first_no_launch = None;
    let mut first_no_op = None;
    let mut order: Vec<(i64, i64, u32)> = Vec::new();
    let mut launch_pool = LaunchPool::default();
    for (i, (g, link)) in gpu.iter_mut().zip(launches).enumerate() {
        match *link {
            Link::Runtime(r) => {
                let rt = &runtimes[r as usize];
                apply_launch(g, rt, &mut launch_pool);
                g.op = runtime_op[r as usize];
                g.runtime = Some(r);
                if g.op.is_some() {
                    order.push((rt.ts_ns, g.ts_ns, i as u32));
                } else {
                    no_op += 1;
                    first_no_op.get_or_insert_with(|| g.name.clone());
                }
            }
            Link::Op(op) => {
                // No launch time is known: the activity's start bounds it.
                g.op = Some(op);
                order.push((g.ts_ns, g.ts_ns, i as u32));
            }
            Link::None => {
                no_launch += 1;
                first_no_launch.get_or_insert_with(|| g.name.clone());
            }
        }
    }
    order.sort_unstable();
    for &(_, _, i) in &order {
        if let Some(op) = gpu[i as usize].op {
            ops[op as usize].launched.push(i);
        }
    }
    if no_launch > 0 {
        let name = first_no_launch.unwrap_or_default();
        let n = no_launch;
        warnings.add_n("unlinked_gpu_event", n, None, || {
            format!("{n} GPU activities match no runtime launch or op (first: `{}`)", short(&name))
        });
    }
    if no_op > 0 {
        let name = first_no_op.unwrap_or_default();
        let n = no_op;
        warnings.add_n("gpu_event_without_op", n, None, || {
            format!(
                "{n} GPU activities were launched outside any CPU op (first: `{}`)",
                short(&name)
            )
        });
    }
    if gpu.is_empty() {
        warnings.add("no_gpu_events", None, || {
            "the trace has no GPU activity (`kernel`, `gpu_memcpy`, `gpu_memset`)".to_string()
        });
    }
}

/// The annotations, syncs, modules and memory events in time order (modules by
/// thread first), each sync with its runtime call.
fn sort_rest(
    mut annotations: Vec<Annotation>,
    mut syncs: Vec<SyncEvent>,
    mut modules: Vec<ModuleCall>,
    mut memory: Vec<MemoryEvent>,
    runtimes: &[Runtime],
) -> (Vec<Annotation>, Vec<SyncEvent>, Vec<ModuleCall>, Vec<MemoryEvent>) {
    annotations.par_sort_by_key(|a| a.ts_ns);
    let mut by_corr: HashMap<i64, u32> =
        HashMap::with_capacity_and_hasher(runtimes.len(), BuildHasherDefault::default());
    if !syncs.is_empty() {
        for (i, r) in runtimes.iter().enumerate() {
            if let Some(c) = r.correlation {
                by_corr.entry(c).or_insert(i as u32);
            }
        }
    }
    for s in &mut syncs {
        s.runtime = s.correlation.and_then(|c| by_corr.get(&c).copied());
    }
    syncs.sort_by_key(|s| s.ts_ns);
    modules.par_sort_by_key(|m| (m.pid, m.tid, m.ts_ns, std::cmp::Reverse(m.dur_ns)));
    memory.par_sort_by_key(|m| m.ts_ns);
    (annotations, syncs, modules, memory)
}

fn short(name: &str) -> String {
    if name.len() <= 80 {
        return name.to_string();
    }
    let mut end = 80;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &name[..end])
}

/// The order of the model's ops: by thread, then start, longer first (file order
/// breaks ties).
fn op_order(o: &CpuOp) -> (i64, i64, i64, std::cmp::Reverse<i64>) {
    (o.pid, o.tid, o.ts_ns, std::cmp::Reverse(o.dur_ns))
}

/// Sorts the ops ([`op_order`]) and sets their `parent` and `children`. Ops already in
/// order are nested in one pass that checks the order as it goes: each pass over the
/// ops (168 bytes each, 3.9 MB in the 27.9 MB trace) is memory-bound, ~0.5 ms on a
/// 2-core VM, and the two index passes and the sort made three before nesting's.
fn sort_and_nest(ops: &mut [CpuOp]) {
    if nest(ops, true) {
        return;
    }
    for (i, o) in ops.iter_mut().enumerate() {
        o.parent = Some(i as u32);
    }
    ops.par_sort_unstable_by_key(|o| (op_order(o), o.parent));
    for o in ops.iter_mut() {
        o.parent = None;
    }
    nest(ops, false);
}

/// Sets `parent` and `children` of ops sorted by [`op_order`]; `true` when done. With
/// `check`, stops at the first op out of that order, clears what it set and gives
/// `false`.
fn nest(ops: &mut [CpuOp], check: bool) -> bool {
    let mut stack: Vec<u32> = Vec::new();
    let mut thread = None;
    for i in 0..ops.len() {
        if check && i > 0 && op_order(&ops[i]) < op_order(&ops[i - 1]) {
            for o in &mut ops[..i] {
                o.parent = None;
                o.children = Vec::new();
            }
            return false;
        }
        let key = (ops[i].pid, ops[i].tid);
        if thread != Some(key) {
            stack.clear();
            thread = Some(key);
        }
        let (ts, end) = (ops[i].ts_ns, ops[i].ts_ns.saturating_add(ops[i].dur_ns));
        while let Some(&top) = stack.last() {
            let t = &ops[top as usize];
            if t.ts_ns <= ts && end <= t.ts_ns.saturating_add(t.dur_ns) {
                break;
            }
            stack.pop();
        }
        if let Some(&top) = stack.last() {
            ops[i].parent = Some(top);
            ops[top as usize].children.push(i as u32);
        }
        stack.push(i as u32);
    }
    true
}

/// The op of each runtime call (both sorted by thread, then time).
fn attribute(ops: &[CpuOp], runtimes: &[Runtime]) -> Vec<Option<u32>> {
    let mut out = vec![None; runtimes.len()];
    let mut stack: Vec<u32> = Vec::new();
    let mut next_op = 0usize;
    let mut thread = None;
    for (ri, r) in runtimes.iter().enumerate() {
        let key = (r.pid, r.tid);
        if thread != Some(key) {
            stack.clear();
            thread = Some(key);
            // Skip to the first op of this thread.
            next_op = ops.partition_point(|o| (o.pid, o.tid) < key);
        }
        let r_end = r.ts_ns.saturating_add(r.dur_ns);
        // Push every op of this thread that starts at or before the call.
        while next_op < ops.len()
            && (ops[next_op].pid, ops[next_op].tid) == key
            && ops[next_op].ts_ns <= r.ts_ns
        {
            let o = &ops[next_op];
            let o_end = o.ts_ns.saturating_add(o.dur_ns);
            while let Some(&top) = stack.last() {
                let t = &ops[top as usize];
                if t.ts_ns <= o.ts_ns && o_end <= t.ts_ns.saturating_add(t.dur_ns) {
                    break;
                }
                stack.pop();
            }
            stack.push(next_op as u32);
            next_op += 1;
        }
        // Ops that ended before the call cannot contain it.
        while let Some(&top) = stack.last() {
            let t = &ops[top as usize];
            if t.ts_ns.saturating_add(t.dur_ns) < r.ts_ns {
                stack.pop();
            } else {
                break;
            }
        }
        let contains = |o: &CpuOp| o.ts_ns <= r.ts_ns && r_end <= o.ts_ns.saturating_add(o.dur_ns);
        let by_ext = r.external_id.and_then(|x| {
            stack
                .iter()
                .rev()
                .find(|&&o| {
                    ops[o as usize].external_id == Some(x)
                        && ops[o as usize].ts_ns.saturating_add(ops[o as usize].dur_ns) >= r.ts_ns
                })
                .copied()
        });
        out[ri] = by_ext
            .or_else(|| stack.iter().rev().find(|&&o| contains(&ops[o as usize])).copied())
            .or_else(|| {
                // A call that overruns its op by rounding: the innermost op it starts in.
                stack
                    .iter()
                    .rev()
                    .find(|&&o| {
                        r.ts_ns < ops[o as usize].ts_ns.saturating_add(ops[o as usize].dur_ns)
                    })
                    .copied()
            });
    }
    out
}

/// How a GPU activity was linked.
#[derive(Debug, Clone, Copy)]
enum Link {
    Runtime(u32),
    Op(u32),
    None,
}

fn link_gpu(
    gpu: &[GpuEvent],
    runtimes: &[Runtime],
    ops: &[CpuOp],
    flow_starts: &[FlowEnd],
    flow_ends: &[FlowEnd],
) -> Vec<Link> {
    let mut by_corr: HashMap<i64, u32> =
        HashMap::with_capacity_and_hasher(runtimes.len(), BuildHasherDefault::default());
    for (i, r) in runtimes.iter().enumerate() {
        if let Some(c) = r.correlation {
            by_corr.entry(c).or_insert(i as u32);
        }
    }
    let mut out: Vec<Link> = gpu
        .iter()
        .map(|g| {
            g.correlation.and_then(|c| by_corr.get(&c)).map_or(Link::None, |&r| Link::Runtime(r))
        })
        .collect();
    if out.iter().all(|l| !matches!(l, Link::None)) {
        return out;
    }
    let mut op_by_ext: HashMap<i64, u32> = HashMap::default();
    for (i, o) in ops.iter().enumerate() {
        if let Some(x) = o.external_id {
            op_by_ext.entry(x).or_insert(i as u32);
        }
    }
    for (g, l) in gpu.iter().zip(out.iter_mut()) {
        if matches!(l, Link::None) {
            if let Some(&o) = g.external_id.and_then(|x| op_by_ext.get(&x)) {
                *l = Link::Op(o);
            }
        }
    }
    if out.iter().all(|l| !matches!(l, Link::None))
        || (flow_starts.is_empty() && flow_ends.is_empty())
    {
        return out;
    }
    // Flows: each end sits at (pid, tid, ts) of the event it binds to. GPU tracks are
    // (device, stream) in the model, which is Kineto's (pid, tid) for GPU events.
    let mut runtime_at: HashMap<(i64, i64, i64), u32> =
        HashMap::with_capacity_and_hasher(runtimes.len(), BuildHasherDefault::default());
    for (i, r) in runtimes.iter().enumerate() {
        runtime_at.entry((r.pid, r.tid, r.ts_ns)).or_insert(i as u32);
    }
    let mut ends_by_id: HashMap<i64, Vec<FlowEnd>> = HashMap::default();
    let mut id_at: HashMap<(i64, i64, i64), i64> = HashMap::default();
    for f in flow_starts.iter().chain(flow_ends) {
        ends_by_id.entry(f.id).or_default().push(*f);
        id_at.entry((f.pid, f.tid, f.ts_ns)).or_insert(f.id);
    }
    for (g, l) in gpu.iter().zip(out.iter_mut()) {
        if !matches!(l, Link::None) {
            continue;
        }
        let Some(id) = id_at.get(&(g.device, g.stream, g.ts_ns)) else { continue };
        let found = ends_by_id[id].iter().find_map(|f| runtime_at.get(&(f.pid, f.tid, f.ts_ns)));
        if let Some(&r) = found {
            *l = Link::Runtime(r);
        }
    }
    out
}

/// Copies what the launch knows and the activity lacks (`launches` keeps one copy of
/// each launch configuration made here).
fn apply_launch(g: &mut GpuEvent, r: &Runtime, launches: &mut LaunchPool) {
    g.launcher = Some(r.name.clone());
    let stated = g.launch_dims();
    let mut dims = stated;
    if &*r.name == "hipExtModuleLaunchKernel" {
        if let (Some(grid), Some(block)) = (r.grid, r.block) {
            if dims.grid.is_none() || dims.grid == Some(grid) {
                let mut blocks = grid;
                for (b, &t) in blocks.iter_mut().zip(&block) {
                    if t > 0 {
                        *b = b.div_ceil(t);
                    }
                }
                dims.grid = Some(blocks);
            }
        }
    }
    dims.grid = dims.grid.or(r.grid);
    dims.block = dims.block.or(r.block);
    dims.shared_memory_bytes = dims.shared_memory_bytes.or(r.shared_memory);
    if dims != stated {
        g.launch = launches.get(dims);
    }
    if g.bytes.is_none() {
        g.bytes = r.bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ops on two threads, each tagged with its place in the input (`seq`).
    fn ops_of(spec: &[(i64, i64, i64)]) -> Vec<CpuOp> {
        (0i64..)
            .zip(spec)
            .map(|(i, &(tid, ts_ns, dur_ns))| CpuOp {
                tid,
                ts_ns,
                dur_ns,
                seq: Some(i),
                ..CpuOp::default()
            })
            .collect()
    }

    /// The rule, by its definition: a stable sort by thread, start and longer first, then
    /// each op's parent is the last op before it on its thread whose closed interval
    /// holds it (quadratic; the stack gives the same on any input, overlapping or not).
    fn by_definition(spec: &[(i64, i64, i64)]) -> (Vec<i64>, Vec<Option<u32>>, Vec<Vec<u32>>) {
        let mut ops = ops_of(spec);
        ops.sort_by_key(op_order);
        let end = |o: &CpuOp| o.ts_ns.saturating_add(o.dur_ns);
        let parents: Vec<Option<u32>> = (0..ops.len())
            .map(|i| {
                (0..i).rev().find(|&j| {
                    ops[j].tid == ops[i].tid
                        && ops[j].ts_ns <= ops[i].ts_ns
                        && end(&ops[i]) <= end(&ops[j])
                })
            })
            .map(|p| p.map(|j| j as u32))
            .collect();
        let children = (0..ops.len() as u32)
            .map(|j| (0..ops.len() as u32).filter(|&i| parents[i as usize] == Some(j)).collect())
            .collect();
        (ops.iter().map(|o| o.seq.unwrap_or(-1)).collect(), parents, children)
    }

    fn check(spec: &[(i64, i64, i64)]) {
        let mut ops = ops_of(spec);
        sort_and_nest(&mut ops);
        let got = (
            ops.iter().map(|o| o.seq.unwrap_or(-1)).collect::<Vec<_>>(),
            ops.iter().map(|o| o.parent).collect::<Vec<_>>(),
            ops.iter().map(|o| o.children.clone()).collect::<Vec<_>>(),
        );
        assert_eq!(got, by_definition(spec), "{spec:?}");
    }

    #[test]
    fn ops_in_order_or_not_nest_as_the_rule_says() {
        // In order (nested in the checking pass): a call tree, ties in start.
        check(&[(1, 0, 100), (1, 0, 50), (1, 10, 20), (1, 60, 30), (2, 5, 10), (2, 6, 2)]);
        // Out of order at the very end, after a nested prefix that must be undone.
        check(&[(1, 0, 100), (1, 10, 20), (1, 12, 5), (1, 40, 10), (1, 5, 1)]);
        // Two threads interleaved as a file writes them; equal ops keep file order.
        check(&[(1, 0, 10), (2, 0, 10), (1, 2, 3), (2, 2, 3), (1, 2, 3), (2, 0, 10)]);
        // Overlapping, not nested; a duration reaching past `i64::MAX`.
        check(&[(1, 0, 10), (1, 5, 10), (1, 6, 2), (1, 7, i64::MAX), (1, 8, 1)]);
        check(&[]);
    }

    proptest::proptest! {
        #[test]
        fn any_ops_nest_as_the_rule_says(
            spec in proptest::collection::vec((1i64..3, 0i64..12, 0i64..8), 0..24),
        ) {
            check(&spec);
        }
    }
}
