//! SVG drawings of the time between the kernels: one step's timeline with the critical
//! path highlighted (lanes of CPU threads and GPU streams; the report's
//! `critical_path.timeline`), and the allocator's memory over time.
//!
//! Everything drawn comes from the report; each rectangle has a `<title>` tooltip with
//! the event's name, duration and whether it is on the path. Styles are inline
//! attributes so the drawing needs no stylesheet of its own.

// Blocks and coordinates are short-lived one-letter names (b, t, x, y) by design.
#![allow(clippy::many_single_char_names)]

use super::esc;
use rooftop_core::trace::gaps::memory::DeviceMemory;
use rooftop_core::trace::gaps::step_timeline::StepTimeline;
use rooftop_core::units::{si, us};
use std::fmt::Write as _;

const WIDTH: f64 = 1100.0;
const LABEL: f64 = 170.0;
const LANE: f64 = 18.0;
const TOP: f64 = 24.0;

fn color(kind: &str, on_path: bool) -> &'static str {
    match (kind, on_path) {
        ("launch_delay" | "kernel_gap", _) => "#f59e0b",
        (_, true) => "#dc2626",
        ("cpu_op", false) => "#b8c0c8",
        ("memcpy", false) => "#86efac",
        ("memset", false) => "#c4b5fd",
        _ => "#93c5fd",
    }
}

/// The step timeline as an SVG element (empty string when there is nothing to draw).
pub(crate) fn step_timeline(t: &StepTimeline) -> String {
    if t.items.is_empty() {
        return String::new();
    }
    let start = t.items.iter().map(|i| i.start_us).fold(t.start_us, f64::min);
    let end = t.items.iter().map(|i| i.start_us + i.dur_us).fold(t.end_us, f64::max);
    let span = (end - start).max(1e-3);
    let plot = WIDTH - LABEL - 10.0;
    let x = |ts: f64| LABEL + (ts - start) / span * plot;
    let height = TOP + LANE * t.lanes.len() as f64 + 24.0;
    let mut out = format!(
        "<svg class=\"chart timeline\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" \
         aria-label=\"step timeline with the critical path\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    // Lanes.
    for (i, name) in t.lanes.iter().enumerate() {
        let y = TOP + LANE * i as f64;
        let _ = write!(
            out,
            "<rect x=\"{LABEL}\" y=\"{y}\" width=\"{plot}\" height=\"{LANE}\" fill=\"{}\"/>\
             <text x=\"4\" y=\"{}\" font-size=\"11\" fill=\"#3c4650\">{}</text>",
            if i % 2 == 0 { "#f8f9fa" } else { "#ffffff" },
            y + 13.0,
            esc(name)
        );
    }
    // Ticks.
    for k in 0..=5 {
        let ts = start + span * f64::from(k) / 5.0;
        let px = x(ts);
        let _ = write!(
            out,
            "<line x1=\"{px:.1}\" y1=\"{}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"#d0d5da\"/>\
             <text x=\"{px:.1}\" y=\"14\" font-size=\"11\" text-anchor=\"middle\" fill=\"#3c4650\">+{}</text>",
            TOP - 4.0,
            height - 20.0,
            esc(&us(ts - start))
        );
    }
    // Items: off-path first so the path is drawn on top.
    let mut order: Vec<usize> = (0..t.items.len()).collect();
    order.sort_by_key(|&i| t.items[i].on_path);
    for i in order {
        let it = &t.items[i];
        let px = x(it.start_us);
        let w = (it.dur_us / span * plot).max(0.6);
        let (y, h) = match it.kind {
            "launch_delay" | "kernel_gap" => (TOP + LANE * f64::from(it.lane) + 12.0, 4.0),
            _ => (TOP + LANE * f64::from(it.lane) + 2.0, LANE - 4.0),
        };
        let _ = write!(
            out,
            "<rect x=\"{px:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{h}\" fill=\"{}\"><title>{}</title></rect>",
            color(it.kind, it.on_path),
            esc(&format!(
                "{} [{}] {}{}",
                it.name,
                it.kind,
                us(it.dur_us),
                if it.on_path { " — on the critical path" } else { "" }
            ))
        );
    }
    let _ = write!(
        out,
        "<text x=\"{LABEL}\" y=\"{}\" font-size=\"11\" fill=\"#3c4650\">red: on the critical \
         path; amber: launch delay or kernel-kernel gap on the path; grey: CPU ops; blue: GPU \
         kernels{}</text></svg>",
        height - 4.0,
        if t.dropped > 0 {
            format!(" ({} short events not drawn)", t.dropped)
        } else {
            String::new()
        }
    );
    out
}

/// The allocated and reserved memory of one device over time, as an SVG element.
pub(crate) fn memory_chart(d: &DeviceMemory) -> String {
    let pts = &d.timeline;
    let (Some(first), Some(last)) = (pts.first(), pts.last()) else { return String::new() };
    let (h, top, left) = (220.0, 16.0, 80.0);
    let plot_w = WIDTH - left - 10.0;
    let plot_h = h - top - 30.0;
    let span = (last.ts_us - first.ts_us).max(1e-3);
    let max = pts.iter().map(|p| p.allocated_bytes.max(p.reserved_bytes)).max().unwrap_or(1).max(1)
        as f64;
    let x = |ts: f64| left + (ts - first.ts_us) / span * plot_w;
    let y = |b: i64| top + plot_h - b as f64 / max * plot_h;
    let line = |f: &dyn Fn(&rooftop_core::trace::gaps::memory::MemoryPoint) -> i64| {
        pts.iter()
            .map(|p| format!("{:.1},{:.1}", x(p.ts_us), y(f(p))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = format!(
        "<svg class=\"chart memory\" viewBox=\"0 0 {WIDTH} {h}\" role=\"img\" \
         aria-label=\"memory over time\" xmlns=\"http://www.w3.org/2000/svg\">\
         <rect x=\"{left}\" y=\"{top}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"#f8f9fa\"/>"
    );
    for k in 0..=4 {
        let b = (max * f64::from(k) / 4.0) as i64;
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\" fill=\"#3c4650\">{}</text>",
            left - 4.0,
            y(b) + 4.0,
            esc(&si(b as f64, "B"))
        );
    }
    let _ = write!(
        out,
        "<polyline fill=\"none\" stroke=\"#9ca3af\" stroke-width=\"1.2\" points=\"{}\"><title>reserved</title></polyline>\
         <polyline fill=\"none\" stroke=\"#2563eb\" stroke-width=\"1.6\" points=\"{}\"><title>allocated</title></polyline>",
        line(&|p| p.reserved_bytes),
        line(&|p| p.allocated_bytes)
    );
    let _ = write!(
        out,
        "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"#dc2626\"><title>peak {}</title></circle>\
         <text x=\"{left}\" y=\"{}\" font-size=\"11\" fill=\"#3c4650\">blue: allocated; grey: \
         reserved; red: peak ({}); {} from first to last event</text></svg>",
        x(d.peak_ts_us),
        y(d.peak_allocated_bytes),
        esc(&si(d.peak_allocated_bytes as f64, "B")),
        h - 6.0,
        esc(&si(d.peak_allocated_bytes as f64, "B")),
        esc(&us(span))
    );
    out
}
