//! Renderers of `rooftop bench` and `rooftop ceilings` results.

use crate::table::{table, wrap, WIDTH};
use crate::MISSING;
use rooftop_core::diagnose::Severity;
use rooftop_core::schema::bench::{BenchReport, ResultRecord};
use rooftop_core::schema::ceilings::Ceilings;
use rooftop_core::units::{pct, si, sig3};
use std::fmt::Write as _;

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| MISSING.to_string(), f)
}

/// `m=2Ki n=2Ki k=2Ki fp32 int4-g128`: the case label with sizes written compactly.
fn config_label(r: &ResultRecord) -> String {
    r.config
        .label
        .split(' ')
        .map(|part| match part.split_once('=') {
            Some((k, v)) => match v.parse::<u64>() {
                Ok(n) => format!("{k}={}", compact(n)),
                Err(_) => part.to_string(),
            },
            None => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Sizes as the user types them: 33554432 → 32Mi.
fn compact(n: u64) -> String {
    for (shift, suffix) in [(30, "Gi"), (20, "Mi"), (10, "Ki")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{suffix}", n >> shift);
        }
    }
    n.to_string()
}

fn impl_label(r: &ResultRecord) -> String {
    // A kernel from `--spec` is its own implementation: say so rather than repeat the name.
    let mut s = if r.implementation.id == r.kernel {
        "own".to_string()
    } else {
        r.implementation.id.clone()
    };
    if r.config.launch_label != "default" {
        let _ = write!(s, "\n{}", r.config.launch_label);
    }
    // Theoretical occupancy of the launch (CUDA), next to the time it took.
    if let Some(occ) = r.launches.iter().filter_map(|l| l.occupancy_pct).reduce(f64::min) {
        let _ = write!(s, "\nocc {}", pct(occ));
    }
    s
}

fn time_cell(r: &ResultRecord) -> String {
    if !r.check.passed {
        return "CHECK FAILED".to_string();
    }
    match (r.median_s, r.stddev_s) {
        (Some(m), Some(s)) => format!("{}\n{}", si(m, "s"), spread(s, m)),
        _ => "not timed".to_string(),
    }
}

/// σ as a percentage of the median: `±1.42%`, `±<0.01%`.
fn spread(sigma: f64, median: f64) -> String {
    let cv = if median > 0.0 { sigma / median * 100.0 } else { 0.0 };
    if cv < 0.01 {
        "±<0.01%".to_string()
    } else {
        format!("±{}", pct(cv))
    }
}

/// The terminal table of a bench run.
pub fn table_report(rep: &BenchReport) -> String {
    let mut out = header(rep);
    // The bound sits under the kernel's name: nine columns fit 100 without shortening
    // `block=256x1x1` or `matrixmultiply`.
    let mut t = table(&[
        "kernel\nbound",
        "config",
        "impl",
        "median ±σ/med",
        "GB/s",
        "GFLOP/s",
        "% ceil",
        "% peak",
        "spent",
    ]);
    for r in &rep.results {
        t.add_row(vec![
            format!("{}\n{}", r.kernel, bound_label(r.bound.as_str())),
            config_label(r),
            impl_label(r),
            time_cell(r),
            opt(r.achieved_gbs, sig3),
            opt(r.achieved_gflops, sig3),
            ceil_cell(rep, r),
            opt(r.pct_of_theoretical_peak, pct),
            si(r.time_spent.total_s, "s"),
        ]);
    }
    // A blank of padding after each column (and one after the left border).
    for (i, c) in t.column_iter_mut().enumerate() {
        c.set_padding((u16::from(i == 0), 1));
    }
    let _ = writeln!(out, "{t}");
    out.push_str(&wrap(
        "% ceil: of the roof measured on this machine (ceilings); % peak: of the theoretical \
         peak; both for the kernel's bound (memory: GB/s, compute: GFLOP/s). spent: the \
         case's wall time (buffers, check, warm-up, samples).",
        usize::from(WIDTH),
        "",
        "",
    ));
    out.push_str(&tags_line(rep));
    out.push_str(&time_line(&rep.time_spent));
    out.push_str(&notes(rep));
    out
}

/// `memory-bound`, `compute-bound`, `balanced`.
fn bound_label(bound: &str) -> String {
    match bound {
        "memory" | "compute" => format!("{bound}-bound"),
        other => other.to_string(),
    }
}

/// What a `% ceil` cell's second line says about its roof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CeilTag {
    /// Compared with the last-level cache's roof (the buffers fit in it).
    OfLlc,
    /// Partly cache-resident against DRAM's roof: may exceed 100%.
    Cached,
    /// This result raised its roof.
    Raised,
}

impl CeilTag {
    fn text(self) -> &'static str {
        match self {
            CeilTag::OfLlc => "of LLC",
            CeilTag::Cached => "cached",
            CeilTag::Raised => "raised",
        }
    }
}

fn ceil_tag(rep: &BenchReport, r: &ResultRecord) -> Option<CeilTag> {
    use rooftop_core::schema::ceilings::{AdjustmentKind, Residency};
    let label =
        rooftop_core::schema::bench::result_label(&r.kernel, &r.config.label, &r.implementation.id);
    let raised = rep.ceilings.as_ref().is_some_and(|c| {
        c.adjustments.iter().any(|a| a.kind == AdjustmentKind::Raised && a.by == label)
    });
    if raised {
        return Some(CeilTag::Raised);
    }
    let of_llc = r.measured_ceiling.as_ref().is_some_and(|m| m.what.starts_with("llc"));
    match r.residency {
        Some(Residency::Cached) if of_llc => Some(CeilTag::OfLlc),
        Some(Residency::Cached | Residency::PartlyCached) => Some(CeilTag::Cached),
        _ => None,
    }
}

/// `% ceil` with its tag on a second line (`112%` / `cached`).
fn ceil_cell(rep: &BenchReport, r: &ResultRecord) -> String {
    let p = opt(r.pct_of_measured_ceiling, pct);
    match (r.pct_of_measured_ceiling, ceil_tag(rep, r)) {
        (Some(_), Some(t)) => format!("{p}\n{}", t.text()),
        _ => p,
    }
}

/// The legend of the tags that appear in the table.
fn tags_line(rep: &BenchReport) -> String {
    let mut seen: Vec<CeilTag> = rep.results.iter().filter_map(|r| ceil_tag(rep, r)).collect();
    seen.dedup();
    let mut parts = Vec::new();
    for (tag, text) in [
        (CeilTag::OfLlc, "of LLC: the buffers fit in half the last-level cache, so % of its measured bandwidth"),
        (CeilTag::Cached, "cached: the buffers are within 4x the last-level cache, partly cache-resident, and may run above the DRAM roof"),
        (CeilTag::Raised, "raised: this result ran above its roof even after the roof was re-measured, so the roof was raised to it"),
    ] {
        if seen.contains(&tag) {
            parts.push(text);
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    wrap(&format!("{}.", parts.join("; ")), usize::from(WIDTH), "", "")
}

/// Where the run's time went: `time: 31.2 s wall, 27.9 s (89.4%) in timed runs and
/// warm-up, ...`.
fn time_line(t: &rooftop_core::schema::bench::RunTime) -> String {
    if t.wall_s <= 0.0 {
        return String::new();
    }
    let c = &t.cases;
    let other = (t.wall_s - c.total_s).max(0.0);
    let mut line = format!(
        "time: {} wall, {} ({}) in timed runs and warm-up, {} setting up buffers, {} checking \
         results against references, {} outside the cases",
        si(t.wall_s, "s"),
        si(c.runs_s(), "s"),
        pct(t.in_runs_pct),
        si(c.setup_s, "s"),
        si(c.check_s, "s"),
        si(other, "s"),
    );
    if t.ceilings_s > 0.0 {
        let _ = write!(line, "; the quick ceilings took {} of it", si(t.ceilings_s, "s"));
    }
    wrap(&line, usize::from(WIDTH), "", "  ")
}

fn header(rep: &BenchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "backend: {} | device: {}", rep.backend.backend, rep.backend.device_name);
    let line = format!(
        "timing: warm-up {} runs / {}s, >= {} samples and {}s per case, cache {}, {}",
        rep.timing.warmup_runs,
        sig3(rep.timing.warmup_time_s),
        rep.timing.min_runs,
        sig3(rep.timing.min_time_s),
        match rep.timing.cache {
            rooftop_core::schema::bench::CacheState::Warm => "warm",
            rooftop_core::schema::bench::CacheState::Flushed => "flushed before every sample",
        },
        rep.timing.timer
    );
    out.push_str(&wrap(&line, usize::from(WIDTH), "", "  "));
    if let Some(c) = &rep.ceilings {
        out.push_str(&ceilings_line(c));
    }
    for n in &rep.backend.notes {
        out.push_str(&wrap(&format!("note: {n}"), usize::from(WIDTH), "", "  "));
    }
    out
}

fn ceilings_line(c: &Ceilings) -> String {
    let mut parts = Vec::new();
    if let Some(bw) = c.best_gbs(rooftop_core::device::MemLevel::Dram) {
        parts.push(format!("DRAM {}", si(bw * 1e9, "B/s")));
    }
    if let Some(bw) = c.best_gbs(rooftop_core::device::MemLevel::Llc) {
        parts.push(format!("LLC {}", si(bw * 1e9, "B/s")));
    }
    for p in &c.compute {
        if p.variant != "scalar" {
            parts.push(format!("{} {}", p.precision.as_str(), si(p.gflops * 1e9, "FLOP/s")));
        }
    }
    let mut out = wrap(
        &format!("measured ceilings ({}, best samples): {}", c.method, parts.join(", ")),
        usize::from(WIDTH),
        "",
        "  ",
    );
    for a in &c.adjustments {
        out.push_str(&wrap(&a.describe(), usize::from(WIDTH), "  ", "    "));
    }
    out
}

/// Notes under the table, grouped so that a suite of 30 results stays on one screen:
/// failed checks one by one, then one line each for built-in comparisons, latencies,
/// findings (by title) and samples with outliers. Everything else is in the JSON.
fn notes(rep: &BenchReport) -> String {
    let mut out = String::new();
    let w = usize::from(WIDTH);
    let short = |r: &ResultRecord| format!("{} {}", r.kernel, config_label(r));
    for r in rep.results.iter().filter(|r| !r.check.passed) {
        out.push_str(&wrap(
            &format!(
                "CHECK FAILED {} [{}]: {} (tolerance abs {} rel {})",
                short(r),
                r.implementation.id,
                r.check.first_failure.as_deref().unwrap_or("outputs differ"),
                r.check.tolerance.abs,
                r.check.tolerance.rel
            ),
            w,
            "- ",
            "  ",
        ));
    }
    let speedups: Vec<String> = rep
        .results
        .iter()
        .filter_map(|r| r.speedup_vs_builtin.map(|s| format!("{} {}x", short(r), sig3(s))))
        .collect();
    if !speedups.is_empty() {
        let line = format!("ours vs the built-in (speed ratio): {}", speedups.join("; "));
        out.push_str(&wrap(&line, w, "- ", "  "));
    }
    let latencies: Vec<String> = rep
        .results
        .iter()
        .filter_map(|r| latency(r).map(|ns| format!("{} {}", short(r), si(ns * 1e-9, "s"))))
        .collect();
    if !latencies.is_empty() {
        let line = format!("latency per dependent access: {}", latencies.join("; "));
        out.push_str(&wrap(&line, w, "- ", "  "));
    }
    // Actionable findings (warning and above) grouped by title; info ones are in the JSON.
    let mut by_title: Vec<(String, Vec<String>)> = Vec::new();
    for r in &rep.results {
        for f in r.findings.iter().filter(|f| f.severity > Severity::Info).take(1) {
            let who = format!("{} [{}]", short(r), r.implementation.id);
            match by_title.iter_mut().find(|(t, _)| *t == f.title) {
                Some((_, v)) => v.push(who),
                None => by_title.push((f.title.clone(), vec![who])),
            }
        }
    }
    for (title, who) in by_title {
        out.push_str(&wrap(&format!("{title}: {}", who.join("; ")), w, "- ", "  "));
    }
    let mut noisy = Vec::new();
    for r in &rep.results {
        for warn in &r.warnings {
            if warn.starts_with("result check failed") {
                continue;
            }
            if warn.contains("statistical outliers") {
                let n = warn.split(' ').next().unwrap_or("?");
                noisy.push(format!(
                    "{} [{}] {n}/{}",
                    short(r),
                    r.implementation.id,
                    r.times_s.len()
                ));
            } else {
                out.push_str(&wrap(
                    &format!("{} [{}]: {warn}", short(r), r.implementation.id),
                    w,
                    "- ",
                    "  ",
                ));
            }
        }
    }
    if !noisy.is_empty() {
        let line = format!(
            "samples with outliers (modified Z-score > 3.5; the median is reported): {}",
            noisy.join("; ")
        );
        out.push_str(&wrap(&line, w, "- ", "  "));
    }
    for warn in &rep.warnings {
        out.push_str(&wrap(&format!("warning: {warn}"), w, "- ", "  "));
    }
    if rep.interrupted {
        out.push_str("interrupted (Ctrl-C): the results above are those finished so far\n");
    }
    if !out.is_empty() {
        out.push_str("details, raw samples and recommendations: --format json or --export-json\n");
    }
    out
}

fn latency(r: &ResultRecord) -> Option<f64> {
    r.ns_per_access
}

/// Markdown of a bench run (for pull-request comments).
pub fn markdown_report(rep: &BenchReport) -> String {
    let mut out = String::from("## rooftop bench\n\n");
    let _ = writeln!(out, "Backend `{}` on {}.\n", rep.backend.backend, rep.backend.device_name);
    if let Some(c) = &rep.ceilings {
        let _ = writeln!(out, "{}", ceilings_line(c).trim_end());
    }
    out.push_str("| kernel | config | impl | median | ±σ | GB/s | GFLOP/s | % ceiling | % peak | bound | check |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n");
    for r in &rep.results {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.kernel,
            config_label(r),
            impl_label(r).replace('\n', " "),
            opt(r.median_s, |v| si(v, "s")),
            opt(r.stddev_s, |v| si(v, "s")),
            opt(r.achieved_gbs, sig3),
            opt(r.achieved_gflops, sig3),
            opt(r.pct_of_measured_ceiling, pct),
            opt(r.pct_of_theoretical_peak, pct),
            r.bound.as_str(),
            if r.check.passed { "passed" } else { "FAILED" },
        );
    }
    let n = notes(rep);
    if !n.is_empty() {
        out.push('\n');
        out.push_str(&n);
    }
    out
}

const CSV_HEADER: [&str; 24] = [
    "kernel",
    "implementation",
    "builtin",
    "config",
    "launch",
    "check_passed",
    "max_abs_error",
    "samples",
    "median_s",
    "mean_s",
    "stddev_s",
    "min_s",
    "max_s",
    "flops",
    "bytes",
    "achieved_gbs",
    "achieved_gflops",
    "pct_of_measured_ceiling",
    "pct_of_theoretical_peak",
    "floor_s",
    "bound",
    "attainment_pct",
    "speedup_vs_builtin",
    "ns_per_access",
];

/// CSV of a bench run, one row per result.
pub fn csv_report(rep: &BenchReport) -> Result<String, crate::RenderError> {
    let num = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v}"));
    let mut rows = Vec::with_capacity(rep.results.len());
    for r in &rep.results {
        rows.push(vec![
            r.kernel.clone(),
            r.implementation.id.clone(),
            r.implementation.builtin.to_string(),
            config_label(r),
            r.config.launch_label.clone(),
            r.check.passed.to_string(),
            format!("{}", r.check.max_abs_error),
            r.times_s.len().to_string(),
            num(r.median_s),
            num(r.mean_s),
            num(r.stddev_s),
            num(r.min_s),
            num(r.max_s),
            format!("{}", r.flops),
            format!("{}", r.bytes),
            num(r.achieved_gbs),
            num(r.achieved_gflops),
            num(r.pct_of_measured_ceiling),
            num(r.pct_of_theoretical_peak),
            format!("{}", r.floor_s),
            r.bound.as_str().to_string(),
            num(r.attainment_pct),
            num(r.speedup_vs_builtin),
            num(r.ns_per_access),
        ]);
    }
    crate::csv::text(&CSV_HEADER, rows)
}

/// JSON of a bench run (docs/bench-schema.md).
pub fn json_report(rep: &BenchReport) -> String {
    let mut s = serde_json::to_string_pretty(rep).unwrap_or_default();
    s.push('\n');
    s
}

/// The terminal table of measured ceilings.
pub fn ceilings_table(c: &Ceilings) -> String {
    let mut out = format!(
        "ceilings of {} ({} backend, {} workers, {})\n",
        c.device_name, c.backend, c.parallelism, c.method
    );
    let mut t = table(&["level", "pattern", "bandwidth", "at working set"]);
    for b in &c.bandwidth {
        t.add_row(vec![
            b.level.as_str().to_string(),
            b.pattern.as_str().to_string(),
            si(b.gbs * 1e9, "B/s"),
            si(b.working_set_bytes as f64, "B"),
        ]);
    }
    let _ = writeln!(out, "{t}");
    let mut t = table(&["precision", "unit", "measured", "theoretical", "% of theory"]);
    for p in &c.compute {
        t.add_row(vec![
            p.precision.as_str().to_string(),
            p.variant.clone(),
            si(p.gflops * 1e9, "FLOP/s"),
            opt(p.theoretical_gflops, |v| si(v * 1e9, "FLOP/s")),
            opt(p.theoretical_gflops, |v| pct(p.gflops / v * 100.0)),
        ]);
    }
    let _ = writeln!(out, "{t}");
    for p in &c.compute {
        if let Some(f) = &p.theoretical_formula {
            out.push_str(&wrap(
                &format!("theoretical {} {}: {f}", p.precision.as_str(), p.variant),
                usize::from(WIDTH),
                "- ",
                "  ",
            ));
        }
    }
    for n in &c.notes {
        out.push_str(&wrap(n, usize::from(WIDTH), "- ", "  "));
    }
    out
}

/// Measured ceilings as JSON (`rooftop ceilings --format json`), with the schema version.
pub fn ceilings_json(c: &Ceilings) -> String {
    use rooftop_core::schema::ceilings::{CeilingsExport, SCHEMA_VERSION};
    let export = CeilingsExport { schema_version: SCHEMA_VERSION, ceilings: c.clone() };
    // Plain records serialise without error; non-finite floats become null.
    let mut s = serde_json::to_string_pretty(&export).unwrap_or_default();
    s.push('\n');
    s
}

/// The working-set sweep as CSV.
pub fn ceilings_csv(c: &Ceilings) -> Result<String, crate::RenderError> {
    let rows = c
        .sweep
        .iter()
        .map(|p| {
            vec![
                p.pattern.as_str().to_string(),
                p.working_set_bytes.to_string(),
                format!("{}", p.gbs),
            ]
        })
        .collect();
    crate::csv::text(&["pattern", "working_set_bytes", "gbs"], rows)
}

/// Markdown of measured ceilings.
pub fn ceilings_markdown(c: &Ceilings) -> String {
    let mut out = format!(
        "## Ceilings of {}\n\n| level | pattern | GB/s | working set |\n|---|---|---:|---:|\n",
        c.device_name
    );
    for b in &c.bandwidth {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            b.level.as_str(),
            b.pattern.as_str(),
            sig3(b.gbs),
            si(b.working_set_bytes as f64, "B")
        );
    }
    out.push_str(
        "\n| precision | unit | measured GFLOP/s | theoretical GFLOP/s |\n|---|---|---:|---:|\n",
    );
    for p in &c.compute {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            p.precision.as_str(),
            p.variant,
            sig3(p.gflops),
            opt(p.theoretical_gflops, sig3)
        );
    }
    out
}
