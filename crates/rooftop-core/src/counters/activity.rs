//! What a system trace holds besides kernels (nsys SQLite exports, rocprofv3 rocpd
//! databases): memory copies and sets, runtime API calls, and the kernel time inside
//! each annotated range (NVTX, ROCTX).
//!
//! Readers summarise; this module holds the summaries and the one computation they
//! share, [`attribute`]: a kernel belongs to a range when the API call that launched it
//! started inside the range on the same thread — the rule of Nsight Systems'
//! `nvtx_kern_sum` / `nvtx_gpu_proj_trace` reports ("a range's GPU work is the work its
//! CPU thread launched while the range was open"). Nested ranges each count the
//! kernel; a range name that encloses itself (recursion) counts it once.
//!
//! Invariants: every time is in ns; `kernel_ns` of a range summary is the sum of the
//! durations of the kernels attributed to it, so it never exceeds the trace's total
//! kernel time; summaries are sorted by their time, largest first.

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Memory copies of one kind (`Host-to-Device`, `MEMORY_COPY_DEVICE_TO_HOST`) or sets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CopySummary {
    pub kind: String,
    pub count: u64,
    pub bytes: f64,
    pub total_ns: f64,
    /// bytes / total time, GB/s (`null` when the copies took no measurable time).
    pub achieved_gbs: Option<f64>,
}

/// Calls of one runtime API function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApiSummary {
    pub name: String,
    pub calls: u64,
    pub total_ns: f64,
    pub mean_ns: f64,
    pub max_ns: f64,
}

/// One annotated range name and the kernel time inside its instances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RangeSummary {
    pub name: String,
    /// Range instances (push/pop or start/end pairs).
    pub instances: u64,
    /// Sum of the instances' CPU-side durations.
    pub range_ns: f64,
    /// Kernels launched inside the instances.
    pub kernels: u64,
    /// Sum of those kernels' GPU durations.
    pub kernel_ns: f64,
}

/// Everything besides kernels, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Activity {
    /// What the API calls are (`CUDA runtime`, `HIP`).
    pub api_label: String,
    /// What the ranges are (`NVTX`, `ROCTX`).
    pub range_label: String,
    /// Kernels in the trace and their summed GPU time.
    pub kernels: u64,
    pub kernel_ns: f64,
    /// Kernel time launched inside at least one range.
    pub kernel_ns_in_ranges: f64,
    /// Kernels whose launching API call is known (the others cannot be attributed).
    pub kernels_with_launch: u64,
    pub copies: Vec<CopySummary>,
    pub api: Vec<ApiSummary>,
    pub ranges: Vec<RangeSummary>,
}

/// One range instance on a thread.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSpan {
    pub name: String,
    pub thread: u64,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// One kernel: the thread and time of the API call that launched it, and its GPU time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelLaunch {
    pub thread: u64,
    pub launch_ns: i64,
    pub kernel_ns: f64,
}

/// Summaries per range name and the kernel time inside any range (see the module docs).
pub fn attribute(ranges: &[RangeSpan], launches: &[KernelLaunch]) -> (Vec<RangeSummary>, f64) {
    let mut by_name: BTreeMap<&str, RangeSummary> = BTreeMap::new();
    for r in ranges {
        let s = by_name.entry(r.name.as_str()).or_insert_with(|| RangeSummary {
            name: r.name.clone(),
            instances: 0,
            range_ns: 0.0,
            kernels: 0,
            kernel_ns: 0.0,
        });
        s.instances += 1;
        s.range_ns += (r.end_ns - r.start_ns).max(0) as f64;
    }
    // Per thread: ranges by start, launches by time, one sweep.
    let mut threads: HashMap<u64, (Vec<&RangeSpan>, Vec<&KernelLaunch>)> = HashMap::new();
    for r in ranges {
        threads.entry(r.thread).or_default().0.push(r);
    }
    for l in launches {
        if let Some(t) = threads.get_mut(&l.thread) {
            t.1.push(l);
        }
    }
    let mut inside = 0.0;
    for (rs, ls) in threads.values_mut() {
        rs.sort_by_key(|r| r.start_ns);
        ls.sort_by_key(|l| l.launch_ns);
        let mut next = 0;
        let mut open: Vec<&RangeSpan> = Vec::new();
        for l in ls.iter() {
            while next < rs.len() && rs[next].start_ns <= l.launch_ns {
                open.push(rs[next]);
                next += 1;
            }
            open.retain(|r| r.end_ns >= l.launch_ns);
            if open.is_empty() {
                continue;
            }
            inside += l.kernel_ns;
            let mut names: Vec<&str> = open.iter().map(|r| r.name.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            for n in names {
                if let Some(s) = by_name.get_mut(n) {
                    s.kernels += 1;
                    s.kernel_ns += l.kernel_ns;
                }
            }
        }
    }
    let mut out: Vec<RangeSummary> = by_name.into_values().collect();
    out.sort_by(|a, b| b.kernel_ns.total_cmp(&a.kernel_ns).then(b.range_ns.total_cmp(&a.range_ns)));
    (out, inside)
}

/// Running totals per API name, without a copy of the name per call.
#[derive(Debug, Default, Clone)]
pub struct ApiTally {
    by_name: BTreeMap<String, (u64, f64, f64)>,
}

impl ApiTally {
    /// Counts one call of `name` that took `dur_ns`.
    pub fn add(&mut self, name: &str, dur_ns: f64) {
        match self.by_name.get_mut(name) {
            Some(t) => {
                t.0 += 1;
                t.1 += dur_ns;
                t.2 = t.2.max(dur_ns);
            }
            None => {
                self.by_name.insert(name.to_string(), (1, dur_ns, dur_ns));
            }
        }
    }

    /// Calls counted so far.
    pub fn calls(&self) -> u64 {
        self.by_name.values().map(|t| t.0).sum()
    }

    /// The summaries, by total time.
    pub fn finish(self) -> Vec<ApiSummary> {
        let mut v: Vec<ApiSummary> = self
            .by_name
            .into_iter()
            .map(|(name, (calls, total_ns, max_ns))| ApiSummary {
                name,
                calls,
                total_ns,
                mean_ns: total_ns / calls as f64,
                max_ns,
            })
            .collect();
        v.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns));
        v
    }
}

/// Summaries per API name from `(name, duration ns)` pairs, by total time.
pub fn summarize_api<'a>(calls: impl IntoIterator<Item = (&'a str, f64)>) -> Vec<ApiSummary> {
    let mut t = ApiTally::default();
    for (name, d) in calls {
        t.add(name, d);
    }
    t.finish()
}

/// Summaries per copy kind from `(kind, bytes, duration ns)`, by total time.
pub fn summarize_copies<'a>(
    copies: impl IntoIterator<Item = (&'a str, f64, f64)>,
) -> Vec<CopySummary> {
    let mut m: BTreeMap<&str, CopySummary> = BTreeMap::new();
    for (kind, bytes, d) in copies {
        let s = m.entry(kind).or_insert_with(|| CopySummary {
            kind: kind.to_string(),
            count: 0,
            bytes: 0.0,
            total_ns: 0.0,
            achieved_gbs: None,
        });
        s.count += 1;
        s.bytes += bytes;
        s.total_ns += d;
    }
    let mut v: Vec<CopySummary> = m
        .into_values()
        .map(|mut s| {
            // bytes / ns = GB/s.
            s.achieved_gbs = (s.total_ns > 0.0).then(|| s.bytes / s.total_ns);
            s
        })
        .collect();
    v.sort_by(|a, b| b.total_ns.total_cmp(&a.total_ns));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str, thread: u64, start_ns: i64, end_ns: i64) -> RangeSpan {
        RangeSpan { name: name.to_string(), thread, start_ns, end_ns }
    }

    #[test]
    fn kernels_go_to_every_enclosing_range_of_their_thread() {
        // step [0, 100] encloses fwd [10, 40] and bwd [50, 90]; a second step [200, 300]
        // on the same thread; thread 2 has no ranges.
        let ranges = [
            span("step", 1, 0, 100),
            span("fwd", 1, 10, 40),
            span("bwd", 1, 50, 90),
            span("step", 1, 200, 300),
        ];
        let launches = [
            KernelLaunch { thread: 1, launch_ns: 20, kernel_ns: 5.0 },
            KernelLaunch { thread: 1, launch_ns: 60, kernel_ns: 7.0 },
            KernelLaunch { thread: 1, launch_ns: 95, kernel_ns: 11.0 },
            KernelLaunch { thread: 1, launch_ns: 150, kernel_ns: 13.0 },
            KernelLaunch { thread: 1, launch_ns: 250, kernel_ns: 17.0 },
            KernelLaunch { thread: 2, launch_ns: 20, kernel_ns: 19.0 },
        ];
        let (s, inside) = attribute(&ranges, &launches);
        let get =
            |n: &str| s.iter().find(|x| x.name == n).map(|x| (x.instances, x.kernels, x.kernel_ns));
        // step: 5 + 7 + 11 (first instance) + 17 (second) = 40 over two instances.
        assert_eq!(get("step"), Some((2, 4, 40.0)));
        assert_eq!(get("fwd"), Some((1, 1, 5.0)));
        assert_eq!(get("bwd"), Some((1, 1, 7.0)));
        // Everything but the launch at 150 and thread 2's.
        assert_eq!(inside, 40.0);
        assert_eq!(s[0].name, "step");
        let step = s.iter().find(|x| x.name == "step").map(|x| x.range_ns);
        assert_eq!(step, Some(200.0));
    }

    #[test]
    fn a_name_nested_in_itself_counts_once() {
        let ranges = [span("r", 1, 0, 100), span("r", 1, 10, 20)];
        let launches = [KernelLaunch { thread: 1, launch_ns: 15, kernel_ns: 3.0 }];
        let (s, inside) = attribute(&ranges, &launches);
        assert_eq!((s[0].instances, s[0].kernels, s[0].kernel_ns, inside), (2, 1, 3.0, 3.0));
    }

    #[test]
    fn api_and_copy_summaries() {
        let api = summarize_api([("a", 2.0), ("b", 10.0), ("a", 4.0)]);
        assert_eq!(api[0].name, "b");
        assert_eq!(
            (api[1].calls, api[1].total_ns, api[1].mean_ns, api[1].max_ns),
            (2, 6.0, 3.0, 4.0)
        );
        let c = summarize_copies([("HtoD", 1e6, 1e3), ("HtoD", 1e6, 1e3), ("DtoH", 10.0, 0.0)]);
        // 2 MB in 2 µs = 1000 GB/s.
        assert_eq!(c[0].achieved_gbs, Some(1000.0));
        assert_eq!(c[1].achieved_gbs, None);
    }
}
