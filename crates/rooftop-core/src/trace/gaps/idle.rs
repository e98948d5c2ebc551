//! GPU idle time, split by cause, per stream (HTA's definition) and per device.
//!
//! Per stream (HTA `BreakdownAnalysis._analyze_idle_time_for_stream`): the GPU events of
//! a stream (kernels, memcpys, memsets), by start time; each one's gap is its start minus
//! the end of the one before it. A gap is
//! - **host wait** when the event's launching runtime call started after the previous
//!   event ended: the GPU waited for the CPU to enqueue work;
//! - **kernel wait** otherwise, when the gap is shorter than the threshold (HTA's
//!   `consecutive_kernel_delay`, 30 µs by default): the GPU's own overhead between
//!   back-to-back kernels;
//! - **other** otherwise: the work was enqueued before the GPU went idle and still did
//!   not start — it waited on another stream, an event, or a synchronisation;
//! - and, where HTA would say kernel wait or other, **graph** when both events are
//!   kernels of one CUDA/HIP graph replay (one `cudaGraphLaunch`): gaps the GPU's graph
//!   scheduling leaves, with no host involvement. A graph-replayed decode loop therefore
//!   does not read as host wait or as unexplained idle.
//!
//! HTA groups by stream only; we group by (device, stream), which is the same for one
//! GPU per rank. HTA documents the threshold in ns but compares it with gaps in the
//! trace's unit, µs; we use µs.
//!
//! Per device (our extension, which sums exactly to the device's idle time over all its
//! GPU events, linked or not): the gaps of the union of the device's events, each
//! classified by the event that ends it with the same rules (its launch after the gap
//! began: host wait; same graph replay as an event ending the busy period before: graph;
//! shorter than the threshold: kernel wait; else other).

use super::super::model::{GpuEvent, TraceModel};
use super::{is_graph_launch, DecadeHistogram, Dist};
use serde::Serialize;
use std::collections::BTreeMap;

/// HTA's default `consecutive_kernel_delay`, in ns (30 µs).
pub const CONSECUTIVE_KERNEL_DELAY_NS: i64 = 30_000;

/// Why the GPU (or a stream) was idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleCategory {
    HostWait,
    KernelWait,
    Other,
    Graph,
}

impl IdleCategory {
    pub const ALL: [IdleCategory; 4] = [
        IdleCategory::HostWait,
        IdleCategory::KernelWait,
        IdleCategory::Other,
        IdleCategory::Graph,
    ];

    /// The words shown to users for the category, in tables, Markdown, HTML and
    /// findings alike (`host wait`, `kernel wait`, `other`, `graph`): [`Self::as_str`]
    /// with blanks, so that the text and the JSON keys name a cause the same way.
    pub fn label(self) -> &'static str {
        match self {
            IdleCategory::HostWait => "host wait",
            IdleCategory::KernelWait => "kernel wait",
            IdleCategory::Other => "other",
            IdleCategory::Graph => "graph",
        }
    }

    /// The stable name (`host_wait`, `kernel_wait`, `other`, `graph`): the JSON value
    /// and the CSV column prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            IdleCategory::HostWait => "host_wait",
            IdleCategory::KernelWait => "kernel_wait",
            IdleCategory::Other => "other",
            IdleCategory::Graph => "graph",
        }
    }
}

/// One category's share of a stream's or device's idle time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IdleShare {
    pub category: IdleCategory,
    pub idle_us: f64,
    /// Fraction of the idle time (0–1), as HTA's `idle_time_ratio`.
    pub ratio: f64,
    /// The gaps of this category.
    pub gaps: Dist,
}

/// One stream's idle breakdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamIdle {
    pub device: i64,
    pub stream: i64,
    /// GPU events on the stream.
    pub events: u64,
    /// Sum of the stream's gaps (HTA's total idle time of the stream), µs.
    pub idle_us: f64,
    /// One entry per category, in [`IdleCategory::ALL`] order.
    pub categories: Vec<IdleShare>,
}

/// One device's idle breakdown (gaps in the union of its events).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceIdle {
    pub device: i64,
    /// First event start to last event end, µs.
    pub window_us: f64,
    pub busy_us: f64,
    pub idle_us: f64,
    pub categories: Vec<IdleShare>,
    /// Gap lengths by decade.
    pub histogram: DecadeHistogram,
}

/// The idle-time section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct IdleBreakdown {
    /// Gaps shorter than this that are not host waits are kernel waits, µs.
    pub threshold_us: f64,
    pub devices: Vec<DeviceIdle>,
    pub streams: Vec<StreamIdle>,
}

/// The launching runtime call's start, when the event has one.
fn launch_ts(model: &TraceModel, g: &GpuEvent) -> Option<i64> {
    g.runtime.and_then(|r| model.runtime.get(r as usize)).map(|r| r.ts_ns)
}

/// Whether `a` and `b` were launched by one graph launch.
fn same_graph_replay(model: &TraceModel, a: &GpuEvent, b: &GpuEvent) -> bool {
    match (a.runtime, b.runtime) {
        (Some(x), Some(y)) if x == y => {
            model.runtime.get(x as usize).is_some_and(|r| is_graph_launch(&r.name))
        }
        _ => false,
    }
}

fn classify(
    model: &TraceModel,
    prev: &GpuEvent,
    prev_end: i64,
    cur: &GpuEvent,
    threshold_ns: i64,
) -> IdleCategory {
    let gap = cur.ts_ns - prev_end;
    if launch_ts(model, cur).is_some_and(|t| t > prev_end) {
        IdleCategory::HostWait
    } else if same_graph_replay(model, prev, cur) {
        IdleCategory::Graph
    } else if gap < threshold_ns {
        IdleCategory::KernelWait
    } else {
        IdleCategory::Other
    }
}

fn shares(gaps: &mut BTreeMap<IdleCategory, Vec<i64>>) -> (f64, Vec<IdleShare>) {
    let total: i64 = gaps.values().flatten().sum();
    let out = IdleCategory::ALL
        .iter()
        .map(|&c| {
            let v = gaps.entry(c).or_default();
            let sum: i64 = v.iter().sum();
            IdleShare {
                category: c,
                idle_us: sum as f64 / 1e3,
                ratio: if total != 0 { sum as f64 / total as f64 } else { 0.0 },
                gaps: Dist::of_ns(v),
            }
        })
        .collect();
    (total as f64 / 1e3, out)
}

/// The idle breakdown of every stream and device of `model`, with HTA's threshold
/// `threshold_ns` between kernel wait and other.
pub fn idle_breakdown(model: &TraceModel, threshold_ns: i64) -> IdleBreakdown {
    // Events per (device, stream) and per device, in start order (the model's order).
    let mut streams: BTreeMap<(i64, i64), Vec<u32>> = BTreeMap::new();
    let mut devices: BTreeMap<i64, Vec<u32>> = BTreeMap::new();
    for (i, g) in model.gpu.iter().enumerate() {
        streams.entry((g.device, g.stream)).or_default().push(i as u32);
        devices.entry(g.device).or_default().push(i as u32);
    }
    let ev = |i: u32| &model.gpu[i as usize];
    let stream_rows = streams
        .into_iter()
        .map(|((device, stream), idx)| {
            let mut gaps: BTreeMap<IdleCategory, Vec<i64>> = BTreeMap::new();
            for w in idx.windows(2) {
                let (prev, cur) = (ev(w[0]), ev(w[1]));
                // HTA: the previous event's own end, not the latest end so far.
                let prev_end = prev.ts_ns + prev.dur_ns;
                // Two events on one stream that overlap (the kernels of a graph replay,
                // damaged clocks) leave no idle time between them, never a negative one
                // (exact duplicates were dropped by the reader).
                if cur.ts_ns < prev_end {
                    continue;
                }
                let c = classify(model, prev, prev_end, cur, threshold_ns);
                gaps.entry(c).or_default().push(cur.ts_ns - prev_end);
            }
            let (idle_us, categories) = shares(&mut gaps);
            StreamIdle { device, stream, events: idx.len() as u64, idle_us, categories }
        })
        .collect();
    let device_rows = devices
        .into_iter()
        .filter_map(|(device, idx)| {
            let first = ev(*idx.first()?);
            let mut busy_end = first.ts_ns + first.dur_ns;
            let mut busy_start = first.ts_ns;
            let mut last_ender = first;
            let mut busy: i64 = 0;
            let mut gaps: BTreeMap<IdleCategory, Vec<i64>> = BTreeMap::new();
            let mut all_gaps = Vec::new();
            for &i in &idx[1..] {
                let g = ev(i);
                let end = g.ts_ns + g.dur_ns;
                if g.ts_ns > busy_end {
                    let c = classify(model, last_ender, busy_end, g, threshold_ns);
                    let gap = g.ts_ns - busy_end;
                    gaps.entry(c).or_default().push(gap);
                    all_gaps.push(gap);
                    busy += busy_end - busy_start;
                    busy_start = g.ts_ns;
                    busy_end = end;
                    last_ender = g;
                } else if end >= busy_end {
                    busy_end = end;
                    last_ender = g;
                }
            }
            busy += busy_end - busy_start;
            let (idle_us, categories) = shares(&mut gaps);
            let window_ns = busy_end - first.ts_ns;
            Some(DeviceIdle {
                device,
                window_us: window_ns as f64 / 1e3,
                busy_us: busy as f64 / 1e3,
                idle_us,
                categories,
                histogram: DecadeHistogram::of_ns(all_gaps),
            })
        })
        .collect();
    IdleBreakdown {
        threshold_us: threshold_ns as f64 / 1e3,
        devices: device_rows,
        streams: stream_rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::RuntimeCall;

    /// The words users read are the JSON keys with blanks, in the tables' order.
    #[test]
    fn causes_read_as_their_keys() {
        let words: Vec<&str> = IdleCategory::ALL.iter().map(|c| c.label()).collect();
        assert_eq!(words, ["host wait", "kernel wait", "other", "graph"]);
        for c in IdleCategory::ALL {
            assert_eq!(c.label(), c.as_str().replace('_', " "));
        }
    }

    fn rt(name: &str, ts_us: i64) -> RuntimeCall {
        RuntimeCall {
            name: name.into(),
            ts_ns: ts_us * 1000,
            dur_ns: 1000,
            ..RuntimeCall::default()
        }
    }

    fn k(ts_us: i64, dur_us: i64, stream: i64, runtime: Option<u32>) -> GpuEvent {
        GpuEvent {
            name: "k".into(),
            ts_ns: ts_us * 1000,
            dur_ns: dur_us * 1000,
            stream,
            runtime,
            ..GpuEvent::default()
        }
    }

    fn share(s: &[IdleShare], c: IdleCategory) -> f64 {
        s.iter().find(|x| x.category == c).map_or(f64::NAN, |x| x.idle_us)
    }

    #[test]
    fn hand_computed_categories() {
        // Stream 7: k0 [0,10); k1 launched at 5 (before k0 ends), starts 12: 2 µs
        // kernel wait; k2 launched at 50 (after k1 ends at 20), starts 52: 32 µs host
        // wait; k3 launched at 55 (before k2 ends at 60), starts 100: 40 µs other; a
        // graph launch at 101 runs k4 [130,150) and k5 [180,190): k4's 20 µs gap is a
        // kernel wait (launched before k3 ended, < 30 µs), k5's 30 µs gap is inside one
        // replay: graph.
        let m = TraceModel {
            runtime: vec![
                rt("cudaLaunchKernel", 0),
                rt("cudaLaunchKernel", 5),
                rt("cudaLaunchKernel", 50),
                rt("cudaLaunchKernel", 55),
                rt("cudaGraphLaunch", 101),
            ],
            gpu: vec![
                k(0, 10, 7, Some(0)),
                k(12, 8, 7, Some(1)),
                k(52, 8, 7, Some(2)),
                k(100, 10, 7, Some(3)),
                k(130, 20, 7, Some(4)),
                k(180, 10, 7, Some(4)),
            ],
            ..TraceModel::default()
        };
        let b = idle_breakdown(&m, CONSECUTIVE_KERNEL_DELAY_NS);
        let s = &b.streams[0];
        assert_eq!(s.events, 6);
        assert_eq!(share(&s.categories, IdleCategory::KernelWait), 22.0);
        assert_eq!(share(&s.categories, IdleCategory::HostWait), 32.0);
        assert_eq!(share(&s.categories, IdleCategory::Other), 40.0);
        assert_eq!(share(&s.categories, IdleCategory::Graph), 30.0);
        assert_eq!(s.idle_us, 124.0);
        assert_eq!(s.categories[0].gaps.count, 1);
        // One stream: the device view has the same gaps.
        let d = &b.devices[0];
        assert_eq!(d.idle_us, s.idle_us);
        assert_eq!(d.window_us, 190.0);
        assert_eq!(d.busy_us, 190.0 - d.idle_us);
    }

    #[test]
    fn device_gaps_use_the_union() {
        // Stream 1 [0,10), stream 2 [5,30) launched at 1; stream 1 [40,50) launched at
        // 35: one device gap of 10 µs, host wait (35 > 30); per stream, stream 1's gap
        // is 30 µs (10 → 40), also host wait.
        let m = TraceModel {
            runtime: vec![rt("a", 0), rt("b", 1), rt("c", 35)],
            gpu: vec![k(0, 10, 1, Some(0)), k(5, 25, 2, Some(1)), k(40, 10, 1, Some(2))],
            ..TraceModel::default()
        };
        let b = idle_breakdown(&m, CONSECUTIVE_KERNEL_DELAY_NS);
        let d = &b.devices[0];
        assert_eq!(d.idle_us, 10.0);
        assert_eq!(share(&d.categories, IdleCategory::HostWait), 10.0);
        assert_eq!(d.busy_us, 40.0);
        assert_eq!(b.streams.len(), 2);
        assert_eq!(share(&b.streams[0].categories, IdleCategory::HostWait), 30.0);
        assert_eq!(b.streams[1].idle_us, 0.0);
        assert_eq!(
            idle_breakdown(&TraceModel::default(), 1),
            IdleBreakdown { threshold_us: 0.001, ..IdleBreakdown::default() }
        );
    }
}
