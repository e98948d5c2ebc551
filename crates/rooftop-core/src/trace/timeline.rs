//! GPU timeline: how the GPU's wall time splits into computation, communication,
//! memcpy, memset and idle, computed the way TraceLens does (`TraceLens/TreePerf/
//! gpu_event_analyser.py`, `GPUEventAnalyser.compute_metrics_dict`), so our numbers can
//! be checked against its `gpu_timeline.csv`.
//!
//! Definitions (all unions of `[ts, ts + dur)` intervals across streams, per device):
//! - an event is *communication* when it is a kernel or memset whose name contains
//!   `nccl`, `rccl` or `msccl` (any case); *memcpy* when it is a `gpu_memcpy`; everything else
//!   (kernels and memsets) is *computation* — memsets are part of computation, as in
//!   TraceLens, and [`TimelineBreakdown::memset`] reports their own union on the side;
//! - `total` is the window: end of the last GPU event minus start of the first;
//! - `busy` is the union of all GPU events; `idle = total - busy`;
//! - `exposed_communication` is communication not overlapped by computation;
//!   `exposed_memcpy` is memcpy overlapped by neither computation nor communication;
//! - so `computation + exposed_communication + exposed_memcpy + idle = total` exactly.
//!
//! By default only GPU events linked to a launching runtime call are counted (TraceLens's
//! default, `include_unlinked_kernels=False`); unlinked ones are counted and reported.
//!
//! Invariant: times are integer nanoseconds until the final conversion to ms, so the
//! identity above holds without rounding error.

use super::model::{GpuEvent, GpuKind, TraceModel};
use serde::Serialize;
use std::collections::BTreeMap;

/// One timeline figure: a time and its share of the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct TimeShare {
    pub time_ms: f64,
    /// Percent of `total` (the window).
    pub percent: f64,
}

/// The breakdown of one device's (or all devices') GPU time.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct TimelineBreakdown {
    /// Union of computation kernels and memsets (everything but comm and memcpy).
    pub computation: TimeShare,
    /// Union of communication (NCCL/RCCL) kernels.
    pub communication: TimeShare,
    /// Communication not overlapped by computation.
    pub exposed_communication: TimeShare,
    /// Union of memcpy events.
    pub memcpy: TimeShare,
    /// Memcpy overlapped by neither computation nor communication.
    pub exposed_memcpy: TimeShare,
    /// Union of memset events (already inside `computation`).
    pub memset: TimeShare,
    /// Union of all GPU events.
    pub busy: TimeShare,
    /// `total - busy`.
    pub idle: TimeShare,
    /// The window: end of the last GPU event minus start of the first.
    pub total: TimeShare,
    /// GPU events counted.
    pub event_count: u64,
}

impl TimelineBreakdown {
    /// The rows in display order, with TraceLens's row names in the comments:
    /// `(key, label, share)`.
    pub fn rows(&self) -> [(&'static str, &'static str, TimeShare); 9] {
        [
            ("computation", "computation", self.computation),
            ("communication", "communication (total)", self.communication),
            ("exposed_communication", "communication (exposed)", self.exposed_communication),
            ("memcpy", "memcpy (total)", self.memcpy),
            ("exposed_memcpy", "memcpy (exposed)", self.exposed_memcpy),
            ("memset", "memset (in computation)", self.memset),
            ("busy", "busy", self.busy),
            ("idle", "idle", self.idle),
            ("total", "total (window)", self.total),
        ]
    }
}

/// The time window the timeline covers, on the trace's own clock.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Window {
    /// Start of the first counted GPU event (trace clock, µs).
    pub start_us: f64,
    /// End of the last counted GPU event (trace clock, µs).
    pub end_us: f64,
    pub duration_ms: f64,
    /// How the window was chosen, in words.
    pub basis: String,
}

/// One device's breakdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceTimeline {
    /// Device index (`pid` of the GPU track).
    pub device: i64,
    #[serde(flatten)]
    pub breakdown: TimelineBreakdown,
}

/// The GPU timeline of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Timeline {
    /// All devices' events merged on one time axis (what TraceLens reports).
    #[serde(flatten)]
    pub all: TimelineBreakdown,
    /// One breakdown per device, in device order (one entry for single-GPU traces).
    pub per_device: Vec<DeviceTimeline>,
    /// GPU events left out because no runtime call launched them (see the module doc).
    pub unlinked_excluded: u64,
    /// Whether unlinked GPU events were counted.
    pub includes_unlinked: bool,
}

/// Whether a GPU event is communication: a kernel or memset named like an NCCL/RCCL
/// kernel (TraceLens tests `'nccl' in name`; RCCL kernels are also `nccl*`-named, the
/// `rccl`/`msccl` tests are for safety).
pub fn is_comm(ev: &GpuEvent) -> bool {
    ev.kind != GpuKind::Memcpy && super::ops::is_comm_kernel_shared(&ev.name)
}

/// Whether a kernel name is an NCCL/RCCL/MSCCL kernel ([`super::ops::is_comm_kernel`]).
pub fn is_comm_name(name: &str) -> bool {
    super::ops::is_comm_kernel(name)
}

/// Whether `ev` was launched by a runtime call the reader linked it to.
pub fn is_linked(ev: &GpuEvent) -> bool {
    ev.launcher.is_some() || ev.op.is_some()
}

/// Sorts `iv` and merges overlapping or touching intervals in place.
pub fn merge(iv: &mut Vec<(i64, i64)>) {
    iv.sort_unstable();
    // In place: `kept` intervals are final, the next one is read after them.
    let mut kept = 0usize;
    for i in 0..iv.len() {
        let (s, e) = iv[i];
        match kept.checked_sub(1).map(|k| &mut iv[k]) {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => {
                iv[kept] = (s, e);
                kept += 1;
            }
        }
    }
    iv.truncate(kept);
}

/// Total length of merged (sorted, disjoint) intervals.
pub fn length(iv: &[(i64, i64)]) -> i64 {
    iv.iter().map(|(s, e)| e - s).sum()
}

/// Length of the union of `iv` (any order, overlaps allowed).
pub fn union_ns(iv: impl IntoIterator<Item = (i64, i64)>) -> i64 {
    // One interval (most ops launch one kernel) is its own union: no vector.
    let mut iv = iv.into_iter();
    let Some(first) = iv.next() else { return 0 };
    let Some(second) = iv.next() else { return first.1 - first.0 };
    let mut v: Vec<(i64, i64)> = [first, second].into_iter().chain(iv).collect();
    merge(&mut v);
    length(&v)
}

/// `b` minus `a`, both merged (sorted, disjoint); the result is merged.
pub fn subtract(a: &[(i64, i64)], b: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut i = 0;
    for &(bs, be) in b {
        let mut cur = bs;
        while i < a.len() && a[i].1 <= bs {
            i += 1;
        }
        let mut j = i;
        while j < a.len() && a[j].0 < be {
            let (as_, ae) = a[j];
            if as_ > cur {
                out.push((cur, as_.min(be)));
            }
            cur = cur.max(ae);
            if cur >= be {
                break;
            }
            j += 1;
        }
        if cur < be {
            out.push((cur, be));
        }
    }
    out
}

fn interval(ev: &GpuEvent) -> (i64, i64) {
    (ev.ts_ns, ev.ts_ns + ev.dur_ns.max(0))
}

/// The breakdown of a set of GPU events, and the window `(start_ns, end_ns)` it used.
/// `None` when there are no events.
pub fn breakdown<'a>(
    events: impl IntoIterator<Item = &'a GpuEvent>,
) -> Option<(TimelineBreakdown, (i64, i64))> {
    let (mut comp, mut comm, mut memcpy, mut memset, mut all) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for ev in events {
        let iv = interval(ev);
        all.push(iv);
        if ev.kind == GpuKind::Memcpy {
            memcpy.push(iv);
        } else if is_comm(ev) {
            comm.push(iv);
        } else {
            comp.push(iv);
            if ev.kind == GpuKind::Memset {
                memset.push(iv);
            }
        }
    }
    let event_count = all.len() as u64;
    for v in [&mut comp, &mut comm, &mut memcpy, &mut memset, &mut all] {
        merge(v);
    }
    let (first, last) = (all.first()?, all.last()?);
    let window = (first.0, last.1);
    let total = window.1 - window.0;
    let busy = length(&all);
    let exposed_comm = length(&subtract(&comp, &comm));
    let exposed_memcpy = length(&subtract(&comm, &subtract(&comp, &memcpy)));
    let share = |ns: i64| TimeShare {
        time_ms: ns as f64 / 1e6,
        percent: if total > 0 { ns as f64 / total as f64 * 100.0 } else { 0.0 },
    };
    let b = TimelineBreakdown {
        computation: share(length(&comp)),
        communication: share(length(&comm)),
        exposed_communication: share(exposed_comm),
        memcpy: share(length(&memcpy)),
        exposed_memcpy: share(exposed_memcpy),
        memset: share(length(&memset)),
        busy: share(busy),
        idle: share(total - busy),
        total: share(total),
        event_count,
    };
    Some((b, window))
}

/// The GPU timeline of `model` and the window it covers. With `include_unlinked` false,
/// GPU events no runtime call launched are left out (TraceLens's default).
pub fn timeline(model: &TraceModel, include_unlinked: bool) -> (Timeline, Window) {
    let counted = |ev: &&GpuEvent| include_unlinked || is_linked(ev);
    let unlinked_excluded =
        if include_unlinked { 0 } else { model.gpu.iter().filter(|e| !is_linked(e)).count() };
    let mut by_device: BTreeMap<i64, Vec<&GpuEvent>> = BTreeMap::new();
    for ev in model.gpu.iter().filter(counted) {
        by_device.entry(ev.device).or_default().push(ev);
    }
    let per_device = by_device
        .iter()
        .filter_map(|(&device, evs)| {
            breakdown(evs.iter().copied())
                .map(|(breakdown, _)| DeviceTimeline { device, breakdown })
        })
        .collect();
    let (all, window) = match breakdown(model.gpu.iter().filter(counted)) {
        Some((b, (s, e))) => (
            b,
            Window {
                start_us: s as f64 / 1e3,
                end_us: e as f64 / 1e3,
                duration_ms: (e - s) as f64 / 1e6,
                basis: format!(
                    "whole trace: first to last {}GPU event (kernel, memcpy, memset), \
                     all devices",
                    if include_unlinked { "" } else { "linked " }
                ),
            },
        ),
        None => (
            TimelineBreakdown::default(),
            Window { basis: "no GPU events".to_string(), ..Window::default() },
        ),
    };
    (
        Timeline {
            all,
            per_device,
            unlinked_excluded: unlinked_excluded as u64,
            includes_unlinked: include_unlinked,
        },
        window,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn ev(kind: GpuKind, name: &str, ts_us: f64, dur_us: f64, stream: i64) -> GpuEvent {
        GpuEvent {
            kind,
            name: name.into(),
            ts_ns: (ts_us * 1e3).round() as i64,
            dur_ns: (dur_us * 1e3).round() as i64,
            stream,
            launcher: Some("cudaLaunchKernel".into()),
            ..GpuEvent::default()
        }
    }

    #[test]
    fn interval_algebra() {
        let mut v = vec![(5, 8), (0, 2), (1, 3), (8, 9)];
        merge(&mut v);
        assert_eq!(v, vec![(0, 3), (5, 9)]);
        assert_eq!(length(&v), 7);
        // b - a
        assert_eq!(subtract(&[(1, 2), (4, 6)], &[(0, 5), (7, 8)]), vec![(0, 1), (2, 4), (7, 8)]);
        assert_eq!(subtract(&[], &[(0, 5)]), vec![(0, 5)]);
        assert_eq!(subtract(&[(0, 10)], &[(2, 5)]), Vec::<(i64, i64)>::new());
        // Touching intervals merge; one inside another disappears into it.
        let mut v = vec![(4, 6), (0, 4), (1, 2), (6, 6), (10, 12)];
        merge(&mut v);
        assert_eq!(v, vec![(0, 6), (10, 12)]);
        // Unions of none, one and several intervals.
        assert_eq!(union_ns(std::iter::empty()), 0);
        assert_eq!(union_ns([(3, 10)]), 7);
        assert_eq!(union_ns([(5, 8), (0, 2), (1, 3), (8, 9)]), 7);
        assert_eq!(union_ns([(0, 2), (0, 2)]), 2);
    }

    #[test]
    fn hand_computed_breakdown() {
        // Stream 7: gemm [0,10), memset [12,13); stream 9: nccl [5,20) overlaps gemm
        // for 5 µs; memcpy [18,25) overlaps nccl for 2 µs; idle [25,30); kernel [30,40).
        let m = TraceModel {
            gpu: vec![
                ev(GpuKind::Kernel, "gemm", 0.0, 10.0, 7),
                ev(GpuKind::Kernel, "ncclDevKernel_AllReduce", 5.0, 15.0, 9),
                ev(GpuKind::Memset, "Memset (Device)", 12.0, 1.0, 7),
                ev(GpuKind::Memcpy, "Memcpy HtoD", 18.0, 7.0, 11),
                ev(GpuKind::Kernel, "elementwise", 30.0, 10.0, 7),
            ],
            ..TraceModel::default()
        };
        let (t, w) = timeline(&m, false);
        let b = &t.all;
        assert_eq!(b.total.time_ms, 0.040);
        assert_eq!(b.computation.time_ms, 0.021); // 10 + 1 + 10
        assert_eq!(b.memset.time_ms, 0.001);
        assert_eq!(b.communication.time_ms, 0.015);
        // comm [5,20) minus comp [0,10),[12,13),[30,40) = [10,12),[13,20) = 9 µs
        assert_eq!(b.exposed_communication.time_ms, 0.009);
        assert_eq!(b.memcpy.time_ms, 0.007);
        // memcpy [18,25) minus comp, minus comm [5,20) = [20,25) = 5 µs
        assert_eq!(b.exposed_memcpy.time_ms, 0.005);
        // busy [0,25) + [30,40) = 35 µs
        assert_eq!(b.busy.time_ms, 0.035);
        assert_eq!(b.idle.time_ms, 0.005);
        assert!((b.idle.percent - 12.5).abs() < 1e-12);
        assert_eq!(w.start_us, 0.0);
        assert_eq!(w.end_us, 40.0);
        // The identity TraceLens asserts.
        let sum = b.computation.time_ms
            + b.exposed_communication.time_ms
            + b.exposed_memcpy.time_ms
            + b.idle.time_ms;
        assert!((sum - b.total.time_ms).abs() < 1e-12);
        assert_eq!(t.per_device.len(), 1);
        assert_eq!(t.per_device[0].breakdown, t.all);
    }

    #[test]
    fn unlinked_and_devices() {
        let mut orphan = ev(GpuKind::Kernel, "k", 0.0, 1.0, 7);
        orphan.launcher = None;
        let mut on_dev1 = ev(GpuKind::Kernel, "k", 10.0, 2.0, 7);
        on_dev1.device = 1;
        let on_dev0 = ev(GpuKind::Kernel, "k", 4.0, 2.0, 7);
        let m = TraceModel { gpu: vec![orphan, on_dev0, on_dev1], ..TraceModel::default() };
        let (t, w) = timeline(&m, false);
        assert_eq!(t.unlinked_excluded, 1);
        assert_eq!(t.all.total.time_ms, 0.008); // [4, 12)
        assert_eq!(t.per_device.len(), 2);
        assert_eq!(t.per_device[1].breakdown.total.time_ms, 0.002);
        assert_eq!(w.start_us, 4.0);
        let (t, _) = timeline(&m, true);
        assert_eq!(t.all.total.time_ms, 0.012);
        assert_eq!(t.unlinked_excluded, 0);
    }

    #[test]
    fn empty_trace() {
        let (t, w) = timeline(&TraceModel::default(), false);
        assert_eq!(t.all.total.time_ms, 0.0);
        assert!(t.per_device.is_empty());
        assert_eq!(w.basis, "no GPU events");
    }

    #[test]
    fn comm_names() {
        assert!(is_comm_name("ncclDevKernel_AllGather_RING_LL"));
        assert!(is_comm_name("void ncclKernel_AllReduce<...>"));
        assert!(is_comm_name("rcclGenericKernel"));
        assert!(!is_comm_name("ampere_sgemm_128x64_nn"));
    }
}
