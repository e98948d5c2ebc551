//! Terminal, Markdown and CSV views of the time between the kernels
//! (`rooftop_core::trace::gaps`, `rooftop_core::trace::inference`): idle causes, launch
//! latency and queues, blocking syncs, CUDA graphs, the critical path and its what-if,
//! modules, memory, inference steps. Laid out as `Block`s like the other trace
//! sections; the CSVs ([`crate::trace_gaps_csv`]) carry full precision. Renderers never
//! compute.

// Blocks and coordinates are short-lived one-letter names (b, t, x, y) by design.
#![allow(clippy::many_single_char_names)]

use crate::trace::{short, Block, Section};
pub(crate) use crate::trace_gaps_csv::csv_files;
pub use crate::trace_gaps_csv::csv_in_section;
use crate::MISSING;
use rooftop_core::trace::gaps::idle::{IdleCategory, IdleShare};
use rooftop_core::trace::gaps::us_or_zero;
use rooftop_core::trace::report::TraceReport;
use rooftop_core::units::{pct, si, sig3};

fn share(v: &[IdleShare], c: IdleCategory) -> f64 {
    v.iter().find(|s| s.category == c).map_or(0.0, |s| s.idle_us)
}

/// A time in µs; `0` for nothing (as the findings print it).
fn ut(v: f64) -> String {
    us_or_zero(v)
}

/// The idle causes' column headers, in [`IdleCategory::ALL`] order and the words the
/// findings use ([`IdleCategory::label`]).
fn cause_headers<const N: usize>(before: [&'static str; N]) -> Vec<&'static str> {
    before.into_iter().chain(IdleCategory::ALL.iter().map(|c| c.label())).collect()
}

/// A time on the trace's clock relative to `origin` (both µs): `+2.13 ms`.
fn at(ts_us: f64, origin_us: f64) -> String {
    let d = ts_us - origin_us;
    if d < 0.0 {
        format!("−{}", ut(-d))
    } else {
        format!("+{}", ut(d))
    }
}

fn bytes(b: i64) -> String {
    si(b as f64, "B")
}

/// The one-screen summary's part: idle causes per device and the critical path.
pub(crate) fn summary_blocks(r: &TraceReport) -> Vec<Block> {
    let mut out = Vec::new();
    if !r.idle.devices.is_empty() {
        let mut b =
            Block::new("Why the GPU is idle (per device)", &cause_headers(["device", "idle"]));
        for d in &r.idle.devices {
            let p = |c| {
                let v = share(&d.categories, c);
                format!(
                    "{} ({})",
                    ut(v),
                    pct(if d.idle_us > 0.0 { v / d.idle_us * 100.0 } else { 0.0 })
                )
            };
            let mut row =
                vec![d.device.to_string(), format!("{} of {}", ut(d.idle_us), ut(d.window_us))];
            row.extend(IdleCategory::ALL.iter().map(|&c| p(c)));
            b.rows.push(row);
        }
        b.notes.push(
            "host wait: the next kernel was launched after the GPU ran dry; other: it was \
             launched earlier but waited on a stream, event or sync (HTA's definitions; \
             --section idle)."
                .to_string(),
        );
        if let Some(cp) = &r.critical_path {
            let top: Vec<String> = cp
                .bound_by
                .iter()
                .filter(|b| b.us > 0.0)
                .map(|b| format!("{} {}", b.bound_by, pct(b.percent)))
                .collect();
            b.notes.push(format!(
                "Critical path of {}: {} ({}); --section critical-path.",
                cp.window.annotation.as_deref().unwrap_or("the trace"),
                ut(cp.length_us),
                top.join(", ")
            ));
        }
        out.push(b);
    }
    out
}

/// The blocks of `section` (all of them for [`Section::All`]).
pub(crate) fn blocks(r: &TraceReport, section: Section, top: usize) -> Vec<Block> {
    let all = section == Section::All;
    let mut out = Vec::new();
    if all || section == Section::Idle {
        out.extend(idle_blocks(r));
    }
    if all || section == Section::Launch {
        out.extend(launch_blocks(r, top));
    }
    if all || section == Section::Syncs {
        out.extend(sync_blocks(r, top));
    }
    if all || section == Section::Graphs {
        out.extend(graph_blocks(r, top));
    }
    if all || section == Section::CriticalPath {
        out.extend(cp_blocks(r, top));
    }
    if all || section == Section::Modules {
        out.extend(module_blocks(r, top));
    }
    if all || section == Section::Memory {
        out.extend(memory_blocks(r, top));
    }
    if all || section == Section::Inference {
        out.extend(inference_blocks(r, top));
    }
    // A table without rows says so in its notes; no empty frame.
    for b in &mut out {
        if b.rows.is_empty() {
            b.header.clear();
        }
    }
    out
}

fn idle_blocks(r: &TraceReport) -> Vec<Block> {
    let i = &r.idle;
    let mut d = Block::new(
        "Idle time by cause, per device",
        &cause_headers(["device", "window", "busy", "idle"]),
    );
    for x in &i.devices {
        let c = &x.categories;
        let mut row = vec![x.device.to_string(), ut(x.window_us), ut(x.busy_us), ut(x.idle_us)];
        row.extend(IdleCategory::ALL.iter().map(|&k| ut(share(c, k))));
        d.rows.push(row);
    }
    d.notes.push(format!(
        "Gaps in the union of a device's GPU events, each classified by the event after it: \
         host wait if its launch came after the gap began, graph if inside one graph replay, \
         kernel wait if shorter than {}, else other (HTA's rules, applied per device).",
        ut(i.threshold_us)
    ));
    let mut s = Block::new(
        "Idle time by cause, per stream (HTA)",
        &cause_headers(["device/stream", "events", "idle"]),
    );
    for x in &i.streams {
        let c = &x.categories;
        let mut row =
            vec![format!("{}/{}", x.device, x.stream), x.events.to_string(), ut(x.idle_us)];
        row.extend(IdleCategory::ALL.iter().map(|&k| ut(share(c, k))));
        s.rows.push(row);
    }
    s.notes.push(
        "Per stream, as HTA's get_idle_time_breakdown: each event's gap to the previous \
         event on its stream."
            .to_string(),
    );
    let mut g = Block::new(
        "Idle gaps, per device and cause",
        &["device", "cause", "gaps", "total", "mean", "median", "p90", "max"],
    );
    for x in &i.devices {
        for c in x.categories.iter().filter(|c| c.gaps.count > 0) {
            g.rows.push(vec![
                x.device.to_string(),
                c.category.label().to_string(),
                c.gaps.count.to_string(),
                ut(c.gaps.total_us),
                ut(c.gaps.mean_us),
                ut(c.gaps.p50_us),
                ut(c.gaps.p90_us),
                ut(c.gaps.max_us),
            ]);
        }
    }
    if i.devices.is_empty() {
        d.notes = vec!["No GPU events.".to_string()];
        return vec![d];
    }
    vec![d, s, g]
}

fn launch_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let l = &r.launch;
    let mut m = Block::new("Launch latency (CPU launch end → GPU start)", &["", "value"]);
    let d = &l.launch_delay;
    m.rows.push(vec!["launches".into(), l.launches.to_string()]);
    m.rows.push(vec![
        "delay median / p90 / p99 / max".into(),
        format!("{} / {} / {} / {}", ut(d.p50_us), ut(d.p90_us), ut(d.p99_us), ut(d.max_us)),
    ]);
    let c = &l.cpu_duration;
    m.rows.push(vec![
        "launch call median / p99 / max".into(),
        format!("{} / {} / {}", ut(c.p50_us), ut(c.p99_us), ut(c.max_us)),
    ]);
    m.rows.push(vec![
        format!("delays > {}", ut(l.launch_delay_cutoff_us)),
        l.delay_outliers.to_string(),
    ]);
    m.rows.push(vec![
        format!("launch calls > {}", ut(l.runtime_cutoff_us)),
        l.runtime_outliers.to_string(),
    ]);
    m.rows.push(vec![
        "kernels shorter than their launch".into(),
        format!("{} ({} of GPU time)", l.launch_bound, ut(l.launch_bound_gpu_us)),
    ]);
    m.notes.push(
        "HTA's get_cuda_kernel_launch_stats: delay = GPU start − launch call end (≥ 0); \
         graph launches are in --section graphs."
            .to_string(),
    );
    let mut o = Block::new(
        format!("Launch delay by op (top {} of {})", top.min(l.by_op.len()), l.by_op.len()),
        &["op", "launches", "total delay", "mean", "max", "mean call", "launch-bound"],
    );
    o.min_widths = vec![(0, 30)];
    for x in l.by_op.iter().take(top) {
        o.rows.push(vec![
            short(&x.op, 30),
            x.launches.to_string(),
            ut(x.total_delay_us),
            ut(x.mean_delay_us),
            ut(x.max_delay_us),
            ut(x.mean_cpu_duration_us),
            x.launch_bound.to_string(),
        ]);
    }
    let mut t = Block::new(
        format!("Longest launch delays (top {})", top.min(l.top_delays.len())),
        &["kernel / op (launch call)", "delay", "call", "kernel", "GPU start"],
    );
    t.min_widths = vec![(0, 50)];
    for x in l.top_delays.iter().take(top) {
        t.rows.push(vec![
            format!(
                "{}\n← {} ({})",
                short(&x.kernel, 60),
                short(x.op.as_deref().unwrap_or("no op"), 36),
                x.launcher
            ),
            ut(x.launch_delay_us),
            ut(x.cpu_duration_us),
            ut(x.gpu_duration_us),
            at(x.ts_us, r.window.start_us),
        ]);
    }
    t.notes.push("GPU start: from the start of the timeline window.".to_string());
    let mut q = Block::new(
        "Launch queue per stream (HTA)",
        &["device/stream", "changes", "mean", "median", "max", "time mean", "at limit"],
    );
    for x in &l.queues {
        q.rows.push(vec![
            format!("{}/{}", x.device, x.stream),
            x.changes.to_string(),
            sig3(x.mean),
            sig3(x.median),
            x.max.to_string(),
            sig3(x.time_mean),
            ut(x.full_us),
        ]);
    }
    q.notes.push(
        "Pending launches: +1 at a launch call, −1 when its work starts; mean/median over the \
         changes (HTA), time mean over time; at limit: time with 1024 pending (CUDA's queue)."
            .to_string(),
    );
    vec![m, o, t, q]
}

fn sync_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let s = &r.syncs;
    let mut b = Block::new(
        format!("Blocking calls: {} held the CPU {}", s.calls, ut(s.blocked_us)),
        &["call / kind", "op / outermost op", "calls", "blocked", "max"],
    );
    b.min_widths = vec![(1, 30)];
    for x in s.rows.iter().take(top) {
        b.rows.push(vec![
            format!("{}\n{}", x.call, x.kind.as_str()),
            format!(
                "{}\n{}",
                short(x.op.as_deref().unwrap_or("no op"), 40),
                short(x.top_op.as_deref().unwrap_or(MISSING), 40)
            ),
            x.count.to_string(),
            ut(x.total_us),
            ut(x.max_us),
        ]);
    }
    if s.rows.is_empty() {
        b.notes.push("No blocking synchronisation or synchronous copy.".to_string());
    }
    let mut p = Block::new("Pageable-memory copies", &["copy", "count", "bytes", "GPU", "CPU"]);
    for x in &s.pageable {
        p.rows.push(vec![
            x.name.clone(),
            x.count.to_string(),
            si(x.bytes as f64, "B"),
            ut(x.gpu_us),
            ut(x.cpu_us),
        ]);
    }
    if s.pageable.is_empty() {
        p.notes.push("No copy to or from pageable host memory.".to_string());
    }
    vec![b, p]
}

fn graph_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let g = &r.graphs;
    let mut b = Block::new(
        format!(
            "CUDA/HIP graphs: {}, {}, {} ({} of GPU time)",
            rooftop_core::diagnose::count(g.launches, "launch", "launches"),
            rooftop_core::diagnose::count(
                g.graph_events,
                "replayed GPU event",
                "replayed GPU events"
            ),
            ut(g.graph_gpu_us),
            pct(g.percent_of_gpu_time)
        ),
        &["graph", "kernels", "replays", "mean span", "mean busy", "launch→1st", "GPU", "capture"],
    );
    for x in &g.graphs {
        b.rows.push(vec![
            format!("#{}", x.id),
            x.kernels.to_string(),
            x.replays.to_string(),
            ut(x.span.mean_us),
            ut(x.mean_busy_us),
            ut(x.mean_launch_delay_us),
            ut(x.gpu_us),
            if x.captured { "in trace" } else { MISSING }.to_string(),
        ]);
    }
    if g.launches == 0 {
        b.notes.push("No graph launches in the trace.".to_string());
        return vec![b];
    }
    let mut k = Block::new(
        "Kernels of the graph with the most GPU time",
        &["#", "kernel", "mean", "total", "captured by"],
    );
    if let Some(big) = g.graphs.iter().max_by(|a, b| a.gpu_us.total_cmp(&b.gpu_us)) {
        k.title = format!("Kernels of graph #{} by time", big.id);
        for x in big.top_kernels.iter().take(top) {
            k.rows.push(vec![
                x.position.to_string(),
                short(&x.name, 56),
                ut(x.mean_us),
                ut(x.total_us),
                x.captured_by.clone().unwrap_or_else(|| MISSING.to_string()),
            ]);
        }
    }
    let mut w = Block::new(
        "Steady-state replay windows",
        &["graph", "replays", "window", "busy", "graph", "eager", "idle", "late", "ahead"],
    );
    for x in &g.windows {
        w.rows.push(vec![
            format!("#{}", x.graph),
            x.replays.to_string(),
            ut(x.duration_us),
            ut(x.busy_us),
            ut(x.graph_us),
            ut(x.eager_us),
            ut(x.idle_us),
            x.late_launches.to_string(),
            ut(x.mean_launch_ahead_us),
        ]);
    }
    w.notes.push(
        "A window is a run of replays of one graph; late: replays launched after the previous \
         one ended; ahead: mean time the CPU launched before the previous replay ended."
            .to_string(),
    );
    vec![b, k, w]
}

fn cp_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let Some(cp) = &r.critical_path else {
        let mut b = Block::new("Critical path", &[]);
        b.notes.push("Not computed: see the warnings.".to_string());
        return vec![b];
    };
    let mut b = Block::new(
        format!(
            "Critical path of {}: {}",
            cp.window.annotation.as_deref().unwrap_or("the trace"),
            ut(cp.length_us)
        ),
        &["bound by", "time", "% of path"],
    );
    for x in &cp.bound_by {
        b.rows.push(vec![x.bound_by.to_string(), ut(x.us), pct(x.percent)]);
    }
    b.notes.push(format!(
        "Window: {}, {} long, starting {} from the timeline window's start; {} nodes, {} \
         edges. HTA's critical-path graph: CPU ops and runtime calls per thread, kernels per \
         stream, launch, kernel-kernel and sync edges; length = the sum of the path's edge \
         weights. Choose another window with --cp-window.",
        cp.window.basis,
        ut(cp.window.end_us - cp.window.start_us),
        at(cp.window.start_us, r.window.start_us),
        cp.nodes,
        cp.edges
    ));
    let mut o = Block::new(
        format!("Ops on the critical path (top {} of {})", top.min(cp.by_op.len()), cp.by_op.len()),
        &["op", "entries", "time", "% of path"],
    );
    for x in cp.by_op.iter().take(top) {
        o.rows.push(vec![short(&x.name, 60), x.entries.to_string(), ut(x.us), pct(x.percent)]);
    }
    o.notes.push(
        "CPU time to the innermost op; a kernel's time, and the delay before it, to the op \
         that launched it."
            .to_string(),
    );
    let mut n = Block::new(
        format!("Events on the critical path by name (top {})", top.min(cp.ranked.len())),
        &["event", "entries", "time", "% of path"],
    );
    for x in cp.ranked.iter().take(top) {
        n.rows.push(vec![short(&x.name, 60), x.entries.to_string(), ut(x.us), pct(x.percent)]);
    }
    let mut e = Block::new(
        format!(
            "Longest entries of the path, in path order (top {} of {})",
            top.min(cp.events.len()),
            cp.events.len()
        ),
        &["kind", "name", "ts", "on path"],
    );
    let mut idx: Vec<usize> = (0..cp.events.len()).collect();
    idx.sort_by(|&a, &b| cp.events[b].on_path_us.total_cmp(&cp.events[a].on_path_us));
    idx.truncate(top);
    idx.sort_unstable();
    for i in idx {
        let x = &cp.events[i];
        e.rows.push(vec![
            x.kind.to_string(),
            short(&x.name, 56),
            at(x.ts, cp.window.start_us),
            ut(x.on_path_us),
        ]);
    }
    e.notes.push("ts: the event's start from the window's start.".to_string());
    let mut out = vec![b, o, n, e];
    if !cp.what_if.is_empty() {
        let mut w = Block::new(
            "What if",
            &["op", "factor", "events", "path before", "path after", "saving", "top op after"],
        );
        for x in &cp.what_if {
            w.rows.push(vec![
                short(&x.target, 24),
                sig3(x.factor),
                x.matched_events.to_string(),
                ut(x.baseline_us),
                ut(x.length_us),
                format!("{}\n{}", ut(x.saving_us), pct(x.saving_percent)),
                short(x.new_top_op.as_deref().unwrap_or(MISSING), 24),
            ]);
        }
        w.notes.push(
            "The op's time on every CPU thread and GPU stream (with what it calls and \
             launches) scaled by the factor, the longest path recomputed; launch delays and \
             gaps keep their measured lengths."
                .to_string(),
        );
        out.push(w);
    }
    out
}

fn module_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let m = &r.modules;
    let mut b = Block::new(
        format!(
            "nn.Module tree: forward {} GPU, backward {} GPU",
            ut(m.forward_gpu_us),
            ut(m.backward_gpu_us)
        ),
        &["module", "calls", "CPU", "fwd GPU", "fwd self", "bwd GPU"],
    );
    b.min_widths = vec![(0, 36)];
    let limit = (top * 4).max(10);
    for x in m.nodes.iter().filter(|x| x.depth <= 4).take(limit) {
        let indent = "  ".repeat(x.depth as usize);
        b.rows.push(vec![
            format!("{indent}{}", short(&x.name, 44)),
            x.calls.to_string(),
            ut(x.cpu_us),
            ut(x.forward_gpu_us),
            ut(x.self_forward_gpu_us),
            ut(x.backward_gpu_us),
        ]);
    }
    if m.nodes.is_empty() {
        b.notes.push(
            "No nn.Module calls in the trace (profile with with_stack=True or \
             with_modules=True)."
                .to_string(),
        );
    } else {
        b.notes.push(format!(
            "{} from {}; times summed over calls, children included (self: without \
             child modules); backward credited through autograd sequence numbers{}. All \
             paths in --format csv/json.",
            rooftop_core::diagnose::count(m.calls, "call", "calls"),
            m.source,
            if m.unattributed_backward_us > 0.0 {
                format!(" ({} of backward outside any module)", ut(m.unattributed_backward_us))
            } else {
                String::new()
            }
        ));
    }
    vec![b]
}

fn memory_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let mem = &r.memory;
    let mut b = Block::new(
        "Memory (allocator events)",
        &["device", "peak allocated", "at", "reserved", "before trace", "allocs", "frees"],
    );
    for d in &mem.devices {
        b.rows.push(vec![
            format!("{} {}", d.device_type, d.device_id),
            bytes(d.peak_allocated_bytes),
            at(d.peak_ts_us, r.window.start_us),
            bytes(d.peak_reserved_bytes),
            bytes(d.before_trace_bytes),
            d.allocations.to_string(),
            d.frees.to_string(),
        ]);
    }
    if mem.devices.is_empty() {
        b.notes.push(
            "No [memory] events in the trace (profile with profile_memory=True).".to_string(),
        );
        return vec![b];
    }
    let mut out = vec![b];
    for d in &mem.devices {
        let mut a = Block::new(
            format!("Alive at the peak on {} {}", d.device_type, d.device_id),
            &["allocated by", "bytes", "blocks"],
        );
        for g in &d.alive_by_phase {
            a.rows.push(vec![format!("phase: {}", g.name), bytes(g.bytes), g.blocks.to_string()]);
        }
        for g in d.alive_by_op.iter().take(top) {
            a.rows.push(vec![short(&g.name, 56), bytes(g.bytes), g.blocks.to_string()]);
        }
        a.rows.push(vec![
            "before the trace".to_string(),
            bytes(d.before_trace_bytes),
            MISSING.into(),
        ]);
        out.push(a);
    }
    out
}

fn inference_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let i = &r.inference;
    let mut b = Block::new(
        format!(
            "Inference: {}{}",
            i.engine.as_deref().unwrap_or("no engine recognised"),
            i.step_format
                .as_deref()
                .map_or(String::new(), |f| format!(", steps from {f} annotations"))
        ),
        &["phase", "steps", "median step", "mean step", "mean GPU busy", "tokens", "graphed"],
    );
    for p in &i.phases {
        b.rows.push(vec![
            p.phase.as_str().to_string(),
            p.steps.to_string(),
            ut(p.wall.p50_us),
            ut(p.wall.mean_us),
            ut(p.mean_gpu_busy_us),
            p.tokens.to_string(),
            pct(p.graphed_percent),
        ]);
    }
    if i.phases.is_empty() {
        b.notes.push("No engine step annotations (vLLM execute_…, SGLang step[…]).".to_string());
    }
    b.notes.push(format!(
        "{} MoE layer calls (table MoE), {} paged-attention calls (InferenceAttention), {} \
         quantisation calls (Quant): --section categories.",
        i.moe_calls, i.attention_calls, i.quant_calls
    ));
    let mut c = Block::new(
        format!(
            "Custom all-reduce kernels: {} ({}), counted as communication",
            i.custom_allreduce_kernels,
            ut(i.custom_allreduce_us)
        ),
        &["kernel", "count", "total"],
    );
    for k in i.custom_allreduce.iter().take(top) {
        c.rows.push(vec![short(&k.name, 70), k.count.to_string(), ut(k.total_us)]);
    }
    if i.custom_allreduce.is_empty() {
        c.notes.push("None in the trace.".to_string());
    }
    vec![b, c]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The idle tables' cause columns are the finding's words, in its order, and no
    /// time is a bare `0`.
    #[test]
    fn cause_columns_are_the_findings_words() {
        assert_eq!(
            cause_headers(["device", "idle"]),
            ["device", "idle", "host wait", "kernel wait", "other", "graph"]
        );
        assert_eq!((ut(0.0), ut(100.0)), ("0".to_string(), "100 µs".to_string()));
    }
}
