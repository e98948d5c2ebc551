//! HTML of `rooftop trace`: the sections of `--section all` (timeline, ops, categories,
//! every roofline table, kernels, short kernels, findings, the time between the kernels
//! with one step's timeline and its critical path, warnings) as sortable tables,
//! with a roofline chart of the modelled op rows; for a directory of traces, one part
//! per rank and the cross-rank table.

use super::roofs::{chart_roofs, device_roofs, RoofEntry};
use super::{
    anchor, esc, finding, note, notes, roofline_block, roofs_table, Cell, Page, Section, Table,
};
use crate::svg::{Mark, RooflineChart};
use crate::MISSING;
use rooftop_core::device::DeviceSpec;
use rooftop_core::trace::ops::{ParamValue, Table as OpTable};
use rooftop_core::trace::report::{CrossRank, TraceReport};
use rooftop_core::trace::summary::LaunchConfig;
use rooftop_core::trace::tables::OpRow;
use rooftop_core::units::{pct, si, sig3, us};
use std::fmt::Write as _;

/// Rows per table at most: the rest are in the CSV and JSON outputs.
pub const ROW_CAP: usize = 2000;

fn ms(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        us(v * 1e3)
    }
}

fn dim3(d: Option<[u32; 3]>) -> String {
    d.map_or_else(|| MISSING.to_string(), |[x, y, z]| format!("{x}×{y}×{z}"))
}

fn launch(cfgs: &[LaunchConfig]) -> String {
    match cfgs {
        [] => MISSING.to_string(),
        [one, rest @ ..] => {
            let mut s = format!("{} / {}", dim3(one.grid), dim3(one.block));
            if !rest.is_empty() {
                let _ = write!(s, " (+{} more)", rest.len());
            }
            s
        }
    }
}

/// A row's parameters: dtypes without `c10::`, strides left out (as the terminal).
fn params_text(row: &OpRow) -> String {
    row.params
        .0
        .iter()
        .filter(|(k, v)| !k.starts_with("stride") && *v != ParamValue::Null)
        .map(|(k, v)| format!("{k}={}", v.tracelens_repr().replace("c10::", "").replace('\'', "")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn opt_num(v: Option<f64>, fmt: fn(f64) -> String) -> Cell {
    Cell::num(&v.map_or_else(|| MISSING.to_string(), fmt), v)
}

fn capped(n: usize, what: &str) -> Option<String> {
    (n > ROW_CAP).then(|| {
        format!("The first {ROW_CAP} of {n} {what}; all of them are in --format csv and json.")
    })
}

/// `(table name, rows)` in report order (GEMM, SDPA, CONV, ..., `unmodelled` last).
fn ordered_tables(r: &TraceReport) -> Vec<(&String, &Vec<OpRow>)> {
    let rank = |n: &str| {
        OpTable::ALL.iter().position(|t| t.as_str() == n).unwrap_or(if n == "unmodelled" {
            usize::MAX
        } else {
            OpTable::ALL.len()
        })
    };
    let mut tables: Vec<(&String, &Vec<OpRow>)> = r.categories.iter().collect();
    tables.sort_by_key(|(n, _)| rank(n));
    tables
}

fn row_id(prefix: &str, table: &str, i: usize) -> String {
    anchor(prefix, &[table, &i.to_string()])
}

/// The chart's marks: one per modelled row with a rate (flops > 0).
fn marks(r: &TraceReport, prefix: &str) -> (Vec<Mark>, Vec<String>) {
    let mut out = Vec::new();
    let (mut no_flops, mut unmodelled) = (0usize, 0usize);
    for (table, rows) in ordered_tables(r) {
        for (i, row) in rows.iter().enumerate().take(ROW_CAP) {
            if row.unmodelled.is_some() {
                unmodelled += 1;
                continue;
            }
            let (Some(ai), Some(rate)) = (row.flops_per_byte, row.achieved_tflops.as_ref()) else {
                no_flops += 1;
                continue;
            };
            if !(ai > 0.0 && rate.mean > 0.0) {
                no_flops += 1;
                continue;
            }
            let k = &row.kernel_time_us;
            let mut tip = vec![
                format!("{} [{table}]", row.name),
                format!("shape: {}", params_text(row)),
                format!(
                    "time: {} over {} ({} per call)",
                    us(k.sum),
                    rooftop_core::diagnose::count(row.count, "call", "calls"),
                    us(k.mean)
                ),
                format!("achieved: {} (mean over calls)", si(rate.mean * 1e12, "FLOP/s")),
                format!("intensity: {} FLOP/B", sig3(ai)),
            ];
            match (row.roofline_attainment_pct, row.bound) {
                (Some(a), Some(b)) => {
                    tip.push(format!("roofline attainment: {}; {}-bound", pct(a), b.as_str()));
                }
                _ => tip.push("no roofline numbers (no device)".to_string()),
            }
            if let Some(f) = &row.top_finding {
                tip.push(format!("top finding: {} ({})", f.title, f.severity.as_str()));
            }
            out.push(Mark {
                intensity: ai,
                rate: rate.mean * 1e12,
                weight: k.sum,
                bound: row.bound,
                hollow: false,
                row: Some(row_id(prefix, table, i)),
                tip,
            });
        }
    }
    let mut left = Vec::new();
    if no_flops > 0 {
        let (rows, are) = if no_flops == 1 { ("row", "is") } else { ("rows", "are") };
        left.push(format!(
            "{no_flops} modelled {rows} with no FLOPs or no time {are} not on the chart (a log axis has no zero); they are in the tables."
        ));
    }
    if unmodelled > 0 {
        let (rows, have) = if unmodelled == 1 { ("row", "has") } else { ("rows", "have") };
        left.push(format!(
            "{unmodelled} unmodelled {rows} {have} times only: see the `unmodelled` table."
        ));
    }
    left.push(
        "One mark per roofline-table row (op and parameters): rate = mean achieved FLOP/s over its calls, \
         area ∝ its summed kernel time. An op nested in another modelled op (aten::native_layer_norm in \
         aten::layer_norm) has its own row and mark."
            .to_string(),
    );
    (out, left)
}

fn header(r: &TraceReport) -> Vec<String> {
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
    vec![
        format!("device: {trace_dev}; roofline: {roof}"),
        format!("window: {} ({})", ms(r.window.duration_ms), r.window.basis),
    ]
}

/// The sections of one report; `prefix` keeps ids unique across ranks. The roofs and the
/// device spec are those of the device the report's numbers used.
#[allow(clippy::many_single_char_names)]
fn sections(r: &TraceReport, prefix: &str, label: &str) -> Vec<Section> {
    let device = r.device.spec.as_ref();
    let id = |s: &str| format!("{prefix}{s}");
    let title = |s: &str| if label.is_empty() { s.to_string() } else { format!("{label}: {s}") };
    let entries: Vec<RoofEntry> =
        device.map(|d| device_roofs(d, crate::devices::headline_peak(d))).unwrap_or_default();
    let mut out = roofline_section(r, device, &entries, prefix, &id, &title);
    out.extend(findings_section(r, &id, &title));
    out.extend(timeline_section(r, &id, &title));
    out.extend(ops_sections(r, &id, &title));
    out.extend(tables_section(r, prefix, &id, &title));
    out.extend(super::xla::sections(r, prefix, label));
    out.extend(kernels_section(r, &id, &title));
    out.extend(short_section(r, &id, &title));
    out.extend(super::gaps::sections(r, &id, &title));
    out.extend(end_sections(r, device, &entries, &id, &title));
    out
}

/// The roofline chart of the ops with a work model, with the header lines.
fn roofline_section(
    r: &TraceReport,
    device: Option<&DeviceSpec>,
    entries: &[RoofEntry],
    prefix: &str,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let (m, mut left) = marks(r, prefix);
    if device.is_none() {
        left.insert(0, "No device: the chart has no roofs (pass --device).".to_string());
    }
    let chart = RooflineChart { roofs: chart_roofs(entries), marks: m, title: title("roofline") };
    let mut body = String::new();
    for h in header(r) {
        let _ = write!(body, "<p>{}</p>", esc(&h));
    }
    if chart.marks.is_empty() && chart.roofs.is_empty() {
        // Nothing to place: say why instead of drawing empty axes.
        body.push_str(&note(
            "No chart: no op has a work model with FLOPs (were shapes recorded? torch.profiler \
             record_shapes=True) and no device gives roofs (pass --device).",
        ));
        body.push_str(&notes(&left));
    } else {
        body.push_str(&roofline_block(&chart, &left));
    }
    out.push(Section::new(id("roofline"), title("Roofline"), body));

    out
}

/// The trace-wide findings, first after the chart: they say what to do.
fn findings_section(
    r: &TraceReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let mut body = String::new();
    if r.findings.is_empty() {
        body.push_str(&note("No trace-wide findings."));
    }
    for f in &r.findings {
        body.push_str(&finding(&f.into(), None));
    }
    out.push(Section::new(id("findings"), title("Findings by time at stake"), body));

    out
}

/// The GPU timeline, all devices and per device.
fn timeline_section(
    r: &TraceReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let mut t = Table::new(&["", "#time", "#% of window"]);
    for (_, name, share) in r.timeline.all.rows() {
        t.push(vec![
            Cell::text(name),
            Cell::num(&ms(share.time_ms), Some(share.time_ms)),
            Cell::num(&pct(share.percent), Some(share.percent)),
        ]);
    }
    let mut body = t.render();
    if r.timeline.unlinked_excluded > 0 {
        body.push_str(&note(&format!(
            "{} with no launching runtime call {} not counted.",
            rooftop_core::diagnose::count(r.timeline.unlinked_excluded, "GPU event", "GPU events"),
            if r.timeline.unlinked_excluded == 1 { "is" } else { "are" }
        )));
    }
    if r.timeline.per_device.len() > 1 {
        let mut t =
            Table::new(&["#device", "#window", "#busy", "#compute", "#comm (exp.)", "#idle"]);
        for d in &r.timeline.per_device {
            let b = &d.breakdown;
            t.push(vec![
                Cell::num(&d.device.to_string(), Some(d.device as f64)),
                Cell::num(&ms(b.total.time_ms), Some(b.total.time_ms)),
                Cell::num(&pct(b.busy.percent), Some(b.busy.percent)),
                Cell::num(&pct(b.computation.percent), Some(b.computation.percent)),
                Cell::num(
                    &pct(b.exposed_communication.percent),
                    Some(b.exposed_communication.percent),
                ),
                Cell::num(&pct(b.idle.percent), Some(b.idle.percent)),
            ]);
        }
        body.push_str("<h3>Per device</h3>");
        body.push_str(&t.render());
    }
    out.push(Section::new(id("timeline"), title("GPU timeline"), body));

    out
}

/// Ops by direct kernel time and by category.
fn ops_sections(
    r: &TraceReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let s = &r.ops_summary;
    let mut t = Table::new(&["op", "category", "#calls", "#direct", "#subtree", "#%", "#cum %"]);
    for o in s.ops.iter().take(ROW_CAP) {
        t.push(vec![
            Cell::name(&o.name),
            Cell::text(&o.category),
            Cell::num(&o.count.to_string(), Some(o.count as f64)),
            Cell::num(&ms(o.direct_kernel_time_ms), Some(o.direct_kernel_time_ms)),
            Cell::num(&ms(o.subtree_kernel_time_ms), Some(o.subtree_kernel_time_ms)),
            Cell::num(&pct(o.percent), Some(o.percent)),
            Cell::num(&pct(o.cumulative_percent), Some(o.cumulative_percent)),
        ]);
    }
    let mut body = t.render();
    let mut n = vec![format!(
        "Total direct kernel time {}; direct = GPU time of the kernels an op launched itself, subtree = with its child ops.",
        ms(s.total_direct_kernel_time_ms)
    )];
    n.extend(capped(s.ops.len(), "ops"));
    body.push_str(&notes(&n));
    out.push(Section::new(
        id("ops"),
        title(&format!("Ops by direct kernel time ({})", s.ops.len())),
        body,
    ));

    let mut t = Table::new(&["category", "#calls", "#direct", "#%", "#cum %"]);
    for c in &s.by_category {
        t.push(vec![
            Cell::text(&c.category),
            Cell::num(&c.count.to_string(), Some(c.count as f64)),
            Cell::num(&ms(c.direct_kernel_time_ms), Some(c.direct_kernel_time_ms)),
            Cell::num(&pct(c.percent), Some(c.percent)),
            Cell::num(&pct(c.cumulative_percent), Some(c.cumulative_percent)),
        ]);
    }
    out.push(Section::new(id("categories"), title("Ops by category"), t.render()));

    out
}

/// The roofline tables, one per category.
fn tables_section(
    r: &TraceReport,
    prefix: &str,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let mut body = String::new();
    if r.categories.is_empty() {
        body.push_str(&note("No ops with a roofline table in the trace."));
    }
    for (name, rows) in ordered_tables(r) {
        let _ = write!(
            body,
            "<h3 id=\"{}\">{} ({})</h3>",
            esc(&anchor(&id("table"), &[name])),
            esc(name),
            rooftop_core::diagnose::count(rows.len() as u64, "row", "rows")
        );
        let mut t = Table::new(&[
            "op",
            "params",
            "#calls",
            "#time",
            "#mean",
            "#TFLOP/s",
            "#TB/s",
            "#FLOP/B",
            "#roofline",
            "bound",
            "top finding",
        ]);
        for (i, row) in rows.iter().enumerate().take(ROW_CAP) {
            let k = &row.kernel_time_us;
            let cells = vec![
                Cell::name(&row.name),
                Cell::text(&params_text(row)),
                Cell::num(&row.count.to_string(), Some(row.count as f64)),
                Cell::num(&us(k.sum), Some(k.sum)),
                Cell::num(&us(k.mean), Some(k.mean)),
                opt_num(row.achieved_tflops.as_ref().map(|s| s.mean), sig3),
                opt_num(row.achieved_tbs.as_ref().map(|s| s.mean), sig3),
                opt_num(row.flops_per_byte, sig3),
                opt_num(row.roofline_attainment_pct, pct),
                Cell::text(row.bound.map_or(MISSING, |b| b.as_str())),
                Cell::text(&row.top_finding.as_ref().map_or_else(
                    || {
                        row.unmodelled
                            .clone()
                            .map_or_else(|| MISSING.to_string(), |u| format!("unmodelled: {u}"))
                    },
                    |f| format!("{} ({})", f.title, f.severity.as_str()),
                )),
            ];
            t.rows.push(super::Row { id: Some(row_id(prefix, name, i)), cells });
        }
        body.push_str(&t.render());
        body.push_str(&notes(&capped(rows.len(), "rows").into_iter().collect::<Vec<_>>()));
    }
    body.push_str(&note(
        "time = summed kernel time of all calls, mean = per call; TFLOP/s and TB/s are means over calls; \
         roofline = attainment of the roofline floor; FLOP/B = the model's intensity.",
    ));
    out.push(Section::new(id("tables"), title("Roofline tables"), body));
    out
}

/// The kernels by total time.
fn kernels_section(
    r: &TraceReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let mut t = Table::new(&[
        "kernel",
        "launched by",
        "#stream",
        "#calls",
        "#total",
        "#mean",
        "#median",
        "#% kern",
        "grid / block",
    ]);
    for k in r.kernels.iter().take(ROW_CAP) {
        t.push(vec![
            Cell::name(&k.name),
            Cell::text(k.parent_op.as_deref().unwrap_or("no launching op")),
            Cell::num(&k.stream.to_string(), Some(k.stream as f64)),
            Cell::num(&k.count.to_string(), Some(k.count as f64)),
            Cell::num(&us(k.total_us), Some(k.total_us)),
            Cell::num(&us(k.mean_us), Some(k.mean_us)),
            Cell::num(&us(k.median_us), Some(k.median_us)),
            Cell::num(&pct(k.percent_of_kernel_time), Some(k.percent_of_kernel_time)),
            Cell::text(&launch(&k.launch_configs)),
        ]);
    }
    let mut body = t.render();
    body.push_str(&notes(&capped(r.kernels.len(), "kernels").into_iter().collect::<Vec<_>>()));
    out.push(Section::new(id("kernels"), title(&format!("Kernels ({})", r.kernels.len())), body));

    out
}

/// The short kernels: count, histogram, by op and shape.
fn short_section(
    r: &TraceReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let sk = &r.short_kernels;
    let mut body = note(&format!(
        "{} of {} kernels ({}) are short (< {} µs): {} = {} of kernel time, {} of the window.",
        sk.short_count,
        sk.kernel_count,
        pct(sk.percent_of_kernels),
        sig3(sk.threshold_us),
        us(sk.short_time_us),
        pct(sk.percent_of_kernel_time),
        pct(sk.percent_of_total_time)
    ));
    let mut h = Table::new(&["#from", "#to", "#kernels"]);
    for bin in sk.histogram.iter().filter(|b| b.count > 0) {
        h.push(vec![
            Cell::num(&us(bin.bin_start_us), Some(bin.bin_start_us)),
            Cell::num(&us(bin.bin_end_us), Some(bin.bin_end_us)),
            Cell::num(&bin.count.to_string(), Some(bin.count as f64)),
        ]);
    }
    if !h.rows.is_empty() {
        body.push_str("<h3>Duration histogram (non-empty bins)</h3>");
        body.push_str(&h.render());
    }
    let mut t = Table::new(&[
        "kernel",
        "launched by",
        "input dims",
        "#calls",
        "#total",
        "#mean",
        "#% window",
    ]);
    for k in sk.rows.iter().take(ROW_CAP) {
        t.push(vec![
            Cell::name(&k.name),
            Cell::text(k.parent_op.as_deref().unwrap_or("no launching op")),
            Cell::text(k.input_dims.as_deref().unwrap_or(MISSING)),
            Cell::num(&k.count.to_string(), Some(k.count as f64)),
            Cell::num(&us(k.total_us), Some(k.total_us)),
            Cell::num(&us(k.mean_us), Some(k.mean_us)),
            Cell::num(&pct(k.percent_of_total_time), Some(k.percent_of_total_time)),
        ]);
    }
    if !t.rows.is_empty() {
        body.push_str("<h3>By op and shape</h3>");
        body.push_str(&t.render());
    }
    out.push(Section::new(id("short"), title("Short kernels"), body));

    out
}

/// The warnings and, with a device, its roofs and spec.
fn end_sections(
    r: &TraceReport,
    device: Option<&DeviceSpec>,
    entries: &[RoofEntry],
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    if !r.warnings.is_empty() {
        let mut t = Table::new(&["kind", "#count", "example"]);
        for w in &r.warnings {
            t.push(vec![
                Cell::text(&w.kind),
                Cell::num(&w.count.to_string(), Some(w.count as f64)),
                Cell::text(&w.example),
            ]);
        }
        out.push(Section::new(id("warnings"), title("Warnings"), t.render()));
    }
    if let Some(d) = device {
        let mut body = roofs_table(entries);
        let mut t = Table::new(&["metric", "value", "source"]);
        for [m, v, s] in crate::rows::device_rows(d) {
            t.push(vec![Cell::text(&m), Cell::text(&v), Cell::text(&s)]);
        }
        body.push_str("<h3>Device spec</h3>");
        body.push_str(&t.render());
        body.push_str(&notes(&crate::rows::device_footer(d)));
        out.push(Section::new(
            id("device"),
            title(&format!("Roofs and device spec: {}", d.name)),
            body,
        ));
    }
    out
}

/// The report of one trace, with the roofs and spec of the device its roofline numbers
/// used (`report.device.spec`).
pub fn trace(r: &TraceReport) -> String {
    let d = &r.device;
    Page {
        title: format!(
            "rooftop trace: {}",
            d.trace_name
                .clone()
                .or_else(|| d.catalog_name.clone())
                .unwrap_or_else(|| "trace".to_string())
        ),
        subtitle: Vec::new(),
        sections: sections(r, "", ""),
    }
    .render()
}

/// The report of a directory of per-rank traces: the cross-rank table, then each rank
/// with the roofs of the device its own numbers used.
pub fn trace_ranks(ranks: &[(String, TraceReport)], cross: &CrossRank) -> String {
    let mut page = Page {
        title: format!("rooftop trace: {} ranks", cross.ranks.len()),
        subtitle: Vec::new(),
        sections: Vec::new(),
    };
    let mut t = Table::new(&[
        "rank",
        "#window",
        "#busy",
        "#compute",
        "#comm",
        "#comm exp.",
        "#collectives",
        "#coll. time",
    ]);
    for r in &cross.ranks {
        let mark = if cross.slowest.as_deref() == Some(r.name.as_str()) { " *" } else { "" };
        t.push(vec![
            Cell::text(&format!("{}{mark}", r.name)),
            Cell::num(&ms(r.total_ms), Some(r.total_ms)),
            Cell::num(&ms(r.busy_ms), Some(r.busy_ms)),
            Cell::num(&ms(r.computation_ms), Some(r.computation_ms)),
            Cell::num(&ms(r.communication_ms), Some(r.communication_ms)),
            Cell::num(&ms(r.exposed_communication_ms), Some(r.exposed_communication_ms)),
            Cell::num(
                &r.collective_kernel_count.to_string(),
                Some(r.collective_kernel_count as f64),
            ),
            Cell::num(&ms(r.collective_kernel_time_ms), Some(r.collective_kernel_time_ms)),
        ]);
    }
    let mut body = t.render();
    if let Some(s) = &cross.slowest {
        body.push_str(&note(&format!(
            "* slowest rank: {s} ({}). Computation spread {}, window spread {}.",
            crate::trace::slowest_why(cross),
            ms(cross.computation_spread_ms),
            ms(cross.total_spread_ms)
        )));
    }
    page.sections.push(Section::new("ranks", "Across ranks", body));
    page.sections.extend(super::collectives::sections(cross));
    for (i, (name, r)) in ranks.iter().enumerate() {
        // The navigation bar lists each rank once (its chart), not its every section.
        for (j, mut s) in sections(r, &format!("rank{i}-"), name).into_iter().enumerate() {
            s.nav = j == 0;
            if j == 0 {
                s.title.clone_from(name);
            }
            page.sections.push(s);
        }
    }
    page.render()
}
