//! Where the time goes between the kernels: the analyses Holistic Trace Analysis (HTA,
//! facebookresearch/HolisticTraceAnalysis) runs on one rank's trace, computed its way so
//! that our numbers can be checked against it, plus what it lacks.
//!
//! - [`idle`]: GPU idle time per device and stream split into host wait, kernel wait,
//!   other (HTA `get_idle_time_breakdown`) and gaps inside one CUDA-graph replay.
//! - [`launch`]: CPU launch → GPU start delay per kernel (HTA
//!   `get_cuda_kernel_launch_stats`), its distribution, outliers and ops, and the launch
//!   queue length per stream (HTA `get_queue_length_summary`).
//! - [`syncs`]: blocking synchronisations and pageable copies, with the CPU time each
//!   blocked.
//! - [`graphs`]: CUDA/HIP graph replays, their kernels, the ops that captured them, and
//!   steady-state replay windows.
//! - [`critical_path`] (graph in [`cp_graph`]): HTA's critical-path graph of one window
//!   (CPU ops, runtime calls, kernels, launch and sync edges), its longest path, the ops
//!   on it ranked, and what-if scaling.
//! - [`modules`]: time per `nn.Module` as a tree, forward and backward.
//! - [`memory`]: the allocator's timeline, its peak and what was alive at the peak.
//! - [`findings`]: what of the above is worth a finding.
//! - [`step_timeline`]: the critical-path window's events in lanes, for drawing.
//!
//! Times are integer nanoseconds on the trace's clock inside; reports carry µs (or ms
//! where named so) as `f64`.

pub mod cp_graph;
pub mod critical_path;
pub mod findings;
pub mod graphs;
pub mod idle;
pub mod launch;
pub mod memory;
pub mod modules;
pub mod step_timeline;
pub mod syncs;

use super::model::TraceModel;
use serde::Serialize;

/// A time in µs as the gap tables and findings print it: `0` for nothing (no unit: no
/// time is no time in any unit), else [`crate::units::us`] (`12.5 µs`, `3.20 ms`).
pub fn us_or_zero(micros: f64) -> String {
    if micros == 0.0 {
        "0".to_string()
    } else {
        crate::units::us(micros)
    }
}

/// A distribution of durations, µs: count, sum, mean, min, quantiles, max.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Dist {
    pub count: u64,
    pub total_us: f64,
    pub mean_us: f64,
    pub min_us: f64,
    /// Median (linear interpolation between the two middle values, as pandas).
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Dist {
    /// The distribution of `ns` (any order). Quantiles interpolate linearly between
    /// neighbouring order statistics (pandas' and numpy's default).
    pub fn of_ns(ns: &mut [i64]) -> Dist {
        if ns.is_empty() {
            return Dist::default();
        }
        ns.sort_unstable();
        let n = ns.len();
        let total: i64 = ns.iter().sum();
        let q = |p: f64| -> f64 {
            let pos = p * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            let f = pos - lo as f64;
            (ns[lo] as f64 * (1.0 - f) + ns[hi] as f64 * f) / 1e3
        };
        Dist {
            count: n as u64,
            total_us: total as f64 / 1e3,
            mean_us: total as f64 / n as f64 / 1e3,
            min_us: ns[0] as f64 / 1e3,
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            max_us: ns[n - 1] as f64 / 1e3,
        }
    }
}

/// Counts of values per decade of µs: `< 1 µs`, `1–10 µs`, ..., `≥ 1 s` (7 bins).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct DecadeHistogram {
    /// Upper bounds of the bins in µs (the last bin has none).
    pub upper_us: Vec<f64>,
    pub counts: Vec<u64>,
}

impl DecadeHistogram {
    pub fn of_ns(ns: impl IntoIterator<Item = i64>) -> DecadeHistogram {
        let upper_us = vec![1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6];
        let mut counts = vec![0u64; upper_us.len() + 1];
        for v in ns {
            let us = v as f64 / 1e3;
            let bin = upper_us.iter().position(|&u| us < u).unwrap_or(upper_us.len());
            counts[bin] += 1;
        }
        DecadeHistogram { upper_us, counts }
    }
}

/// A time window on the trace's clock, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start_ns: i64,
    pub end_ns: i64,
}

impl Span {
    pub fn contains(&self, ts_ns: i64) -> bool {
        self.start_ns <= ts_ns && ts_ns <= self.end_ns
    }
}

/// Name of op `i` of `model` (empty when out of range).
pub(crate) fn op_name(model: &TraceModel, i: Option<u32>) -> Option<&str> {
    i.and_then(|i| model.ops.get(i as usize)).map(|o| o.name.as_ref())
}

/// The outermost enclosing op of op `i` (itself when it has no parent).
pub(crate) fn top_op(model: &TraceModel, i: u32) -> u32 {
    let mut cur = i;
    // Parents come before children in the sorted ops; the bound stops a malformed chain.
    for _ in 0..model.ops.len() {
        match model.ops.get(cur as usize).and_then(|o| o.parent) {
            Some(p) if p != cur => cur = p,
            _ => break,
        }
    }
    cur
}

/// Runtime calls that launch work from a CUDA/HIP graph.
pub fn is_graph_launch(name: &str) -> bool {
    matches!(name, "cudaGraphLaunch" | "cuGraphLaunch" | "hipGraphLaunch")
        || name.starts_with("cudaGraphLaunch_v")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist_matches_pandas_describe() {
        // pandas.Series([1, 2, 3, 4, 10]).describe(): mean 4, 50% 3; quantile(0.9) = 7.6.
        let mut v = vec![4_000, 1_000, 10_000, 3_000, 2_000];
        let d = Dist::of_ns(&mut v);
        assert_eq!(d.count, 5);
        assert_eq!(d.total_us, 20.0);
        assert_eq!(d.mean_us, 4.0);
        assert_eq!(d.min_us, 1.0);
        assert_eq!(d.p50_us, 3.0);
        assert!((d.p90_us - 7.6).abs() < 1e-12);
        assert_eq!(d.max_us, 10.0);
        assert_eq!(Dist::of_ns(&mut []), Dist::default());
    }

    /// No time prints as a bare `0`; any other time with its unit.
    #[test]
    fn zero_time_is_a_bare_zero() {
        assert_eq!(us_or_zero(0.0), "0");
        assert_eq!(us_or_zero(100.0), "100 µs");
        assert_eq!(us_or_zero(2500.0), "2.50 ms");
    }

    #[test]
    fn decades() {
        let h = DecadeHistogram::of_ns([500, 1_000, 99_000, 2_000_000_000]);
        assert_eq!(h.counts, vec![1, 1, 1, 0, 0, 0, 0, 1]);
    }
}
