//! HTML of `rooftop bench` (results on the roofline of the roofs they were judged
//! against) and `rooftop ceilings` (the bandwidth-versus-working-set sweep and the
//! measured roofs).

use super::roofs::{ceiling_roofs, chart_roofs, roof_ref, RoofEntry};
use super::{
    anchor, esc, finding, kv, note, notes, roofline_block, roofs_table, Cell, Page, Row, Section,
    Table,
};
use crate::svg::{self, BytesChart, Mark, Marker, RooflineChart, Series};
use crate::MISSING;
use rooftop_core::device::MemLevel;
use rooftop_core::diagnose::Severity;
use rooftop_core::schema::bench::CacheState;
use rooftop_core::schema::bench::{BenchReport, ResultRecord};
use rooftop_core::schema::ceilings::Ceilings;
use rooftop_core::units::{pct, si, sig3};
use std::fmt::Write as _;

fn opt_cell(v: Option<f64>, fmt: impl Fn(f64) -> String) -> Cell {
    Cell::num(&v.map_or_else(|| "–".to_string(), fmt), v)
}

fn result_id(i: usize) -> String {
    anchor("res", &[&i.to_string()])
}

fn who(r: &ResultRecord) -> String {
    let mut s = format!("{} {} [{}]", r.kernel, r.config.label, r.implementation.id);
    if r.config.launch_label != "default" {
        let _ = write!(s, " {}", r.config.launch_label);
    }
    s
}

/// Every roof the results were judged against, once: the analysis roofs, then each
/// result's measured ceiling and theoretical peak.
fn bench_roofs(rep: &BenchReport) -> Vec<RoofEntry> {
    let mut out: Vec<RoofEntry> = Vec::new();
    let mut add = |e: Option<RoofEntry>| {
        if let Some(e) = e {
            if !out.iter().any(|x| {
                x.name == e.name && x.roof.value == e.roof.value && x.provenance == e.provenance
            }) {
                out.push(e);
            }
        }
    };
    for (i, r) in rep.device.roofs.iter().enumerate() {
        // The first memory roof and the highest compute roof are the analysis's own.
        add(roof_ref(r, i == 0));
    }
    for r in &rep.results {
        add(r.measured_ceiling.as_ref().and_then(|x| roof_ref(x, false)));
        add(r.theoretical_peak.as_ref().and_then(|x| roof_ref(x, false)));
    }
    if let Some(best) = out
        .iter_mut()
        .filter(|e| !e.roof.memory)
        .max_by(|a, b| a.roof.value.total_cmp(&b.roof.value))
    {
        best.roof.primary = true;
    }
    out
}

/// The report of a bench run.
pub fn bench(rep: &BenchReport) -> String {
    let mut page = Page {
        title: format!("rooftop bench: {} on {}", rep.backend.backend, rep.backend.device_name),
        subtitle: vec![format!("{} · device {} [{}]", rep.tool, rep.device.name, rep.device.id)],
        sections: Vec::new(),
    };
    if rep.backend.simulated {
        page.subtitle
            .push("simulated backend: the times are a model, not measurements".to_string());
    }
    if rep.interrupted {
        page.subtitle
            .push("interrupted (Ctrl-C): the results are those finished so far".to_string());
    }

    // Chart.
    let entries = bench_roofs(rep);
    let mut marks = Vec::new();
    let mut left_out = Vec::new();
    for (i, r) in rep.results.iter().enumerate() {
        let (Some(median), Some(gflops)) = (r.median_s, r.achieved_gflops) else {
            left_out.push(format!(
                "{}: not timed{}.",
                who(r),
                if r.check.passed { "" } else { " (check failed)" }
            ));
            continue;
        };
        let Some(intensity) = r.arithmetic_intensity.filter(|&a| a > 0.0 && gflops > 0.0) else {
            left_out.push(format!(
                "{}: no FLOPs, not on the chart (a log axis has no zero); {} achieved.",
                who(r),
                r.achieved_gbs.map_or_else(|| "–".to_string(), |g| si(g * 1e9, "B/s"))
            ));
            continue;
        };
        let mut tip = vec![
            format!("{} {}", r.kernel, r.config.label),
            format!("implementation: {} ({})", r.implementation.id, r.config.launch_label),
            format!("median: {} over {} samples", si(median, "s"), r.times_s.len()),
            format!(
                "achieved: {}, {}",
                si(gflops * 1e9, "FLOP/s"),
                r.achieved_gbs.map_or_else(|| "–".to_string(), |g| si(g * 1e9, "B/s"))
            ),
            format!("intensity: {} FLOP/B; bound: {}", sig3(intensity), r.bound.as_str()),
        ];
        if let Some(a) = r.attainment_pct {
            tip.push(format!("roofline attainment: {}", pct(a)));
        }
        if let Some(f) =
            r.findings.iter().find(|f| f.severity > Severity::Info).or(r.findings.first())
        {
            tip.push(format!("top finding: {} ({})", f.title, f.severity.as_str()));
        }
        marks.push(Mark {
            intensity,
            rate: gflops * 1e9,
            weight: median,
            bound: Some(r.bound),
            hollow: false,
            row: Some(result_id(i)),
            tip,
        });
    }
    let chart = RooflineChart { roofs: chart_roofs(&entries), marks, title: page.title.clone() };
    let mut body = String::new();
    let timing = &rep.timing;
    let facts = vec![
        (
            "backend".to_string(),
            format!("{} ({} workers)", rep.backend.backend, rep.backend.parallelism),
        ),
        ("timer".to_string(), timing.timer.clone()),
        (
            "timing".to_string(),
            format!(
                "warm-up {} runs / {} s; ≥ {} samples and {} s per case; cache {}",
                timing.warmup_runs,
                sig3(timing.warmup_time_s),
                timing.min_runs,
                sig3(timing.min_time_s),
                match timing.cache {
                    CacheState::Warm => "warm",
                    CacheState::Flushed => "flushed before every sample",
                }
            ),
        ),
    ];
    body.push_str(&kv(&facts));
    left_out.push("Mark area ∝ the result's median time; rate = FLOPs ÷ median time.".to_string());
    body.push_str(&roofline_block(&chart, &left_out));
    page.sections.push(Section::new("roofline", "Roofline", body));

    page.sections.push(results_section(rep));

    // Findings, every one with its evidence.
    let mut body = String::new();
    let mut any = false;
    for r in &rep.results {
        for f in &r.findings {
            any = true;
            body.push_str(&finding(f, Some(&who(r))));
        }
    }
    if !any {
        body.push_str(&note("No findings."));
    }
    page.sections.push(Section::new("findings", "Findings", body));

    let mut body = roofs_table(&entries);
    if let Some(c) = &rep.ceilings {
        let _ = write!(body, "<h3>Measured ceilings ({})</h3>", esc(&c.method));
        body.push_str(&ceiling_tables(c));
    }
    for n in &rep.backend.notes {
        body.push_str(&note(n));
    }
    page.sections.push(Section::new("roofs", "Roofs and their provenance", body));
    page.render()
}

/// The results table: timing, rates, share of the ceilings and peaks, bound, check; then
/// failed checks, speed-ups, latencies and warnings.
fn results_section(rep: &BenchReport) -> Section {
    let mut t = Table::new(&[
        "kernel",
        "config",
        "impl",
        "#median",
        "#±σ/med",
        "#samples",
        "#GB/s",
        "#GFLOP/s",
        "#% ceiling",
        "#% peak",
        "bound",
        "#attainment",
        "check",
    ]);
    for (i, r) in rep.results.iter().enumerate() {
        let cv = match (r.median_s, r.stddev_s) {
            (Some(m), Some(s)) if m > 0.0 => Some(s / m * 100.0),
            _ => None,
        };
        let impl_cell = if r.config.launch_label == "default" {
            Cell::text(&r.implementation.id)
        } else {
            Cell::raw(format!(
                "{}<span class=\"sub\">{}</span>",
                esc(&r.implementation.id),
                esc(&r.config.launch_label)
            ))
        };
        t.rows.push(Row {
            id: Some(result_id(i)),
            cells: vec![
                Cell::name(&r.kernel),
                Cell::text(&r.config.label),
                impl_cell,
                opt_cell(r.median_s, |v| si(v, "s")),
                opt_cell(cv, |v| {
                    if v < 0.01 {
                        "±<0.01%".to_string()
                    } else {
                        format!("±{}", pct(v))
                    }
                }),
                Cell::num(&r.times_s.len().to_string(), Some(r.times_s.len() as f64)),
                opt_cell(r.achieved_gbs, sig3),
                opt_cell(r.achieved_gflops, sig3),
                opt_cell(r.pct_of_measured_ceiling, pct),
                opt_cell(r.pct_of_theoretical_peak, pct),
                Cell::text(r.bound.as_str()),
                opt_cell(r.attainment_pct, pct),
                if r.check.passed {
                    Cell::text("passed")
                } else {
                    Cell::raw("<span class=\"badge fail\">FAILED</span>".to_string())
                },
            ],
        });
    }
    let mut body = t.render();
    body.push_str(&note(
        "% ceiling: of the roof measured on this machine (ceilings); % peak: of the theoretical peak; \
         both for the kernel's bound (memory: GB/s, compute: GFLOP/s). ±σ/med: sample standard deviation over the median.",
    ));
    let mut extra = Vec::new();
    for r in rep.results.iter().filter(|r| !r.check.passed) {
        extra.push(format!(
            "CHECK FAILED {}: {} (tolerance abs {} rel {})",
            who(r),
            r.check.first_failure.as_deref().unwrap_or("outputs differ"),
            r.check.tolerance.abs,
            r.check.tolerance.rel
        ));
    }
    for r in &rep.results {
        if let Some(s) = r.speedup_vs_builtin {
            extra.push(format!("{}: {}× the built-in's speed", who(r), sig3(s)));
        }
        if let Some(ns) = r.ns_per_access {
            extra.push(format!("{}: {} per dependent access", who(r), si(ns * 1e-9, "s")));
        }
        for w in &r.warnings {
            extra.push(format!("{}: {w}", who(r)));
        }
    }
    for w in &rep.warnings {
        extra.push(format!("warning: {w}"));
    }
    body.push_str(&notes(&extra));
    Section::new("results", format!("Results ({})", rep.results.len()), body)
}

fn ceiling_tables(c: &Ceilings) -> String {
    let mut t = Table::new(&["level", "pattern", "#bandwidth", "#at working set"]);
    for b in &c.bandwidth {
        t.push(vec![
            Cell::text(b.level.as_str()),
            Cell::text(b.pattern.as_str()),
            Cell::num(&si(b.gbs * 1e9, "B/s"), Some(b.gbs)),
            Cell::num(&si(b.working_set_bytes as f64, "B"), Some(b.working_set_bytes as f64)),
        ]);
    }
    let mut out = t.render();
    let mut t = Table::new(&[
        "precision",
        "unit",
        "#measured",
        "#theoretical",
        "#% of theory",
        "theoretical formula",
    ]);
    for p in &c.compute {
        t.push(vec![
            Cell::text(p.precision.as_str()),
            Cell::text(&p.variant),
            Cell::num(&si(p.gflops * 1e9, "FLOP/s"), Some(p.gflops)),
            opt_cell(p.theoretical_gflops, |v| si(v * 1e9, "FLOP/s")),
            opt_cell(p.theoretical_gflops.filter(|t| *t > 0.0).map(|t| p.gflops / t * 100.0), pct),
            Cell::text(p.theoretical_formula.as_deref().unwrap_or(MISSING)),
        ]);
    }
    out.push_str(&t.render());
    out.push_str(&notes(&c.notes));
    out
}

/// The report of measured ceilings: the sweep chart, the roofs, the tables.
pub fn ceilings(c: &Ceilings) -> String {
    let mut page = Page {
        title: format!("rooftop ceilings: {}", c.device_name),
        subtitle: vec![format!(
            "{} backend, {} workers, {} method",
            c.backend, c.parallelism, c.method
        )],
        sections: Vec::new(),
    };
    let mut series: Vec<Series> = Vec::new();
    for p in &c.sweep {
        let tip = format!(
            "{}: {} at a {} working set",
            p.pattern.as_str(),
            si(p.gbs * 1e9, "B/s"),
            si(p.working_set_bytes as f64, "B")
        );
        let point = (p.working_set_bytes as f64, p.gbs * 1e9, tip);
        match series.iter_mut().find(|s| s.name == p.pattern.as_str()) {
            Some(s) => s.points.push(point),
            None => {
                series.push(Series { name: p.pattern.as_str().to_string(), points: vec![point] });
            }
        }
    }
    // One diamond per memory level, at its best pattern (the roof the level gets); the
    // tooltip lists every pattern.
    let mut markers: Vec<Marker> = Vec::new();
    for level in [MemLevel::L1, MemLevel::L2, MemLevel::Llc, MemLevel::Dram] {
        let of_level: Vec<_> = c.bandwidth.iter().filter(|b| b.level == level).collect();
        let Some(best) = of_level.iter().max_by(|a, b| a.gbs.total_cmp(&b.gbs)) else { continue };
        let tip = of_level
            .iter()
            .map(|b| {
                format!(
                    "{} {}: {} at {}",
                    level.as_str(),
                    b.pattern.as_str(),
                    si(b.gbs * 1e9, "B/s"),
                    si(b.working_set_bytes as f64, "B")
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        markers.push(Marker {
            x: best.working_set_bytes as f64,
            y: best.gbs * 1e9,
            label: format!("{} {}", level.as_str().to_ascii_uppercase(), si(best.gbs * 1e9, "B/s")),
            tip,
        });
    }
    let sweep = BytesChart {
        title: format!("bandwidth versus working set on {}", c.device_name),
        x_title: "working set (bytes)".to_string(),
        y_title: "bandwidth (B/s)".to_string(),
        series,
        markers,
    };
    let mut body = format!("<div class=\"chart-box\">{}</div>", svg::bytes_chart(&sweep));
    body.push_str(&note(
        "One line per access pattern; each point is the median of its samples. Diamonds: the bandwidth \
         assigned to each memory level (the best pattern's plateau).",
    ));
    if c.sweep.len() <= c.bandwidth.len() {
        body.push_str(&note("Quick method: no working-set sweep, only the DRAM points (run `rooftop ceilings` without --quick)."));
    }
    page.sections.push(Section::new("sweep", "Bandwidth versus working set", body));

    let entries = ceiling_roofs(c);
    let chart = RooflineChart {
        roofs: chart_roofs(&entries),
        marks: Vec::new(),
        title: format!("measured roofs of {}", c.device_name),
    };
    page.sections.push(Section::new("roofline", "Measured roofline", roofline_block(&chart, &[])));
    let mut body = roofs_table(&entries);
    body.push_str("<h3>Ceilings</h3>");
    body.push_str(&ceiling_tables(c));
    page.sections.push(Section::new("roofs", "Roofs and their provenance", body));
    let mut t = Table::new(&["pattern", "#working set", "#bandwidth"]);
    for p in &c.sweep {
        t.push(vec![
            Cell::text(p.pattern.as_str()),
            Cell::num(&si(p.working_set_bytes as f64, "B"), Some(p.working_set_bytes as f64)),
            Cell::num(&si(p.gbs * 1e9, "B/s"), Some(p.gbs)),
        ]);
    }
    page.sections.push(Section::new(
        "points",
        format!("Sweep points ({})", c.sweep.len()),
        t.render(),
    ));
    page.render()
}
