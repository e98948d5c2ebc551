//! The HTML report: one self-contained file per command (`--format html`), with the
//! roofline chart in SVG ([`crate::svg`]), the same sections as the terminal output as
//! sortable tables, the findings with their evidence and recommendation, and the
//! provenance of every roof and the device spec used.
//!
//! Invariants: no external resource (no CDN, no font, no image: the CSS and the little
//! script are inlined, the favicon is an empty data URL), so the file opens from disk,
//! works offline and prints; every text goes through [`esc`]; numbers are the analysis
//! objects' own, formatted as the terminal formats them (three significant digits, SI
//! units), with the full-precision value in `data-v` for sorting.

mod analysis;
mod bench;
mod collectives;
mod counters;
mod gaps;
mod model;
mod roofs;
mod timeline;
mod trace;
mod xla;

pub use analysis::{analyses, device_detail, devices};
pub use bench::{bench, ceilings};
pub use counters::counters;
pub use model::model;
pub use trace::{trace, trace_ranks};

pub(crate) use crate::svg::esc;
use crate::svg::{self, RoofStyle, RooflineChart};
use rooftop_core::roofline::Bound;
use rooftop_core::schema::finding::FindingRecord;
use std::fmt::Write as _;

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// One section of a page: an anchor, a heading and its HTML.
#[derive(Debug, Clone)]
pub(crate) struct Section {
    pub id: String,
    pub title: String,
    pub body: String,
    /// Listed in the navigation bar at the top.
    pub nav: bool,
}

impl Section {
    pub fn new(id: impl Into<String>, title: impl Into<String>, body: String) -> Section {
        Section { id: id.into(), title: title.into(), body, nav: true }
    }
}

/// A whole report page.
#[derive(Debug, Clone, Default)]
pub(crate) struct Page {
    pub title: String,
    /// Lines under the title (device, window, backend).
    pub subtitle: Vec<String>,
    pub sections: Vec<Section>,
}

impl Page {
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(64 * 1024);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"generator\" content=\"rooftop {}\">\n\
             <link rel=\"icon\" href=\"data:,\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<main>\n<header>\n<h1>{}</h1>\n",
            env!("CARGO_PKG_VERSION"),
            esc(&self.title),
            esc(&self.title)
        );
        for s in &self.subtitle {
            let _ = writeln!(out, "<p>{}</p>", esc(s));
        }
        out.push_str("</header>\n");
        if self.sections.len() > 2 {
            out.push_str("<nav aria-label=\"sections\">");
            for s in self.sections.iter().filter(|s| s.nav) {
                let _ = write!(out, "<a href=\"#{}\">{}</a>", esc(&s.id), esc(&s.title));
            }
            out.push_str("</nav>\n");
        }
        for s in &self.sections {
            let _ = write!(
                out,
                "<section id=\"{}\">\n<h2>{}</h2>\n{}\n</section>\n",
                esc(&s.id),
                esc(&s.title),
                s.body
            );
        }
        let _ = write!(
            out,
            "<footer>Written by rooftop {}. A self-contained file: no network access. Every \
             number comes from the analysis, with its provenance; hover a mark or a roof for \
             details, click a mark to find its row, click a column header to sort.</footer>\n\
             </main>\n<div id=\"tip\" role=\"tooltip\"></div>\n<script>\n{JS}</script>\n</body>\n</html>\n",
            env!("CARGO_PKG_VERSION")
        );
        out
    }
}

/// A table column.
#[derive(Debug, Clone)]
pub(crate) struct Col {
    pub name: String,
    pub num: bool,
}

/// Columns from names; a leading `#` marks a numeric column (`"#time"`).
pub(crate) fn cols(names: &[&str]) -> Vec<Col> {
    names
        .iter()
        .map(|n| match n.strip_prefix('#') {
            Some(rest) => Col { name: rest.to_string(), num: true },
            None => Col { name: (*n).to_string(), num: false },
        })
        .collect()
}

/// A table cell: its HTML and, for numbers, the value to sort by.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cell {
    pub html: String,
    pub v: Option<f64>,
    pub class: Option<&'static str>,
}

impl Cell {
    /// Plain text.
    pub fn text(s: &str) -> Cell {
        Cell { html: esc(s), ..Cell::default() }
    }

    /// A name (kernel, op): monospace, wraps anywhere.
    pub fn name(s: &str) -> Cell {
        Cell { html: format!("<code>{}</code>", esc(s)), v: None, class: Some("name") }
    }

    /// A name with a second, muted line.
    pub fn name_sub(s: &str, sub: &str) -> Cell {
        Cell {
            html: format!("<code>{}</code><span class=\"sub\">{}</span>", esc(s), esc(sub)),
            v: None,
            class: Some("name"),
        }
    }

    /// A number as displayed, sorted by `v`.
    pub fn num(display: &str, v: Option<f64>) -> Cell {
        Cell { html: esc(display), v: v.filter(|x| x.is_finite()), class: Some("num") }
    }

    /// Already-escaped HTML.
    pub fn raw(html: String) -> Cell {
        Cell { html, ..Cell::default() }
    }
}

/// A table row, with an optional `id` (for the chart's marks to point at).
#[derive(Debug, Clone, Default)]
pub(crate) struct Row {
    pub id: Option<String>,
    pub cells: Vec<Cell>,
}

impl Row {
    pub fn new(cells: Vec<Cell>) -> Row {
        Row { id: None, cells }
    }
}

/// A sortable table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    pub cols: Vec<Col>,
    pub rows: Vec<Row>,
}

impl Table {
    pub fn new(names: &[&str]) -> Table {
        Table { cols: cols(names), rows: Vec::new() }
    }

    pub fn push(&mut self, cells: Vec<Cell>) {
        self.rows.push(Row::new(cells));
    }

    pub fn render(&self) -> String {
        let mut out =
            String::from("<div class=\"table-wrap\"><table class=\"sortable\"><thead><tr>");
        for c in &self.cols {
            let _ = write!(
                out,
                "<th{} scope=\"col\">{}</th>",
                if c.num { " class=\"num\"" } else { "" },
                esc(&c.name)
            );
        }
        out.push_str("</tr></thead><tbody>");
        for r in &self.rows {
            match &r.id {
                Some(id) => {
                    let _ = write!(out, "<tr id=\"{}\">", esc(id));
                }
                None => out.push_str("<tr>"),
            }
            for c in &r.cells {
                out.push_str("<td");
                if let Some(cl) = c.class {
                    let _ = write!(out, " class=\"{cl}\"");
                }
                if let Some(v) = c.v {
                    let _ = write!(out, " data-v=\"{v}\"");
                }
                let _ = write!(out, ">{}</td>", c.html);
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table></div>");
        out
    }
}

/// Notes as a muted list (nothing for none).
pub(crate) fn notes(items: &[String]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ul class=\"notes\">");
    for n in items {
        let _ = write!(out, "<li>{}</li>", esc(n));
    }
    out.push_str("</ul>");
    out
}

/// A paragraph of muted text.
pub(crate) fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>", esc(text))
}

/// A definition list of `(term, value)` pairs.
pub(crate) fn kv(items: &[(String, String)]) -> String {
    let mut out = String::from("<dl class=\"kv\">");
    for (k, v) in items {
        let _ = write!(out, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    }
    out.push_str("</dl>");
    out
}

/// One finding: title, severity, its time at stake (when it has one), evidence,
/// recommendation, expected gain; `meta` is an extra line (which result).
pub(crate) fn finding(f: &FindingRecord, meta: Option<&str>) -> String {
    let sev = f.severity.as_str();
    let mut out = format!(
        "<div class=\"finding sev-{sev}\"><h3>{} <span class=\"badge {sev}\">{sev}</span></h3>",
        esc(&f.title)
    );
    for m in meta.map(str::to_string).into_iter().chain(crate::table::record_stake_sentence(f)) {
        let _ = write!(out, "<p class=\"meta\">{}</p>", esc(&m));
    }
    let _ = write!(
        out,
        "<p><strong>Evidence.</strong> {}</p><p><strong>Recommendation.</strong> {}</p>",
        esc(&f.evidence),
        esc(&f.recommendation)
    );
    if let Some(g) = &f.expected_gain {
        let _ = write!(out, "<p><strong>Expected gain.</strong> {}</p>", esc(g));
    }
    let _ = write!(out, "<p class=\"meta\">id <code>{}</code></p></div>", esc(&f.id));
    out
}

/// The chart, its legend (only the styles and bounds it uses) and notes under it.
pub(crate) fn roofline_block(chart: &RooflineChart, extra: &[String]) -> String {
    let mut out = format!("<div class=\"chart-box\">{}", svg::roofline(chart));
    out.push_str("<div class=\"legend\">");
    let mut styles: Vec<RoofStyle> = Vec::new();
    for r in &chart.roofs {
        if !styles.contains(&r.style) {
            styles.push(r.style);
        }
    }
    for s in styles {
        let dash = match s {
            RoofStyle::Catalog => "",
            RoofStyle::Measured => " stroke-dasharray=\"7 4\"",
            RoofStyle::Counters => " stroke-dasharray=\"2 3\"",
            RoofStyle::Achievable => " stroke-dasharray=\"9 3 2 3\"",
        };
        let _ = write!(
            out,
            "<span><svg viewBox=\"0 0 34 14\" aria-hidden=\"true\"><line x1=\"1\" y1=\"7\" x2=\"33\" y2=\"7\" stroke=\"#4d5560\" stroke-width=\"2\"{dash}/></svg>{} roof</span>",
            esc(s.as_str())
        );
    }
    let mut bounds: Vec<Option<Bound>> = Vec::new();
    for m in &chart.marks {
        if !bounds.contains(&m.bound) {
            bounds.push(m.bound);
        }
    }
    for b in bounds {
        let _ = write!(
            out,
            "<span><svg viewBox=\"0 0 14 14\" aria-hidden=\"true\" style=\"width:14px\"><circle cx=\"7\" cy=\"7\" r=\"6\" fill=\"{c}\" fill-opacity=\"0.6\" stroke=\"{c}\"/></svg>{}</span>",
            b.map_or("bound unknown", |b| match b {
                Bound::Memory => "memory-bound",
                Bound::Compute => "compute-bound",
                Bound::Balanced => "balanced",
            }),
            c = svg::bound_colour(b)
        );
    }
    if chart.marks.iter().any(|m| m.hollow) {
        out.push_str("<span>dashed outline: the attainable rate (no measured time)</span>");
    }
    if !chart.marks.is_empty() {
        out.push_str("<span>mark area ∝ share of time</span>");
    }
    out.push_str("</div></div>");
    out.push_str(&notes(extra));
    out
}

/// The roofs table: every roof on the chart with its value, provenance and source.
pub(crate) fn roofs_table(entries: &[roofs::RoofEntry]) -> String {
    let mut t = Table::new(&["roof", "kind", "#value", "provenance", "confidence", "source"]);
    for e in entries {
        t.push(vec![
            Cell::text(&e.name),
            Cell::text(if e.roof.memory { "memory" } else { "compute" }),
            Cell::num(&e.value_text, Some(e.roof.value)),
            Cell::text(&e.provenance),
            Cell::text(&e.confidence),
            Cell::text(&e.source),
        ]);
    }
    t.render()
}

/// A stable HTML id from free text (`GEMM` row 3 → `r-gemm-3`).
pub(crate) fn anchor(prefix: &str, parts: &[&str]) -> String {
    let mut out = prefix.to_string();
    for p in parts {
        out.push('-');
        for c in p.chars() {
            if c.is_ascii_alphanumeric() {
                out.push(c.to_ascii_lowercase());
            } else if !out.ends_with('_') {
                out.push('_');
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests;
