//! The critical path as a Perfetto track: one process named `critical path` with one
//! thread, each path entry ([`CpEvent`]) a complete event over the stretch of the path it
//! covers (`path_start_us` to `path_end_us`), named as the trace names the event, with
//! its kind and time on the path in `args`. Launch delays and kernel-kernel gaps are
//! entries too, so the track reads as the path itself, end to end.
//!
//! [`CpEvent`]: rooftop_core::trace::gaps::critical_path::CpEvent

use rooftop_core::trace::report::TraceReport;
use serde_json::{json, Value};

/// The process id of the track (above any device index or OS pid a trace uses).
pub const PID: i64 = 2_000_000_000;

/// The track's events (metadata first); none when the report has no critical path.
pub fn track(report: &TraceReport) -> Vec<Value> {
    let Some(cp) = &report.critical_path else { return Vec::new() };
    let mut out = vec![
        json!({"name": "process_name", "ph": "M", "pid": PID, "args": {"name": "critical path"}}),
        json!({"name": "process_sort_index", "ph": "M", "pid": PID, "args": {"sort_index": -1}}),
        json!({"name": "thread_name", "ph": "M", "pid": PID, "tid": 0, "args": {
            "name": format!("critical path of {} ({} µs)",
                cp.window.annotation.as_deref().unwrap_or("the trace"), cp.length_us)
        }}),
    ];
    for e in &cp.events {
        out.push(json!({
            "name": e.name,
            "cat": "critical_path",
            "ph": "X",
            "pid": PID,
            "tid": 0,
            "ts": e.path_start_us,
            "dur": (e.path_end_us - e.path_start_us).max(0.0),
            "args": {
                "kind": e.kind,
                "on_path_us": e.on_path_us,
                "event_ts_us": e.ts,
                "event_dur_us": e.dur_us,
                "stream": e.stream,
            },
        }));
    }
    out
}
