//! The trace report as JSON, byte for byte what serde writes for it
//! ([`crate::json::write_pretty`]), with the critical path's events written by hand.
//!
//! Those events are most of a report's text (925 kB of a 27.9 MB training trace's 1.2
//! MB report; 69 MB of a 134 MB JAX profile's 72 MB), and serde's way through each of
//! their members (the key escaped byte by byte, five writes around it) cost about three
//! times what their bytes do, on the one thread that writes the report after the
//! analysis. Every other member is serialised by serde at its depth.
//!
//! The structs are taken apart without `..`: a field added to [`TraceReport`],
//! [`CriticalPath`] or [`CpEvent`] does not compile here until it is written. The tests
//! compare the output with `serde_json::to_string_pretty` of the same report.

use crate::json::Members;
use rooftop_core::trace::gaps::critical_path::{CpEvent, CriticalPath};
use rooftop_core::trace::report::TraceReport;
use std::io::{self, Write};

/// Writes the report and a final line break to `w`.
pub(super) fn write<W: Write>(r: &TraceReport, mut w: W) -> io::Result<()> {
    let TraceReport {
        schema_version,
        device,
        window,
        timeline,
        ops_summary,
        categories,
        model_coverage,
        kernels,
        short_kernels,
        findings,
        warnings,
        xla,
        idle,
        launch,
        syncs,
        graphs,
        critical_path,
        modules,
        memory,
        inference,
    } = r;
    let mut o = Members::object(&mut w, 0)?;
    o.field("schema_version", schema_version)?;
    o.field("device", device)?;
    o.field("window", window)?;
    o.field("timeline", timeline)?;
    o.field("ops_summary", ops_summary)?;
    o.field("categories", categories)?;
    o.field("model_coverage", model_coverage)?;
    o.field("kernels", kernels)?;
    o.field("short_kernels", short_kernels)?;
    o.field("findings", findings)?;
    o.field("warnings", warnings)?;
    // `skip_serializing_if = "Option::is_none"`, as the struct says.
    if let Some(xla) = xla {
        o.field("xla", xla)?;
    }
    o.field("idle", idle)?;
    o.field("launch", launch)?;
    o.field("syncs", syncs)?;
    o.field("graphs", graphs)?;
    match critical_path {
        Some(cp) => {
            let level = o.level();
            critical_path_json(o.key("critical_path")?, level, cp)?;
        }
        None => o.field("critical_path", &None::<()>)?,
    }
    o.field("modules", modules)?;
    o.field("memory", memory)?;
    o.field("inference", inference)?;
    o.end()?;
    w.write_all(b"\n")
}

/// The critical path as a member value at depth `level`.
fn critical_path_json<W: Write + ?Sized>(
    w: &mut W,
    level: usize,
    cp: &CriticalPath,
) -> io::Result<()> {
    let CriticalPath {
        window,
        length_us,
        nodes,
        edges,
        bound_by,
        events,
        ranked,
        by_op,
        what_if,
        // `skip_serializing`: the HTML report's lanes.
        timeline: _,
    } = cp;
    let mut o = Members::object(w, level)?;
    o.field("window", window)?;
    o.field("length_us", length_us)?;
    o.field("nodes", nodes)?;
    o.field("edges", edges)?;
    o.field("bound_by", bound_by)?;
    let inner = o.level();
    events_json(o.key("events")?, inner, events)?;
    o.field("ranked", ranked)?;
    o.field("by_op", by_op)?;
    o.field("what_if", what_if)?;
    o.end()
}

/// Events rendered per task at most: about 1 MB of text, which bounds what is held in
/// memory at once to that per thread however long the path is.
const EVENTS_PER_TASK: usize = 4096;

/// The path's events as a member value at depth `level`: each member's line break,
/// indent and key are one write, each value serde's own (`serde_json::to_writer`: a
/// string escaped as serde escapes it, a float as serde formats it, `null` for a
/// non-finite one). Runs of events are rendered on the thread pool, which is idle
/// while the report is written, and written in order.
fn events_json<W: Write + ?Sized>(w: &mut W, level: usize, events: &[CpEvent]) -> io::Result<()> {
    if events.is_empty() {
        return w.write_all(b"[]");
    }
    let layout = EventLayout::new(level);
    w.write_all(b"[")?;
    let render = |start: usize, run: &[CpEvent], out: &mut Vec<u8>| {
        out.reserve(run.len() * 256);
        layout.run(out, run, start == 0)
    };
    crate::json::runs_on_pool(events, EVENTS_PER_TASK, render, |part| w.write_all(part))?;
    // The closing bracket on a line of its own at the array's depth.
    w.write_all(&layout.end)
}

/// The bytes around an event's members at one depth, made once.
struct EventLayout {
    /// Line break (after a comma but for the first) and indent of an event.
    start: [Vec<u8>; 2],
    /// Per member: line break, indent and key (the first member without a comma).
    prefix: Vec<Vec<u8>>,
    /// An event's closing brace on its own line.
    close: Vec<u8>,
    /// The array's closing bracket on its own line.
    end: Vec<u8>,
}

impl EventLayout {
    /// For the events array at depth `level`: an event is an element at `level + 1`,
    /// its members are at `level + 2`.
    fn new(level: usize) -> EventLayout {
        const KEYS: [&str; 8] = [
            "name",
            "ts",
            "dur_us",
            "on_path_us",
            "kind",
            "stream",
            "path_start_us",
            "path_end_us",
        ];
        let indent = |depth: usize| "  ".repeat(depth);
        let member = indent(level + 2);
        EventLayout {
            start: [
                format!("\n{}{{", indent(level + 1)).into_bytes(),
                format!(",\n{}{{", indent(level + 1)).into_bytes(),
            ],
            prefix: KEYS
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    format!("{}\n{member}\"{k}\": ", if i == 0 { "" } else { "," }).into_bytes()
                })
                .collect(),
            close: format!("\n{}}}", indent(level + 1)).into_bytes(),
            end: format!("\n{}]", indent(level)).into_bytes(),
        }
    }

    /// A run of events; `first`: whether it starts the array.
    fn run(&self, w: &mut Vec<u8>, events: &[CpEvent], first: bool) -> io::Result<()> {
        for (i, e) in events.iter().enumerate() {
            let CpEvent { name, ts, dur_us, on_path_us, kind, stream, path_start_us, path_end_us } =
                e;
            w.write_all(&self.start[usize::from(!(first && i == 0))])?;
            member(w, &self.prefix[0], &**name)?;
            member(w, &self.prefix[1], ts)?;
            member(w, &self.prefix[2], dur_us)?;
            member(w, &self.prefix[3], on_path_us)?;
            member(w, &self.prefix[4], kind)?;
            member(w, &self.prefix[5], stream)?;
            member(w, &self.prefix[6], path_start_us)?;
            member(w, &self.prefix[7], path_end_us)?;
            w.write_all(&self.close)?;
        }
        Ok(())
    }
}

/// One member of an event: its line, indent and key, then its value.
#[inline]
fn member<W: Write + ?Sized, T: serde::Serialize + ?Sized>(
    w: &mut W,
    prefix: &[u8],
    v: &T,
) -> io::Result<()> {
    w.write_all(prefix)?;
    serde_json::to_writer(&mut *w, v)?;
    Ok(())
}
