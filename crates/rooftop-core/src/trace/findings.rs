//! Trace-wide findings, ranked by the GPU time at stake.
//!
//! Every number comes from the analysis (timeline, ops and kernel summaries, short
//! kernels, the per-category roofline tables); thresholds are named constants with
//! their source. Each finding is a [`Finding`] graded by its time at stake
//! ([`crate::diagnose::finding`]: the same rule for every kind), which says what it
//! measures and of which window:
//! - idle GPU: the idle time of the window;
//! - exposed communication / memcpy: the exposed time (timeline definitions), of the
//!   trace window;
//! - short kernels: the time spent in kernels under the threshold (a fixed launch cost
//!   of a few µs dominates such kernels), of the devices' time;
//! - ops below the roofline: `kernel time × (1 − attainment)`, the time the ops would
//!   save at their roofline floor, of the devices' time;
//! - unfused elementwise chains: the kernel time of the chains (what fusion works on),
//!   of the devices' time;
//! - ops faster than their roofline floor (attainment above 100%, which the hardware
//!   cannot do): the kernel time of those rows, of the devices' time. The trace or the
//!   model is wrong, so every figure of the rows is in doubt: always critical, one
//!   finding naming the ops (each row's `top_finding` says the same).
//!
//! "The devices' time" is the trace window times the number of devices with GPU events:
//! kernel time summed over 8 GPUs is a share of 8 windows, never 581% of one.
//!
//! The advice names the tools of the trace's framework ([`Framework`]): `torch.compile`
//! and CUDA graphs for PyTorch, `jax.jit` and XLA's scheduler for a JAX profile.
//!
//! Findings are listed by [`crate::diagnose::rank`]: severity, then time at stake.

use super::model::{GpuKind, TraceModel};
use super::summary::ShortKernels;
use super::tables::{CategoryTable, OpRow};
use super::timeline::Timeline;
use crate::diagnose::{rank, Finding, Severity, Stake, WindowKind};
use crate::units::{pct, sig3, us};
use std::collections::BTreeMap;

/// Idle GPU above this share of the window is worth a finding.
pub const IDLE_WARN_PCT: f64 = 20.0;
/// Exposed communication or memcpy from this share of the window is worth a finding.
pub const EXPOSED_INFO_PCT: f64 = 1.0;
/// Short kernels taking this share of kernel time, or being this share of all launches,
/// are worth a finding (a launch's fixed cost dominates small tensors).
pub const SHORT_TIME_WARN_PCT: f64 = 20.0;
pub const SHORT_COUNT_WARN_PCT: f64 = 50.0;
/// Ops under this roofline attainment are "below the roofline" (under 70% of peak has
/// room; from 70% a kernel is near-optimal).
pub const BELOW_ROOF_PCT: f64 = 70.0;
/// Consecutive elementwise kernels on one stream form a chain from this length.
pub const CHAIN_MIN_LEN: usize = 3;
/// Findings whose time at stake is below this share of their window are dropped.
pub const MIN_STAKE_PCT: f64 = 0.5;
/// Ops above this roofline attainment ran faster than the device allows.
pub const ABOVE_ROOF_PCT: f64 = 100.0;
/// Ops a finding names before it says how many more there are.
const NAMED_OPS: usize = 3;

/// The framework that recorded a trace, for advice in its own terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framework {
    /// A PyTorch profiler (Kineto) trace.
    PyTorch,
    /// A JAX profile (XPlane): XLA compiles and fuses the step.
    Jax,
}

impl Framework {
    /// The framework of `model`: JAX when it came from an XPlane profile.
    pub fn of(model: &TraceModel) -> Framework {
        if model.xla.is_some() {
            Framework::Jax
        } else {
            Framework::PyTorch
        }
    }

    /// How to fuse small kernels in this framework.
    pub fn fuse(self) -> &'static str {
        match self {
            Framework::PyTorch => "torch.compile",
            Framework::Jax => "one jax.jit region, which XLA fuses",
        }
    }

    /// How to replay a launch sequence as one.
    pub fn graph(self) -> &'static str {
        match self {
            Framework::PyTorch => "a CUDA/HIP graph",
            Framework::Jax => "an XLA command buffer (CUDA graph)",
        }
    }

    /// The calls that block the host on the device.
    pub fn host_syncs(self) -> &'static str {
        match self {
            Framework::PyTorch => ".item(), .cpu(), .tolist()",
            Framework::Jax => {
                "block_until_ready(), jax.device_get(), float() or np.asarray() of a device \
                 array"
            }
        }
    }
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

/// The trace-wide findings in [`rank`] order.
pub fn findings(input: &FindingsInput<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    idle(input, &mut out);
    exposed(input, &mut out);
    short_kernels(input, &mut out);
    below_roofline(input, &mut out);
    elementwise_chains(input, &mut out);
    drop_negligible(&mut out);
    // Critical however little time the rows take: kept past `drop_negligible`.
    faster_than_floor(input, &mut out);
    rank(&mut out);
    out
}

/// Leaves out findings under [`MIN_STAKE_PCT`] of their window (they are info), and
/// those whose window could not be measured (a trace with no GPU window).
pub fn drop_negligible(findings: &mut Vec<Finding>) {
    findings.retain(|f| f.share_pct().is_some_and(|p| p >= MIN_STAKE_PCT));
}

/// The trace window, µs.
pub fn trace_window_us(t: &Timeline) -> f64 {
    t.all.total.time_ms * 1e3
}

/// `time_us` of GPU time summed over the devices, as a stake of the devices' time: the
/// trace window times the devices with GPU events (one device: the trace window).
pub fn device_time_stake(t: &Timeline, time_us: f64) -> Option<Stake> {
    let devices = t.per_device.len().max(1);
    if devices == 1 {
        Stake::new(time_us, trace_window_us(t), WindowKind::Trace)
    } else {
        Stake::new(time_us, trace_window_us(t) * devices as f64, WindowKind::Devices)
    }
}

impl std::fmt::Debug for FindingsInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FindingsInput").field("tables", &self.tables.len()).finish_non_exhaustive()
    }
}

fn idle(i: &FindingsInput<'_>, out: &mut Vec<Finding>) {
    let t = &i.timeline.all;
    if t.idle.percent < IDLE_WARN_PCT {
        return;
    }
    let fw = Framework::of(i.model);
    let (syncs, launch_ahead) = match fw {
        Framework::PyTorch => {
            (".item() or .cpu()", "capture the step in a CUDA/HIP graph or torch.compile it")
        }
        Framework::Jax => (
            "block_until_ready() or jax.device_get()",
            "jit the whole step (jax.jit) so XLA runs it as one program",
        ),
    };
    out.push(
        Finding::new(
            "trace.gpu_idle",
            "GPU idle for much of the trace",
            format!(
                "the GPU was idle {} of the {} window ({}); busy {}",
                us(t.idle.time_ms * 1e3),
                us(t.total.time_ms * 1e3),
                pct(t.idle.percent),
                us(t.busy.time_ms * 1e3)
            ),
            format!(
                "The CPU does not feed the GPU fast enough: look for host-side gaps (Python \
                 overhead, synchronisations such as {syncs}, data loading) between kernels; \
                 {launch_ahead}; raise the batch size. A trace of a single short step also \
                 shows profiler warm-up."
            ),
            Stake::new(t.idle.time_ms * 1e3, trace_window_us(i.timeline), WindowKind::Trace),
        )
        .with_gain(Some(format!("up to {} of GPU wall time", us(t.idle.time_ms * 1e3)))),
    );
}

fn exposed(i: &FindingsInput<'_>, out: &mut Vec<Finding>) {
    let t = &i.timeline.all;
    let window_us = trace_window_us(i.timeline);
    let fw = Framework::of(i.model);
    if t.exposed_communication.percent >= EXPOSED_INFO_PCT {
        let advice = match fw {
            Framework::PyTorch => {
                "Overlap collectives with compute: bucket gradients (DDP bucket_cap_mb, FSDP \
                 prefetch), issue collectives on a separate stream early, and check the \
                 slowest rank (others wait in the collective for it)."
            }
            Framework::Jax => {
                "Overlap collectives with compute: let XLA schedule them asynchronously \
                 (its latency-hiding scheduler), shard so that independent compute is \
                 available while they run, and check the slowest device (others wait in \
                 the collective for it)."
            }
        };
        out.push(
            Finding::new(
                "trace.exposed_communication",
                "Communication not overlapped with computation",
                format!(
                    "{} of the {} of NCCL/RCCL kernels ran with no computation alongside ({} of \
                     the window)",
                    us(t.exposed_communication.time_ms * 1e3),
                    us(t.communication.time_ms * 1e3),
                    pct(t.exposed_communication.percent)
                ),
                advice,
                Stake::new(t.exposed_communication.time_ms * 1e3, window_us, WindowKind::Trace),
            )
            .with_gain(Some(format!(
                "up to {} if fully overlapped",
                us(t.exposed_communication.time_ms * 1e3)
            ))),
        );
    }
    if t.exposed_memcpy.percent >= EXPOSED_INFO_PCT {
        let advice = match fw {
            Framework::PyTorch => {
                "Use pinned host memory and non_blocking=True copies on a side stream, \
                 prefetch the next batch, and remove device-to-host copies from the step \
                 (.item(), .cpu(), printing tensors)."
            }
            Framework::Jax => {
                "Prefetch the next batch to the device (jax.device_put ahead of the step) \
                 and remove device-to-host transfers from the step (jax.device_get, \
                 printing or converting device arrays)."
            }
        };
        out.push(
            Finding::new(
                "trace.exposed_memcpy",
                "Memory copies not overlapped with kernels",
                format!(
                    "{} of the {} of memcpy ran with no kernel alongside ({} of the window)",
                    us(t.exposed_memcpy.time_ms * 1e3),
                    us(t.memcpy.time_ms * 1e3),
                    pct(t.exposed_memcpy.percent)
                ),
                advice,
                Stake::new(t.exposed_memcpy.time_ms * 1e3, window_us, WindowKind::Trace),
            )
            .with_gain(Some(format!(
                "up to {} if fully overlapped",
                us(t.exposed_memcpy.time_ms * 1e3)
            ))),
        );
    }
}

fn short_kernels(i: &FindingsInput<'_>, out: &mut Vec<Finding>) {
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
    let fw = Framework::of(i.model);
    out.push(Finding::new(
        "trace.short_kernels",
        "Many kernels in launch-overhead territory",
        format!(
            "{} of {} kernels ({}) ran under {} µs, {} of kernel time ({}){top}",
            s.short_count,
            s.kernel_count,
            pct(s.percent_of_kernels),
            sig3(s.threshold_us),
            us(s.short_time_us),
            pct(s.percent_of_kernel_time)
        ),
        format!(
            "A launch costs a few µs of CPU and GPU time whatever the kernel does: fuse small \
             ops ({}), batch work per launch, or capture the sequence in {}.",
            fw.fuse(),
            fw.graph()
        ),
        device_time_stake(i.timeline, s.short_time_us),
    ));
}

fn below_roofline(i: &FindingsInput<'_>, out: &mut Vec<Finding>) {
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
        let advice = w
            .top_finding
            .as_ref()
            .map_or_else(String::new, |f| format!(". Its top finding: {}", f.title));
        out.push(
            Finding::new(
                "trace.below_roofline",
                format!("{} ops below the roofline", t.name),
                format!(
                    "{} under {} of {} roofline {} {} of kernel time; the largest, {} \
                     ({}, {}), reaches {} of its roofline{advice}",
                    crate::diagnose::count(
                        rows as u64,
                        &format!("{} row", t.name),
                        &format!("{} rows", t.name)
                    ),
                    pct(BELOW_ROOF_PCT),
                    if rows == 1 { "its" } else { "their" },
                    if rows == 1 { "takes" } else { "take" },
                    us(time),
                    w.name,
                    us(w.kernel_time_us.sum),
                    crate::diagnose::count(w.count, "call", "calls"),
                    pct(watt)
                ),
                format!(
                    "See `rooftop trace --section {}` for each row's bound, efficiencies and \
                     finding.",
                    section_of(&t.name)
                ),
                device_time_stake(i.timeline, stake),
            )
            .with_gain(Some(format!("up to {} at the roofline floor", us(stake)))),
        );
    }
}

fn faster_than_floor(i: &FindingsInput<'_>, out: &mut Vec<Finding>) {
    // (table, row, attainment) of the outermost rows above the roof (as in
    // `below_roofline`, a nested row's kernels are its parent row's).
    let mut rows: Vec<(&str, &OpRow, f64)> = Vec::new();
    for t in i.tables {
        let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
        for r in &t.rows {
            let Some(att) = r.roofline_attainment_pct else { continue };
            if att > ABOVE_ROOF_PCT && !nested_in(i.model, r.first_op, &names) {
                rows.push((t.name.as_str(), r, att));
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    rows.sort_by(|a, b| b.1.kernel_time_us.sum.total_cmp(&a.1.kernel_time_us.sum));
    let time: f64 = rows.iter().map(|r| r.1.kernel_time_us.sum).sum();
    let named: Vec<String> = rows
        .iter()
        .take(NAMED_OPS)
        .map(|(table, r, att)| {
            format!(
                "{} ({table}, {}, {}) at {} of its roofline",
                r.name,
                crate::diagnose::count(r.count, "call", "calls"),
                us(r.kernel_time_us.sum),
                pct(*att)
            )
        })
        .collect();
    let more = rows.len().saturating_sub(NAMED_OPS);
    let more = if more > 0 { format!("; and {more} more") } else { String::new() };
    let sections: Vec<&str> = {
        let mut s: Vec<&str> = rows.iter().map(|(t, _, _)| section_of(t)).collect();
        s.sort_unstable();
        s.dedup();
        s
    };
    let mut f = Finding::new(
        "trace.faster_than_floor",
        "Faster than the hardware allows",
        format!(
            "{} ran faster than the roofline floor of the device: {}{more}",
            crate::diagnose::count(rows.len() as u64, "op row", "op rows"),
            named.join("; ")
        ),
        format!(
            "Check the inputs: the op's shapes and dtypes in the trace, the device (--device: \
             SKU, clock) and the kernels' times; every figure of these rows rests on them (a \
             memory-bound op whose data stay in the L2 cache can also beat the memory roof). \
             See `rooftop trace --section {}` for each row's finding.",
            sections.join("|")
        ),
        device_time_stake(i.timeline, time),
    );
    f.severity = Severity::Critical;
    out.push(f);
}

/// Whether an ancestor of op `op` is named like one of `names` (another row's op).
fn nested_in(model: &TraceModel, op: u32, names: &[&str]) -> bool {
    let mut cur = model.ops.get(op as usize).and_then(|o| o.parent);
    let mut guard = model.ops.len();
    while let (Some(p), Some(g)) = (cur, guard.checked_sub(1)) {
        guard = g;
        let Some(o) = model.ops.get(p as usize) else { return false };
        if names.contains(&o.name.as_ref()) {
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

fn elementwise_chains(i: &FindingsInput<'_>, out: &mut Vec<Finding>) {
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
    let fused = match Framework::of(i.model) {
        Framework::PyTorch => {
            "fusing the chain (torch.compile, a fused op such as fused bias+activation or \
             add+norm)"
        }
        Framework::Jax => {
            "fusing the chain (one jax.jit region, which XLA fuses; look for what splits \
             it: a custom call, a host callback, a separate jit)"
        }
    };
    out.push(Finding::new(
        "trace.unfused_elementwise",
        "Chains of unfused element-wise kernels",
        format!(
            "{} of {CHAIN_MIN_LEN} or more back-to-back element-wise kernels on one stream \
             ({kernels} kernels, longest {longest}) take {}",
            crate::diagnose::count(chains, "chain", "chains"),
            us(t_us)
        ),
        format!(
            "Each kernel of a chain reads and writes its tensors from device memory; {fused} \
             moves the intermediate tensors once instead of per kernel."
        ),
        device_time_stake(i.timeline, t_us),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{CpuOp, GpuEvent};
    use crate::trace::summary::short_kernels as short_study;
    use crate::trace::timeline::timeline;

    fn k(name: &str, ts_us: i64, dur_us: i64, op: u32) -> GpuEvent {
        GpuEvent {
            name: name.into(),
            ts_ns: ts_us * 1000,
            dur_ns: dur_us * 1000,
            stream: 7,
            launcher: Some("cudaLaunchKernel".into()),
            op: Some(op),
            ..GpuEvent::default()
        }
    }

    fn model() -> TraceModel {
        let op = |n: &str| CpuOp { name: n.into(), ..CpuOp::default() };
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
        let ids: Vec<&str> = f.iter().map(|f| f.id).collect();
        // idle 38 µs > short kernels 12 µs = chain 12 µs (rule order kept on ties).
        assert_eq!(ids, vec!["trace.gpu_idle", "trace.short_kernels", "trace.unfused_elementwise"]);
        assert_eq!(f[0].time_at_stake_us(), Some(38.0));
        assert_eq!(f[0].severity, Severity::Warning); // 38% idle
        assert!((f[0].share_pct().unwrap() - 38.0).abs() < 1e-9);
        assert_eq!(f[1].time_at_stake_us(), Some(12.0)); // 4 of 6 kernels short
        assert!(f[2].evidence.contains("1 chain of"));
        assert!(f[2].evidence.contains("4 kernels, longest 4"));
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

    fn run(m: &TraceModel, ew: &dyn Fn(u32) -> bool) -> Vec<Finding> {
        let (t, _) = timeline(m, false);
        let s = short_study(m, 10.0, 10, t.all.total.time_ms * 1e3);
        findings(&FindingsInput {
            model: m,
            timeline: &t,
            short: &s,
            tables: &[],
            is_elementwise: ew,
        })
    }

    #[test]
    fn jax_profiles_get_jax_advice() {
        let ew = |o: u32| o == 1 || o == 2;
        let torch = run(&model(), &ew);
        let jax = run(&TraceModel { xla: Some(Box::default()), ..model() }, &ew);
        assert!(torch.iter().any(|f| f.recommendation.contains("torch.compile")));
        // The same findings, none of them advising PyTorch's tools on a JAX profile.
        assert_eq!(torch.len(), jax.len());
        for f in &jax {
            for torch_only in ["torch.compile", ".item()", "pin_memory", "DDP"] {
                assert!(!f.recommendation.contains(torch_only), "{}: {}", f.id, f.recommendation);
            }
        }
        assert!(jax.iter().any(|f| f.recommendation.contains("jax.jit")));
    }

    #[test]
    fn kernel_time_on_several_devices_is_a_share_of_their_windows() {
        // 4 devices, each busy 0–100 µs with 20 back-to-back 5 µs kernels: 400 µs of short
        // kernels in a 100 µs trace window. Against one window that was 400%; against the
        // four devices' 400 µs it is 100%, and no more.
        let mut gpu = Vec::new();
        for device in 0..4 {
            for j in 0..20 {
                gpu.push(GpuEvent { device, ..k("add", j * 5, 5, 1) });
            }
        }
        let m = TraceModel { gpu, ..model() };
        let f = run(&m, &|_| false);
        let short = f.iter().find(|f| f.id == "trace.short_kernels").unwrap();
        let s = short.stake.unwrap();
        assert_eq!((s.time_us, s.window_us, s.window), (400.0, 400.0, WindowKind::Devices));
        assert!(f.iter().all(|f| f.share_pct().is_none_or(|p| p <= 100.0)));
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
        assert_eq!(f[0].id, "trace.below_roofline");
        // 30 µs × (1 − 20%) = 24 µs; the nested row is not added.
        assert!((f[0].time_at_stake_us().unwrap() - 24.0).abs() < 1e-9);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].evidence.starts_with("1 Normalization row under"));
    }
}
