//! The critical path as a Perfetto track: one process named `critical path` with one
//! thread, each path entry ([`CpEvent`]) a complete event over the stretch of the path it
//! covers (`path_start_us` to `path_end_us`), named as the trace names the event, with
//! its kind and time on the path in `args`. Launch delays and kernel-kernel gaps are
//! entries too, so the track reads as the path itself, end to end.
//!
//! [`CpEvent`]: rooftop_core::trace::gaps::critical_path::CpEvent

use rooftop_core::trace::gaps::critical_path::CpEvent;
use rooftop_core::trace::report::TraceReport;
use serde::Serialize;
use serde_json::json;
use std::io::{self, Write};

/// The process id of the track (above any device index or OS pid a trace uses).
pub const PID: i64 = 2_000_000_000;

/// One entry's event; the fields in the order serde_json's map writes its keys (sorted),
/// so that the text is what the same object written as a map would be.
#[derive(Serialize)]
struct Entry<'a> {
    args: EntryArgs<'a>,
    cat: &'static str,
    dur: f64,
    name: &'a str,
    ph: &'static str,
    pid: i64,
    tid: i64,
    ts: f64,
}

/// An entry's `args` (keys sorted, as in [`Entry`]).
#[derive(Serialize)]
struct EntryArgs<'a> {
    event_dur_us: f64,
    event_ts_us: f64,
    kind: &'a str,
    on_path_us: f64,
    stream: Option<i64>,
}

fn entry(e: &CpEvent) -> Entry<'_> {
    Entry {
        args: EntryArgs {
            event_dur_us: e.dur_us,
            event_ts_us: e.ts,
            kind: e.kind,
            on_path_us: e.on_path_us,
            stream: e.stream,
        },
        cat: "critical_path",
        dur: (e.path_end_us - e.path_start_us).max(0.0),
        name: &e.name,
        ph: "X",
        pid: PID,
        tid: 0,
        ts: e.path_start_us,
    }
}

/// Writes the track's events (metadata first) to `w` as elements of the document's
/// `traceEvents` array, each after `sep` (which writes the comma between elements);
/// nothing when the report has no critical path.
pub fn write_track<W: Write + ?Sized>(
    report: &TraceReport,
    w: &mut W,
    sep: &mut impl FnMut(&mut W) -> io::Result<()>,
) -> io::Result<()> {
    let Some(cp) = &report.critical_path else { return Ok(()) };
    let head = [
        json!({"name": "process_name", "ph": "M", "pid": PID, "args": {"name": "critical path"}}),
        json!({"name": "process_sort_index", "ph": "M", "pid": PID, "args": {"sort_index": -1}}),
        json!({"name": "thread_name", "ph": "M", "pid": PID, "tid": 0, "args": {
            "name": format!("critical path of {} ({} µs)",
                cp.window.annotation.as_deref().unwrap_or("the trace"), cp.length_us)
        }}),
    ];
    for v in &head {
        sep(w)?;
        serde_json::to_writer(&mut *w, v)?;
    }
    for e in &cp.events {
        sep(w)?;
        serde_json::to_writer(&mut *w, &entry(e))?;
    }
    Ok(())
}
