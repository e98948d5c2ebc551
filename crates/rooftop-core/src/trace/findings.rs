//! Trace-wide findings, ranked by the GPU time at stake.
//!
//! Every number comes from the analysis (timeline, ops and kernel summaries, short
//! kernels, the per-category roofline tables); thresholds are named constants with
//! their source. The time at stake of each finding says what it measures:
//! - idle GPU: the idle time of the window;
//! - exposed communication / memcpy: the exposed time (timeline definitions);
//! - short kernels: the time spent in kernels under the threshold (seed 002 "Kernel
//!   Launch Overhead": a fixed launch cost of a few µs dominates such kernels);
//! - ops below the roofline: `kernel time × (1 − attainment)`, the time the ops would
//!   save at their roofline floor;
//! - unfused elementwise chains: the kernel time of the chains (what fusion works on).
//!
//! Findings are sorted by time at stake, largest first.

use super::model::{GpuKind, TraceModel};
use super::summary::ShortKernels;
use super::tables::{CategoryTable, OpRow};
use super::timeline::Timeline;
use crate::diagnose::{Finding, Severity};
use crate::units::{pct, sig3, us};
use serde::Serialize;
use std::collections::BTreeMap;

/// Idle GPU above this share of the window is worth a finding.
pub const IDLE_WARN_PCT: f64 = 20.0;
/// ... and critical above this share.
pub const IDLE_CRITICAL_PCT: f64 = 50.0;
/// Exposed communication or memcpy above this share of the window is worth a finding.
pub const EXPOSED_WARN_PCT: f64 = 5.0;
/// Below this share it is reported as info (when non-zero).
pub const EXPOSED_INFO_PCT: f64 = 1.0;
/// Short kernels taking this share of kernel time, or being this share of all launches,
/// are worth a finding (seed 002: launch cost dominates small tensors).
pub const SHORT_TIME_WARN_PCT: f64 = 20.0;
pub const SHORT_COUNT_WARN_PCT: f64 = 50.0;
/// Ops under this roofline attainment are "far below" (seed 002 decision tree: < 30% of
/// peak is a major issue; 30-70% has room).
pub const FAR_BELOW_ROOF_PCT: f64 = 30.0;
pub const BELOW_ROOF_PCT: f64 = 70.0;
/// Consecutive elementwise kernels on one stream form a chain from this length.
pub const CHAIN_MIN_LEN: usize = 3;
/// Findings whose time at stake is below this share of the window are dropped.
pub const MIN_STAKE_PCT: f64 = 0.5;

/// A finding with the GPU time it concerns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceFinding {
    #[serde(flatten)]
    pub finding: Finding,
    /// GPU time the finding concerns (see the module doc for each kind), µs.
    pub time_at_stake_us: f64,
    /// `time_at_stake_us` over the timeline window.
    pub percent_of_total_time: f64,
}

/// Everything the findings read.
#[derive(Clone, Copy)]
pub struct FindingsInput<'a> {
    pub model: &'a TraceModel,
    pub timeline: &'a Timeline,
    pub short: &'a ShortKernels,
    pub tables: &'a [CategoryTable],
    /// Whether the op at an index of `model.ops` is an elementwise op (from
    /// [`super::ops`]).
    pub is_elementwise: &'a dyn Fn(u32) -> bool,
}

/// The trace-wide findings, largest time at stake first.
pub fn findings(input: &FindingsInput<'_>) -> Vec<TraceFinding> {
    let window_us = input.timeline.all.total.time_ms * 1e3;
    let mut out = Vec::new();
    idle(input, &mut out);
    exposed(input, &mut out);
    short_kernels(input, &mut out);
    below_roofline(input, &mut out);
    elementwise_chains(input, &mut out);
    for f in &mut out {
        f.percent_of_total_time =
            if window_us > 0.0 { f.time_at_stake_us / window_us * 100.0 } else { 0.0 };
    }
    out.retain(|f| f.percent_of_total_time >= MIN_STAKE_PCT || f.finding.severity > Severity::Info);
    // Stable sort: equal stakes keep rule order.
    out.sort_by(|a, b| b.time_at_stake_us.total_cmp(&a.time_at_stake_us));
    out
}

impl std::fmt::Debug for FindingsInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FindingsInput").field("tables", &self.tables.len()).finish_non_exhaustive()
    }
}

fn push(out: &mut Vec<TraceFinding>, finding: Finding, time_at_stake_us: f64) {
    out.push(TraceFinding { finding, time_at_stake_us, percent_of_total_time: 0.0 });
}

fn idle(i: &FindingsInput<'_>, out: &mut Vec<TraceFinding>) {
    let t = &i.timeline.all;
    if t.idle.percent < IDLE_WARN_PCT {
        return;
    }
    let severity =
        if t.idle.percent >= IDLE_CRITICAL_PCT { Severity::Critical } else { Severity::Warning };
    push(
        out,
        Finding {
            id: "trace.gpu_idle",
            severity,
            title: "GPU idle for much of the trace".to_string(),
            evidence: format!(
                "the GPU was idle {} of the {} window ({}); busy {}",
                us(t.idle.time_ms * 1e3),
                us(t.total.time_ms * 1e3),
                pct(t.idle.percent),
                us(t.busy.time_ms * 1e3)
            ),
            recommendation: "The CPU does not feed the GPU fast enough: look for host-side \
                             gaps (Python overhead, synchronisations such as .item() or \
                             .cpu(), data loading) between kernels; capture the step in a \
                             CUDA/HIP graph or torch.compile it; raise the batch size. A \
                             trace of a single short step also shows profiler warm-up."
                .to_string(),
            expected_gain: Some(format!("up to {} of GPU wall time", us(t.idle.time_ms * 1e3))),
        },
        t.idle.time_ms * 1e3,
    );
}

fn exposed(i: &FindingsInput<'_>, out: &mut Vec<TraceFinding>) {
    let t = &i.timeline.all;
    let sev = |p: f64| {
        if p >= EXPOSED_WARN_PCT {
            Some(Severity::Warning)
        } else if p >= EXPOSED_INFO_PCT {
            Some(Severity::Info)
        } else {
            None
        }
    };
    if let Some(severity) = sev(t.exposed_communication.percent) {
        push(
            out,
            Finding {
                id: "trace.exposed_communication",
                severity,
                title: "Communication not overlapped with computation".to_string(),
                evidence: format!(
                    "{} of the {} of NCCL/RCCL kernels ran with no computation alongside ({} \
                     of the window)",
                    us(t.exposed_communication.time_ms * 1e3),
                    us(t.communication.time_ms * 1e3),
                    pct(t.exposed_communication.percent)
                ),
                recommendation: "Overlap collectives with compute: bucket gradients \
                                 (DDP bucket_cap_mb, FSDP prefetch), issue collectives on a \
                                 separate stream early, and check the slowest rank (others \
                                 wait in the collective for it)."
                    .to_string(),
                expected_gain: Some(format!(
                    "up to {} if fully overlapped",
                    us(t.exposed_communication.time_ms * 1e3)
                )),
            },
            t.exposed_communication.time_ms * 1e3,
        );
    }
    if let Some(severity) = sev(t.exposed_memcpy.percent) {
        push(
            out,
            Finding {
                id: "trace.exposed_memcpy",
                severity,
                title: "Memory copies not overlapped with kernels".to_string(),
                evidence: format!(
                    "{} of the {} of memcpy ran with no kernel alongside ({} of the window)",
                    us(t.exposed_memcpy.time_ms * 1e3),
                    us(t.memcpy.time_ms * 1e3),
                    pct(t.exposed_memcpy.percent)
                ),
                recommendation: "Use pinned host memory and non_blocking=True copies on a \
                                 side stream, prefetch the next batch, and remove \
                                 device-to-host copies from the step (.item(), .cpu(), \
                                 printing tensors)."
                    .to_string(),
                expected_gain: Some(format!(
                    "up to {} if fully overlapped",
                    us(t.exposed_memcpy.time_ms * 1e3)
                )),
            },
            t.exposed_memcpy.time_ms * 1e3,
        );
    }
}

fn short_kernels(i: &FindingsInput<'_>, out: &mut Vec<TraceFinding>) {
    let s = i.short;
    if s.short_count == 0
        || (s.percent_of_kernel_time < SHORT_TIME_WARN_PCT
            && s.percent_of_kernels < SHORT_COUNT_WARN_PCT)
    {
        return;
    }
    let top = s
        .rows
        .first()
        .map(|r| {
            format!(
                "; the largest group is {} × {} from {} ({})",
                r.count,
                short_name(&r.name),
                r.parent_op.as_deref().unwrap_or("no op"),
                us(r.total_us)
            )
        })
        .unwrap_or_default();
    push(
        out,
        Finding {
            id: "trace.short_kernels",
            severity: Severity::Warning,
            title: "Many kernels in launch-overhead territory".to_string(),
            evidence: format!(
                "{} of {} kernels ({}) ran under {} µs, {} of kernel time ({}){top}",
                s.short_count,
                s.kernel_count,
                pct(s.percent_of_kernels),
                sig3(s.threshold_us),
                us(s.short_time_us),
                pct(s.percent_of_kernel_time)
            ),
            recommendation: "A launch costs a few µs of CPU and GPU time whatever the kernel \
                             does: fuse small ops (torch.compile), batch work per launch, or \
                             capture the sequence in a CUDA/HIP graph."
                .to_string(),
            expected_gain: None,
        },
        s.short_time_us,
    );
}

fn below_roofline(i: &FindingsInput<'_>, out: &mut Vec<TraceFinding>) {
    // One finding per table, covering its rows below the roof; the row with the most
    // time at stake is named. Rows nested inside a row of the same table (TraceLens
    // lists both `aten::layer_norm` and the `aten::native_layer_norm` it calls) would
    // count the same kernels twice: only the outermost is counted.
    for t in i.tables {
        let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
        let mut stake = 0.0;
        let mut time = 0.0;
        let mut rows = 0usize;
        let mut worst: Option<(f64, &OpRow, f64)> = None;
        for r in &t.rows {
            let Some(att) = r.roofline_attainment_pct else { continue };
            if att >= BELOW_ROOF_PCT || nested_in(i.model, r.first_op, &names) {
                continue;
            }
            let s = r.kernel_time_us.sum * (1.0 - att.clamp(0.0, 100.0) / 100.0);
            stake += s;
            time += r.kernel_time_us.sum;
            rows += 1;
            if worst.is_none_or(|(ws, _, _)| s > ws) {
                worst = Some((s, r, att));
            }
        }
        let Some((_, w, watt)) = worst else { continue };
        let severity = if watt < FAR_BELOW_ROOF_PCT { Severity::Warning } else { Severity::Info };
        let advice = w
            .top_finding
            .as_ref()
            .map_or_else(String::new, |f| format!(". Its top finding: {}", f.title));
        push(
            out,
            Finding {
                id: "trace.below_roofline",
                severity,
                title: format!("{} ops below the roofline", t.name),
                evidence: format!(
                    "{} under {} of their roofline take {} of kernel time; the largest, {} \
                     ({}, {} calls), reaches {} of its roofline{advice}",
                    crate::diagnose::count(
                        rows as u64,
                        &format!("{} row", t.name),
                        &format!("{} rows", t.name)
                    ),
                    pct(BELOW_ROOF_PCT),
                    us(time),
                    w.name,
                    us(w.kernel_time_us.sum),
                    w.count,
                    pct(watt)
                ),
                recommendation: format!(
                    "See `rooftop trace --section {}` for each row's bound, efficiencies and \
                     finding.",
                    section_of(&t.name)
                ),
                expected_gain: Some(format!("up to {} at the roofline floor", us(stake))),
            },
            stake,
        );
    }
}

/// Whether an ancestor of op `op` is named like one of `names` (another row's op).
fn nested_in(model: &TraceModel, op: u32, names: &[&str]) -> bool {
    let mut cur = model.ops.get(op as usize).and_then(|o| o.parent);
    let mut guard = model.ops.len();
    while let (Some(p), Some(g)) = (cur, guard.checked_sub(1)) {
        guard = g;
        let Some(o) = model.ops.get(p as usize) else { return false };
        if names.contains(&o.name.as_str()) {
            return true;
        }
        cur = o.parent;
    }
    false
}

/// The `--section` that shows a table.
fn section_of(table: &str) -> &'static str {
    let t = table.to_ascii_lowercase();
    if t.starts_with("gemm") {
        "gemm"
    } else if t.starts_with("sdpa") || t.contains("attn") {
        "sdpa"
    } else if t.starts_with("conv") {
        "conv"
    } else if t.starts_with("norm") {
        "norm"
    } else if t.contains("elementwise") {
        "elementwise"
    } else {
        "categories"
    }
}

fn short_name(name: &str) -> String {
    const MAX: usize = 48;
    if name.chars().count() <= MAX {
        name.to_string()
    } else {
        format!("{}…", name.chars().take(MAX).collect::<String>())
    }
}

fn elementwise_chains(i: &FindingsInput<'_>, out: &mut Vec<TraceFinding>) {
    // Kernels per (device, stream) in time order: (start, elementwise?, duration).
    type Launches = Vec<(i64, bool, i64)>;
    let m = i.model;
    let mut streams: BTreeMap<(i64, i64), Launches> = BTreeMap::new();
    for ev in m.gpu.iter().filter(|e| e.kind == GpuKind::Kernel) {
        let ew = ev.op.is_some_and(|o| (i.is_elementwise)(o));
        streams.entry((ev.device, ev.stream)).or_default().push((ev.ts_ns, ew, ev.dur_ns.max(0)));
    }
    let (mut chains, mut kernels, mut time_ns, mut longest) = (0u64, 0u64, 0i64, 0usize);
    for evs in streams.values_mut() {
        evs.sort_unstable();
        let mut run: (usize, i64) = (0, 0);
        let mut close = |run: &mut (usize, i64)| {
            if run.0 >= CHAIN_MIN_LEN {
                chains += 1;
                kernels += run.0 as u64;
                time_ns += run.1;
                longest = longest.max(run.0);
            }
            *run = (0, 0);
        };
        for &(_, ew, d) in evs.iter() {
            if ew {
                run.0 += 1;
                run.1 += d;
            } else {
                close(&mut run);
            }
        }
        close(&mut run);
    }
    if chains == 0 {
        return;
    }
    let t_us = time_ns as f64 / 1e3;
    push(
        out,
        Finding {
            id: "trace.unfused_elementwise",
            severity: Severity::Info,
            title: "Chains of unfused element-wise kernels".to_string(),
            evidence: format!(
                "{} of {CHAIN_MIN_LEN} or more back-to-back element-wise kernels on one stream \
                 ({kernels} kernels, longest {longest}) take {}",
                crate::diagnose::count(chains, "chain", "chains"),
                us(t_us)
            ),
            recommendation: "Each kernel of a chain reads and writes its tensors from device \
                             memory; fusing the chain (torch.compile, a fused op such as \
                             fused bias+activation or add+norm) moves the intermediate \
                             tensors once instead of per kernel."
                .to_string(),
            expected_gain: None,
        },
        t_us,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{CpuOp, GpuEvent};
    use crate::trace::summary::short_kernels as short_study;
    use crate::trace::timeline::timeline;

    fn k(name: &str, ts_us: i64, dur_us: i64, op: u32) -> GpuEvent {
        GpuEvent {
            name: name.to_string(),
            ts_ns: ts_us * 1000,
            dur_ns: dur_us * 1000,
            stream: 7,
            launcher: Some("cudaLaunchKernel".to_string()),
            op: Some(op),
            ..GpuEvent::default()
        }
    }

    fn model() -> TraceModel {
        let op = |n: &str| CpuOp { name: n.to_string(), ..CpuOp::default() };
        // 0..100 µs window: gemm 0-40, three adds 40-43, 43-46, 46-49 (a chain), a mul
        // 49-52 (chain of 4), idle 52-90, gemm 90-100. Busy 62, idle 38.
        TraceModel {
            ops: vec![op("aten::mm"), op("aten::add"), op("aten::mul")],
            gpu: vec![
                k("gemm", 0, 40, 0),
                k("add", 40, 3, 1),
                k("add", 43, 3, 1),
                k("add", 46, 3, 1),
                k("mul", 49, 3, 2),
                k("gemm", 90, 10, 0),
            ],
            ..TraceModel::default()
        }
    }

    #[test]
    fn ranked_findings_from_hand_built_trace() {
        let m = model();
        let (t, _) = timeline(&m, false);
        let s = short_study(&m, 10.0, 10, t.all.total.time_ms * 1e3);
        let ew = |o: u32| o == 1 || o == 2;
        let f = findings(&FindingsInput {
            model: &m,
            timeline: &t,
            short: &s,
            tables: &[],
            is_elementwise: &ew,
        });
        let ids: Vec<&str> = f.iter().map(|f| f.finding.id).collect();
        // idle 38 µs > short kernels 12 µs = chain 12 µs (rule order kept on ties).
        assert_eq!(ids, vec!["trace.gpu_idle", "trace.short_kernels", "trace.unfused_elementwise"]);
        assert_eq!(f[0].time_at_stake_us, 38.0);
        assert_eq!(f[0].finding.severity, Severity::Warning); // 38% idle
        assert!((f[0].percent_of_total_time - 38.0).abs() < 1e-9);
        assert_eq!(f[1].time_at_stake_us, 12.0); // 4 of 6 kernels short
        assert!(f[2].finding.evidence.contains("1 chain of"));
        assert!(f[2].finding.evidence.contains("4 kernels, longest 4"));
    }

    #[test]
    fn no_findings_on_a_busy_trace() {
        let m = TraceModel { gpu: vec![k("gemm", 0, 100, 0)], ..model() };
        let (t, _) = timeline(&m, false);
        let s = short_study(&m, 10.0, 10, 100.0);
        let f = findings(&FindingsInput {
            model: &m,
            timeline: &t,
            short: &s,
            tables: &[],
            is_elementwise: &|_| false,
        });
        assert!(f.is_empty());
    }

    fn norm_row(name: &str, first_op: u32, att: f64) -> OpRow {
        use crate::trace::ops::{Category, Params};
        use crate::trace::tables::TimeStats;
        OpRow {
            name: name.to_string(),
            category: Category::Normalization,
            params: Params::default(),
            flops: Some(1.0),
            bytes: Some(1.0),
            flops_per_byte: Some(1.0),
            count: 10,
            kernel_time_us: TimeStats {
                mean: 3.0,
                median: 3.0,
                std: None,
                min: 3.0,
                max: 3.0,
                sum: 30.0,
            },
            achieved_tflops: None,
            achieved_tbs: None,
            roofline_attainment_pct: Some(att),
            bound: None,
            floor_time_us: None,
            tile_eff: None,
            wave_eff: None,
            dim_eff: None,
            top_finding: None,
            kernels: Vec::new(),
            unmodelled: None,
            first_op,
        }
    }

    #[test]
    fn below_roofline_counts_nested_rows_once() {
        use crate::trace::ops::Category;
        // op 0 aten::layer_norm calls op 1 aten::native_layer_norm: same 30 µs kernels.
        let mut m = TraceModel { gpu: vec![k("ln", 0, 100, 1)], ..TraceModel::default() };
        m.ops = vec![
            CpuOp { name: "aten::layer_norm".into(), ..CpuOp::default() },
            CpuOp { name: "aten::native_layer_norm".into(), parent: Some(0), ..CpuOp::default() },
        ];
        let tables = vec![CategoryTable {
            name: "Normalization".to_string(),
            category: Category::Normalization,
            rows: vec![
                norm_row("aten::layer_norm", 0, 20.0),
                norm_row("aten::native_layer_norm", 1, 10.0),
            ],
        }];
        let (t, _) = timeline(&m, false);
        let s = short_study(&m, 10.0, 10, 100.0);
        let f = findings(&FindingsInput {
            model: &m,
            timeline: &t,
            short: &s,
            tables: &tables,
            is_elementwise: &|_| false,
        });
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].finding.id, "trace.below_roofline");
        // 30 µs × (1 − 20%) = 24 µs; the nested row is not added.
        assert!((f[0].time_at_stake_us - 24.0).abs() < 1e-9);
        assert_eq!(f[0].finding.severity, Severity::Warning);
        assert!(f[0].finding.evidence.starts_with("1 Normalization row under"));
    }
}
