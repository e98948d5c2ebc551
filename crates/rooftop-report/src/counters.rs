//! Renderers of `rooftop counters` reports: a terminal summary (source, roofs, the
//! kernels by total time, findings, what could not be derived), Markdown, CSV (one row
//! per kernel or dispatch, full precision) and JSON (the schema of
//! `docs/json-schema.md` § counters). Renderers never compute: every number comes from
//! the [`CounterReport`].

mod activity;

pub use activity::{blocks as activity_blocks, Block as ActivityBlock};

use crate::table::{shorten, shorten_all, table as new_table};
use crate::MISSING;
use rooftop_core::counters::rules::{ranked, AnyFinding};
use rooftop_core::counters::{BoundBasis, ByteSource, CounterReport, KernelRecord};
use rooftop_core::device::MemLevel;
use rooftop_core::roofline::Bound;
use rooftop_core::units::{pct, si, sig3, ExecUnit};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What the tables show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// Rows per table.
    pub top: usize,
    /// One row per dispatch instead of per kernel name.
    pub dispatches: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions { top: 20, dispatches: false }
    }
}

/// JSON schema version of the counters report.
pub const SCHEMA_VERSION: u32 = 2;

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| MISSING.to_string(), f)
}

/// The records shown: the kernels, or with `--dispatches` every dispatch's, built now.
fn records<'a>(r: &'a CounterReport, o: &RenderOptions) -> Cow<'a, [KernelRecord]> {
    if o.dispatches {
        Cow::Owned(r.dispatch_records().all())
    } else {
        Cow::Borrowed(&r.kernels)
    }
}

/// One column of the kernels table: its header, whether any record shown has a value
/// for it, and the cell.
struct Column {
    head: &'static str,
    has: fn(&KernelRecord) -> bool,
    cell: fn(&KernelRecord, f64) -> String,
}

/// `DRAM`: read + written bytes, the total derived from a rate, or `≥` one direction.
pub(crate) fn dram_cell(k: &KernelRecord) -> String {
    match (k.dram_bytes_read, k.dram_bytes_written, k.derived.dram_bytes_total) {
        (Some(r), Some(w), _) => si(r + w, "B"),
        (_, _, Some(t)) => si(t, "B"),
        (Some(r), None, None) => format!("≥{}", si(r, "B")),
        (None, Some(w), None) => format!("≥{}", si(w, "B")),
        (None, None, None) => MISSING.to_string(),
    }
}

fn achieved_cell(k: &KernelRecord) -> String {
    match (k.achieved_gbs, k.achieved_tflops) {
        (_, Some(t)) if k.bound == Some(Bound::Compute) => si(t * 1e12, "FLOP/s"),
        (Some(g), _) => si(g * 1e9, "B/s"),
        (None, Some(t)) => si(t * 1e12, "FLOP/s"),
        (None, None) => MISSING.to_string(),
    }
}

/// `% roof`: the roofline attainment, or — with the unit's name — the busiest unit's
/// Speed-of-Light throughput.
pub(crate) fn roof_cell(k: &KernelRecord) -> String {
    let Some(p) = k.pct_of_roof else { return MISSING.to_string() };
    match k.bound_basis {
        Some(BoundBasis::SpeedOfLight) => {
            let sol = &k.derived.speed_of_light;
            let unit = match (sol.sm_pct, sol.busiest_memory()) {
                (Some(sm), Some((_, mem))) if sm >= mem => "SM",
                (_, Some(("L1/TEX", _))) => "L1",
                (_, Some((pipe, _))) => pipe,
                _ => "SM",
            };
            format!("{} {unit}", pct(p))
        }
        _ => pct(p),
    }
}

/// Every column the kernels table can show; those no record shown has a value for are
/// left out (a trace without counters shows count, total, share and mean).
const COLUMNS: [Column; 10] = [
    Column { head: "n", has: |_| true, cell: |k, _| k.count.to_string() },
    Column {
        head: "total",
        has: |_| true,
        cell: |k, _| opt(k.total_duration_ns, |t| si(t * 1e-9, "s")),
    },
    Column {
        head: "share",
        has: |_| true,
        cell: |k, all| opt(k.total_duration_ns.filter(|_| all > 0.0), |t| pct(100.0 * t / all)),
    },
    Column { head: "mean", has: |_| true, cell: |k, _| opt(k.duration_ns, |t| si(t * 1e-9, "s")) },
    Column {
        head: "DRAM",
        has: |k| {
            k.dram_bytes_read.is_some()
                || k.dram_bytes_written.is_some()
                || k.derived.dram_bytes_total.is_some()
        },
        cell: |k, _| dram_cell(k),
    },
    Column {
        head: "achieved",
        has: |k| k.achieved_gbs.is_some() || k.achieved_tflops.is_some(),
        cell: |k, _| achieved_cell(k),
    },
    Column { head: "% roof", has: |k| k.pct_of_roof.is_some(), cell: |k, _| roof_cell(k) },
    Column {
        head: "AI F/B",
        has: |k| k.arithmetic_intensity.is_some(),
        cell: |k, _| opt(k.arithmetic_intensity, sig3),
    },
    Column {
        head: "L2 hit",
        has: |k| k.l2_hit_rate_pct.is_some(),
        cell: |k, _| opt(k.l2_hit_rate_pct, pct),
    },
    Column {
        head: "bound",
        has: |k| k.bound.is_some(),
        cell: |k, _| k.bound.map_or_else(|| MISSING.to_string(), |b| b.as_str().to_string()),
    },
];

/// The kernels table's columns, names, rows and, when shortened names would collide,
/// the full names listed under it.
struct KernelTable {
    header: Vec<&'static str>,
    rows: Vec<Vec<String>>,
    footnotes: Vec<String>,
}

/// `#7 name` for a dispatch record, the name for a kernel.
fn label(k: &KernelRecord) -> String {
    match k.id {
        Some(id) => format!("#{id} {}", k.name),
        None => k.name.clone(),
    }
}

/// The narrowest name column before optional columns are left out.
const MIN_NAME: usize = 24;

/// The table of the records `all` (their first `--top`) laid out for `width` columns
/// (`None`: no width limit, names shortened to `md_width` for Markdown).
fn kernel_table(all: &[KernelRecord], o: &RenderOptions, width: Option<usize>) -> KernelTable {
    let rs: Vec<&KernelRecord> = all.iter().take(o.top).collect();
    let total: f64 = all.iter().filter_map(|k| k.total_duration_ns).sum();
    let mut cols: Vec<&Column> = COLUMNS
        .iter()
        .filter(|c| rs.iter().any(|k| (c.has)(k)))
        // One row is the whole time; one dispatch per row makes the mean the total.
        .filter(|c| !(c.head == "share" && all.len() == 1))
        .filter(|c| !(c.head == "mean" && rs.iter().all(|k| k.count == 1)))
        .collect();
    let row_cells = |cols: &[&Column]| -> Vec<Vec<String>> {
        rs.iter().map(|k| cols.iter().map(|c| (c.cell)(k, total)).collect()).collect()
    };
    let labels: Vec<String> = rs.iter().map(|k| label(k)).collect();
    let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    // What the names need at the narrowest name column.
    let needed = shorten_all(&refs, MIN_NAME).iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let (cells, room) = match width {
        Some(w) => loop {
            let cells = row_cells(&cols);
            let mut header = vec!["kernel"];
            header.extend(cols.iter().map(|c| c.head));
            let mut probe = new_table(&header);
            for row in &cells {
                let mut full = vec![String::new()];
                full.extend(row.iter().cloned());
                probe.add_row(full);
            }
            let room = crate::table::room_for(&probe, w, 0);
            // Too little room for names: leave out the columns JSON and the findings
            // carry anyway, least needed first.
            let drop = ["share", "L2 hit", "AI F/B", "mean"]
                .into_iter()
                .find(|h| cols.iter().any(|c| c.head == *h));
            match drop {
                Some(h) if room < needed.min(MIN_NAME) => cols.retain(|c| c.head != h),
                _ => break (cells, room.max(needed.min(MIN_NAME))),
            }
        },
        None => (row_cells(&cols), 60),
    };
    let mut header = vec!["kernel"];
    header.extend(cols.iter().map(|c| c.head));
    let mut names = shorten_all(&refs, room);
    let mut footnotes = Vec::new();
    if header.contains(&"DRAM")
        && rs
            .iter()
            .any(|k| k.derived.byte_sources.get(&MemLevel::Dram) == Some(&ByteSource::Derived))
    {
        footnotes.push(
            "DRAM: derived from the profiler's DRAM throughput × the duration where the byte \
             counters were not collected"
                .to_string(),
        );
    }
    let collide = names.iter().enumerate().any(|(i, a)| {
        names.iter().enumerate().any(|(j, b)| i != j && a == b && refs[i] != refs[j])
    });
    if collide {
        // Numbered rows, full names below.
        let digits = rs.len().to_string().len() + 3;
        let short = shorten_all(&refs, room.saturating_sub(digits).max(8));
        names = short.iter().enumerate().map(|(i, n)| format!("[{}] {n}", i + 1)).collect();
        footnotes.push("names (shortened above):".to_string());
        footnotes.extend(refs.iter().enumerate().map(|(i, n)| format!("[{}] {n}", i + 1)));
    }
    let rows = names
        .into_iter()
        .zip(cells)
        .map(|(n, mut row)| {
            row.insert(0, n);
            row
        })
        .collect();
    KernelTable { header, rows, footnotes }
}

/// What `% roof` shows, when the table has that column.
const ROOF_NOTE: &str = "% roof: roofline attainment (counted FLOPs and bytes against the \
     roofs); followed by a unit (SM, DRAM, L1 = L1/TEX, L2): that unit's Speed-of-Light \
     throughput, % of its own peak, when FLOPs or bytes are not counted";

/// `fp32 19.5 TFLOP/s` (`int8 624 TOP/s`).
fn compute_roof_text(c: &rooftop_core::roofline::ComputeRoof) -> String {
    let unit = if c.precision.as_str().starts_with("int") { "OP/s" } else { "FLOP/s" };
    format!("{} {}", c.precision.as_str(), si(c.tflops * 1e12, unit))
}

fn roofs_line(r: &CounterReport) -> String {
    let roofs = &r.roofs;
    if roofs.is_empty() {
        return "roofs: none (no device known; pass --device)".to_string();
    }
    let bw: Vec<String> = roofs
        .bandwidth
        .iter()
        .map(|b| format!("{} {}", b.level.as_str().to_uppercase(), si(b.gbs * 1e9, "B/s")))
        .collect();
    let mut parts = Vec::new();
    if !bw.is_empty() {
        parts.push(bw.join(", "));
    }
    for unit in [ExecUnit::Vector, ExecUnit::Matrix] {
        let list: Vec<String> =
            roofs.compute.iter().filter(|c| c.unit == unit).map(compute_roof_text).collect();
        if !list.is_empty() {
            parts.push(format!("{} {}", unit.as_str(), list.join(", ")));
        }
    }
    let who = match (&roofs.device, roofs.candidates.as_slice()) {
        (Some(d), _) => format!(", {d}"),
        (None, []) => String::new(),
        (None, c) => format!(", shared by {}", c.join(" / ")),
    };
    format!("roofs ({}{who}): {}", roofs.source.as_str(), parts.join("; "))
}

/// The `device.extra` key under which `rooftop counters --device` lists the facts it
/// filled in because the files do not state them (`architecture gfx942, wave size 64`).
pub const FILLED_FROM_DEVICE: &str = "filled_from_device";

/// What the files state about the device (not what `--device` filled in).
fn device_line(r: &CounterReport) -> Option<String> {
    let d = &r.set.device;
    let mut facts = Vec::new();
    if let Some(n) = &d.name {
        facts.push(n.clone());
    }
    let arch_filled = d.extra.get(FILLED_FROM_DEVICE).is_some_and(|f| f.contains("architecture"));
    if let Some(a) = d.arch.as_ref().filter(|_| !arch_filled) {
        facts.push(if a.starts_with("gfx") {
            a.clone()
        } else {
            format!("compute capability {a}")
        });
    }
    if let Some(u) = d.compute_units {
        let kind =
            if r.set.vendor() == rooftop_core::counters::GpuVendor::Nvidia { "SMs" } else { "CUs" };
        facts.push(format!("{u} {kind}"));
    }
    if let Some(c) = d.max_sclk_mhz {
        facts.push(format!("{} max clock", si(c * 1e6, "Hz")));
    }
    (!facts.is_empty()).then(|| format!("device in the files: {}", facts.join(", ")))
}

fn header_lines(r: &CounterReport) -> Vec<String> {
    let s = &r.set.source;
    let mut v = vec![format!(
        "{} — {}, {}, from {}",
        s.format.as_str(),
        rooftop_core::diagnose::count(r.set.dispatches.len() as u64, "dispatch", "dispatches"),
        rooftop_core::diagnose::count(r.kernels.len() as u64, "kernel", "kernels"),
        files_label(&s.files)
    )];
    v.extend(device_line(r));
    v.push(roofs_line(r));
    v
}

/// `DIR/ (N files)` or the one file's name: full paths are in JSON.
fn files_label(files: &[String]) -> String {
    match files {
        [] => "no file".to_string(),
        [one] => std::path::Path::new(one)
            .file_name()
            .map_or_else(|| one.clone(), |n| n.to_string_lossy().into_owned()),
        many => {
            let parent = |f: &String| {
                std::path::Path::new(f)
                    .parent()
                    .and_then(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
            };
            let p0 = parent(&many[0]);
            match p0.filter(|p| many.iter().all(|f| parent(f).as_ref() == Some(p))) {
                Some(p) => format!("{p}/ ({} files)", many.len()),
                None => format!("{} files", many.len()),
            }
        }
    }
}

/// For a system trace without any hardware counter (nsys, rocpd without `--pmc`), the
/// one line that replaces the list of every counter-derived quantity.
fn no_counters_line(r: &CounterReport) -> Option<String> {
    use rooftop_core::counters::CounterFormat as F;
    let trace =
        matches!(r.set.source.format, F::NsysSqlite | F::NsysGpuTrace | F::NsysKernSum | F::Rocpd);
    (trace && r.set.dispatches.iter().all(|d| d.counters.is_empty())).then(|| {
        let how = if r.set.vendor() == rooftop_core::counters::GpuVendor::Nvidia {
            "profile the kernels with Nsight Compute (`rooftop profile --with ncu`)"
        } else {
            "collect counters with `rocprofv3 --pmc` (`rooftop profile --with rocprofv3`)"
        };
        format!(
            "this is a trace without hardware counters: bytes, FLOPs, hit rates and achieved \
             occupancy need counters; {how}"
        )
    })
}

/// Missing quantities across the records shown, each once, with the counters needed.
fn missing_lines(rs: &[KernelRecord]) -> Vec<String> {
    let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
    for k in rs {
        for m in &k.missing {
            seen.entry(&m.quantity).or_insert(&m.needs);
        }
    }
    seen.into_iter().map(|(q, n)| format!("{q}: needs {n}")).collect()
}

/// rooftop's findings and the profiler's of the records shown, each with its record,
/// ranked by severity, then by the time at stake over all the kernel's dispatches
/// (rooftop's first among equals).
fn all_findings(rs: &[KernelRecord], top: usize) -> Vec<(&KernelRecord, AnyFinding<'_>)> {
    let mut v: Vec<(&KernelRecord, AnyFinding<'_>)> = Vec::new();
    for k in rs.iter().take(top) {
        for f in ranked(&k.findings, &k.tool_findings) {
            v.push((k, f));
        }
    }
    let total = |(k, f): &(&KernelRecord, AnyFinding<'_>)| {
        f.time_at_stake_us().map_or(f64::NEG_INFINITY, |t| t * k.count as f64)
    };
    v.sort_by(|a, b| {
        b.1.severity().cmp(&a.1.severity()).then_with(|| total(b).total_cmp(&total(a)))
    });
    v
}

/// " — at stake: 45.5 µs (51.8% of the kernel's time) per dispatch", or nothing.
fn stake_suffix(f: &AnyFinding<'_>, k: &KernelRecord) -> String {
    f.stake().map_or(String::new(), |s| {
        let per = if k.count > 1 { " per dispatch" } else { "" };
        format!(" — {}{per}", crate::table::stake_text(s.time_us, s.share_pct(), s.window))
    })
}

/// `Rule (OPT, est. 50% global speedup, 3 dispatches)`.
pub(crate) fn tool_title(t: &rooftop_core::counters::ToolFinding) -> String {
    let mut parts = vec![t.rule_type.clone()];
    if let Some(s) = t.estimated_speedup_pct {
        parts.push(format!(
            "est. speedup {}{}",
            pct(s),
            t.speedup_type.as_ref().map(|x| format!(" {x}")).unwrap_or_default()
        ));
    }
    if t.dispatches > 1 {
        parts.push(format!("{} dispatches", t.dispatches));
    }
    let parts: Vec<String> = parts.into_iter().filter(|p| !p.is_empty()).collect();
    format!("{} ({})", t.rule, parts.join(", "))
}

/// A note's label and text: `warning: ` for a note that says the files or the flags
/// contradict themselves (it starts so), `note: ` for the others.
fn note_label(n: &str) -> (&'static str, &str) {
    match n.strip_prefix("warning: ") {
        Some(text) => ("warning: ", text),
        None => ("note: ", n),
    }
}

/// The terminal report.
pub fn table(r: &CounterReport, o: &RenderOptions) -> String {
    let mut out = String::new();
    for l in header_lines(r) {
        out.push_str(&crate::wrap_text(&l, 100, "", "  "));
    }
    for n in r.set.source.notes.iter().chain(&r.roofs.notes) {
        let (label, text) = note_label(n);
        let indent = " ".repeat(label.len());
        out.push_str(&crate::wrap_text(text, 100, label, &indent));
    }
    let shown = records(r, o);
    let rs: &[KernelRecord] = &shown;
    let kt = kernel_table(rs, o, Some(usize::from(crate::table::WIDTH)));
    let mut t = new_table(&kt.header);
    for row in kt.rows {
        t.add_row(row);
    }
    let _ = writeln!(out, "\n{t}");
    if rs.len() > o.top {
        let _ = writeln!(out, "({} more; --top N shows more)", rs.len() - o.top);
    }
    if kt.header.contains(&"% roof") {
        out.push_str(&crate::wrap_text(ROOF_NOTE, 100, "", "  "));
    }
    for n in &kt.footnotes {
        out.push_str(&crate::wrap_text(n, 100, "", "    "));
    }
    let findings = all_findings(rs, o.top);
    if !findings.is_empty() {
        out.push_str("\nfindings (rooftop's and the profiler's own, by severity)\n");
        for (k, f) in findings.iter().take(o.top) {
            match f {
                AnyFinding::Rooftop(f) => {
                    let line = format!(
                        "[{}] {}: {} — {}{}",
                        f.severity.as_str(),
                        shorten(&k.name, 40),
                        f.title,
                        f.evidence,
                        stake_suffix(&AnyFinding::Rooftop(f), k)
                    );
                    out.push_str(&crate::wrap_text(&line, 100, "  ", "    "));
                    out.push_str(&crate::wrap_text(&f.recommendation, 100, "    → ", "      "));
                }
                AnyFinding::Tool(t) => {
                    let line = format!(
                        "[{}] {} says, {}: {}{} — {}",
                        t.severity.as_str(),
                        t.tool,
                        shorten(&k.name, 40),
                        tool_title(t),
                        stake_suffix(&AnyFinding::Tool(t), k),
                        t.description
                    );
                    out.push_str(&crate::wrap_text(&line, 100, "  ", "    "));
                }
            }
        }
        if findings.len() > o.top {
            let _ = writeln!(out, "({} more findings; --top N shows more)", findings.len() - o.top);
        }
    }
    if let Some(a) = &r.set.activity {
        out.push_str(&activity::table(a, o.top));
    }
    let missing = no_counters_line(r).map_or_else(|| missing_lines(rs), |l| vec![l]);
    if !missing.is_empty() {
        out.push_str("\nnot derivable from the counters present\n");
        for m in missing {
            out.push_str(&crate::wrap_text(&m, 100, "  ", "    "));
        }
    }
    out
}

/// Markdown: the same blocks as the table.
pub fn markdown(r: &CounterReport, o: &RenderOptions) -> String {
    let mut out = String::from("## rooftop counters\n\n");
    for l in header_lines(r) {
        let _ = writeln!(out, "- {l}");
    }
    for n in r.set.source.notes.iter().chain(&r.roofs.notes) {
        let (label, text) = note_label(n);
        let _ = writeln!(out, "- {label}{text}");
    }
    out.push('\n');
    let shown = records(r, o);
    let rs: &[KernelRecord] = &shown;
    let kt = kernel_table(rs, o, None);
    let _ = writeln!(out, "| {} |", kt.header.join(" | "));
    let _ = writeln!(out, "|{}|", kt.header.iter().map(|_| "---").collect::<Vec<_>>().join("|"));
    for row in &kt.rows {
        let cells: Vec<String> = row.iter().map(|c| crate::markdown::cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    if kt.header.contains(&"% roof") {
        let _ = writeln!(out, "\n{ROOF_NOTE}");
    }
    for n in &kt.footnotes {
        let _ = writeln!(out, "\n{}", n.replace('|', "\\|"));
    }
    let findings = all_findings(rs, o.top);
    if !findings.is_empty() {
        out.push_str("\n### Findings\n\n");
    }
    for (k, f) in &findings {
        let name = shorten(&k.name, 60).replace('`', "'");
        match f {
            AnyFinding::Rooftop(f) => {
                let _ = writeln!(
                    out,
                    "- **{}** `{name}`: {} — {}. {}",
                    f.severity.as_str(),
                    f.title,
                    f.evidence,
                    f.recommendation
                );
            }
            AnyFinding::Tool(t) => {
                let _ = writeln!(
                    out,
                    "- **{}** ({}) `{name}`: {} — {}",
                    t.severity.as_str(),
                    t.tool,
                    tool_title(t),
                    t.description
                );
            }
        }
    }
    if let Some(a) = &r.set.activity {
        out.push_str(&activity::markdown(a, o.top));
    }
    let missing = no_counters_line(r).map_or_else(|| missing_lines(rs), |l| vec![l]);
    if !missing.is_empty() {
        out.push_str("\n### Not derivable from the counters present\n\n");
        for m in missing {
            let _ = writeln!(out, "- {m}");
        }
    }
    out
}

fn csv_num(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x}"))
}

/// CSV: one row per record, full precision, empty cells for absent values.
pub fn csv(r: &CounterReport, o: &RenderOptions) -> Result<String, crate::RenderError> {
    let shown = records(r, o);
    let rs: &[KernelRecord] = &shown;
    let mut precisions: Vec<String> = Vec::new();
    for k in rs {
        for p in k.flops.iter().flat_map(|m| m.keys()) {
            if !precisions.contains(p) {
                precisions.push(p.clone());
            }
        }
    }
    precisions.sort();
    let mut header: Vec<String> = [
        "name",
        "id",
        "count",
        "duration_ns",
        "total_duration_ns",
        "dram_bytes_read",
        "dram_bytes_written",
        "l2_bytes",
        "l1_bytes",
        "lds_bytes",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    header.extend(precisions.iter().map(|p| format!("flops_{p}")));
    header.extend(
        [
            "l1_hit_rate_pct",
            "l2_hit_rate_pct",
            "achieved_gbs",
            "achieved_tflops",
            "arithmetic_intensity",
            "pct_of_roof",
            "bound",
            "bound_basis",
            "dram_bytes_source",
            "sol_sm_pct",
            "sol_memory_pct",
            "sol_dram_pct",
            "sol_l1_pct",
            "sol_l2_pct",
            "achieved_occupancy_pct",
            "findings",
            "tool_findings",
            "missing",
        ]
        .iter()
        .map(|s| (*s).to_string()),
    );
    let mut rows = Vec::with_capacity(rs.len());
    for k in rs {
        let mut rec = vec![
            k.name.clone(),
            k.id.map(|i| i.to_string()).unwrap_or_default(),
            k.count.to_string(),
            csv_num(k.duration_ns),
            csv_num(k.total_duration_ns),
            csv_num(k.dram_bytes_read),
            csv_num(k.dram_bytes_written),
            csv_num(k.derived.l2_bytes),
            csv_num(k.derived.l1_bytes),
            csv_num(k.derived.lds_bytes),
        ];
        for p in &precisions {
            rec.push(csv_num(k.flops.as_ref().and_then(|m| m.get(p).copied())));
        }
        rec.extend([
            csv_num(k.l1_hit_rate_pct),
            csv_num(k.l2_hit_rate_pct),
            csv_num(k.achieved_gbs),
            csv_num(k.achieved_tflops),
            csv_num(k.arithmetic_intensity),
            csv_num(k.pct_of_roof),
            k.bound.map_or_else(String::new, |b| b.as_str().to_string()),
            k.bound_basis.map_or_else(String::new, |b| b.as_str().to_string()),
            match k.derived.byte_sources.get(&MemLevel::Dram) {
                Some(ByteSource::Counter) => "counter".to_string(),
                Some(ByteSource::Derived) => "derived".to_string(),
                None => String::new(),
            },
            csv_num(k.derived.speed_of_light.sm_pct),
            csv_num(k.derived.speed_of_light.memory_pct),
            csv_num(k.derived.speed_of_light.dram_pct),
            csv_num(k.derived.speed_of_light.l1_pct),
            csv_num(k.derived.speed_of_light.l2_pct),
            csv_num(k.derived.achieved_occupancy_pct),
            k.findings.iter().map(|f| f.id).collect::<Vec<_>>().join(";"),
            k.tool_findings.iter().map(|f| f.rule.as_str()).collect::<Vec<_>>().join(";"),
            k.missing.iter().map(|m| &*m.quantity).collect::<Vec<_>>().join(";"),
        ]);
        rows.push(rec);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    crate::csv::text(&header, rows)
}

#[derive(Serialize)]
struct JsonSource<'a> {
    format: &'static str,
    format_id: rooftop_core::counters::CounterFormat,
    files: &'a [String],
    tool_version: &'a Option<String>,
    notes: &'a [String],
}

/// One record's JSON at depth `level`, appended to `out`: its members written one by
/// one, each key as it is (our own names: nothing to escape) and each value through
/// serde. Byte for byte what serde's derive of the same members writes (test
/// `json_written_on_the_pool_is_serdes_pretty_json`, whose oracle is that derive); a key
/// through serde is escaped a byte at a time, and keys were most of a record's
/// serialisation.
fn write_record(k: &KernelRecord, out: &mut Vec<u8>, level: usize) -> std::io::Result<()> {
    let x = &k.derived;
    let mut o = crate::json::Members::object(out, level)?;
    let at = o.level();
    o.str_field("name", &k.name)?;
    o.field("id", &k.id)?;
    o.field("count", &k.count)?;
    o.field("duration_ns", &k.duration_ns)?;
    o.field("total_duration_ns", &k.total_duration_ns)?;
    o.field("dram_bytes_read", &k.dram_bytes_read)?;
    o.field("dram_bytes_written", &k.dram_bytes_written)?;
    o.field("l2_bytes", &x.l2_bytes)?;
    o.field("l1_bytes", &x.l1_bytes)?;
    o.field("lds_bytes", &x.lds_bytes)?;
    o.field("flops", &k.flops)?;
    o.field("flops_by_unit", &(!x.flops.is_empty()).then_some(&x.flops))?;
    o.field("l1_hit_rate_pct", &k.l1_hit_rate_pct)?;
    o.field("l2_hit_rate_pct", &k.l2_hit_rate_pct)?;
    o.field("lds_bank_conflict_pct", &x.lds_bank_conflict_pct)?;
    o.field("achieved_occupancy_pct", &x.achieved_occupancy_pct)?;
    o.field("theoretical_occupancy_pct", &x.theoretical_occupancy_pct)?;
    o.field("grid_waves", &x.grid_waves)?;
    o.field("achieved_gbs", &k.achieved_gbs)?;
    o.field("achieved_tflops", &k.achieved_tflops)?;
    o.field("arithmetic_intensity", &k.arithmetic_intensity)?;
    o.field("bound", &k.bound)?;
    o.field("bound_basis", &k.bound_basis)?;
    o.str_field("bound_reason", &k.bound_reason)?;
    o.field("pct_of_roof", &k.pct_of_roof)?;
    o.field("compute_roof", &k.compute_roof)?;
    o.field("speed_of_light", &x.speed_of_light)?;
    o.field("byte_sources", &x.byte_sources)?;
    o.field("roofline", &k.roofline)?;
    o.field("grid", &k.grid)?;
    o.field("block", &k.block)?;
    o.field("vgprs", &k.vgprs)?;
    o.field("agprs", &k.agprs)?;
    o.field("sgprs", &k.sgprs)?;
    o.field("shared_bytes", &k.shared_bytes)?;
    o.field("coalescing", &x.coalescing)?;
    crate::json::array(o.key("findings")?, at, &k.findings, write_finding)?;
    o.field("tool_findings", &k.tool_findings)?;
    crate::json::array(o.key("missing")?, at, &k.missing, |m, w, level| {
        let mut o = crate::json::Members::object(w, level)?;
        o.str_field("quantity", &m.quantity)?;
        o.str_field("needs", &m.needs)?;
        o.end()
    })?;
    o.end()
}

/// A finding as its `Serialize` writes it (the texts through [`crate::json::write_str`]:
/// a record's findings are most of its text).
fn write_finding(
    f: &rooftop_core::diagnose::Finding,
    w: &mut Vec<u8>,
    level: usize,
) -> std::io::Result<()> {
    let mut o = crate::json::Members::object(w, level)?;
    o.str_field("id", f.id)?;
    o.field("severity", &f.severity)?;
    o.str_field("title", &f.title)?;
    o.str_field("evidence", &f.evidence)?;
    o.str_field("recommendation", &f.recommendation)?;
    o.opt_str_field("expected_gain", f.expected_gain.as_deref())?;
    o.field("time_at_stake_us", &f.time_at_stake_us())?;
    o.field("percent_of_total_time", &f.share_pct())?;
    o.field("window", &f.stake.map(|x| x.window))?;
    o.field("window_us", &f.stake.map(|x| x.window_us))?;
    o.end()
}

/// JSON (docs/json-schema.md § counters); absent values are `null`, never 0.
pub fn json(r: &CounterReport) -> String {
    crate::json::written(|out| write_json(r, out))
}

/// [`json`], written to `w` as it is made: a trace of a million dispatches is gigabytes
/// of JSON, which is never held whole (the dispatches are rendered a run per thread on
/// the pool, `json::array_on_pool`). Byte for byte what
/// `serde_json::to_string_pretty` writes for the same report, and a final line break.
pub fn write_json<W: std::io::Write>(r: &CounterReport, mut w: W) -> std::io::Result<()> {
    let s = &r.set.source;
    let mut o = crate::json::Members::object(&mut w, 0)?;
    o.field("schema_version", &SCHEMA_VERSION)?;
    o.field(
        "source",
        &JsonSource {
            format: s.format.as_str(),
            format_id: s.format,
            files: &s.files,
            tool_version: &s.tool_version,
            notes: &s.notes,
        },
    )?;
    o.field("device", &r.set.device)?;
    o.field("roofs", &r.roofs)?;
    o.field("formulas", &r.formulas)?;
    let level = o.level();
    // Each dispatch's record is built where it is written, on the pool's threads.
    let records = r.dispatch_records();
    crate::json::array_on_pool(o.key("dispatches")?, level, &r.set.dispatches, |d, w, at| {
        write_record(&records.record(d), w, at)
    })?;
    crate::json::array_on_pool(o.key("kernels")?, level, &r.kernels, write_record)?;
    o.field("activity", &r.set.activity)?;
    o.end()?;
    w.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rooftop_core::counters::{
        analyze_in, CounterFormat, CounterSet, CounterSource, DeviceInfo, Dispatch,
    };
    use rooftop_core::device::Catalog;

    #[derive(Serialize)]
    struct JsonRecord<'a> {
        name: &'a str,
        id: Option<u64>,
        count: u64,
        duration_ns: Option<f64>,
        total_duration_ns: Option<f64>,
        dram_bytes_read: Option<f64>,
        dram_bytes_written: Option<f64>,
        l2_bytes: Option<f64>,
        l1_bytes: Option<f64>,
        lds_bytes: Option<f64>,
        flops: &'a Option<BTreeMap<String, f64>>,
        flops_by_unit: Option<&'a rooftop_core::counters::FlopCounts>,
        l1_hit_rate_pct: Option<f64>,
        l2_hit_rate_pct: Option<f64>,
        lds_bank_conflict_pct: Option<f64>,
        achieved_occupancy_pct: Option<f64>,
        theoretical_occupancy_pct: Option<f64>,
        grid_waves: Option<f64>,
        achieved_gbs: Option<f64>,
        achieved_tflops: Option<f64>,
        arithmetic_intensity: Option<f64>,
        bound: Option<Bound>,
        bound_basis: Option<BoundBasis>,
        bound_reason: &'a str,
        pct_of_roof: Option<f64>,
        compute_roof: &'a Option<rooftop_core::roofline::ComputeRoof>,
        speed_of_light: &'a rooftop_core::counters::SpeedOfLight,
        byte_sources: &'a BTreeMap<MemLevel, ByteSource>,
        roofline: &'a [rooftop_core::counters::analysis::RooflinePoint],
        grid: Option<[u64; 3]>,
        block: Option<[u64; 3]>,
        vgprs: Option<u32>,
        agprs: Option<u32>,
        sgprs: Option<u32>,
        shared_bytes: Option<u64>,
        coalescing: &'a Option<rooftop_core::counters::Coalescing>,
        findings: &'a [rooftop_core::diagnose::Finding],
        tool_findings: &'a [rooftop_core::counters::ToolFinding],
        missing: &'a [rooftop_core::counters::Missing],
    }

    fn json_record(k: &KernelRecord) -> JsonRecord<'_> {
        let x = &k.derived;
        JsonRecord {
            name: &k.name,
            id: k.id,
            count: k.count,
            duration_ns: k.duration_ns,
            total_duration_ns: k.total_duration_ns,
            dram_bytes_read: k.dram_bytes_read,
            dram_bytes_written: k.dram_bytes_written,
            l2_bytes: x.l2_bytes,
            l1_bytes: x.l1_bytes,
            lds_bytes: x.lds_bytes,
            flops: &k.flops,
            flops_by_unit: (!x.flops.is_empty()).then_some(&x.flops),
            l1_hit_rate_pct: k.l1_hit_rate_pct,
            l2_hit_rate_pct: k.l2_hit_rate_pct,
            lds_bank_conflict_pct: x.lds_bank_conflict_pct,
            achieved_occupancy_pct: x.achieved_occupancy_pct,
            theoretical_occupancy_pct: x.theoretical_occupancy_pct,
            grid_waves: x.grid_waves,
            achieved_gbs: k.achieved_gbs,
            achieved_tflops: k.achieved_tflops,
            arithmetic_intensity: k.arithmetic_intensity,
            bound: k.bound,
            bound_basis: k.bound_basis,
            bound_reason: &k.bound_reason,
            pct_of_roof: k.pct_of_roof,
            compute_roof: &k.compute_roof,
            speed_of_light: &x.speed_of_light,
            byte_sources: &x.byte_sources,
            roofline: &k.roofline,
            grid: k.grid,
            block: k.block,
            vgprs: k.vgprs,
            agprs: k.agprs,
            sgprs: k.sgprs,
            shared_bytes: k.shared_bytes,
            coalescing: &x.coalescing,
            findings: &k.findings,
            tool_findings: &k.tool_findings,
            missing: &k.missing,
        }
    }

    /// The report as one struct, serialised by serde_json's own pretty printer: the
    /// oracle for [`write_json`], which writes it member by member on the pool.
    #[derive(Serialize)]
    struct Whole<'a> {
        schema_version: u32,
        source: JsonSource<'a>,
        device: &'a rooftop_core::counters::DeviceInfo,
        roofs: &'a rooftop_core::counters::RoofSet,
        formulas: &'a [String],
        dispatches: Vec<JsonRecord<'a>>,
        kernels: Vec<JsonRecord<'a>>,
        activity: &'a Option<rooftop_core::counters::Activity>,
    }

    fn whole(r: &CounterReport) -> String {
        let s = &r.set.source;
        let dispatches = r.dispatch_records().all();
        let w = Whole {
            schema_version: SCHEMA_VERSION,
            source: JsonSource {
                format: s.format.as_str(),
                format_id: s.format,
                files: &s.files,
                tool_version: &s.tool_version,
                notes: &s.notes,
            },
            device: &r.set.device,
            roofs: &r.roofs,
            formulas: &r.formulas,
            dispatches: dispatches.iter().map(json_record).collect(),
            kernels: r.kernels.iter().map(json_record).collect(),
            activity: &r.set.activity,
        };
        serde_json::to_string_pretty(&w).unwrap() + "\n"
    }

    /// `n` dispatches of three kernels on an MI300X, every third without counters.
    fn report(n: u64) -> CounterReport {
        let names: [std::sync::Arc<str>; 3] =
            ["gemm \"quoted\" <T>".into(), "rmsnorm".into(), "softmax\tkernel".into()];
        let dispatches = (0..n)
            .map(|i| {
                let mut d = Dispatch {
                    id: i,
                    name: names[(i % 3) as usize].clone(),
                    start_ns: Some(1_000 * i),
                    end_ns: Some(1_000 * i + 500 + i % 7),
                    duration_ns: Some((500 + i % 7) as f64),
                    grid: Some([1 + i % 1000, 1, 1]),
                    block: Some([256, 1, 1]),
                    vgprs: Some(64),
                    ..Dispatch::default()
                };
                if i % 3 != 2 {
                    d.counters.insert("FETCH_SIZE".into(), (i * 37 % 10_000) as f64);
                    d.counters.insert("WRITE_SIZE".into(), 0.1 * i as f64);
                    d.counters.insert("TCC_HIT_sum".into(), (i * 11) as f64);
                    d.counters.insert("TCC_MISS_sum".into(), (i * 5 % 97) as f64);
                }
                d
            })
            .collect();
        let set = CounterSet {
            source: CounterSource {
                format: CounterFormat::Rocpd,
                files: vec!["a.db".into()],
                tool_version: None,
                notes: vec!["a note".into()],
            },
            device: DeviceInfo {
                name: Some("AMD Instinct MI300X".into()),
                ..DeviceInfo::default()
            },
            measured_roofs: Vec::new(),
            dispatches,
            aggregates: Vec::new(),
            activity: None,
        };
        analyze_in(set, Catalog::builtin(), None).unwrap()
    }

    /// A finding written member by member is what its `Serialize` writes: with and
    /// without a time at stake and an expected gain, texts that need escapes, at two
    /// depths.
    #[test]
    fn findings_written_here_are_serdes() {
        use rooftop_core::diagnose::{Finding, Stake, WindowKind};
        for stake in [None, Stake::new(3.5, 10.0, WindowKind::Kernel)] {
            for gain in [None, Some("up to 1.02x".to_string()), Some("a \"b\"\n\\".to_string())] {
                let f = Finding::new("counters.x", "t \"q\"", "e\u{1}", "r é", stake)
                    .with_gain(gain.clone());
                for level in [0, 3] {
                    let mut got = Vec::new();
                    write_finding(&f, &mut got, level).unwrap();
                    let mut want = Vec::new();
                    let pretty = crate::json::Pretty::at(level);
                    f.serialize(&mut serde_json::Serializer::with_formatter(&mut want, pretty))
                        .unwrap();
                    assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap());
                }
            }
        }
    }

    /// Byte for byte serde's pretty JSON of the whole report: no dispatches (`[]`), one,
    /// and more than one run of the pool's tasks and groups of runs (512 per task).
    #[test]
    fn json_written_on_the_pool_is_serdes_pretty_json() {
        for n in [0, 1, 2, 511, 512, 513, 2_600] {
            let r = report(n);
            assert_eq!(r.set.dispatches.len() as u64, n);
            let got = json(&r);
            assert_eq!(got, whole(&r), "{n} dispatches");
        }
    }
}
