//! CUDA/HIP graphs: the kernels each graph launch replayed, the graphs they form, the ops
//! that captured them, and steady-state replay windows.
//!
//! - A **replay** is one `cudaGraphLaunch` / `hipGraphLaunch` runtime call and the GPU
//!   events linked to it (Kineto gives every kernel of the replay the launch's
//!   correlation). Its **span** runs from its first kernel's start to its last kernel's
//!   end; its **busy** time is the union of its kernels.
//! - A **graph** is the set of replays with the same sequence of kernel names.
//! - **Capture**: kernels launched between `cudaStreamBeginCapture` and
//!   `cudaStreamEndCapture` on a thread do not run (no GPU event is linked to their
//!   launch calls); when a capture in the trace launched as many kernels as a graph
//!   replays, the graph's n-th kernel is attributed to the op of the capture's n-th
//!   launch (by launch time). With several captures of that size the last one is used;
//!   captures of one model at several batch sizes have the same ops in the same order.
//! - A **steady-state window** is a run of two or more consecutive replays of the same
//!   graph on a device with no other graph replayed between them: a graph-replayed
//!   decode loop. It is analysed on its own: busy, graph and eager (non-graph) GPU time,
//!   idle time, and how far ahead of the GPU the CPU launched each replay (a launch after
//!   the previous replay ended is late: the loop is bound by the host).

use super::super::model::TraceModel;
use super::super::timeline::{length, merge};
use super::{is_graph_launch, op_name, Dist};
use serde::Serialize;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

/// One kernel position of a graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphKernel {
    pub position: u32,
    pub name: String,
    /// Mean duration over the replays, µs.
    pub mean_us: f64,
    /// Summed over the replays, µs.
    pub total_us: f64,
    /// The op that launched it during capture, when the capture is in the trace.
    pub captured_by: Option<String>,
}

/// One graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphStats {
    /// 0-based, in order of first replay.
    pub id: usize,
    /// GPU events per replay.
    pub kernels: u64,
    pub replays: u64,
    pub device: i64,
    /// Replay spans (first kernel start to last kernel end).
    pub span: Dist,
    /// Mean union of the replay's kernels, µs.
    pub mean_busy_us: f64,
    /// Mean CPU time of the launch call, µs.
    pub mean_launch_us: f64,
    /// Mean delay from the launch call's end to the first kernel's start, µs (≥ 0).
    pub mean_launch_delay_us: f64,
    /// Summed GPU time of all its kernels, µs.
    pub gpu_us: f64,
    /// Whether the ops of a capture were matched to its kernels.
    pub captured: bool,
    /// Its kernels by summed time, largest first (at most 20).
    pub top_kernels: Vec<GraphKernel>,
}

/// A steady-state run of replays of one graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayWindow {
    pub graph: usize,
    pub device: i64,
    pub replays: u64,
    pub start_us: f64,
    pub end_us: f64,
    pub duration_us: f64,
    /// Union of all the device's GPU events in the window, µs.
    pub busy_us: f64,
    /// Union of the graph's kernels, µs.
    pub graph_us: f64,
    /// Busy time outside the graph's kernels (eager kernels between replays), µs.
    pub eager_us: f64,
    pub idle_us: f64,
    /// Replays launched after the previous replay had ended.
    pub late_launches: u64,
    /// Mean of (previous replay's end − this replay's launch), µs: how far ahead of the
    /// GPU the CPU was; negative when late.
    pub mean_launch_ahead_us: f64,
    /// Mean launch-to-launch period, µs.
    pub mean_period_us: f64,
}

/// The graph section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Graphs {
    /// Graph launch calls.
    pub launches: u64,
    /// GPU events they replayed, and their summed time.
    pub graph_events: u64,
    pub graph_gpu_us: f64,
    /// Percent of all GPU event time that ran inside graphs.
    pub percent_of_gpu_time: f64,
    /// Captures found in the trace (`cudaStreamBeginCapture` … `EndCapture`).
    pub captures: u64,
    pub graphs: Vec<GraphStats>,
    pub windows: Vec<ReplayWindow>,
}

struct Replay {
    launch: u32,
    events: Vec<u32>,
    sig: u64,
    start: i64,
    end: i64,
    device: i64,
}

fn is_capture_begin(name: &str) -> bool {
    name.starts_with("cudaStreamBeginCapture") || name.starts_with("hipStreamBeginCapture")
}

fn is_capture_end(name: &str) -> bool {
    name.starts_with("cudaStreamEndCapture") || name.starts_with("hipStreamEndCapture")
}

/// Launch calls made during each capture, in time order: the ops they ran in.
fn captures(model: &TraceModel, launched: &[bool]) -> Vec<Vec<Option<u32>>> {
    let mut out = Vec::new();
    let mut open: HashMap<(i64, i64), Vec<Option<u32>>> = HashMap::new();
    // Runtime calls are sorted by (pid, tid, ts).
    for (i, r) in model.runtime.iter().enumerate() {
        let key = (r.pid, r.tid);
        if is_capture_begin(&r.name) {
            open.insert(key, Vec::new());
        } else if is_capture_end(&r.name) {
            if let Some(v) = open.remove(&key) {
                out.push(v);
            }
        } else if let Some(v) = open.get_mut(&key) {
            let is_launch = r.name.contains("LaunchKernel")
                || r.name.contains("Memcpy")
                || r.name.contains("Memset");
            if is_launch && !launched[i] {
                v.push(r.op);
            }
        }
    }
    out
}

/// For graph-replayed GPU events whose graph's capture is in the trace: the op that
/// launched the event's position during the capture (GPU event index → op index).
pub fn capture_map(model: &TraceModel) -> HashMap<u32, u32> {
    // Without a graph launch nothing is replayed: the GPU events (the larger table,
    // asked for in several analyses) are not read.
    if !model.runtime.iter().any(|x| is_graph_launch(&x.name)) {
        return HashMap::new();
    }
    let mut launched = vec![false; model.runtime.len()];
    let mut by_launch: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, g) in model.gpu.iter().enumerate() {
        let Some(r) = g.runtime else { continue };
        if let Some(l) = launched.get_mut(r as usize) {
            *l = true;
        }
        if model.runtime.get(r as usize).is_some_and(|x| is_graph_launch(&x.name)) {
            by_launch.entry(r).or_default().push(i as u32);
        }
    }
    let mut out = HashMap::new();
    if by_launch.is_empty() {
        return out;
    }
    let caps = captures(model, &launched);
    for events in by_launch.values() {
        let Some(c) = caps.iter().rev().find(|c| c.len() == events.len()) else { continue };
        for (&e, op) in events.iter().zip(c) {
            if let Some(o) = op {
                out.insert(e, *o);
            }
        }
    }
    out
}

/// The graph section of `model`.
pub fn graphs(model: &TraceModel) -> Graphs {
    let mut launched = vec![false; model.runtime.len()];
    let mut by_launch: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (i, g) in model.gpu.iter().enumerate() {
        let Some(r) = g.runtime else { continue };
        if let Some(l) = launched.get_mut(r as usize) {
            *l = true;
        }
        if model.runtime.get(r as usize).is_some_and(|x| is_graph_launch(&x.name)) {
            by_launch.entry(r).or_default().push(i as u32);
        }
    }
    let caps = captures(model, &launched);
    let total_gpu: i64 = model.gpu.iter().map(|g| g.dur_ns).sum();
    let mut replays: Vec<Replay> = by_launch
        .into_iter()
        .filter_map(|(launch, events)| {
            let mut h = DefaultHasher::new();
            for &e in &events {
                model.gpu[e as usize].name.hash(&mut h);
            }
            let first = &model.gpu[*events.first()? as usize];
            let start = first.ts_ns;
            let end = events
                .iter()
                .map(|&e| model.gpu[e as usize].ts_ns + model.gpu[e as usize].dur_ns)
                .max()?;
            Some(Replay { launch, sig: h.finish(), start, end, device: first.device, events })
        })
        .collect();
    replays.sort_by_key(|r| (r.start, r.launch));

    // Graphs in order of first replay.
    let mut ids: HashMap<u64, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, r) in replays.iter().enumerate() {
        let id = *ids.entry(r.sig).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        members[id].push(i);
    }
    let rt = |r: &Replay| &model.runtime[r.launch as usize];
    let graph_stats: Vec<GraphStats> = members
        .iter()
        .enumerate()
        .map(|(id, idx)| {
            let first = &replays[idx[0]];
            let n = first.events.len();
            let mut spans: Vec<i64> =
                idx.iter().map(|&i| replays[i].end - replays[i].start).collect();
            let busy: i64 = idx
                .iter()
                .map(|&i| {
                    let mut iv: Vec<(i64, i64)> = replays[i]
                        .events
                        .iter()
                        .map(|&e| {
                            let g = &model.gpu[e as usize];
                            (g.ts_ns, g.ts_ns + g.dur_ns)
                        })
                        .collect();
                    merge(&mut iv);
                    length(&iv)
                })
                .sum();
            let launch_ns: i64 = idx.iter().map(|&i| rt(&replays[i]).dur_ns).sum();
            let delay_ns: i64 = idx
                .iter()
                .map(|&i| {
                    let r = rt(&replays[i]);
                    (replays[i].start - (r.ts_ns + r.dur_ns)).max(0)
                })
                .sum();
            // Per position: summed durations over replays with the same kernel count.
            let mut pos_total = vec![0i64; n];
            let mut pos_count = vec![0u64; n];
            for &i in idx {
                if replays[i].events.len() == n {
                    for (p, &e) in replays[i].events.iter().enumerate() {
                        pos_total[p] += model.gpu[e as usize].dur_ns;
                        pos_count[p] += 1;
                    }
                }
            }
            let capture = caps.iter().rev().find(|c| c.len() == n);
            let mut top: Vec<GraphKernel> = (0..n)
                .map(|p| GraphKernel {
                    position: p as u32,
                    name: model.gpu[first.events[p] as usize].name.to_string(),
                    mean_us: pos_total[p] as f64 / pos_count[p].max(1) as f64 / 1e3,
                    total_us: pos_total[p] as f64 / 1e3,
                    captured_by: capture.and_then(|c| op_name(model, c[p])).map(str::to_string),
                })
                .collect();
            top.sort_by(|a, b| b.total_us.total_cmp(&a.total_us).then(a.position.cmp(&b.position)));
            top.truncate(20);
            let count = idx.len() as f64;
            GraphStats {
                id,
                kernels: n as u64,
                replays: idx.len() as u64,
                device: first.device,
                span: Dist::of_ns(&mut spans),
                mean_busy_us: busy as f64 / count / 1e3,
                mean_launch_us: launch_ns as f64 / count / 1e3,
                mean_launch_delay_us: delay_ns as f64 / count / 1e3,
                gpu_us: pos_total.iter().sum::<i64>() as f64 / 1e3,
                captured: capture.is_some(),
                top_kernels: top,
            }
        })
        .collect();

    // Steady-state windows: runs of one graph per device.
    let mut windows = Vec::new();
    let mut per_device: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, r) in replays.iter().enumerate() {
        per_device.entry(r.device).or_default().push(i);
    }
    for (device, idx) in per_device {
        let mut run_start = 0;
        for k in 1..=idx.len() {
            let breaks = k == idx.len() || replays[idx[k]].sig != replays[idx[run_start]].sig;
            if !breaks {
                continue;
            }
            let run = &idx[run_start..k];
            if run.len() >= 2 {
                windows.push(window(model, &replays, run, ids[&replays[run[0]].sig], device));
            }
            run_start = k;
        }
    }
    let graph_ns: i64 =
        replays.iter().flat_map(|r| &r.events).map(|&e| model.gpu[e as usize].dur_ns).sum();
    Graphs {
        launches: replays.len() as u64,
        graph_events: replays.iter().map(|r| r.events.len() as u64).sum(),
        graph_gpu_us: graph_ns as f64 / 1e3,
        percent_of_gpu_time: if total_gpu > 0 {
            graph_ns as f64 / total_gpu as f64 * 100.0
        } else {
            0.0
        },
        captures: caps.len() as u64,
        graphs: graph_stats,
        windows,
    }
}

fn window(
    model: &TraceModel,
    replays: &[Replay],
    run: &[usize],
    graph: usize,
    device: i64,
) -> ReplayWindow {
    let start = replays[run[0]].start;
    let end = run.iter().map(|&i| replays[i].end).max().unwrap_or(start);
    let clip = |s: i64, e: i64| (s.max(start), e.min(end));
    let mut all: Vec<(i64, i64)> = model
        .gpu
        .iter()
        .filter(|g| g.device == device && g.ts_ns < end && g.ts_ns + g.dur_ns > start)
        .map(|g| clip(g.ts_ns, g.ts_ns + g.dur_ns))
        .collect();
    let mut graph_iv: Vec<(i64, i64)> = run
        .iter()
        .flat_map(|&i| &replays[i].events)
        .map(|&e| {
            let g = &model.gpu[e as usize];
            clip(g.ts_ns, g.ts_ns + g.dur_ns)
        })
        .collect();
    merge(&mut all);
    merge(&mut graph_iv);
    let busy = length(&all);
    let graph_ns = length(&graph_iv);
    let (mut late, mut ahead, mut period) = (0u64, 0i64, 0i64);
    for w in run.windows(2) {
        let (prev, cur) = (&replays[w[0]], &replays[w[1]]);
        let launch = model.runtime[cur.launch as usize].ts_ns;
        let prev_launch = model.runtime[prev.launch as usize].ts_ns;
        late += u64::from(launch > prev.end);
        ahead += prev.end - launch;
        period += launch - prev_launch;
    }
    let pairs = (run.len() - 1).max(1) as f64;
    ReplayWindow {
        graph,
        device,
        replays: run.len() as u64,
        start_us: start as f64 / 1e3,
        end_us: end as f64 / 1e3,
        duration_us: (end - start) as f64 / 1e3,
        busy_us: busy as f64 / 1e3,
        graph_us: graph_ns as f64 / 1e3,
        eager_us: (busy - graph_ns) as f64 / 1e3,
        idle_us: (end - start - busy) as f64 / 1e3,
        late_launches: late,
        mean_launch_ahead_us: ahead as f64 / pairs / 1e3,
        mean_period_us: period as f64 / pairs / 1e3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{CpuOp, GpuEvent, RuntimeCall};

    fn rt(name: &str, ts_us: i64, op: Option<u32>) -> RuntimeCall {
        RuntimeCall {
            name: name.into(),
            ts_ns: ts_us * 1000,
            dur_ns: 2000,
            op,
            ..RuntimeCall::default()
        }
    }

    fn k(name: &str, ts_us: i64, dur_us: i64, r: u32) -> GpuEvent {
        GpuEvent {
            name: name.into(),
            ts_ns: ts_us * 1000,
            dur_ns: dur_us * 1000,
            runtime: Some(r),
            ..GpuEvent::default()
        }
    }

    #[test]
    fn replays_capture_and_window() {
        let ops = ["aten::mm", "aten::relu"]
            .iter()
            .map(|n| CpuOp { name: (*n).into(), ..CpuOp::default() })
            .collect();
        // A capture of two launches (mm, relu), then three replays of [gemm, relu] at
        // 100, 200 and 320 µs, each replay's kernels 10 µs + 5 µs with a 1 µs gap; an
        // eager kernel between the second and third replay.
        let runtime = vec![
            rt("cudaStreamBeginCapture", 0, None),
            rt("cudaLaunchKernel", 1, Some(0)),
            rt("cudaLaunchKernel", 2, Some(1)),
            rt("cudaStreamEndCapture", 3, None),
            rt("cudaGraphLaunch", 100, None),
            rt("cudaGraphLaunch", 200, None),
            rt("cudaGraphLaunch", 330, None),
            rt("cudaLaunchKernel", 250, None),
        ];
        let gpu = vec![
            k("gemm", 110, 10, 4),
            k("relu", 121, 5, 4),
            k("gemm", 210, 10, 5),
            k("relu", 221, 5, 5),
            k("eager", 260, 20, 7),
            k("gemm", 340, 10, 6),
            k("relu", 351, 5, 6),
        ];
        let m = TraceModel { ops, gpu, runtime, ..TraceModel::default() };
        let g = graphs(&m);
        assert_eq!((g.launches, g.graph_events, g.captures), (3, 6, 1));
        assert_eq!(g.graph_gpu_us, 45.0);
        assert!((g.percent_of_gpu_time - 45.0 / 65.0 * 100.0).abs() < 1e-9);
        let s = &g.graphs[0];
        assert_eq!((s.kernels, s.replays), (2, 3));
        assert_eq!(s.span.mean_us, 16.0);
        assert_eq!(s.mean_busy_us, 15.0);
        // Launch ends at +2 µs, the first kernel starts at +10: 8 µs.
        assert_eq!(s.mean_launch_delay_us, 8.0);
        assert!(s.captured);
        assert_eq!(s.top_kernels[0].name, "gemm");
        assert_eq!(s.top_kernels[0].captured_by.as_deref(), Some("aten::mm"));
        assert_eq!(s.top_kernels[1].captured_by.as_deref(), Some("aten::relu"));
        let w = &g.windows[0];
        assert_eq!(w.replays, 3);
        assert_eq!((w.start_us, w.end_us), (110.0, 356.0));
        assert_eq!(w.graph_us, 45.0);
        assert_eq!(w.eager_us, 20.0);
        assert_eq!(w.busy_us, 65.0);
        assert_eq!(w.idle_us, 246.0 - 65.0);
        // Launch 200 after the previous end 126 (74 µs late); launch 330 after 226 (104
        // µs late): the loop waits on the host.
        assert_eq!(w.late_launches, 2);
        assert_eq!(w.mean_launch_ahead_us, -89.0);
        assert_eq!(w.mean_period_us, 115.0);
    }
}
