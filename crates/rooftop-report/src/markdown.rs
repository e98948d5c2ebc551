//! Markdown output, for pull-request comments and reports.

use crate::devices::DeviceRow;
use crate::rows::{analysis_rows, analysis_title, device_footer, device_rows, Row};
use crate::MISSING;
use rooftop_core::analysis::Analysis;
use rooftop_core::device::DeviceSpec;
use rooftop_core::units::{si, sig3};
use std::fmt::Write as _;

/// Escapes text for a Markdown table cell or list item, as GitHub renders it: pipes
/// would end the cell and newlines the row; `<`, `>` and `&` would start HTML (a kernel
/// name's `<float>` is read as a tag and dropped). Inside a code span (between
/// backticks) the text is literal, so only the pipe is escaped there.
pub(crate) fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut code = false;
    for c in s.chars() {
        match c {
            '`' => {
                code = !code;
                out.push(c);
            }
            '|' => out.push_str("\\|"),
            '\n' => out.push_str("<br>"),
            '<' if !code => out.push_str("&lt;"),
            '>' if !code => out.push_str("&gt;"),
            '&' if !code => out.push_str("&amp;"),
            _ => out.push(c),
        }
    }
    out
}

fn md_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for r in rows {
        let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

fn rows_md(rows: Vec<Row>) -> String {
    let rows: Vec<Vec<String>> = rows.into_iter().map(|r| r.to_vec()).collect();
    md_table(&["metric", "value", "source"], &rows)
}

/// One analysis as a Markdown section.
pub fn analysis(a: &Analysis) -> String {
    let mut out = format!("### {}\n\n", cell(&analysis_title(a)));
    if let Some(k) = &a.kernel_name {
        let _ = writeln!(out, "Kernel: `{k}`\n");
    }
    out.push_str(&rows_md(analysis_rows(a)));
    if !a.work.assumptions.is_empty() {
        out.push_str("\nAssumptions:\n\n");
        for s in &a.work.assumptions {
            let _ = writeln!(out, "- {s}");
        }
    }
    if !a.findings.is_empty() {
        out.push_str("\n#### Findings\n\n");
        for f in &a.findings {
            let _ = write!(
                out,
                "- **{}** ({}): {}. {}",
                f.title,
                f.severity.as_str(),
                f.evidence,
                f.recommendation
            );
            if let Some(g) = &f.expected_gain {
                let _ = write!(out, " Expected gain: {g}.");
            }
            if let Some(s) = crate::table::stake_sentence(f) {
                let _ = write!(out, " {}{}.", s[..1].to_uppercase(), &s[1..]);
            }
            out.push('\n');
        }
    }
    out
}

/// The device list as a Markdown table, headed by the columns' labels
/// ([`crate::devices::COLUMNS`]; confidence left out). Peaks and bandwidth are catalog
/// figures (`si` shows them to three digits with their unit, as the device page does);
/// the ridge point is computed (`sig3`).
pub fn devices(devs: &[DeviceSpec]) -> String {
    let dash = || MISSING.to_string();
    let rows: Vec<Vec<String>> = devs
        .iter()
        .map(|d| {
            let r = DeviceRow::of(d);
            vec![
                format!("`{}`", r.id),
                r.name,
                r.vendor.as_str().to_string(),
                r.fp16_matrix_tflops.map_or_else(dash, |v| si(v * 1e12, "FLOP/s")),
                r.fp32_tflops.map_or_else(dash, |v| si(v * 1e12, "FLOP/s")),
                si(r.bandwidth_gbs * 1e9, "B/s"),
                r.ridge_flop_per_byte.map_or_else(dash, |v| format!("{} FLOP/B", sig3(v))),
            ]
        })
        .collect();
    let header: Vec<&str> =
        crate::devices::COLUMNS.iter().filter(|c| c.key != "confidence").map(|c| c.label).collect();
    md_table(&header, &rows)
}

/// One device as a Markdown section.
pub fn device_detail(d: &DeviceSpec) -> String {
    let mut out = format!("### {} (`{}`)\n\n", cell(&d.name), d.id);
    out.push_str(&rows_md(device_rows(d)));
    out.push('\n');
    for line in device_footer(d) {
        let _ = writeln!(out, "{line}\n");
    }
    out
}
