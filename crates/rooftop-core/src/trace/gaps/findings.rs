//! Findings from the time between the kernels, ranked with the trace's other findings
//! by time at stake ([`super::super::findings`]).
//!
//! - `trace.gpu_idle`: the GPU idle at least [`IDLE_WARN_PCT`] of the window, split by
//!   cause ([`super::idle`], per device, in its words) with the advice of the larger of
//!   host wait (launch ahead) and other (a dependency: follow the critical path). It replaces the trace-wide
//!   finding of the same id, which states the idle time without its causes;
//! - `trace.blocking_sync`: CPU time blocked in synchronisations and synchronous copies
//!   ([`super::syncs`]);
//! - `trace.pageable_copy`: copies to or from pageable host memory;
//! - `trace.launch_bound`: kernels that ran shorter than their own launch call
//!   ([`super::launch`]) making up at least [`LAUNCH_BOUND_PCT`] of launches;
//! - `trace.graph_replay_late`: steady-state graph replays launched after the previous
//!   replay had ended ([`super::graphs`]).
//!
//! Each states its time at stake and window, which grade it as every finding is graded
//! ([`crate::diagnose::finding`]): idle time of the devices' own windows summed (a
//! profile of 8 GPUs is 8 windows), blocked CPU time and late replays' idle time of the
//! trace window, GPU time of pageable copies and launch-bound kernels of the devices'
//! time ([`super::super::findings::device_time_stake`]). Advice names the trace's
//! framework.

use super::super::findings::{device_time_stake, trace_window_us, Framework};
use super::super::timeline::Timeline;
use super::graphs::Graphs;
use super::idle::{IdleBreakdown, IdleCategory};
use super::launch::LaunchStats;
use super::syncs::Syncs;
use super::us_or_zero;
use crate::diagnose::{Finding, Stake, WindowKind};
use crate::units::{pct, us};

use super::super::findings::IDLE_WARN_PCT;
/// Launch-bound kernels above this share of launches are a finding.
pub const LAUNCH_BOUND_PCT: f64 = 30.0;

/// What the gap findings read.
#[derive(Debug, Clone, Copy)]
pub struct GapInput<'a> {
    pub timeline: &'a Timeline,
    pub idle: &'a IdleBreakdown,
    pub launch: &'a LaunchStats,
    pub syncs: &'a Syncs,
    pub graphs: &'a Graphs,
    /// Whose tools the advice names.
    pub framework: Framework,
    /// Whether the trace is an inference server's (vLLM, SGLang): the host work between
    /// graph replays is then scheduling and sampling, not a training loop's.
    pub serving: bool,
}

/// A finding graded by `stake`, whose expected gain is that time of GPU wall time.
fn finding(
    id: &'static str,
    title: &str,
    evidence: String,
    recommendation: &str,
    stake: Option<Stake>,
) -> Finding {
    let gain = stake.map(|s| format!("up to {} of GPU wall time", us(s.time_us)));
    Finding::new(id, title, evidence, recommendation, stake).with_gain(gain)
}

/// The findings, unsorted.
pub fn gap_findings(i: &GapInput<'_>) -> Vec<Finding> {
    let window_us = trace_window_us(i.timeline);
    let share = |x: f64| if window_us > 0.0 { x / window_us * 100.0 } else { 0.0 };
    let fw = i.framework;
    let mut out = Vec::new();
    let cat = |c: IdleCategory| -> f64 {
        i.idle
            .devices
            .iter()
            .flat_map(|d| &d.categories)
            .filter(|s| s.category == c)
            .map(|s| s.idle_us)
            .sum()
    };
    // Shares of the devices' own windows (all their GPU events, as the idle split).
    let idle_total: f64 = i.idle.devices.iter().map(|d| d.idle_us).sum();
    let device_window: f64 = i.idle.devices.iter().map(|d| d.window_us).sum();
    let idle_pct = if device_window > 0.0 { idle_total / device_window * 100.0 } else { 0.0 };
    if idle_pct >= IDLE_WARN_PCT {
        let host = cat(IdleCategory::HostWait);
        let other = cat(IdleCategory::Other);
        // Each cause in the tables' order and words (`IdleCategory::label`), its time as
        // the tables print it (`0` for none).
        let parts: Vec<String> = IdleCategory::ALL
            .iter()
            .map(|&c| {
                let x = cat(c);
                format!(
                    "{} {} ({})",
                    c.label(),
                    us_or_zero(x),
                    pct(if idle_total > 0.0 { x / idle_total * 100.0 } else { 0.0 })
                )
            })
            .collect();
        let recommendation = if host >= other {
            match fw {
                Framework::PyTorch => {
                    "Most of it is host wait: the CPU launched the next kernel only after the \
                     GPU had run out of work. Make the host launch ahead: remove \
                     synchronisations (.item(), .cpu()) from the step, fuse small ops \
                     (torch.compile), or replay the step as a CUDA/HIP graph; a trace of one \
                     short step also shows profiler warm-up."
                }
                Framework::Jax => {
                    "Most of it is host wait: the host dispatched the next program only after \
                     the GPU had run out of work. Make the host dispatch ahead: remove \
                     synchronisations (block_until_ready(), jax.device_get(), Python control \
                     flow on array values) from the step, and jit the whole step (jax.jit) so \
                     XLA runs it as one program; a trace of one short step also shows \
                     compilation and profiler warm-up."
                }
            }
        } else {
            "Most of it is other (a dependency): the next kernel was already enqueued but \
             waited on another stream, an event or a synchronisation. Follow the critical path \
             (--section critical-path): overlap the producer's work or split the \
             dependency."
        };
        out.push(finding(
            "trace.gpu_idle",
            "GPU idle for much of the trace",
            format!(
                "the GPU was idle {} of the {} window ({}): {} (HTA's idle categories, per \
                 device)",
                us_or_zero(idle_total),
                us_or_zero(device_window),
                pct(idle_pct),
                parts.join(", ")
            ),
            recommendation,
            // The idle time of every device, of the devices' own windows: never more
            // than 100%, however many devices the profile holds.
            Stake::new(idle_total, device_window, WindowKind::Devices),
        ));
    }
    let blocked = i.syncs.blocked_us;
    if blocked > 0.0 {
        let top = i.syncs.rows.first();
        out.push(finding(
            "trace.blocking_sync",
            "The CPU blocks on the GPU",
            format!(
                "{} held the CPU for {} ({}){}",
                crate::diagnose::count(i.syncs.calls, "blocking call", "blocking calls"),
                us(blocked),
                // Summed over calls, which may lie outside the GPU window or overlap on
                // several threads: a share above 100% would read as nonsense.
                if blocked <= window_us {
                    format!("{} of the window", pct(share(blocked)))
                } else {
                    format!(
                        "more than the {} window: calls outside it or on several threads \
                         at once",
                        us(window_us)
                    )
                },
                top.map_or(String::new(), |t| format!(
                    "; most in {} ×{} inside {} ({})",
                    t.call,
                    t.count,
                    t.top_op.as_deref().or(t.op.as_deref()).unwrap_or("no op"),
                    us(t.total_us)
                ))
            ),
            &format!(
                "Avoid {} and explicit synchronisations inside the step; keep values on the \
                 GPU or read them once per step, asynchronously into pinned memory.",
                fw.host_syncs()
            ),
            Stake::new(blocked, window_us, WindowKind::Trace),
        ));
    }
    let pageable_us: f64 = i.syncs.pageable.iter().map(|p| p.gpu_us).sum();
    if pageable_us > 0.0 {
        let n: u64 = i.syncs.pageable.iter().map(|p| p.count).sum();
        let bytes: u64 = i.syncs.pageable.iter().map(|p| p.bytes).sum();
        out.push(finding(
            "trace.pageable_copy",
            "Copies from or to pageable host memory",
            format!(
                "{n} copies ({} bytes) used pageable host memory, {} of GPU copy time; they \
                 are synchronous and slower than pinned copies",
                bytes,
                us(pageable_us)
            ),
            match fw {
                Framework::PyTorch => {
                    "Allocate the host tensors pinned (pin_memory=True, .pin_memory()) and \
                     copy with non_blocking=True."
                }
                Framework::Jax => {
                    "Put the inputs on the device ahead of the step (jax.device_put, a \
                     prefetching input pipeline) so that no copy from pageable memory sits \
                     in the step."
                }
            },
            device_time_stake(i.timeline, pageable_us),
        ));
    }
    let l = i.launch;
    if l.launches > 0 {
        let p = l.launch_bound as f64 / l.launches as f64 * 100.0;
        if p >= LAUNCH_BOUND_PCT {
            out.push(finding(
                "trace.launch_bound",
                "Kernels shorter than their own launch",
                format!(
                    "{} of {} launches ({}) ran for less time on the GPU than their launch \
                     call took on the CPU; launch delay median {}, p99 {}",
                    l.launch_bound,
                    l.launches,
                    pct(p),
                    us(l.launch_delay.p50_us),
                    us(l.launch_delay.p99_us)
                ),
                &format!(
                    "One thread cannot keep the GPU busy with such kernels: fuse them ({}) or \
                     capture the sequence in {}.",
                    fw.fuse(),
                    match fw {
                        Framework::PyTorch => "a CUDA graph",
                        Framework::Jax => fw.graph(),
                    }
                ),
                device_time_stake(i.timeline, l.launch_bound_gpu_us),
            ));
        }
    }
    for w in &i.graphs.windows {
        if w.late_launches == 0 {
            continue;
        }
        out.push(finding(
            "trace.graph_replay_late",
            "Graph replays wait on the host",
            format!(
                "{} of {} replays of graph #{} were launched after the previous replay had \
                 ended; the GPU was idle {} of the {} steady-state window",
                w.late_launches,
                w.replays,
                w.graph,
                us(w.idle_us),
                us(w.duration_us)
            ),
            if i.serving {
                "The host work between replays (scheduling, sampling, input preparation) is \
                 longer than a replay: overlap it (asynchronous scheduling) or batch more \
                 requests per replay."
            } else {
                "The host work between replays (the Python loop, data loading, logging, \
                 reading results back) is longer than a replay: take it off the step's path \
                 (prefetch the next batch, read losses back every N steps instead of every \
                 step, launch the next replay before reading the previous one's results) or \
                 put more of the step in the graph."
            },
            Stake::new(w.idle_us, window_us, WindowKind::Trace),
        ));
    }
    super::super::findings::drop_negligible(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::gaps::graphs::ReplayWindow;

    /// The finding `id` of a trace window of `window_ms` with these syncs and graphs.
    fn finding_of(
        id: &str,
        window_ms: f64,
        syncs: &Syncs,
        graphs: &Graphs,
        serving: bool,
    ) -> Option<Finding> {
        let mut timeline = Timeline::default();
        timeline.all.total.time_ms = window_ms;
        let (idle, launch) = (IdleBreakdown::default(), LaunchStats::default());
        let out = gap_findings(&GapInput {
            timeline: &timeline,
            idle: &idle,
            launch: &launch,
            syncs,
            graphs,
            framework: Framework::PyTorch,
            serving,
        });
        out.into_iter().find(|f| f.id == id)
    }

    /// One graph replayed 10 times in a 1 ms window, 4 replays late, 300 µs idle.
    fn late_replays(serving: bool) -> Finding {
        let graphs = Graphs {
            windows: vec![ReplayWindow {
                graph: 0,
                device: 0,
                replays: 10,
                start_us: 0.0,
                end_us: 1000.0,
                duration_us: 1000.0,
                busy_us: 700.0,
                graph_us: 700.0,
                eager_us: 0.0,
                idle_us: 300.0,
                late_launches: 4,
                mean_launch_ahead_us: -30.0,
                mean_period_us: 100.0,
            }],
            ..Graphs::default()
        };
        finding_of("trace.graph_replay_late", 1.0, &Syncs::default(), &graphs, serving)
            .expect("the late-replay finding")
    }

    #[test]
    fn late_replays_are_advised_in_the_words_of_the_workload() {
        let train = late_replays(false);
        // 300 µs idle of the 1 ms trace window: 30%, a warning.
        assert_eq!(train.time_at_stake_us(), Some(300.0));
        assert_eq!(train.severity, crate::diagnose::Severity::Warning);
        assert!(!train.recommendation.contains("requests"), "{}", train.recommendation);
        assert!(
            train.recommendation.contains("prefetch the next batch"),
            "{}",
            train.recommendation
        );
        let serve = late_replays(true);
        assert!(serve.recommendation.contains("requests per replay"), "{}", serve.recommendation);
    }

    /// One device idle 100 µs of its 200 µs window: `host` µs host wait, the rest other.
    fn idle_finding(host_us: f64) -> Finding {
        use crate::trace::gaps::idle::{DeviceIdle, IdleShare};
        let share = |category, idle_us: f64| IdleShare {
            category,
            idle_us,
            ratio: idle_us / 100.0,
            gaps: crate::trace::gaps::Dist::default(),
        };
        let idle = IdleBreakdown {
            threshold_us: 30.0,
            devices: vec![DeviceIdle {
                device: 0,
                window_us: 200.0,
                busy_us: 100.0,
                idle_us: 100.0,
                categories: vec![
                    share(IdleCategory::HostWait, host_us),
                    share(IdleCategory::KernelWait, 0.0),
                    share(IdleCategory::Other, 100.0 - host_us),
                    share(IdleCategory::Graph, 0.0),
                ],
                histogram: crate::trace::gaps::DecadeHistogram::default(),
            }],
            streams: Vec::new(),
        };
        let mut timeline = Timeline::default();
        timeline.all.total.time_ms = 0.2;
        let out = gap_findings(&GapInput {
            timeline: &timeline,
            idle: &idle,
            launch: &LaunchStats::default(),
            syncs: &Syncs::default(),
            graphs: &Graphs::default(),
            framework: Framework::PyTorch,
            serving: false,
        });
        out.into_iter().find(|f| f.id == "trace.gpu_idle").expect("the idle finding")
    }

    /// The idle finding names each cause as the tables do (`IdleCategory::label`, in
    /// their order) and prints no time as `0`, as they do: 100 µs idle of a 200 µs
    /// window is 50.0%, all of it other (100%), the other causes 0 (0%).
    #[test]
    fn idle_causes_are_named_and_zeroes_printed_as_in_the_tables() {
        let f = idle_finding(0.0);
        assert_eq!(
            f.evidence,
            "the GPU was idle 100 µs of the 200 µs window (50.0%): host wait 0 (0%), \
             kernel wait 0 (0%), other 100 µs (100%), graph 0 (0%) (HTA's idle categories, \
             per device)"
        );
        assert!(f.recommendation.starts_with("Most of it is other (a dependency)"));
        // 75 µs of the 100 µs idle is host wait: 75.0%, its advice.
        let f = idle_finding(75.0);
        assert!(
            f.evidence
                .contains("host wait 75.0 µs (75.0%), kernel wait 0 (0%), other 25.0 µs (25.0%)"),
            "{}",
            f.evidence
        );
        assert!(f.recommendation.starts_with("Most of it is host wait"));
    }

    /// The blocking-sync finding of `blocked_us` of syncs in a trace window of
    /// `window_ms`.
    fn blocking(window_ms: f64, blocked_us: f64) -> Option<Finding> {
        let syncs = Syncs { calls: 4, blocked_us, ..Syncs::default() };
        finding_of("trace.blocking_sync", window_ms, &syncs, &Graphs::default(), false)
    }

    /// Blocked time beyond the window (syncs after the last kernel, or on several threads)
    /// is said so, not printed as a share above 100%.
    #[test]
    fn blocked_time_longer_than_the_window_is_not_a_share_above_100_percent() {
        let inside = blocking(1.0, 250.0).expect("the sync finding");
        assert!(inside.evidence.contains("250 µs (25.0% of the window)"), "{}", inside.evidence);
        let beyond = blocking(1.0, 40_000.0).expect("the sync finding");
        assert!(!beyond.evidence.contains('%'), "{}", beyond.evidence);
        assert!(
            beyond.evidence.contains("40.0 ms (more than the 1.00 ms window"),
            "{}",
            beyond.evidence
        );
        // The stake stays within the window.
        assert_eq!(beyond.time_at_stake_us(), Some(1000.0));
        // No GPU window (no GPU activity): nothing to weigh the time against, no finding.
        assert!(blocking(0.0, 250.0).is_none());
    }
}
