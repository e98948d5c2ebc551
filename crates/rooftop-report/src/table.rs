//! Terminal tables (the default output): at most 100 columns wide, numbers to three
//! significant digits with SI units, each figure with its provenance. Every table is
//! laid out by `layout`: cells wrap at blanks, never inside a token, and a token too
//! long for any layout is shortened with `…`.

mod layout;

pub(crate) use layout::room_for;
pub use layout::{shorten, shorten_all};

use crate::devices::DeviceRow;
use crate::rows::{analysis_rows, device_footer, device_rows, Row};
use crate::MISSING;
use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{ContentArrangement, Table};
use rooftop_core::analysis::Analysis;
use rooftop_core::device::DeviceSpec;
use rooftop_core::diagnose::Finding;
use rooftop_core::units::{as_given, pct, sig3, us};
use std::fmt::Write as _;

/// Width every table is laid out for.
pub const WIDTH: u16 = 100;

/// A terminal table: a comfy-table [`Table`] (rows, padding and lower bounds are set on
/// it as usual, through `Deref`) whose `Display` lays it out with [`layout`] so that it
/// fits its width and breaks no token.
#[derive(Debug, Clone)]
pub(crate) struct TextTable(Table);

impl std::ops::Deref for TextTable {
    type Target = Table;
    fn deref(&self) -> &Table {
        &self.0
    }
}

impl std::ops::DerefMut for TextTable {
    fn deref_mut(&mut self) -> &mut Table {
        &mut self.0
    }
}

impl std::fmt::Display for TextTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let width = self.0.width().map_or(usize::from(WIDTH), usize::from);
        write!(f, "{}", layout::lay_out(&self.0, width))
    }
}

pub(crate) fn table(header: &[&str]) -> TextTable {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(WIDTH)
        .set_header(header.to_vec());
    TextTable(t)
}

fn rows_table(rows: Vec<Row>) -> String {
    let mut t = table(&["metric", "value", "source"]);
    for r in rows {
        t.add_row(r.to_vec());
    }
    t.to_string()
}

/// Renders one analysis.
pub fn analysis(a: &Analysis) -> String {
    // Title on two lines: op and shape, then the device (long names would pass 100
    // columns on one).
    let mut out = format!(
        "{} {}\ndevice: {} [{}]\n",
        a.work.class.as_str(),
        a.work.shape,
        a.device.name,
        a.device.id
    );
    if let Some(k) = &a.kernel_name {
        let _ = writeln!(out, "kernel {k}");
    }
    out.push_str(&rows_table(analysis_rows(a)));
    out.push('\n');
    if !a.work.assumptions.is_empty() {
        out.push_str("assumptions:\n");
        for s in &a.work.assumptions {
            out.push_str(&wrap(s, usize::from(WIDTH), "  - ", "    "));
        }
    }
    out.push_str(&findings(a));
    out
}

fn findings(a: &Analysis) -> String {
    if a.findings.is_empty() {
        return if a.roofline.achieved.is_none() {
            "findings: none without a measured time (pass --time-us)\n".to_string()
        } else {
            "findings: none\n".to_string()
        };
    }
    let mut t = table(&["severity", "at stake", "finding"]);
    for f in &a.findings {
        t.add_row(vec![f.severity.to_string(), stake_cell(f), finding_text(f)]);
    }
    format!("{t}\n")
}

/// A finding as one table cell: title, evidence, recommendation, expected gain.
pub(crate) fn finding_text(f: &Finding) -> String {
    let mut text = format!("{}: {}\n→ {}", f.title, f.evidence, f.recommendation);
    if let Some(g) = &f.expected_gain {
        let _ = write!(text, "\nexpected gain: {g}");
    }
    text
}

/// The "at stake" cell: the time and its share of the window, or "—" when the finding
/// measures none (it is then info).
pub(crate) fn stake_cell(f: &Finding) -> String {
    f.stake.map_or_else(
        || MISSING.to_string(),
        |s| format!("{}\n{}", us(s.time_us), pct(s.share_pct())),
    )
}

/// "at stake: 38.0 µs (38.0% of the trace window)", or `None`.
pub(crate) fn stake_sentence(f: &Finding) -> Option<String> {
    f.stake.map(|s| stake_text(s.time_us, s.share_pct(), s.window))
}

/// [`stake_sentence`] of a finding as exports hold it.
pub(crate) fn record_stake_sentence(
    f: &rooftop_core::schema::finding::FindingRecord,
) -> Option<String> {
    match (f.time_at_stake_us, f.percent_of_total_time, f.window) {
        (Some(t), Some(p), Some(w)) => Some(stake_text(t, p, w)),
        _ => None,
    }
}

pub(crate) fn stake_text(
    time_us: f64,
    share_pct: f64,
    window: rooftop_core::diagnose::WindowKind,
) -> String {
    format!("at stake: {} ({} of {})", us(time_us), pct(share_pct), window.description())
}

/// Renders the device list. Units live in the header so the rows stay narrow; the vendor
/// and confidence columns are left to the other formats, for width. The peaks and the
/// bandwidth are datasheet figures, not computed ones: `as_given` keeps their whole
/// digits (the A100's 2039 GB/s stays 2039, not 2040); the ridge point is computed
/// (`sig3`).
pub fn devices(devs: &[DeviceSpec]) -> String {
    let header: Vec<String> = crate::devices::COLUMNS
        .iter()
        .filter(|c| !matches!(c.key, "vendor" | "confidence"))
        .map(crate::devices::Column::with_unit)
        .collect();
    let mut t = table(&header.iter().map(String::as_str).collect::<Vec<_>>());
    let dash = || MISSING.to_string();
    for d in devs {
        let r = DeviceRow::of(d);
        t.add_row(vec![
            r.id,
            r.name,
            r.fp16_matrix_tflops.map_or_else(dash, as_given),
            r.fp32_tflops.map_or_else(dash, as_given),
            as_given(r.bandwidth_gbs),
            r.ridge_flop_per_byte.map_or_else(dash, sig3),
        ]);
    }
    format!(
        "{t}\n{} devices. Dense catalog peaks (— where the device has no such units).\nRidge = \
         FP16 (else BF16) matrix, else FP32, over DRAM bandwidth.\n`rooftop devices ID` shows \
         every figure with its source.\n",
        devs.len()
    )
}

/// Renders everything known about one device, with sources.
pub fn device_detail(d: &DeviceSpec) -> String {
    let mut out = format!("{} [{}]\n", d.name, d.id);
    out.push_str(&rows_table(device_rows(d)));
    out.push('\n');
    for line in device_footer(d) {
        out.push_str(&wrap(&line, usize::from(WIDTH), "", "  "));
    }
    out
}

/// Wraps `text` at word boundaries to lines of at most `width` characters; the first
/// line starts with `first`, the others with `rest`.
pub(crate) fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        let len = line.chars().count();
        if !empty && len + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
        } else if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}
