//! Kernel launch latency and the launch queue, as HTA defines them, with distributions,
//! outliers and the ops that launch.
//!
//! Per launched GPU event (HTA `CudaKernelAnalysis.cuda_kernel_launch_stats`):
//! - `cpu_duration`: the launching runtime call's duration;
//! - `gpu_duration`: the GPU event's duration;
//! - `launch_delay`: GPU start minus the end of the runtime call, clipped at 0.
//!
//! HTA counts `cudaLaunchKernel`, `cudaLaunchKernelExC`, `cudaMemcpyAsync` and
//! `cudaMemsetAsync`; we count every runtime call linked to a GPU event
//! (`cuLaunchKernel`, HIP launches and copies too) except graph launches, whose kernels
//! are in [`super::graphs`]. The tests compare the calls HTA counts.
//!
//! Outliers use HTA's cut-offs: a launch call longer than 50 µs
//! (`runtime_cutoff`), a delay longer than 100 µs (`launch_delay_cutoff`). A kernel
//! shorter than its own launch call cannot keep the GPU busy from one thread: those
//! are counted as launch-bound.
//!
//! Queue length per stream (HTA `TraceCounters._get_queue_length_time_series_for_rank`):
//! +1 when a runtime call enqueues work on the stream, −1 when that work starts on the
//! GPU. HTA summarises the value at each change (`describe()`); we add the time-weighted
//! mean and the time spent at CUDA's launch-queue limit (1024 pending launches; HTA
//! `get_time_spent_blocked_on_full_queue`).

use super::super::model::{GpuEvent, TraceModel};
use super::{is_graph_launch, op_name, DecadeHistogram, Dist};
use serde::Serialize;
use std::collections::BTreeMap;

/// HTA's `runtime_cutoff`: launch calls longer than this are outliers, ns.
pub const RUNTIME_CUTOFF_NS: i64 = 50_000;
/// HTA's `launch_delay_cutoff`, ns.
pub const LAUNCH_DELAY_CUTOFF_NS: i64 = 100_000;
/// CUDA's launch queue holds this many pending launches before a launch blocks.
pub const MAX_QUEUE_LENGTH: i64 = 1024;

/// One launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchRow {
    pub correlation: Option<i64>,
    pub kernel: String,
    pub launcher: String,
    pub op: Option<String>,
    /// GPU start on the trace's clock, µs.
    pub ts_us: f64,
    pub cpu_duration_us: f64,
    pub gpu_duration_us: f64,
    pub launch_delay_us: f64,
}

/// Launches of one op.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpLaunches {
    /// The innermost op around the launch call (`(no op)` when none).
    pub op: String,
    pub launches: u64,
    pub total_delay_us: f64,
    pub mean_delay_us: f64,
    pub max_delay_us: f64,
    pub mean_cpu_duration_us: f64,
    /// Launches whose kernel ran shorter than the launch call.
    pub launch_bound: u64,
}

/// The launch queue of one stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueStats {
    pub device: i64,
    pub stream: i64,
    /// Changes of the queue length (two per launch), HTA's `count`.
    pub changes: u64,
    /// Mean, median and max of the value at each change (HTA's `describe()`).
    pub mean: f64,
    pub median: f64,
    pub max: i64,
    /// Mean over time, from the first change to the last.
    pub time_mean: f64,
    /// Time with [`MAX_QUEUE_LENGTH`] or more pending launches, µs.
    pub full_us: f64,
    /// The length over time, thinned to at most [`QUEUE_POINTS`] points (each the
    /// largest length of its stretch of time).
    pub series: Vec<QueuePoint>,
}

/// One point of a queue-length series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QueuePoint {
    pub ts_us: f64,
    pub length: i64,
}

/// Points of a thinned queue-length series.
pub const QUEUE_POINTS: usize = 400;

fn thin(s: &[(i64, i64)]) -> Vec<QueuePoint> {
    let (Some(first), Some(last)) = (s.first(), s.last()) else { return Vec::new() };
    let span = (last.0 - first.0).max(1);
    let mut out: Vec<QueuePoint> = Vec::new();
    let mut bucket = usize::MAX;
    for &(ts, length) in s {
        let b = ((ts - first.0) as i128 * (QUEUE_POINTS as i128 - 1) / span as i128) as usize;
        let p = QueuePoint { ts_us: ts as f64 / 1e3, length };
        match out.last_mut() {
            Some(x) if b == bucket => {
                if length > x.length {
                    *x = p;
                }
            }
            _ => {
                out.push(p);
                bucket = b;
            }
        }
    }
    out
}

/// The launch section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct LaunchStats {
    pub launches: u64,
    pub launch_delay: Dist,
    pub cpu_duration: Dist,
    pub delay_histogram: DecadeHistogram,
    pub runtime_cutoff_us: f64,
    pub launch_delay_cutoff_us: f64,
    /// Launch calls longer than the runtime cut-off.
    pub runtime_outliers: u64,
    /// Launches delayed longer than the delay cut-off.
    pub delay_outliers: u64,
    /// Kernels shorter than their launch call, and their GPU time.
    pub launch_bound: u64,
    pub launch_bound_gpu_us: f64,
    /// The longest delays, longest first (at most [`TOP`]).
    pub top_delays: Vec<LaunchRow>,
    /// Ops by total launch delay, largest first (at most [`TOP`]).
    pub by_op: Vec<OpLaunches>,
    pub queues: Vec<QueueStats>,
}

/// Rows kept in the report's lists.
pub const TOP: usize = 50;

/// Whether `g` is a launch this section counts: linked to a runtime call that is not a
/// graph launch.
fn counted<'a>(
    model: &'a TraceModel,
    g: &GpuEvent,
) -> Option<&'a super::super::model::RuntimeCall> {
    let r = model.runtime.get(g.runtime? as usize)?;
    (!is_graph_launch(&r.name)).then_some(r)
}

/// Every counted launch, in GPU start order.
pub fn launch_rows(model: &TraceModel) -> Vec<LaunchRow> {
    model
        .gpu
        .iter()
        .filter_map(|g| {
            let r = counted(model, g)?;
            let delay = (g.ts_ns - (r.ts_ns + r.dur_ns)).max(0);
            Some(LaunchRow {
                correlation: r.correlation,
                kernel: g.name.to_string(),
                launcher: r.name.to_string(),
                op: op_name(model, r.op).map(str::to_string),
                ts_us: g.ts_ns as f64 / 1e3,
                cpu_duration_us: r.dur_ns as f64 / 1e3,
                gpu_duration_us: g.dur_ns as f64 / 1e3,
                launch_delay_us: delay as f64 / 1e3,
            })
        })
        .collect()
}

/// The launch section of `model`.
pub fn launch_stats(model: &TraceModel) -> LaunchStats {
    let mut delays = Vec::new();
    let mut cpu = Vec::new();
    let (mut runtime_outliers, mut delay_outliers, mut bound, mut bound_ns) = (0, 0, 0, 0i64);
    // The op's name (its shared text: a few per name, where op indices were one per
    // launch, looked up in random order after the loop) → (the name, launches, total
    // delay, max delay, total cpu, launch-bound).
    let mut per_op: foldhash::HashMap<*const u8, (&str, Stats)> = foldhash::HashMap::default();
    let mut top: Vec<(i64, usize)> = Vec::new();
    for (i, g) in model.gpu.iter().enumerate() {
        let Some(r) = counted(model, g) else { continue };
        let delay = (g.ts_ns - (r.ts_ns + r.dur_ns)).max(0);
        delays.push(delay);
        cpu.push(r.dur_ns);
        runtime_outliers += u64::from(r.dur_ns > RUNTIME_CUTOFF_NS);
        delay_outliers += u64::from(delay > LAUNCH_DELAY_CUTOFF_NS);
        let is_bound = g.dur_ns < r.dur_ns;
        if is_bound {
            bound += 1;
            bound_ns += g.dur_ns;
        }
        let name = op_name(model, r.op).unwrap_or("(no op)");
        let (_, e) = per_op.entry(name.as_ptr()).or_insert((name, Stats::default()));
        e.0 += 1;
        e.1 += delay;
        e.2 = e.2.max(delay);
        e.3 += r.dur_ns;
        e.4 += u64::from(is_bound);
        top.push((delay, i));
    }
    // The longest delays first (ties in trace order): only the first TOP are kept.
    let longest = |a: &(i64, usize), b: &(i64, usize)| b.0.cmp(&a.0).then(a.1.cmp(&b.1));
    if top.len() > TOP {
        top.select_nth_unstable_by(TOP, longest);
        top.truncate(TOP);
    }
    top.sort_unstable_by(longest);
    let rows = launch_rows_for(model, top.iter().take(TOP).map(|&(_, i)| i));
    // Ops by name (a hash map: the rows are sorted below, names breaking ties).
    let mut by_name: foldhash::HashMap<&str, Stats> = foldhash::HashMap::default();
    for (name, v) in per_op.into_values() {
        let e = by_name.entry(name).or_default();
        e.0 += v.0;
        e.1 += v.1;
        e.2 = e.2.max(v.2);
        e.3 += v.3;
        e.4 += v.4;
    }
    let mut by_op: Vec<OpLaunches> = by_name
        .into_iter()
        .map(|(op, (n, total, max, cpu_total, b))| OpLaunches {
            op: op.to_string(),
            launches: n,
            total_delay_us: total as f64 / 1e3,
            mean_delay_us: total as f64 / n.max(1) as f64 / 1e3,
            max_delay_us: max as f64 / 1e3,
            mean_cpu_duration_us: cpu_total as f64 / n.max(1) as f64 / 1e3,
            launch_bound: b,
        })
        .collect();
    by_op.sort_by(|a, b| b.total_delay_us.total_cmp(&a.total_delay_us).then(a.op.cmp(&b.op)));
    by_op.truncate(TOP);
    let delay_histogram = DecadeHistogram::of_ns(delays.iter().copied());
    LaunchStats {
        launches: delays.len() as u64,
        launch_delay: Dist::of_ns(&mut delays),
        cpu_duration: Dist::of_ns(&mut cpu),
        delay_histogram,
        runtime_cutoff_us: RUNTIME_CUTOFF_NS as f64 / 1e3,
        launch_delay_cutoff_us: LAUNCH_DELAY_CUTOFF_NS as f64 / 1e3,
        runtime_outliers,
        delay_outliers,
        launch_bound: bound,
        launch_bound_gpu_us: bound_ns as f64 / 1e3,
        top_delays: rows,
        by_op,
        queues: queue_stats(model),
    }
}

/// One op name's launches: (count, total delay, max delay, total CPU time, launch-bound
/// count), times in ns.
type Stats = (u64, i64, i64, i64, u64);

fn launch_rows_for(model: &TraceModel, idx: impl Iterator<Item = usize>) -> Vec<LaunchRow> {
    idx.filter_map(|i| {
        let g = model.gpu.get(i)?;
        let r = counted(model, g)?;
        Some(LaunchRow {
            correlation: r.correlation,
            kernel: g.name.to_string(),
            launcher: r.name.to_string(),
            op: op_name(model, r.op).map(str::to_string),
            ts_us: g.ts_ns as f64 / 1e3,
            cpu_duration_us: r.dur_ns as f64 / 1e3,
            gpu_duration_us: g.dur_ns as f64 / 1e3,
            launch_delay_us: (g.ts_ns - (r.ts_ns + r.dur_ns)).max(0) as f64 / 1e3,
        })
    })
    .collect()
}

/// The queue-length time series of each stream: `(ts_ns, length after the change)`,
/// in time order (an enqueue before a start at the same time).
pub fn queue_series(model: &TraceModel) -> BTreeMap<(i64, i64), Vec<(i64, i64)>> {
    let mut changes: BTreeMap<(i64, i64), Vec<(i64, i8)>> = BTreeMap::new();
    for g in &model.gpu {
        let Some(r) = counted(model, g) else { continue };
        let v = changes.entry((g.device, g.stream)).or_default();
        v.push((r.ts_ns, 1));
        v.push((g.ts_ns, -1));
    }
    changes
        .into_iter()
        .map(|(k, mut v)| {
            // +1 sorts after -1 by value: order ties as (ts, enqueue first).
            v.sort_unstable_by_key(|&(ts, d)| (ts, -d));
            let mut len = 0i64;
            let series = v
                .into_iter()
                .map(|(ts, d)| {
                    len += i64::from(d);
                    (ts, len)
                })
                .collect();
            (k, series)
        })
        .collect()
}

fn queue_stats(model: &TraceModel) -> Vec<QueueStats> {
    queue_series(model)
        .into_iter()
        .map(|((device, stream), s)| {
            let n = s.len();
            let mut vals: Vec<i64> = s.iter().map(|&(_, l)| l).collect();
            let mean = vals.iter().sum::<i64>() as f64 / n.max(1) as f64;
            vals.sort_unstable();
            let median = if n == 0 {
                0.0
            } else if n % 2 == 1 {
                vals[n / 2] as f64
            } else {
                (vals[n / 2 - 1] + vals[n / 2]) as f64 / 2.0
            };
            let (mut weighted, mut full) = (0i128, 0i64);
            for w in s.windows(2) {
                let dt = w[1].0 - w[0].0;
                weighted += i128::from(w[0].1) * i128::from(dt);
                if w[0].1 >= MAX_QUEUE_LENGTH {
                    full += dt;
                }
            }
            let span = match (s.first(), s.last()) {
                (Some(a), Some(b)) => b.0 - a.0,
                _ => 0,
            };
            QueueStats {
                device,
                stream,
                changes: n as u64,
                mean,
                median,
                max: vals.last().copied().unwrap_or(0),
                time_mean: if span > 0 { weighted as f64 / span as f64 } else { 0.0 },
                full_us: full as f64 / 1e3,
                series: thin(&s),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{CpuOp, RuntimeCall};

    fn rt(name: &str, ts_us: i64, dur_us: i64, op: Option<u32>) -> RuntimeCall {
        RuntimeCall {
            name: name.into(),
            ts_ns: ts_us * 1000,
            dur_ns: dur_us * 1000,
            correlation: Some(ts_us),
            op,
            ..RuntimeCall::default()
        }
    }

    fn k(ts_us: i64, dur_us: i64, runtime: u32) -> GpuEvent {
        GpuEvent {
            name: "k".into(),
            ts_ns: ts_us * 1000,
            dur_ns: dur_us * 1000,
            stream: 7,
            runtime: Some(runtime),
            ..GpuEvent::default()
        }
    }

    #[test]
    fn hand_computed_launches_and_queue() {
        // Launch A [0,5) runs [10,30): delay 5; launch B [6,8) runs [30,31): delay 22 and
        // launch-bound (1 < 2 µs); launch C [40,100) (an outlier call, 60 µs) runs
        // [300,310): delay 200, an outlier; a graph launch is left out.
        let m = TraceModel {
            ops: vec![CpuOp { name: "aten::mm".into(), ..CpuOp::default() }],
            runtime: vec![
                rt("cudaLaunchKernel", 0, 5, Some(0)),
                rt("cudaLaunchKernel", 6, 2, Some(0)),
                rt("cudaLaunchKernel", 40, 60, None),
                rt("cudaGraphLaunch", 400, 5, None),
            ],
            gpu: vec![k(10, 20, 0), k(30, 1, 1), k(300, 10, 2), k(410, 1, 3)],
            ..TraceModel::default()
        };
        let s = launch_stats(&m);
        assert_eq!(s.launches, 3);
        assert_eq!(s.launch_delay.total_us, 227.0);
        assert_eq!(s.launch_delay.max_us, 200.0);
        assert_eq!(s.cpu_duration.total_us, 67.0);
        assert_eq!((s.runtime_outliers, s.delay_outliers), (1, 1));
        // B (1 µs < 2 µs call) and C (10 µs < 60 µs call) are launch-bound.
        assert_eq!((s.launch_bound, s.launch_bound_gpu_us), (2, 11.0));
        assert_eq!(s.top_delays[0].launch_delay_us, 200.0);
        assert_eq!(s.by_op[0].op, "(no op)");
        assert_eq!(s.by_op[1].op, "aten::mm");
        assert_eq!(s.by_op[1].launches, 2);
        assert_eq!(s.by_op[1].mean_delay_us, 13.5);
        // Queue: +1@0 (1), +1@6 (2), -1@10 (1), -1@30 (0), +1@40 (1), -1@300 (0).
        let q = &s.queues[0];
        assert_eq!(q.changes, 6);
        assert_eq!(q.max, 2);
        assert_eq!(q.mean, 5.0 / 6.0);
        assert_eq!(q.median, 1.0);
        // Time-weighted over [0,300]: 1·6 + 2·4 + 1·20 + 0·10 + 1·260 = 294 → 0.98.
        assert!((q.time_mean - 0.98).abs() < 1e-12);
        assert_eq!(q.full_us, 0.0);
        let lengths: Vec<i64> = q.series.iter().map(|p| p.length).collect();
        assert_eq!(lengths, vec![1, 2, 1, 0, 1, 0]);
    }
}
