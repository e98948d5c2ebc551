//! The trace report as JSON, byte for byte what serde writes for it
//! ([`crate::json::write_pretty`]), with the critical path's events written by hand.
//!
//! Those events are most of a report's text (868 kB of a 27.9 MB training trace's 1.2
//! MB report; 45 MB of a 134 MB JAX profile's 72 MB), and serde's way through each of
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

/// The path's events as a member value at depth `level`: each member's line break,
/// indent and key are one write, each value serde's own (`serde_json::to_writer`: a
/// string escaped as serde escapes it, a float as serde formats it, `null` for a
/// non-finite one).
fn events_json<W: Write + ?Sized>(w: &mut W, level: usize, events: &[CpEvent]) -> io::Result<()> {
    const KEYS: [&str; 8] =
        ["name", "ts", "dur_us", "on_path_us", "kind", "stream", "path_start_us", "path_end_us"];
    // An event is an element at `level + 1`; its members are at `level + 2`.
    let indent = "  ".repeat(level + 2);
    let prefix: Vec<Vec<u8>> = KEYS
        .iter()
        .enumerate()
        .map(|(i, k)| format!("{}\n{indent}\"{k}\": ", if i == 0 { "" } else { "," }).into_bytes())
        .collect();
    let close = format!("\n{}}}", "  ".repeat(level + 1)).into_bytes();
    let mut a = Members::array(w, level)?;
    for e in events {
        let CpEvent { name, ts, dur_us, on_path_us, kind, stream, path_start_us, path_end_us } = e;
        let w = a.element()?;
        w.write_all(b"{")?;
        member(w, &prefix[0], &**name)?;
        member(w, &prefix[1], ts)?;
        member(w, &prefix[2], dur_us)?;
        member(w, &prefix[3], on_path_us)?;
        member(w, &prefix[4], kind)?;
        member(w, &prefix[5], stream)?;
        member(w, &prefix[6], path_start_us)?;
        member(w, &prefix[7], path_end_us)?;
        w.write_all(&close)?;
    }
    a.end()
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
