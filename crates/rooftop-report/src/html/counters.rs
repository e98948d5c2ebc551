//! The `rooftop counters --format html` page: the hierarchical roofline (one mark per
//! kernel and memory level the counters give), the kernels table, findings, what could
//! not be derived, and the formulas used.

use super::{finding, kv, note, notes, roofline_block, Cell, Page, Section, Table};
use crate::counters::{dram_cell, roof_cell};
use crate::svg::esc;
use crate::svg::{Mark, Roof, RoofStyle, RooflineChart};
use crate::MISSING;
use rooftop_core::counters::rules::{ranked, AnyFinding};
use rooftop_core::counters::{CounterReport, KernelRecord, RoofSource, ToolFinding};
use rooftop_core::device::MemLevel;
use rooftop_core::roofline::Bound;
use rooftop_core::units::{pct, si, sig3};
use std::fmt::Write as _;

fn style(source: RoofSource) -> RoofStyle {
    match source {
        RoofSource::Measured | RoofSource::Calibrated => RoofStyle::Measured,
        RoofSource::Catalog | RoofSource::None => RoofStyle::Catalog,
    }
}

fn row_id(i: usize) -> String {
    format!("k{i}")
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> Cell {
    Cell::num(&v.map_or_else(|| MISSING.to_string(), f), v)
}

/// The DRAM bytes the `DRAM` cell shows, for sorting.
fn dram_total(k: &KernelRecord) -> Option<f64> {
    match (k.dram_bytes_read, k.dram_bytes_written) {
        (Some(r), Some(w)) => Some(r + w),
        _ => k.derived.dram_bytes_total.or(k.dram_bytes_read).or(k.dram_bytes_written),
    }
}

fn chart(r: &CounterReport, rows: &[KernelRecord]) -> RooflineChart {
    let st = style(r.roofs.source);
    let mut roofs: Vec<Roof> = Vec::new();
    for b in &r.roofs.bandwidth {
        let value = b.gbs * 1e9;
        let level = b.level.as_str();
        roofs.push(Roof {
            label: level.to_ascii_uppercase(),
            value,
            memory: true,
            style: st,
            primary: b.level == MemLevel::Dram,
            tip: format!("{level} {}: {}", r.roofs.source.as_str(), si(value, "B/s")),
        });
    }
    // The roof of the first (longest) kernel that has one.
    let first = rows.iter().find_map(|k| k.compute_roof.as_ref()).map(|c| (c.unit, c.precision));
    for c in &r.roofs.compute {
        let value = c.tflops * 1e12;
        let primary = first == Some((c.unit, c.precision));
        roofs.push(Roof {
            label: format!("{} {}", c.precision.as_str(), c.unit.as_str()),
            value,
            memory: false,
            style: st,
            primary,
            tip: format!(
                "{} {} {}: {}",
                c.precision.as_str(),
                c.unit.as_str(),
                r.roofs.source.as_str(),
                si(value, "FLOP/s")
            ),
        });
    }
    let total: f64 = rows.iter().filter_map(|k| k.total_duration_ns).sum::<f64>().max(1e-9);
    let mut marks = Vec::new();
    for (i, k) in rows.iter().enumerate() {
        let Some(rate) = k.achieved_tflops.map(|t| t * 1e12).filter(|v| *v > 0.0) else {
            continue;
        };
        for p in &k.roofline {
            let Some(ai) = p.arithmetic_intensity.filter(|v| v.is_finite() && *v > 0.0) else {
                continue;
            };
            marks.push(Mark {
                intensity: ai,
                rate,
                weight: k.total_duration_ns.unwrap_or(0.0) / total,
                bound: k.bound,
                hollow: p.level != MemLevel::Dram,
                row: Some(row_id(i)),
                tip: [
                    format!("{} ({} point)", k.name, p.level.as_str()),
                    format!("{} FLOP/B at {}", sig3(ai), p.level.as_str()),
                    format!("{} achieved", si(rate, "FLOP/s")),
                    // The kernel's `% roof`, the table's cell itself; the point's own
                    // share is of its level's bandwidth roof, and says so.
                    k.pct_of_roof.map_or(String::new(), |_| {
                        format!("% roof: {} (as in the table)", roof_cell(k))
                    }),
                    match (p.achieved_gbs, p.pct_of_roof) {
                        (Some(g), Some(x)) => format!(
                            "{} at {}: {} of its bandwidth roof",
                            si(g * 1e9, "B/s"),
                            p.level.as_str(),
                            pct(x)
                        ),
                        _ => String::new(),
                    },
                ]
                .into_iter()
                .filter(|l| !l.is_empty())
                .collect(),
            });
        }
    }
    RooflineChart { roofs, marks, title: "hierarchical roofline from counters".to_string() }
}

/// One of the profiler's own findings, labelled as the tool's.
fn tool_finding(t: &ToolFinding, kernel: &str) -> String {
    let sev = t.severity.as_str();
    let mut out = format!(
        "<div class=\"finding sev-{sev}\"><h3>{} <span class=\"badge {sev}\">{sev}</span> \
         <span class=\"badge\">{}</span></h3><p class=\"meta\">{}</p>",
        esc(&crate::counters::tool_title(t)),
        esc(&t.tool),
        esc(kernel)
    );
    let _ = write!(out, "<p><strong>{} says.</strong> {}</p>", esc(&t.tool), esc(&t.description));
    if let Some(sec) = &t.section {
        let _ = write!(out, "<p class=\"meta\">section <code>{}</code></p>", esc(sec));
    }
    out.push_str("</div>");
    out
}

/// The counters report page.
#[allow(clippy::many_single_char_names)]
pub fn counters(r: &CounterReport, dispatches: bool, top: usize) -> String {
    let rows: Vec<KernelRecord> = if dispatches {
        let records = r.dispatch_records();
        r.set.dispatches.iter().take(top).map(|d| records.record(d)).collect()
    } else {
        r.kernels.iter().take(top).cloned().collect()
    };
    let s = &r.set.source;
    let mut page = Page {
        title: format!("rooftop counters — {}", s.format.as_str()),
        subtitle: vec![
            format!(
                "{}, {}; files: {}",
                rooftop_core::diagnose::count(
                    r.set.dispatches.len() as u64,
                    "dispatch",
                    "dispatches"
                ),
                rooftop_core::diagnose::count(r.kernels.len() as u64, "kernel", "kernels"),
                s.files.join(", ")
            ),
            format!(
                "roofs: {}{}",
                r.roofs.source.as_str(),
                match (&r.roofs.device, r.roofs.candidates.as_slice()) {
                    (Some(d), _) => format!(" ({d})"),
                    (None, []) => String::new(),
                    (None, c) => format!(" (shared by {})", c.join(" / ")),
                }
            ),
        ],
        sections: Vec::new(),
    };
    let mut extra = r.roofs.notes.clone();
    extra.push(
        "filled marks: intensity against DRAM bytes; outlined marks: the same kernel against \
         L2, L1 or LDS bytes (hierarchical roofline)"
            .to_string(),
    );
    let ch = chart(r, &rows);
    let body = if ch.roofs.is_empty() && ch.marks.is_empty() {
        note(
            "No chart: no roofs (the files name no device rooftop knows: pass --device) and \
             no kernel with counted FLOPs and bytes.",
        )
    } else {
        if ch.marks.is_empty() {
            let zero = rows
                .iter()
                .any(|k| k.flops.as_ref().is_some_and(|f| f.values().all(|v| *v == 0.0)));
            extra.push(if zero {
                "No marks: the kernels shown execute no floating-point operations (pure data \
                 movement has no place on a FLOP/s axis); their bandwidth against the roofs \
                 is in the table."
                    .to_string()
            } else {
                "No marks: no kernel has both FLOPs and bytes counted (a roofline point needs \
                 both; see `Not derivable` below)."
                    .to_string()
            });
        }
        roofline_block(&ch, &extra)
    };
    page.sections.push(Section::new("roofline", "Roofline", body));

    let mut t = Table::new(&[
        "kernel",
        "#n",
        "#time/disp",
        "#DRAM",
        "#DRAM read",
        "#DRAM written",
        "#GB/s",
        "#TFLOP/s",
        "#AI F/B",
        "#% roof",
        "#L1 hit",
        "#L2 hit",
        "#occupancy",
        "bound",
    ]);
    for (i, k) in rows.iter().enumerate() {
        t.rows.push(super::Row {
            id: Some(row_id(i)),
            cells: vec![
                match k.id {
                    Some(id) => Cell::name_sub(&k.name, &format!("dispatch {id}")),
                    None => Cell::name(&k.name),
                },
                Cell::num(&k.count.to_string(), Some(k.count as f64)),
                opt(k.duration_ns, |v| si(v * 1e-9, "s")),
                Cell::num(&dram_cell(k), dram_total(k)),
                opt(k.dram_bytes_read, |v| si(v, "B")),
                opt(k.dram_bytes_written, |v| si(v, "B")),
                opt(k.achieved_gbs, sig3),
                opt(k.achieved_tflops, sig3),
                opt(k.arithmetic_intensity, sig3),
                Cell::num(&roof_cell(k), k.pct_of_roof),
                opt(k.l1_hit_rate_pct, pct),
                opt(k.l2_hit_rate_pct, pct),
                opt(k.derived.achieved_occupancy_pct, pct),
                Cell::text(k.bound.map_or(MISSING, Bound::as_str)),
            ],
        });
    }
    let mut body = t.render();
    let all = if dispatches { r.set.dispatches.len() } else { r.kernels.len() };
    if all > top {
        body.push_str(&note(&format!("{} more not shown (--top N).", all - top)));
    }
    page.sections.push(Section::new(
        "kernels",
        if dispatches { "Dispatches" } else { "Kernels" },
        body,
    ));

    let mut f = String::new();
    for k in &rows {
        for x in ranked(&k.findings, &k.tool_findings) {
            match x {
                AnyFinding::Rooftop(x) => f.push_str(&finding(&x.into(), Some(&k.name))),
                AnyFinding::Tool(t) => f.push_str(&tool_finding(t, &k.name)),
            }
        }
    }
    if f.is_empty() {
        f = note("No findings for the kernels shown.");
    }
    page.sections.push(Section::new("findings", "Findings", f));
    if let Some(a) = &r.set.activity {
        for b in crate::counters::activity_blocks(a, top) {
            let names: Vec<String> = b
                .header
                .iter()
                .enumerate()
                .map(|(i, h)| if i == 0 { h.clone() } else { format!("#{h}") })
                .collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let mut t = Table::new(&refs);
            for row in &b.rows {
                let cells = row
                    .iter()
                    .enumerate()
                    .map(|(i, c)| if i == 0 { Cell::name(c) } else { Cell::text(c) })
                    .collect();
                t.rows.push(super::Row { id: None, cells });
            }
            let mut body = String::new();
            if !b.text.is_empty() {
                body.push_str(&note(&b.text));
            }
            body.push_str(&t.render());
            page.sections.push(Section::new(b.id, b.title.as_str(), body));
        }
    }

    let mut missing: Vec<(String, String)> = Vec::new();
    for k in &rows {
        for m in &k.missing {
            if !missing.iter().any(|(q, _)| *q == m.quantity) {
                missing.push((m.quantity.to_string(), format!("needs {}", m.needs)));
            }
        }
    }
    if !missing.is_empty() {
        page.sections.push(Section::new(
            "missing",
            "Not derivable from these counters",
            kv(&missing),
        ));
    }
    let mut prov = String::new();
    let _ = write!(prov, "<p>Formulas used, with their sources:</p>");
    prov.push_str(&notes(&r.formulas));
    prov.push_str(&notes(&s.notes));
    let d = &r.set.device;
    let mut dev: Vec<(String, String)> = Vec::new();
    if let Some(n) = &d.name {
        dev.push(("device".to_string(), n.clone()));
    }
    if let Some(a) = &d.arch {
        dev.push(("arch".to_string(), a.clone()));
    }
    if let Some(c) = d.compute_units {
        dev.push(("compute units".to_string(), c.to_string()));
    }
    prov.push_str(&kv(&dev));
    page.sections.push(Section::new("provenance", "Provenance", prov));
    page.render()
}
