//! Renderers of `rooftop trace` reports: terminal tables (a one-screen summary by
//! default, `--section` for more), Markdown, JSON (the stable schema of
//! `docs/json-schema.md`), one CSV per section, and the cross-rank table.
//!
//! Every section is first laid out as a [`Block`] (title, header, rows, notes), so the
//! terminal and Markdown outputs show the same cells; CSV files carry full-precision
//! numbers instead of the 3-significant-digit display. Renderers never compute: each
//! number comes from the [`TraceReport`].

use crate::table::{table as new_table, wrap, WIDTH};
use comfy_table::{ColumnConstraint, Width};
use rooftop_core::trace::findings::TraceFinding;
use rooftop_core::trace::ops::{ParamValue, Table};
use rooftop_core::trace::report::{CrossRank, TraceReport};
use rooftop_core::trace::summary::LaunchConfig;
use rooftop_core::trace::tables::OpRow;
use rooftop_core::units::{pct, sig3, us};
use std::fmt::Write as _;
use std::str::FromStr;

/// What `--section` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The default one-screen view: timeline, top ops, top findings.
    Summary,
    Timeline,
    Ops,
    /// The by-category summary and every roofline table.
    Categories,
    Gemm,
    Sdpa,
    Conv,
    Norm,
    Elementwise,
    Kernels,
    ShortKernels,
    Findings,
    /// JAX/XLA profiles: XLA op summary, modules, steps, tiles, collectives, host threads.
    Xla,
    // The time between the kernels (`crate::trace_gaps`).
    Idle,
    Launch,
    Syncs,
    Graphs,
    CriticalPath,
    Modules,
    Memory,
    Inference,
    All,
}

impl Section {
    /// Every name `--section` accepts.
    pub const NAMES: [&'static str; 22] = [
        "summary",
        "timeline",
        "ops",
        "categories",
        "gemm",
        "sdpa",
        "conv",
        "norm",
        "elementwise",
        "kernels",
        "short-kernels",
        "findings",
        "xla",
        "idle",
        "launch",
        "syncs",
        "graphs",
        "critical-path",
        "modules",
        "memory",
        "inference",
        "all",
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Section::Summary => "summary",
            Section::Timeline => "timeline",
            Section::Ops => "ops",
            Section::Categories => "categories",
            Section::Gemm => "gemm",
            Section::Sdpa => "sdpa",
            Section::Conv => "conv",
            Section::Norm => "norm",
            Section::Elementwise => "elementwise",
            Section::Kernels => "kernels",
            Section::ShortKernels => "short-kernels",
            Section::Findings => "findings",
            Section::Xla => "xla",
            Section::Idle => "idle",
            Section::Launch => "launch",
            Section::Syncs => "syncs",
            Section::Graphs => "graphs",
            Section::CriticalPath => "critical-path",
            Section::Modules => "modules",
            Section::Memory => "memory",
            Section::Inference => "inference",
            Section::All => "all",
        }
    }

    /// The roofline tables (`categories` keys) a section shows.
    fn tables(self) -> &'static [&'static str] {
        match self {
            Section::Gemm => &["GEMM"],
            Section::Sdpa => &["SDPA_fwd", "SDPA_bwd"],
            Section::Conv => &["CONV_fwd", "CONV_bwd"],
            Section::Norm => &["Normalization"],
            Section::Elementwise => &["BinaryElementwise", "UnaryElementwise"],
            _ => &[],
        }
    }
}

impl FromStr for Section {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let all = [
            Section::Summary,
            Section::Timeline,
            Section::Ops,
            Section::Categories,
            Section::Gemm,
            Section::Sdpa,
            Section::Conv,
            Section::Norm,
            Section::Elementwise,
            Section::Kernels,
            Section::ShortKernels,
            Section::Findings,
            Section::Xla,
            Section::Idle,
            Section::Launch,
            Section::Syncs,
            Section::Graphs,
            Section::CriticalPath,
            Section::Modules,
            Section::Memory,
            Section::Inference,
            Section::All,
        ];
        let key = s.trim().to_ascii_lowercase().replace('_', "-");
        all.into_iter().find(|x| x.as_str() == key).ok_or_else(|| {
            format!("unknown section '{s}'; expected one of: {}", Section::NAMES.join(", "))
        })
    }
}

/// How much to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// Rows per table (ops, kernels, table rows, findings).
    pub top: usize,
    pub section: Section,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions { top: 10, section: Section::Summary }
    }
}

/// One laid-out section.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Block {
    pub(crate) title: String,
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
    pub(crate) notes: Vec<String>,
    /// Minimum widths of some columns in the terminal, `(column, width)`, for long
    /// names.
    pub(crate) min_widths: Vec<(usize, u16)>,
}

impl Block {
    pub(crate) fn new(title: impl Into<String>, header: &[&str]) -> Block {
        Block {
            title: title.into(),
            header: header.iter().map(|s| (*s).to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
            min_widths: Vec::new(),
        }
    }
}

/// Shortens long kernel names for the terminal (full names are in JSON and CSV).
pub(crate) fn short(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        name.to_string()
    } else {
        format!("{}…", name.chars().take(max.saturating_sub(1)).collect::<String>())
    }
}

/// A time given in ms, with an SI prefix (`0` rather than `0 s` for nothing).
pub(crate) fn ms(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        us(v * 1e3)
    }
}

fn dim3(d: Option<[u32; 3]>) -> String {
    d.map_or_else(|| "-".to_string(), |[x, y, z]| format!("{x}×{y}×{z}"))
}

fn launch(cfgs: &[LaunchConfig]) -> String {
    match cfgs {
        [] => "-".to_string(),
        [one, rest @ ..] => {
            let mut s = format!("{} / {}", dim3(one.grid), dim3(one.block));
            if !rest.is_empty() {
                let _ = write!(s, " (+{} more)", rest.len());
            }
            s
        }
    }
}

fn header_lines(r: &TraceReport) -> String {
    let d = &r.device;
    let trace_dev = match (&d.trace_name, d.trace_num_sms) {
        (Some(n), Some(sms)) => format!("{n} ({sms} SMs/CUs)"),
        (Some(n), None) => n.clone(),
        _ => "not stated in the trace".to_string(),
    };
    let roof = match (&d.catalog_name, &d.catalog_id) {
        (Some(n), Some(id)) => format!("{n} [{id}]"),
        _ => "none (no roofline numbers; pass --device)".to_string(),
    };
    let mut out =
        wrap(&format!("device: {trace_dev}; roofline: {roof}"), usize::from(WIDTH), "", "  ");
    out.push_str(&wrap(
        &format!("window: {} ({})", ms(r.window.duration_ms), r.window.basis),
        usize::from(WIDTH),
        "",
        "  ",
    ));
    out
}

fn timeline_blocks(r: &TraceReport) -> Vec<Block> {
    let mut out = Vec::new();
    let mut b = Block::new("GPU timeline", &["", "time", "% of window"]);
    for (_, label, share) in r.timeline.all.rows() {
        b.rows.push(vec![label.to_string(), ms(share.time_ms), pct(share.percent)]);
    }
    if r.timeline.unlinked_excluded > 0 {
        b.notes.push(format!(
            "{} GPU events with no launching runtime call are not counted.",
            r.timeline.unlinked_excluded
        ));
    }
    out.push(b);
    if r.timeline.per_device.len() > 1 {
        let mut b = Block::new(
            "GPU timeline per device",
            &["device", "window", "busy", "compute", "comm (exp.)", "idle"],
        );
        for d in &r.timeline.per_device {
            let t = &d.breakdown;
            b.rows.push(vec![
                d.device.to_string(),
                ms(t.total.time_ms),
                pct(t.busy.percent),
                pct(t.computation.percent),
                pct(t.exposed_communication.percent),
                pct(t.idle.percent),
            ]);
        }
        out.push(b);
    }
    out
}

fn ops_block(r: &TraceReport, top: usize) -> Block {
    let s = &r.ops_summary;
    let mut b = Block::new(
        format!("Ops by direct kernel time (top {} of {})", top.min(s.ops.len()), s.ops.len()),
        &["op", "category", "calls", "direct", "subtree", "%", "cum %"],
    );
    for o in s.ops.iter().take(top) {
        b.rows.push(vec![
            o.name.clone(),
            o.category.clone(),
            o.count.to_string(),
            ms(o.direct_kernel_time_ms),
            ms(o.subtree_kernel_time_ms),
            pct(o.percent),
            pct(o.cumulative_percent),
        ]);
    }
    b.notes.push(format!(
        "Total direct kernel time {}; direct = GPU time of the kernels an op launched itself, \
         subtree = with its child ops.",
        ms(s.total_direct_kernel_time_ms)
    ));
    b
}

fn by_category_block(r: &TraceReport) -> Block {
    let mut b = Block::new("Ops by category", &["category", "calls", "direct", "%", "cum %"]);
    for c in &r.ops_summary.by_category {
        b.rows.push(vec![
            c.category.clone(),
            c.count.to_string(),
            ms(c.direct_kernel_time_ms),
            pct(c.percent),
            pct(c.cumulative_percent),
        ]);
    }
    b
}

/// A row's parameters for the terminal: dtypes without `c10::`, strides left out.
fn params_text(row: &OpRow) -> String {
    row.params
        .0
        .iter()
        .filter(|(k, v)| !k.starts_with("stride") && *v != ParamValue::Null)
        .map(|(k, v)| format!("{k}={}", v.tracelens_repr().replace("c10::", "").replace('\'', "")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

fn roofline_table_block(name: &str, rows: &[OpRow], top: usize) -> Block {
    let mut b = Block::new(
        format!("{name} (top {} of {} rows)", top.min(rows.len()), rows.len()),
        &["op", "params", "calls", "time", "TFLOP/s", "TB/s", "roofline", "bound"],
    );
    b.min_widths = vec![(0, 16), (1, 22)];
    for r in rows.iter().take(top) {
        b.rows.push(vec![
            r.name.clone(),
            params_text(r),
            r.count.to_string(),
            us(r.kernel_time_us.sum),
            opt(r.achieved_tflops.as_ref().map(|s| s.mean), sig3),
            opt(r.achieved_tbs.as_ref().map(|s| s.mean), sig3),
            opt(r.roofline_attainment_pct, pct),
            r.bound.map_or_else(|| "-".to_string(), |x| x.as_str().to_string()),
        ]);
    }
    let unmodelled = rows.iter().filter(|r| r.unmodelled.is_some()).count();
    if unmodelled > 0 {
        b.notes.push(format!("{unmodelled} row(s) unmodelled: times only, no FLOPs or bytes."));
    }
    b.notes.push(
        "time = summed kernel time of all calls; TFLOP/s and TB/s are means over calls; \
         roofline = attainment of the roofline floor."
            .to_string(),
    );
    b
}

fn kernels_block(r: &TraceReport, top: usize) -> Block {
    let mut b = Block::new(
        format!("Kernels (top {} of {})", top.min(r.kernels.len()), r.kernels.len()),
        &["kernel / op", "calls", "total", "mean", "median", "% kern", "grid / block"],
    );
    b.min_widths = vec![(0, 36)];
    for k in r.kernels.iter().take(top) {
        b.rows.push(vec![
            format!(
                "{}\n← {}",
                short(&k.name, 72),
                k.parent_op.as_deref().unwrap_or("no launching op")
            ),
            k.count.to_string(),
            us(k.total_us),
            us(k.mean_us),
            us(k.median_us),
            pct(k.percent_of_kernel_time),
            launch(&k.launch_configs),
        ]);
    }
    b
}

fn short_kernel_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let s = &r.short_kernels;
    let mut h = Block::new(
        format!(
            "Short kernels (< {} µs): duration histogram, non-empty bins",
            sig3(s.threshold_us)
        ),
        &["from", "to", "kernels"],
    );
    for bin in s.histogram.iter().filter(|b| b.count > 0) {
        h.rows.push(vec![us(bin.bin_start_us), us(bin.bin_end_us), bin.count.to_string()]);
    }
    h.notes.push(format!(
        "{} of {} kernels ({}) are short: {} = {} of kernel time, {} of the window.",
        s.short_count,
        s.kernel_count,
        pct(s.percent_of_kernels),
        us(s.short_time_us),
        pct(s.percent_of_kernel_time),
        pct(s.percent_of_total_time)
    ));
    let mut t = Block::new(
        format!(
            "Short kernels by op and shape (top {} of {})",
            top.min(s.rows.len()),
            s.rows.len()
        ),
        &["kernel / op", "input dims", "calls", "total", "mean", "% window"],
    );
    t.min_widths = vec![(0, 36)];
    for k in s.rows.iter().take(top) {
        t.rows.push(vec![
            format!(
                "{}\n← {}",
                short(&k.name, 72),
                k.parent_op.as_deref().unwrap_or("no launching op")
            ),
            k.input_dims.clone().unwrap_or_else(|| "-".to_string()),
            k.count.to_string(),
            us(k.total_us),
            us(k.mean_us),
            pct(k.percent_of_total_time),
        ]);
    }
    vec![h, t]
}

fn finding_text(f: &TraceFinding) -> String {
    let mut text =
        format!("{}: {}\n→ {}", f.finding.title, f.finding.evidence, f.finding.recommendation);
    if let Some(g) = &f.finding.expected_gain {
        let _ = write!(text, "\nexpected gain: {g}");
    }
    text
}

fn findings_block(r: &TraceReport, top: usize) -> Block {
    let mut b = Block::new(
        format!(
            "Findings by time at stake (top {} of {})",
            top.min(r.findings.len()),
            r.findings.len()
        ),
        &["severity", "at stake", "finding"],
    );
    for f in r.findings.iter().take(top) {
        b.rows.push(vec![
            f.finding.severity.as_str().to_string(),
            format!("{}\n{}", us(f.time_at_stake_us), pct(f.percent_of_total_time)),
            finding_text(f),
        ]);
    }
    if r.findings.is_empty() {
        b.notes.push("No trace-wide findings.".to_string());
    }
    b
}

fn warnings_block(r: &TraceReport) -> Option<Block> {
    if r.warnings.is_empty() {
        return None;
    }
    let mut b = Block::new("Warnings", &["kind", "count", "example"]);
    for w in &r.warnings {
        b.rows.push(vec![w.kind.clone(), w.count.to_string(), w.example.clone()]);
    }
    Some(b)
}

fn category_tables_blocks(r: &TraceReport, names: &[&str], top: usize) -> Vec<Block> {
    let mut out = Vec::new();
    // Report order (GEMM, SDPA, CONV, ...), then any other table, `unmodelled` last.
    let rank = |n: &str| {
        Table::ALL.iter().position(|t| t.as_str() == n).unwrap_or(if n == "unmodelled" {
            usize::MAX
        } else {
            Table::ALL.len()
        })
    };
    let mut tables: Vec<(&String, &Vec<OpRow>)> = r.categories.iter().collect();
    tables.sort_by_key(|(n, _)| rank(n));
    for (name, rows) in tables {
        if names.is_empty() || names.contains(&name.as_str()) {
            out.push(roofline_table_block(name, rows, top));
        }
    }
    if out.is_empty() {
        let mut b = Block::new(
            if names.is_empty() { "Roofline tables".to_string() } else { names.join(", ") },
            &[],
        );
        b.notes.push("No ops of this kind in the trace.".to_string());
        out.push(b);
    }
    out
}

fn blocks(r: &TraceReport, opts: &RenderOptions) -> Vec<Block> {
    let top = opts.top;
    let mut out = Vec::new();
    match opts.section {
        Section::Summary => {
            out.extend(timeline_blocks(r).into_iter().take(1));
            out.extend(crate::trace_gaps::summary_blocks(r));
            if r.xla.is_some() {
                out.extend(crate::xla::summary_blocks(r, top));
            } else {
                out.push(ops_block(r, top));
            }
            out.push(findings_block(r, top.min(5)));
        }
        Section::Timeline => out.extend(timeline_blocks(r)),
        Section::Ops => out.push(ops_block(r, top)),
        Section::Categories => {
            out.push(by_category_block(r));
            out.extend(category_tables_blocks(r, &[], top));
        }
        Section::Gemm | Section::Sdpa | Section::Conv | Section::Norm | Section::Elementwise => {
            out.extend(category_tables_blocks(r, opts.section.tables(), top));
        }
        Section::Kernels => out.push(kernels_block(r, top)),
        Section::ShortKernels => out.extend(short_kernel_blocks(r, top)),
        Section::Findings => out.push(findings_block(r, top)),
        Section::Xla => out.extend(crate::xla::blocks(r, top)),
        Section::Idle
        | Section::Launch
        | Section::Syncs
        | Section::Graphs
        | Section::CriticalPath
        | Section::Modules
        | Section::Memory
        | Section::Inference => out.extend(crate::trace_gaps::blocks(r, opts.section, top)),
        Section::All => {
            out.extend(timeline_blocks(r));
            out.push(ops_block(r, top));
            out.push(by_category_block(r));
            out.extend(category_tables_blocks(r, &[], top));
            out.push(kernels_block(r, top));
            out.extend(short_kernel_blocks(r, top));
            out.extend(crate::xla::blocks(r, top));
            out.push(findings_block(r, top));
            out.extend(crate::trace_gaps::blocks(r, Section::All, top));
        }
    }
    if opts.section != Section::Summary {
        out.extend(warnings_block(r));
    }
    out
}

/// Renders the report for the terminal (at most [`WIDTH`] columns).
pub fn table(r: &TraceReport, opts: &RenderOptions) -> String {
    let mut out = header_lines(r);
    for b in blocks(r, opts) {
        let _ = write!(out, "\n{}\n", b.title);
        if !b.header.is_empty() {
            let header: Vec<&str> = b.header.iter().map(String::as_str).collect();
            let mut t = new_table(&header);
            for row in &b.rows {
                t.add_row(row.clone());
            }
            for &(i, w) in &b.min_widths {
                if let Some(c) = t.column_mut(i) {
                    c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(w)));
                }
            }
            let _ = writeln!(out, "{t}");
        }
        for n in &b.notes {
            out.push_str(&wrap(n, usize::from(WIDTH), "", "  "));
        }
    }
    if opts.section == Section::Summary {
        let n_warn = r.warnings.len();
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "More rows: --top N. Sections: --section {}.{}",
                Section::NAMES[1..]
                    .iter()
                    .filter(|n| r.xla.is_some() || **n != "xla")
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", "),
                if n_warn > 0 {
                    format!(" {n_warn} warning(s): see --section all.")
                } else {
                    String::new()
                }
            ),
            usize::from(WIDTH),
            "",
            "  ",
        ));
    }
    out
}

/// Escapes a Markdown cell.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', "<br>")
}

/// Renders the report as Markdown (same sections and cells as [`table`]).
pub fn markdown(r: &TraceReport, opts: &RenderOptions) -> String {
    let mut out = String::from("## rooftop trace\n\n");
    for line in header_lines(r).lines() {
        let _ = writeln!(out, "- {}", md_cell(line));
    }
    for b in blocks(r, opts) {
        let _ = write!(out, "\n### {}\n\n", md_cell(&b.title));
        if !b.header.is_empty() {
            let cells: Vec<String> = b.header.iter().map(|h| md_cell(h)).collect();
            let _ = writeln!(out, "| {} |\n|{}", cells.join(" | "), "---|".repeat(cells.len()));
            for row in &b.rows {
                let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
        }
        for n in &b.notes {
            let _ = write!(out, "\n{n}\n");
        }
    }
    out
}

fn pretty<T: serde::Serialize>(v: &T) -> String {
    // Our structs serialise without error (string map keys; non-finite floats become
    // null in serde_json).
    let mut s =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

/// The report as JSON (`docs/json-schema.md`, "Trace report").
pub fn json(r: &TraceReport) -> String {
    pretty(r)
}

pub(crate) fn csv_text(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to a Vec cannot fail with I/O errors; rows have the header's length.
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(&r);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

pub(crate) fn num(v: f64) -> String {
    format!("{v}")
}

pub(crate) fn onum(v: Option<f64>) -> String {
    v.map_or_else(String::new, num)
}

pub(crate) fn ostr(v: Option<&str>) -> String {
    v.unwrap_or_default().to_string()
}

fn dims_csv(d: Option<[u32; 3]>) -> String {
    d.map_or_else(String::new, |[x, y, z]| format!("{x}x{y}x{z}"))
}

/// One CSV per section, `(file name, contents)`, for `--format csv -o DIR`: the
/// timeline and its window, ops summary and by category, each roofline table (`GEMM.csv`, ...),
/// kernels, the short-kernel histogram and groups, findings and warnings, and the
/// sections of [`crate::trace_gaps`].
pub fn csv_files(r: &TraceReport) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let t = &r.timeline.all;
    let rows: Vec<Vec<String>> = t
        .rows()
        .iter()
        .map(|(key, _, s)| vec![(*key).to_string(), num(s.time_ms), num(s.percent)])
        .collect();
    files.push(("gpu_timeline.csv".to_string(), csv_text(&["type", "time_ms", "percent"], rows)));
    let w = &r.window;
    files.push((
        "window.csv".to_string(),
        csv_text(
            &["start_us", "end_us", "duration_ms", "basis"],
            vec![vec![num(w.start_us), num(w.end_us), num(w.duration_ms), w.basis.clone()]],
        ),
    ));

    let rows = r
        .ops_summary
        .ops
        .iter()
        .map(|o| {
            vec![
                o.name.clone(),
                o.category.clone(),
                o.count.to_string(),
                o.kernel_count.to_string(),
                num(o.direct_kernel_time_ms),
                num(o.subtree_kernel_time_ms),
                num(o.percent),
                num(o.cumulative_percent),
            ]
        })
        .collect();
    files.push((
        "ops_summary.csv".to_string(),
        csv_text(
            &[
                "name",
                "category",
                "count",
                "kernel_count",
                "direct_kernel_time_ms",
                "subtree_kernel_time_ms",
                "percent",
                "cumulative_percent",
            ],
            rows,
        ),
    ));
    let rows = r
        .ops_summary
        .by_category
        .iter()
        .map(|c| {
            vec![
                c.category.clone(),
                c.count.to_string(),
                num(c.direct_kernel_time_ms),
                num(c.percent),
                num(c.cumulative_percent),
            ]
        })
        .collect();
    files.push((
        "ops_summary_by_category.csv".to_string(),
        csv_text(
            &["category", "count", "direct_kernel_time_ms", "percent", "cumulative_percent"],
            rows,
        ),
    ));

    for (name, table_rows) in &r.categories {
        files.push((format!("{name}.csv"), roofline_csv(table_rows)));
    }

    let rows = r
        .kernels
        .iter()
        .map(|k| {
            let first = k.launch_configs.first();
            vec![
                k.name.clone(),
                ostr(k.parent_op.as_deref()),
                k.category.clone(),
                k.stream.to_string(),
                k.count.to_string(),
                num(k.total_us),
                num(k.mean_us),
                num(k.median_us),
                num(k.std_us),
                num(k.min_us),
                num(k.max_us),
                num(k.percent_of_kernel_time),
                num(k.percent_of_total_time),
                dims_csv(first.and_then(|c| c.grid)),
                dims_csv(first.and_then(|c| c.block)),
                k.launch_configs.len().to_string(),
            ]
        })
        .collect();
    files.push((
        "kernel_summary.csv".to_string(),
        csv_text(
            &[
                "name",
                "parent_op",
                "category",
                "stream",
                "count",
                "total_us",
                "mean_us",
                "median_us",
                "std_us",
                "min_us",
                "max_us",
                "percent_of_kernel_time",
                "percent_of_total_time",
                "grid",
                "block",
                "launch_configs",
            ],
            rows,
        ),
    ));

    let s = &r.short_kernels;
    let rows = s
        .histogram
        .iter()
        .map(|b| vec![num(b.bin_start_us), num(b.bin_end_us), b.count.to_string()])
        .collect();
    files.push((
        "short_kernel_histogram.csv".to_string(),
        csv_text(&["bin_start_us", "bin_end_us", "count"], rows),
    ));
    let rows = s
        .rows
        .iter()
        .map(|k| {
            vec![
                k.name.clone(),
                ostr(k.parent_op.as_deref()),
                ostr(k.input_dims.as_deref()),
                ostr(k.input_strides.as_deref()),
                ostr(k.concrete_inputs.as_deref()),
                k.count.to_string(),
                num(k.total_us),
                num(k.mean_us),
                num(k.percent_of_total_time),
            ]
        })
        .collect();
    files.push((
        "short_kernels_summary.csv".to_string(),
        csv_text(
            &[
                "name",
                "parent_op",
                "input_dims",
                "input_strides",
                "concrete_inputs",
                "count",
                "total_us",
                "mean_us",
                "percent_of_total_time",
            ],
            rows,
        ),
    ));

    let rows = r
        .findings
        .iter()
        .map(|f| {
            vec![
                f.finding.id.to_string(),
                f.finding.severity.as_str().to_string(),
                num(f.time_at_stake_us),
                num(f.percent_of_total_time),
                f.finding.title.clone(),
                f.finding.evidence.clone(),
                f.finding.recommendation.clone(),
                f.finding.expected_gain.clone().unwrap_or_default(),
            ]
        })
        .collect();
    files.push((
        "findings.csv".to_string(),
        csv_text(
            &[
                "id",
                "severity",
                "time_at_stake_us",
                "percent_of_total_time",
                "title",
                "evidence",
                "recommendation",
                "expected_gain",
            ],
            rows,
        ),
    ));
    let rows = r
        .warnings
        .iter()
        .map(|w| vec![w.kind.clone(), w.count.to_string(), w.example.clone()])
        .collect();
    files.push(("warnings.csv".to_string(), csv_text(&["kind", "count", "example"], rows)));
    files.extend(crate::xla::csv_files(r));
    files.extend(crate::trace_gaps::csv_files(r));
    files
}

/// One roofline table as CSV: fixed columns, then one `param: NAME` column per
/// parameter any row has (TraceLens's naming).
fn roofline_csv(rows: &[OpRow]) -> String {
    let mut keys: Vec<&'static str> = Vec::new();
    for r in rows {
        for (k, _) in &r.params.0 {
            if !keys.contains(k) {
                keys.push(k);
            }
        }
    }
    let fixed = [
        "name",
        "category",
        "count",
        "flops",
        "bytes",
        "flops_per_byte",
        "kernel_time_us_sum",
        "kernel_time_us_mean",
        "kernel_time_us_median",
        "kernel_time_us_std",
        "kernel_time_us_min",
        "kernel_time_us_max",
        "achieved_tflops_mean",
        "achieved_tbs_mean",
        "roofline_attainment_pct",
        "bound",
        "floor_time_us",
        "tile_eff",
        "wave_eff",
        "dim_eff",
        "top_finding",
        "kernels",
        "unmodelled",
    ];
    let param_cols: Vec<String> = keys.iter().map(|k| format!("param: {k}")).collect();
    let mut header: Vec<&str> = fixed.to_vec();
    header.extend(param_cols.iter().map(String::as_str));
    let body = rows
        .iter()
        .map(|r| {
            let k = &r.kernel_time_us;
            let mut v = vec![
                r.name.clone(),
                r.category.as_str().to_string(),
                r.count.to_string(),
                onum(r.flops),
                onum(r.bytes),
                onum(r.flops_per_byte),
                num(k.sum),
                num(k.mean),
                num(k.median),
                onum(k.std),
                num(k.min),
                num(k.max),
                onum(r.achieved_tflops.as_ref().map(|s| s.mean)),
                onum(r.achieved_tbs.as_ref().map(|s| s.mean)),
                onum(r.roofline_attainment_pct),
                r.bound.map(|b| b.as_str().to_string()).unwrap_or_default(),
                onum(r.floor_time_us),
                onum(r.tile_eff),
                onum(r.wave_eff),
                onum(r.dim_eff),
                r.top_finding.as_ref().map(|f| f.title.clone()).unwrap_or_default(),
                r.kernels.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join("; "),
                r.unmodelled.clone().unwrap_or_default(),
            ];
            for key in &keys {
                v.push(r.params.get(key).map(ParamValue::tracelens_repr).unwrap_or_default());
            }
            v
        })
        .collect();
    csv_text(&header, body)
}

/// The cross-rank table for the terminal.
pub fn cross_rank_table(c: &CrossRank) -> String {
    let b = cross_rank_block(c);
    let header: Vec<&str> = b.header.iter().map(String::as_str).collect();
    let mut t = new_table(&header);
    for row in &b.rows {
        t.add_row(row.clone());
    }
    let mut out = format!("{}\n{t}\n", b.title);
    for n in &b.notes {
        out.push_str(&wrap(n, usize::from(WIDTH), "", "  "));
    }
    out
}

fn cross_rank_block(c: &CrossRank) -> Block {
    let mut b = Block::new(
        format!("Ranks ({})", c.ranks.len()),
        &["rank", "window", "busy", "compute", "comm", "comm exp.", "collectives", "coll. time"],
    );
    for r in &c.ranks {
        let mark = if c.slowest.as_deref() == Some(r.name.as_str()) { " *" } else { "" };
        b.rows.push(vec![
            format!("{}{mark}", r.name),
            ms(r.total_ms),
            ms(r.busy_ms),
            ms(r.computation_ms),
            ms(r.communication_ms),
            ms(r.exposed_communication_ms),
            r.collective_kernel_count.to_string(),
            ms(r.collective_kernel_time_ms),
        ]);
    }
    if let Some(s) = &c.slowest {
        b.notes.push(format!(
            "* slowest rank: {s} (most computation; the others wait for it in collectives). \
             Computation spread {}, window spread {}.",
            ms(c.computation_spread_ms),
            ms(c.total_spread_ms)
        ));
    }
    b
}

/// The cross-rank table as Markdown.
pub fn cross_rank_markdown(c: &CrossRank) -> String {
    let b = cross_rank_block(c);
    let mut out = format!(
        "### {}\n\n| {} |\n|{}\n",
        b.title,
        b.header.join(" | "),
        "---|".repeat(b.header.len())
    );
    for row in &b.rows {
        let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    for n in &b.notes {
        let _ = write!(out, "\n{n}\n");
    }
    out
}

/// The cross-rank table as JSON.
pub fn cross_rank_json(c: &CrossRank) -> String {
    pretty(c)
}

/// The cross-rank table as CSV (`ranks.csv`).
pub fn cross_rank_csv(c: &CrossRank) -> String {
    let rows = c
        .ranks
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                num(r.total_ms),
                num(r.busy_ms),
                num(r.idle_ms),
                num(r.computation_ms),
                num(r.communication_ms),
                num(r.exposed_communication_ms),
                r.collective_kernel_count.to_string(),
                num(r.collective_kernel_time_ms),
                (c.slowest.as_deref() == Some(r.name.as_str())).to_string(),
            ]
        })
        .collect();
    csv_text(
        &[
            "name",
            "total_ms",
            "busy_ms",
            "idle_ms",
            "computation_ms",
            "communication_ms",
            "exposed_communication_ms",
            "collective_kernel_count",
            "collective_kernel_time_ms",
            "slowest",
        ],
        rows,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use rooftop_core::roofline::Bound;
    use rooftop_core::trace::model::{CpuOp, Dims, GpuEvent, GpuKind, OpArgs, TraceModel};
    use rooftop_core::trace::ops::{Category, Params};
    use rooftop_core::trace::report::{analyze, cross_rank, TraceOptions};
    use rooftop_core::trace::tables::{KernelDetail, Stats, TimeStats};

    const GEMM_KERNEL: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_\
                               warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
    const ADD_KERNEL: &str = "void at::native::vectorized_elementwise_kernel<4, \
                              at::native::CUDAFunctor_add<c10::BFloat16>>(int)";

    /// A small step: GEMMs of 50 and 30 µs, three 2 µs adds back to back, a 2 µs
    /// device-to-host copy, a 100 µs idle gap, a 12 µs GEMM. Window 0-200 µs, busy
    /// 100 µs.
    fn model() -> TraceModel {
        let op = |name: &str, dims: Vec<Dims>| CpuOp {
            name: name.to_string(),
            args: OpArgs { input_dims: dims, ..OpArgs::default() }.into(),
            ..CpuOp::default()
        };
        let mm = || vec![Dims::Tensor(vec![512]), Dims::Tensor(vec![141, 512])];
        let add = || vec![Dims::Tensor(vec![1, 141, 512]), Dims::Tensor(vec![1, 141, 512])];
        let k = |kind: GpuKind, name: &str, ts: i64, dur: i64, op: u32| GpuEvent {
            kind,
            name: name.to_string(),
            ts_ns: ts * 1000,
            dur_ns: dur * 1000,
            stream: 7,
            grid: Some([8, 4, 1]),
            block: Some([128, 1, 1]),
            launcher: Some("cudaLaunchKernel".to_string()),
            op: Some(op),
            ..GpuEvent::default()
        };
        TraceModel {
            ops: vec![
                op("aten::addmm", mm()),
                op("aten::addmm", mm()),
                op("aten::add", add()),
                op("aten::add", add()),
                op("aten::add", add()),
                op("aten::_local_scalar_dense", vec![]),
            ],
            gpu: vec![
                k(GpuKind::Kernel, GEMM_KERNEL, 0, 50, 0),
                k(GpuKind::Kernel, GEMM_KERNEL, 50, 30, 1),
                k(GpuKind::Kernel, ADD_KERNEL, 80, 2, 2),
                k(GpuKind::Kernel, ADD_KERNEL, 82, 2, 3),
                k(GpuKind::Kernel, ADD_KERNEL, 84, 2, 4),
                k(GpuKind::Memcpy, "Memcpy DtoH (Device -> Pinned)", 86, 2, 5),
                k(GpuKind::Kernel, GEMM_KERNEL, 188, 12, 1),
            ],
            ..TraceModel::default()
        }
    }

    fn gemm_row() -> OpRow {
        OpRow {
            name: "aten::addmm".to_string(),
            category: Category::Gemm,
            params: Params(vec![
                ("M", ParamValue::Int(141)),
                ("N", ParamValue::Int(512)),
                ("K", ParamValue::Int(512)),
                ("bias", ParamValue::Bool(true)),
                ("stride_A", ParamValue::Ints(vec![512, 1])),
                ("dtypes", ParamValue::Dtypes(vec![Some("c10::BFloat16".to_string()); 2])),
            ]),
            flops: Some(74_000_000.0),
            bytes: Some(800_000.0),
            flops_per_byte: Some(92.5),
            count: 2,
            kernel_time_us: TimeStats {
                mean: 46.0,
                median: 46.0,
                std: Some(5.66),
                min: 42.0,
                max: 50.0,
                sum: 92.0,
            },
            achieved_tflops: Some(Stats { mean: 1.6, median: 1.6, std: None, min: 1.5, max: 1.8 }),
            achieved_tbs: Some(Stats {
                mean: 0.017,
                median: 0.017,
                std: None,
                min: 0.016,
                max: 0.019,
            }),
            roofline_attainment_pct: Some(12.5),
            bound: Some(Bound::Memory),
            floor_time_us: Some(5.75),
            tile_eff: Some(0.73),
            wave_eff: Some(0.5),
            dim_eff: None,
            top_finding: None,
            kernels: vec![KernelDetail {
                name: GEMM_KERNEL.to_string(),
                stream: 7,
                count: 2,
                total_us: 92.0,
                mean_us: 46.0,
                median_us: 46.0,
                std_us: 4.0,
                min_us: 42.0,
                max_us: 50.0,
                grid: Some([8, 4, 1]),
                block: Some([128, 1, 1]),
                shared_memory_bytes: None,
                registers_per_thread: None,
            }],
            unmodelled: None,
            first_op: 0,
        }
    }

    fn report() -> TraceReport {
        let mut r =
            analyze(&model(), None, &TraceOptions { histogram_bins: 4, ..TraceOptions::default() });
        // Pin the roofline table to a hand-built row: these snapshots are about layout.
        r.categories.clear();
        r.categories.insert("GEMM".to_string(), vec![gemm_row()]);
        r
    }

    #[test]
    fn hand_checked_numbers() {
        let r = report();
        let t = &r.timeline.all;
        assert_eq!(t.total.time_ms, 0.2);
        assert_eq!(t.busy.time_ms, 0.1);
        assert_eq!(t.idle.percent, 50.0);
        assert_eq!(t.exposed_memcpy.time_ms, 0.002);
        assert_eq!(r.ops_summary.ops[0].name, "aten::addmm");
        assert_eq!(r.ops_summary.ops[0].count, 2);
        assert!((r.ops_summary.ops[0].direct_kernel_time_ms - 0.092).abs() < 1e-12);
        assert_eq!(r.short_kernels.short_count, 3);
    }

    #[test]
    fn sections_parse() {
        assert_eq!("short_kernels".parse::<Section>(), Ok(Section::ShortKernels));
        assert_eq!("GEMM".parse::<Section>(), Ok(Section::Gemm));
        assert!("nope".parse::<Section>().unwrap_err().contains("short-kernels"));
        for n in Section::NAMES {
            assert_eq!(n.parse::<Section>().unwrap().as_str(), n);
        }
    }

    #[test]
    fn tables_fit_in_100_columns() {
        let r = report();
        for section in Section::NAMES {
            let opts = RenderOptions { top: 50, section: section.parse().unwrap() };
            for line in table(&r, &opts).lines() {
                assert!(line.chars().count() <= 100, "{section}: {line}");
            }
        }
    }

    #[test]
    fn json_has_the_documented_top_level_keys() {
        let v: serde_json::Value = serde_json::from_str(&json(&report())).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = vec![
            "schema_version",
            "device",
            "window",
            "timeline",
            "ops_summary",
            "categories",
            "kernels",
            "short_kernels",
            "findings",
            "warnings",
            "idle",
            "launch",
            "syncs",
            "graphs",
            "critical_path",
            "modules",
            "memory",
            "inference",
        ];
        want.sort_unstable();
        let mut got = keys.clone();
        got.sort_unstable();
        assert_eq!(got, want);
    }

    #[test]
    fn snapshot_summary_table() {
        insta::assert_snapshot!(table(&report(), &RenderOptions::default()));
    }

    #[test]
    fn snapshot_all_table() {
        insta::assert_snapshot!(table(&report(), &RenderOptions { top: 5, section: Section::All }));
    }

    #[test]
    fn snapshot_markdown() {
        insta::assert_snapshot!(markdown(
            &report(),
            &RenderOptions { top: 5, section: Section::All }
        ));
    }

    #[test]
    fn snapshot_json() {
        insta::assert_snapshot!(json(&report()));
    }

    #[test]
    fn snapshot_csv_files() {
        let mut out = String::new();
        for (name, text) in csv_files(&report()) {
            let _ = write!(out, "== {name}\n{text}");
        }
        insta::assert_snapshot!(out);
    }

    #[test]
    fn snapshot_cross_rank() {
        let mut slow = model();
        slow.gpu[0].dur_ns = 80_000;
        slow.gpu[1].ts_ns = 80_000;
        let reports = vec![
            ("rank0.json".to_string(), analyze(&model(), None, &TraceOptions::default())),
            ("rank1.json".to_string(), analyze(&slow, None, &TraceOptions::default())),
        ];
        let c = cross_rank(&reports);
        assert_eq!(c.slowest.as_deref(), Some("rank1.json"));
        insta::assert_snapshot!(format!(
            "{}\n{}\n{}",
            cross_rank_table(&c),
            cross_rank_markdown(&c),
            cross_rank_csv(&c)
        ));
    }
}
