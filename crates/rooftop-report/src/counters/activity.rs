//! What a system trace holds besides kernels (nsys SQLite, rocpd), as the terminal and
//! Markdown blocks of `rooftop counters`: kernel time per NVTX / ROCTX range, the
//! runtime API calls by time, memory copies and sets. Every number comes from the
//! [`Activity`] summary; nothing is computed here but shares of totals it states.

use crate::table::table as new_table;
use crate::MISSING;
use rooftop_core::counters::Activity;
use rooftop_core::units::{pct, si};
use std::fmt::Write as _;

fn short(name: &str, max: usize) -> String {
    crate::table::shorten(name, max)
}

fn time(ns: f64) -> String {
    si(ns * 1e-9, "s")
}

/// Share of `part` in `whole`, as text (`—` for an empty whole).
fn share(part: f64, whole: f64) -> String {
    if whole > 0.0 {
        pct(100.0 * part / whole)
    } else {
        MISSING.to_string()
    }
}

/// One sentence on how much kernel time the ranges cover.
pub(super) fn range_line(a: &Activity) -> String {
    format!(
        "{} ranges: {} of {} kernel time ({}) was launched inside a range; {} of {} kernels \
         have a known launching {} call",
        a.range_label,
        time(a.kernel_ns_in_ranges),
        time(a.kernel_ns),
        share(a.kernel_ns_in_ranges, a.kernel_ns),
        a.kernels_with_launch,
        a.kernels,
        a.api_label
    )
}

const RANGE_HEADER: [&str; 7] =
    ["range", "n", "range time", "kernels", "kernel time", "% kernels", "% busy"];

fn range_rows(a: &Activity, top: usize) -> Vec<Vec<String>> {
    a.ranges
        .iter()
        .take(top)
        .map(|r| {
            vec![
                short(&r.name, 30),
                r.instances.to_string(),
                time(r.range_ns),
                r.kernels.to_string(),
                time(r.kernel_ns),
                share(r.kernel_ns, a.kernel_ns),
                share(r.kernel_ns, r.range_ns),
            ]
        })
        .collect()
}

const API_HEADER: [&str; 5] = ["call", "calls", "total", "mean", "max"];

fn api_rows(a: &Activity, top: usize) -> Vec<Vec<String>> {
    a.api
        .iter()
        .take(top)
        .map(|c| {
            vec![
                short(&c.name, 40),
                c.calls.to_string(),
                time(c.total_ns),
                time(c.mean_ns),
                time(c.max_ns),
            ]
        })
        .collect()
}

const COPY_HEADER: [&str; 5] = ["copy", "n", "bytes", "time", "rate"];

fn copy_rows(a: &Activity) -> Vec<Vec<String>> {
    a.copies
        .iter()
        .map(|c| {
            vec![
                short(&c.kind, 40),
                c.count.to_string(),
                si(c.bytes, "B"),
                time(c.total_ns),
                c.achieved_gbs.map_or_else(|| MISSING.to_string(), |g| si(g * 1e9, "B/s")),
            ]
        })
        .collect()
}

/// The terminal blocks (empty when the trace has none of them).
pub(super) fn table(a: &Activity, top: usize) -> String {
    let mut out = String::new();
    let mut block = |title: String, header: &[&str], rows: Vec<Vec<String>>, more: usize| {
        if rows.is_empty() {
            return;
        }
        out.push('\n');
        out.push_str(&crate::wrap_text(&title, 100, "", "  "));
        let mut t = new_table(header);
        for r in rows {
            t.add_row(r);
        }
        let _ = writeln!(out, "{t}");
        if more > 0 {
            let _ = writeln!(out, "({more} more; --top N shows more)");
        }
    };
    block(range_line(a), &RANGE_HEADER, range_rows(a, top), a.ranges.len().saturating_sub(top));
    block(
        format!("{} calls by total time", a.api_label),
        &API_HEADER,
        api_rows(a, top),
        a.api.len().saturating_sub(top),
    );
    block("memory copies and sets".to_string(), &COPY_HEADER, copy_rows(a), 0);
    out
}

fn md_table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}|", header.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| crate::markdown::cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
}

/// The Markdown blocks.
pub(super) fn markdown(a: &Activity, top: usize) -> String {
    let mut out = String::new();
    let ranges = range_rows(a, top);
    if !ranges.is_empty() {
        let _ = writeln!(out, "\n### {} ranges\n\n{}\n", a.range_label, range_line(a));
        md_table(&mut out, &RANGE_HEADER, &ranges);
    }
    let api = api_rows(a, top);
    if !api.is_empty() {
        let _ = writeln!(out, "\n### {} calls\n", a.api_label);
        md_table(&mut out, &API_HEADER, &api);
    }
    let copies = copy_rows(a);
    if !copies.is_empty() {
        out.push_str("\n### Memory copies and sets\n\n");
        md_table(&mut out, &COPY_HEADER, &copies);
    }
    out
}

/// One table of the activity, for the HTML page.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub id: &'static str,
    pub title: String,
    /// A sentence above the table (may be empty).
    pub text: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The HTML page's tables, in the terminal's order.
pub fn blocks(a: &Activity, top: usize) -> Vec<Block> {
    let hdr = |h: &[&str]| h.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
    let mut v = Vec::new();
    let ranges = range_rows(a, top);
    if !ranges.is_empty() {
        v.push(Block {
            id: "ranges",
            title: format!("{} ranges", a.range_label),
            text: range_line(a),
            header: hdr(&RANGE_HEADER),
            rows: ranges,
        });
    }
    let api = api_rows(a, top);
    if !api.is_empty() {
        v.push(Block {
            id: "api",
            title: format!("{} calls", a.api_label),
            text: String::new(),
            header: hdr(&API_HEADER),
            rows: api,
        });
    }
    let copies = copy_rows(a);
    if !copies.is_empty() {
        v.push(Block {
            id: "copies",
            title: "Memory copies and sets".to_string(),
            text: String::new(),
            header: hdr(&COPY_HEADER),
            rows: copies,
        });
    }
    v
}
