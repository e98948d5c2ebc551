//! Renderers of a [`Diff`]: terminal table, Markdown (for the pull-request comment a CI
//! job posts), CSV and JSON (every row), HTML (sortable tables).
//!
//! The values of a row are the metric's: the table, Markdown and HTML head them `base`
//! and `new` and show them with their unit; CSV and JSON, whose cells are bare numbers,
//! name them after the unit (`base_us`, `new_us`; [`super::Metric::unit_suffix`]).

use super::{Diff, RowDiff, Status};
use crate::html::{self, Cell, Page, Section, Table as HTable};
use crate::table::{table as new_table, wrap, WIDTH};
use crate::MISSING;
use rooftop_core::diagnose::count;
use rooftop_core::units::{pct, sig3};
use serde::ser::SerializeMap as _;
use serde::Serialize;
use std::fmt::Write as _;

fn change(r: &RowDiff) -> String {
    r.change_pct.map_or_else(
        || MISSING.to_string(),
        |c| format!("{}{}", if c > 0.0 { "+" } else { "" }, pct(c)),
    )
}

fn p_value(r: &RowDiff) -> String {
    match r.test {
        Some(t) if t.p_value < 0.001 => "<0.001".to_string(),
        Some(t) => sig3(t.p_value),
        None => MISSING.to_string(),
    }
}

fn value(d: &Diff, v: Option<f64>) -> String {
    v.map_or_else(|| MISSING.to_string(), |v| d.metric.show(v))
}

fn title(d: &Diff) -> String {
    format!("rooftop diff ({} reports): {} → {}", d.kind.as_str(), d.base, d.new)
}

fn metric_line(d: &Diff) -> String {
    let what = match d.metric {
        super::Metric::Time => match d.kind {
            super::Kind::Bench => "median time per run; lower is better",
            super::Kind::Trace | super::Kind::TraceRanks => "mean time per call; lower is better",
            super::Kind::Analyze => "measured time; lower is better",
            super::Kind::Counters => "mean duration per dispatch; lower is better",
        },
        super::Metric::Attainment => "roofline attainment; higher is better",
        super::Metric::Flops => "achieved FLOP/s; higher is better",
        super::Metric::Bandwidth => "achieved bytes/s; higher is better",
    };
    format!("metric: {} ({what}); test: {}", d.metric.as_str(), d.test)
}

/// The one-line verdict: what the gate decided.
pub fn verdict(d: &Diff) -> String {
    let rows = d.rows.iter().filter(|r| r.fails_gate).count();
    let total = d.total.as_ref().is_some_and(|t| t.fails_gate);
    let (regressions, improvements) = (d.count(Status::Regression), d.count(Status::Improvement));
    let regressions = count(regressions as u64, "regression", "regressions");
    let improvements = count(improvements as u64, "improvement", "improvements");
    match d.fail_above_pct {
        Some(t) if rows > 0 || total => format!(
            "FAIL: {}{} regressed by more than {t}% ({regressions}, {improvements} in all).",
            count(rows as u64, "row", "rows"),
            if total { " and the total" } else { "" }
        ),
        Some(t) => format!(
            "OK: nothing regressed by more than {t}% ({regressions} under it, {improvements})."
        ),
        None => format!(
            "{regressions}, {improvements} (no gate: pass --fail-above PCT to fail on a regression)."
        ),
    }
}

fn groups(d: &Diff) -> [(&'static str, Status); 4] {
    let _ = d;
    [
        ("Regressions", Status::Regression),
        ("Improvements", Status::Improvement),
        ("Added", Status::Added),
        ("Removed", Status::Removed),
    ]
}

fn summary_lines(d: &Diff) -> Vec<String> {
    let mut out = Vec::new();
    let unchanged = d.count(Status::Unchanged);
    if unchanged > 0 {
        out.push(format!(
            "{} unchanged (under {}% or within noise); --format csv or json lists every row.",
            count(unchanged as u64, "row", "rows"),
            d.min_change_pct
        ));
    }
    let nc = d.count(Status::NotComparable);
    if nc > 0 {
        let have = if nc == 1 { "has" } else { "have" };
        out.push(format!(
            "{} {have} no {} on one side (not compared).",
            count(nc as u64, "row", "rows"),
            d.metric.as_str()
        ));
    }
    let norm = d.rows.iter().filter(|r| r.matched_by == "normalised").count();
    if norm > 0 {
        out.push(format!(
            "{} matched by normalised name (template arguments and digits ignored).",
            count(norm as u64, "row", "rows")
        ));
    }
    if let Some(t) = &d.total {
        out.push(format!(
            "total ({}): {} → {} ({}){}",
            t.shape,
            value(d, t.base),
            value(d, t.new),
            change(t),
            if t.fails_gate { " FAIL" } else { "" }
        ));
    }
    out.push(verdict(d));
    out
}

/// The terminal's name cell: names cut to 60 characters (C++ template names run to
/// kilobytes; the full names are in JSON and CSV).
fn name_cell(r: &RowDiff) -> String {
    let cut = |n: &str| {
        if n.chars().count() <= 60 {
            n.to_string()
        } else {
            format!("{}…", n.chars().take(59).collect::<String>())
        }
    };
    let mut s = cut(&r.name);
    if let Some(b) = &r.base_name {
        let _ = write!(s, "\n(was {})", cut(b));
    }
    s
}

/// The terminal table.
pub fn table(d: &Diff) -> String {
    let w = usize::from(WIDTH);
    let mut out = wrap(&title(d), w, "", "  ");
    out.push_str(&wrap(&metric_line(d), w, "", "  "));
    for (heading, status) in groups(d) {
        let rows: Vec<&RowDiff> = d.rows.iter().filter(|r| r.status == status).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{heading} ({})", rows.len());
        let mut t = new_table(&["section", "name", "shape", "base", "new", "change", "p", ""]);
        for r in rows {
            t.add_row(vec![
                r.section.clone(),
                name_cell(r),
                r.shape.clone(),
                value(d, r.base),
                value(d, r.new),
                change(r),
                p_value(r),
                if r.fails_gate { "FAIL".to_string() } else { String::new() },
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    out.push('\n');
    for l in summary_lines(d) {
        out.push_str(&wrap(&l, w, "", "  "));
    }
    out
}

use crate::markdown::cell as md_cell;

/// Markdown, for a pull-request comment.
pub fn markdown(d: &Diff) -> String {
    let mut out = format!("## {}\n\n", md_cell(&title(d)));
    let _ = writeln!(out, "**{}**\n", md_cell(&verdict(d)));
    let _ = writeln!(out, "{}\n", md_cell(&metric_line(d)));
    for (heading, status) in groups(d) {
        let rows: Vec<&RowDiff> = d.rows.iter().filter(|r| r.status == status).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### {heading} ({})\n", rows.len());
        out.push_str("| section | name | shape | base | new | change | p | gate |\n|---|---|---|---:|---:|---:|---:|---|\n");
        for r in rows {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} | {} | {} | {} | {} |",
                md_cell(&r.section),
                md_cell(&name_cell(r)).replace('`', "'"),
                md_cell(&r.shape),
                value(d, r.base),
                value(d, r.new),
                change(r),
                p_value(r),
                if r.fails_gate { "**FAIL**" } else { "" }
            );
        }
        out.push('\n');
    }
    for l in summary_lines(d) {
        let _ = writeln!(out, "- {}", md_cell(&l));
    }
    out
}

/// Every row as CSV (the total last, section `total`). The values' columns are named
/// after the metric's unit, as in JSON: `base_us` and `new_us` for times.
pub fn csv(d: &Diff) -> Result<String, crate::RenderError> {
    let num = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v}"));
    let unit = d.metric.unit_suffix();
    let (base_key, new_key) = (format!("base_{unit}"), format!("new_{unit}"));
    let header = [
        "section",
        "name",
        "shape",
        "status",
        "metric",
        base_key.as_str(),
        new_key.as_str(),
        "change_pct",
        "test",
        "p_value",
        "matched_by",
        "base_name",
        "fails_gate",
    ];
    let mut rows = Vec::new();
    for r in d.rows.iter().chain(d.total.iter()) {
        rows.push(vec![
            r.section.clone(),
            r.name.clone(),
            r.shape.clone(),
            r.status.as_str().to_string(),
            d.metric.as_str().to_string(),
            num(r.base),
            num(r.new),
            num(r.change_pct),
            r.test.map(|t| t.name.to_string()).unwrap_or_default(),
            num(r.test.map(|t| t.p_value)),
            r.matched_by.to_string(),
            r.base_name.clone().unwrap_or_default(),
            r.fails_gate.to_string(),
        ]);
    }
    crate::csv::text(&header, rows)
}

/// A row's two values under keys named after the metric's unit: `base_us`, `new_us`.
struct Values {
    unit: &'static str,
    base: Option<f64>,
    new: Option<f64>,
}

impl Serialize for Values {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry(&format!("base_{}", self.unit), &self.base)?;
        m.serialize_entry(&format!("new_{}", self.unit), &self.new)?;
        m.end()
    }
}

/// One row as JSON writes it (`docs/json-schema.md`, "Diff").
#[derive(Serialize)]
struct JsonRow<'a> {
    section: &'a str,
    name: &'a str,
    shape: &'a str,
    status: Status,
    #[serde(flatten)]
    values: Values,
    change_pct: Option<f64>,
    test: Option<super::Test>,
    matched_by: &'static str,
    base_name: Option<&'a str>,
    fails_gate: bool,
}

impl<'a> JsonRow<'a> {
    fn of(r: &'a RowDiff, d: &Diff) -> JsonRow<'a> {
        JsonRow {
            section: &r.section,
            name: &r.name,
            shape: &r.shape,
            status: r.status,
            values: Values { unit: d.metric.unit_suffix(), base: r.base, new: r.new },
            change_pct: r.change_pct,
            test: r.test,
            matched_by: r.matched_by,
            base_name: r.base_name.as_deref(),
            fails_gate: r.fails_gate,
        }
    }
}

/// The comparison as JSON writes it.
#[derive(Serialize)]
struct JsonDiff<'a> {
    schema_version: u32,
    kind: super::Kind,
    base: &'a str,
    new: &'a str,
    metric: super::Metric,
    alpha: f64,
    min_change_pct: f64,
    fail_above_pct: Option<f64>,
    test: &'a str,
    verdict: String,
    failing: usize,
    rows: Vec<JsonRow<'a>>,
    total: Option<JsonRow<'a>>,
}

/// The whole comparison as JSON: every row with its values named after the metric's
/// unit (`base_us`/`new_us`, `_pct`, `_tflops`, `_gbs`), as the export held them.
pub fn json(d: &Diff) -> String {
    crate::json::pretty(&JsonDiff {
        schema_version: d.schema_version,
        kind: d.kind,
        base: &d.base,
        new: &d.new,
        metric: d.metric,
        alpha: d.alpha,
        min_change_pct: d.min_change_pct,
        fail_above_pct: d.fail_above_pct,
        test: &d.test,
        verdict: verdict(d),
        failing: d.failing().len(),
        rows: d.rows.iter().map(|r| JsonRow::of(r, d)).collect(),
        total: d.total.as_ref().map(|r| JsonRow::of(r, d)),
    })
}

/// HTML: the verdict, then a sortable table per group and one of every row.
pub fn html(d: &Diff) -> String {
    let mut page = Page { title: title(d), subtitle: vec![metric_line(d)], sections: Vec::new() };
    let badge = if d.failing().is_empty() { "improvement" } else { "fail" };
    let mut body =
        format!("<p><span class=\"badge {badge}\">{}</span></p>", html::esc(&verdict(d)));
    body.push_str(&html::notes(&summary_lines(d)[..summary_lines(d).len().saturating_sub(1)]));
    page.sections.push(Section::new("verdict", "Verdict", body));
    let mk = |rows: Vec<&RowDiff>| {
        let mut t = HTable::new(&[
            "section", "name", "shape", "#base", "#new", "#change", "#p", "matched", "status",
        ]);
        for r in rows {
            t.push(vec![
                Cell::text(&r.section),
                match &r.base_name {
                    Some(b) => Cell::name_sub(&r.name, &format!("was {b}")),
                    None => Cell::name(&r.name),
                },
                Cell::text(&r.shape),
                Cell::num(&value(d, r.base), r.base),
                Cell::num(&value(d, r.new), r.new),
                Cell::num(&change(r), r.change_pct),
                Cell::num(&p_value(r), r.test.map(|t| t.p_value)),
                Cell::text(r.matched_by),
                Cell::raw(format!(
                    "<span class=\"badge {}\">{}</span>",
                    if r.fails_gate { "fail" } else { r.status.as_str() },
                    html::esc(&if r.fails_gate {
                        format!("{} FAIL", r.status.as_str())
                    } else {
                        r.status.as_str().to_string()
                    })
                )),
            ]);
        }
        t.render()
    };
    for (heading, status) in groups(d) {
        let rows: Vec<&RowDiff> = d.rows.iter().filter(|r| r.status == status).collect();
        if !rows.is_empty() {
            let id = heading.to_ascii_lowercase();
            page.sections.push(Section::new(id, format!("{heading} ({})", rows.len()), mk(rows)));
        }
    }
    page.sections.push(Section::new(
        "all",
        format!("Every row ({})", d.rows.len()),
        mk(d.rows.iter().collect()),
    ));
    page.render()
}
