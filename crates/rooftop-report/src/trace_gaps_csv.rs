//! CSV files of the time between the kernels (`rooftop trace --format csv -o DIR`), one
//! per table of [`crate::trace_gaps`], with full-precision numbers (µs, bytes), and which
//! `--section` each belongs to.

use crate::trace::{num, ostr, Section};
use rooftop_core::trace::gaps::idle::{IdleCategory, IdleShare};
use rooftop_core::trace::report::TraceReport;

/// File names and contents.
type Files = Vec<(String, String)>;

fn share(v: &[IdleShare], c: IdleCategory) -> f64 {
    v.iter().find(|s| s.category == c).map_or(0.0, |s| s.idle_us)
}

/// The CSV files of these sections.
pub(crate) fn csv_files(r: &TraceReport) -> Result<Vec<(String, String)>, crate::RenderError> {
    let mut f = Vec::new();
    idle(r, &mut f)?;
    launch(r, &mut f)?;
    syncs(r, &mut f)?;
    graphs(r, &mut f)?;
    critical_path(r, &mut f)?;
    modules(r, &mut f)?;
    memory(r, &mut f)?;
    inference(r, &mut f)?;
    Ok(f)
}

/// The CSV files of the idle time per device and per stream (`--section idle`).
fn idle(r: &TraceReport, f: &mut Files) -> Result<(), crate::RenderError> {
    let cats = |c: &[IdleShare]| -> Vec<String> {
        IdleCategory::ALL.iter().map(|&k| num(share(c, k))).collect()
    };
    let rows = r
        .idle
        .devices
        .iter()
        .map(|d| {
            let mut v =
                vec![d.device.to_string(), num(d.window_us), num(d.busy_us), num(d.idle_us)];
            v.extend(cats(&d.categories));
            v
        })
        .collect();
    f.push((
        "idle_devices.csv".to_string(),
        crate::csv::text(
            &[
                "device",
                "window_us",
                "busy_us",
                "idle_us",
                "host_wait_us",
                "kernel_wait_us",
                "other_us",
                "graph_us",
            ],
            rows,
        )?,
    ));
    let rows = r
        .idle
        .streams
        .iter()
        .map(|s| {
            let mut v = vec![
                s.device.to_string(),
                s.stream.to_string(),
                s.events.to_string(),
                num(s.idle_us),
            ];
            v.extend(cats(&s.categories));
            v
        })
        .collect();
    f.push((
        "idle_streams.csv".to_string(),
        crate::csv::text(
            &[
                "device",
                "stream",
                "events",
                "idle_us",
                "host_wait_us",
                "kernel_wait_us",
                "other_us",
                "graph_us",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// The CSV files of launch delays by op, the longest delays, queue depths (`--section launch`).
fn launch(r: &TraceReport, f: &mut Files) -> Result<(), crate::RenderError> {
    let l = &r.launch;
    let rows = l
        .by_op
        .iter()
        .map(|x| {
            vec![
                x.op.clone(),
                x.launches.to_string(),
                num(x.total_delay_us),
                num(x.mean_delay_us),
                num(x.max_delay_us),
                num(x.mean_cpu_duration_us),
                x.launch_bound.to_string(),
            ]
        })
        .collect();
    f.push((
        "launch_by_op.csv".to_string(),
        crate::csv::text(
            &[
                "op",
                "launches",
                "total_delay_us",
                "mean_delay_us",
                "max_delay_us",
                "mean_cpu_duration_us",
                "launch_bound",
            ],
            rows,
        )?,
    ));
    let rows = l
        .top_delays
        .iter()
        .map(|x| {
            vec![
                x.kernel.clone(),
                ostr(x.op.as_deref()),
                x.launcher.clone(),
                x.correlation.map(|c| c.to_string()).unwrap_or_default(),
                num(x.ts_us),
                num(x.launch_delay_us),
                num(x.cpu_duration_us),
                num(x.gpu_duration_us),
            ]
        })
        .collect();
    f.push((
        "launch_top_delays.csv".to_string(),
        crate::csv::text(
            &[
                "kernel",
                "op",
                "launcher",
                "correlation",
                "ts_us",
                "launch_delay_us",
                "cpu_duration_us",
                "gpu_duration_us",
            ],
            rows,
        )?,
    ));
    let rows = l
        .queues
        .iter()
        .map(|q| {
            vec![
                q.device.to_string(),
                q.stream.to_string(),
                q.changes.to_string(),
                num(q.mean),
                num(q.median),
                q.max.to_string(),
                num(q.time_mean),
                num(q.full_us),
            ]
        })
        .collect();
    let series_rows: Vec<Vec<String>> = l
        .queues
        .iter()
        .flat_map(|q| {
            q.series.iter().map(move |p| {
                vec![q.device.to_string(), q.stream.to_string(), num(p.ts_us), p.length.to_string()]
            })
        })
        .collect();
    f.push((
        "launch_queue_series.csv".to_string(),
        crate::csv::text(&["device", "stream", "ts_us", "length"], series_rows)?,
    ));
    f.push((
        "launch_queues.csv".to_string(),
        crate::csv::text(
            &["device", "stream", "changes", "mean", "median", "max", "time_mean", "full_us"],
            rows,
        )?,
    ));
    Ok(())
}

/// The CSV files of blocking synchronisations and pageable copies (`--section syncs`).
fn syncs(r: &TraceReport, f: &mut Files) -> Result<(), crate::RenderError> {
    let rows = r
        .syncs
        .rows
        .iter()
        .map(|x| {
            vec![
                x.call.clone(),
                x.kind.as_str().to_string(),
                ostr(x.op.as_deref()),
                ostr(x.top_op.as_deref()),
                x.count.to_string(),
                num(x.total_us),
                num(x.max_us),
                num(x.first_ts_us),
            ]
        })
        .collect();
    f.push((
        "syncs.csv".to_string(),
        crate::csv::text(
            &["call", "kind", "op", "top_op", "count", "total_us", "max_us", "first_ts_us"],
            rows,
        )?,
    ));
    let rows = r
        .syncs
        .pageable
        .iter()
        .map(|x| {
            vec![
                x.name.clone(),
                x.count.to_string(),
                x.bytes.to_string(),
                num(x.gpu_us),
                num(x.cpu_us),
            ]
        })
        .collect();
    f.push((
        "pageable_copies.csv".to_string(),
        crate::csv::text(&["name", "count", "bytes", "gpu_us", "cpu_us"], rows)?,
    ));
    Ok(())
}

/// The CSV files of CUDA/HIP graphs and their replay windows (`--section graphs`).
fn graphs(r: &TraceReport, f: &mut Files) -> Result<(), crate::RenderError> {
    let rows = r
        .graphs
        .graphs
        .iter()
        .map(|x| {
            vec![
                x.id.to_string(),
                x.device.to_string(),
                x.kernels.to_string(),
                x.replays.to_string(),
                num(x.span.mean_us),
                num(x.mean_busy_us),
                num(x.mean_launch_us),
                num(x.mean_launch_delay_us),
                num(x.gpu_us),
                x.captured.to_string(),
            ]
        })
        .collect();
    f.push((
        "graphs.csv".to_string(),
        crate::csv::text(
            &[
                "graph",
                "device",
                "kernels",
                "replays",
                "mean_span_us",
                "mean_busy_us",
                "mean_launch_us",
                "mean_launch_delay_us",
                "gpu_us",
                "captured",
            ],
            rows,
        )?,
    ));
    let rows = r
        .graphs
        .windows
        .iter()
        .map(|x| {
            vec![
                x.graph.to_string(),
                x.device.to_string(),
                x.replays.to_string(),
                num(x.start_us),
                num(x.end_us),
                num(x.busy_us),
                num(x.graph_us),
                num(x.eager_us),
                num(x.idle_us),
                x.late_launches.to_string(),
                num(x.mean_launch_ahead_us),
                num(x.mean_period_us),
            ]
        })
        .collect();
    f.push((
        "graph_windows.csv".to_string(),
        crate::csv::text(
            &[
                "graph",
                "device",
                "replays",
                "start_us",
                "end_us",
                "busy_us",
                "graph_us",
                "eager_us",
                "idle_us",
                "late_launches",
                "mean_launch_ahead_us",
                "mean_period_us",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// The CSV files of the critical path, by op and name, and the what-if results (`--section critical-path`).
fn critical_path(r: &TraceReport, f: &mut Files) -> Result<(), crate::RenderError> {
    if let Some(cp) = &r.critical_path {
        let rows = cp
            .events
            .iter()
            .map(|e| {
                vec![
                    e.kind.to_string(),
                    e.name.to_string(),
                    num(e.ts),
                    num(e.dur_us),
                    num(e.on_path_us),
                    e.stream.map(|s| s.to_string()).unwrap_or_default(),
                    num(e.path_start_us),
                    num(e.path_end_us),
                ]
            })
            .collect();
        f.push((
            "critical_path.csv".to_string(),
            crate::csv::text(
                &[
                    "kind",
                    "name",
                    "ts",
                    "dur_us",
                    "on_path_us",
                    "stream",
                    "path_start_us",
                    "path_end_us",
                ],
                rows,
            )?,
        ));
        let rank = |v: &[rooftop_core::trace::gaps::critical_path::CpRank]| -> Vec<Vec<String>> {
            v.iter()
                .map(|x| vec![x.name.clone(), x.entries.to_string(), num(x.us), num(x.percent)])
                .collect()
        };
        f.push((
            "critical_path_by_op.csv".to_string(),
            crate::csv::text(&["op", "entries", "us", "percent"], rank(&cp.by_op))?,
        ));
        f.push((
            "critical_path_by_name.csv".to_string(),
            crate::csv::text(&["name", "entries", "us", "percent"], rank(&cp.ranked))?,
        ));
        let rows = cp
            .what_if
            .iter()
            .map(|w| {
                vec![
                    w.target.clone(),
                    num(w.factor),
                    w.matched_events.to_string(),
                    num(w.baseline_us),
                    num(w.length_us),
                    num(w.saving_us),
                    num(w.saving_percent),
                    ostr(w.new_top_op.as_deref()),
                ]
            })
            .collect();
        f.push((
            "what_if.csv".to_string(),
            crate::csv::text(
                &[
                    "op",
                    "factor",
                    "matched_events",
                    "baseline_us",
                    "length_us",
                    "saving_us",
                    "saving_percent",
                    "new_top_op",
                ],
                rows,
            )?,
        ));
    }
    Ok(())
}

/// The CSV files of the module tree (`--section modules`).
fn modules(r: &TraceReport, f: &mut Files) -> Result<(), crate::RenderError> {
    let rows = r
        .modules
        .nodes
        .iter()
        .map(|x| {
            vec![
                x.path.clone(),
                x.depth.to_string(),
                x.calls.to_string(),
                num(x.cpu_us),
                num(x.forward_gpu_us),
                num(x.self_forward_gpu_us),
                num(x.backward_gpu_us),
                num(x.self_backward_gpu_us),
            ]
        })
        .collect();
    f.push((
        "modules.csv".to_string(),
        crate::csv::text(
            &[
                "path",
                "depth",
                "calls",
                "cpu_us",
                "forward_gpu_us",
                "self_forward_gpu_us",
                "backward_gpu_us",
                "self_backward_gpu_us",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// The CSV files of memory per device, alive at the peak, over time (`--section memory`).
fn memory(r: &TraceReport, f: &mut Files) -> Result<(), crate::RenderError> {
    let mut dev_rows = Vec::new();
    let mut alive = Vec::new();
    let mut timeline = Vec::new();
    for d in &r.memory.devices {
        let dev = format!("{} {}", d.device_type, d.device_id);
        dev_rows.push(vec![
            dev.clone(),
            d.peak_allocated_bytes.to_string(),
            num(d.peak_ts_us),
            d.peak_reserved_bytes.to_string(),
            d.before_trace_bytes.to_string(),
            d.allocations.to_string(),
            d.frees.to_string(),
            d.allocated_bytes_total.to_string(),
        ]);
        for (by, groups) in [("phase", &d.alive_by_phase), ("op", &d.alive_by_op)] {
            for g in groups {
                alive.push(vec![
                    dev.clone(),
                    by.into(),
                    g.name.clone(),
                    g.bytes.to_string(),
                    g.blocks.to_string(),
                ]);
            }
        }
        for p in &d.timeline {
            timeline.push(vec![
                dev.clone(),
                num(p.ts_us),
                p.allocated_bytes.to_string(),
                p.reserved_bytes.to_string(),
            ]);
        }
    }
    f.push((
        "memory_devices.csv".to_string(),
        crate::csv::text(
            &[
                "device",
                "peak_allocated_bytes",
                "peak_ts_us",
                "peak_reserved_bytes",
                "before_trace_bytes",
                "allocations",
                "frees",
                "allocated_bytes_total",
            ],
            dev_rows,
        )?,
    ));
    f.push((
        "memory_alive_at_peak.csv".to_string(),
        crate::csv::text(&["device", "by", "name", "bytes", "blocks"], alive)?,
    ));
    f.push((
        "memory_timeline.csv".to_string(),
        crate::csv::text(&["device", "ts_us", "allocated_bytes", "reserved_bytes"], timeline)?,
    ));
    Ok(())
}

/// The CSV files of inference phases and custom all-reduce kernels (`--section inference`).
fn inference(r: &TraceReport, f: &mut Files) -> Result<(), crate::RenderError> {
    let rows = r
        .inference
        .phases
        .iter()
        .map(|p| {
            vec![
                p.phase.as_str().to_string(),
                p.steps.to_string(),
                num(p.wall.mean_us),
                num(p.wall.p50_us),
                num(p.mean_gpu_busy_us),
                p.tokens.to_string(),
                p.requests.to_string(),
                num(p.graphed_percent),
            ]
        })
        .collect();
    f.push((
        "inference_phases.csv".to_string(),
        crate::csv::text(
            &[
                "phase",
                "steps",
                "mean_step_us",
                "median_step_us",
                "mean_gpu_busy_us",
                "tokens",
                "requests",
                "graphed_percent",
            ],
            rows,
        )?,
    ));
    let rows = r
        .inference
        .custom_allreduce
        .iter()
        .map(|k| vec![k.name.clone(), k.count.to_string(), num(k.total_us)])
        .collect();
    f.push((
        "custom_allreduce.csv".to_string(),
        crate::csv::text(&["kernel", "count", "total_us"], rows)?,
    ));
    Ok(())
}

/// Whether the CSV file `stem` (no extension) belongs to `section`.
pub fn csv_in_section(section: Section, stem: &str) -> bool {
    match section {
        Section::Idle => stem.starts_with("idle_"),
        Section::Launch => stem.starts_with("launch_"),
        Section::Syncs => stem == "syncs" || stem == "pageable_copies",
        Section::Graphs => stem.starts_with("graph"),
        Section::CriticalPath => stem.starts_with("critical_path") || stem == "what_if",
        Section::Modules => stem == "modules",
        Section::Memory => stem.starts_with("memory_"),
        Section::Inference => stem == "inference_phases" || stem == "custom_allreduce",
        _ => false,
    }
}
