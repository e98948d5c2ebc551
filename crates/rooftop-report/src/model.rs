//! Renderers of `rooftop model` reports: a terminal table (at most 100 columns), Markdown
//! with the same cells, JSON (the whole [`ModelReport`], every op's formulas and
//! assumptions included) and CSV (one row per op, full-precision numbers, then the
//! step's total).
//!
//! Renderers never compute: every number comes from the report, formatted to three
//! significant digits with SI units.

use crate::table::{table, wrap, WIDTH};
use crate::Format;
use comfy_table::ContentArrangement;
use rooftop_core::model::budget::{Fusion, ModelReport};
use rooftop_core::model::Phase;
use rooftop_core::units::{pct, si, sig3, us};
use std::fmt::Write as _;

/// Version of the `rooftop model --format json` output.
pub const SCHEMA_VERSION: u32 = 1;

/// Whether `format` has a model renderer (table, Markdown, JSON, CSV, HTML).
pub fn supports(format: Format) -> bool {
    matches!(format, Format::Table | Format::Markdown | Format::Json | Format::Csv | Format::Html)
}

/// Renders `r` in `format` (`device`: the spec the budget used, for the HTML page's
/// roofs); formats without a model renderer (see [`supports`]) get JSON.
pub fn render(
    r: &ModelReport,
    format: Format,
    device: &rooftop_core::device::DeviceSpec,
) -> Result<String, crate::RenderError> {
    Ok(match format {
        Format::Table => table_report(r),
        Format::Markdown => markdown_report(r),
        Format::Csv => csv_report(r)?,
        Format::Html => crate::html::model(r, device),
        Format::Json | Format::Perfetto => json_report(r),
    })
}

/// The header lines: model, step, device, sizes.
fn header_lines(r: &ModelReport) -> Vec<String> {
    let o = &r.options;
    let step = match o.phase {
        Phase::Decode => format!("decode · batch {} · context {}", o.batch, o.context),
        Phase::Prefill => format!("prefill · batch {} · {} tokens", o.batch, o.tokens),
    };
    let mut lines = vec![
        // A config read from a file is named after it: the name once, not "x (x)".
        if r.model.name == r.model.source {
            format!("{} · {step}", r.model.name)
        } else {
            format!("{} ({}) · {step}", r.model.name, r.model.source)
        },
        format!(
            "device: {} [{}] · DRAM {}",
            r.device_name,
            r.device_id,
            si(r.peak_bw_gbs * 1e9, "B/s")
        ),
        format!(
            "weights {} · activations {} · KV cache {}",
            r.weights_label, r.act_dtype, o.kv_dtype
        ),
    ];
    let p = &r.params;
    let active = if p.active_per_token == p.total {
        "all active".to_string()
    } else {
        format!("{} active per token", si(p.active_per_token as f64, ""))
    };
    let t = &r.throughput;
    let weights = if t.weight_storage_bytes == t.total_weight_storage_bytes {
        format!("weights {}", si(t.total_weight_storage_bytes, "B"))
    } else {
        format!(
            "weights {} ({} active)",
            si(t.total_weight_storage_bytes, "B"),
            si(t.weight_storage_bytes, "B")
        )
    };
    lines.push(format!(
        "parameters {} ({active}) · {weights} · KV cache {}",
        si(p.total as f64, ""),
        si(t.kv_cache_bytes, "B")
    ));
    lines
}

/// Columns of the shape in the terminal table.
const SHAPE_WIDTH: usize = 30;

const OP_HEADER: [&str; 8] = ["op", "×", "shape", "FLOP", "bytes", "floor", "bound", "share"];

/// A share of the step, without printing noise for the small ones.
fn share(p: f64) -> String {
    if p > 0.0 && p < 0.1 {
        "<0.1%".to_string()
    } else {
        pct(p)
    }
}

/// The op rows (one run each) and the step's total row.
fn op_rows(r: &ModelReport) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = r
        .ops
        .iter()
        .map(|o| {
            vec![
                o.op.name.clone(),
                o.op.count.to_string(),
                o.op.work.shape.clone(),
                si(o.op.work.flops, ""),
                si(o.op.work.bytes(), "B"),
                us(o.floor_us),
                o.bound.as_str().to_string(),
                share(o.share_pct),
            ]
        })
        .collect();
    let t = &r.totals;
    rows.push(vec![
        "step total".to_string(),
        String::new(),
        String::new(),
        si(t.flops, ""),
        si(t.bytes, "B"),
        us(t.floor_us),
        String::new(),
        "100%".to_string(),
    ]);
    rows
}

/// The throughput lines under the op table.
fn summary_lines(r: &ModelReport) -> Vec<String> {
    let t = &r.throughput;
    let bw = si(r.peak_bw_gbs * 1e9, "B/s");
    let mut lines = Vec::new();
    match r.options.phase {
        Phase::Decode => {
            let tps = t.tokens_per_s.unwrap_or(f64::NAN);
            let per_seq = if r.options.batch > 1 {
                format!(" ({} per sequence)", sig3(tps / r.options.batch as f64))
            } else {
                String::new()
            };
            lines.push(format!(
                "decode floor {} per step → ≤ {} tokens/s{per_seq}; with every fusion below: {} \
                 → ≤ {} tokens/s",
                us(t.step_floor_us),
                sig3(tps),
                us(t.fused_step_floor_us),
                sig3(t.fused_tokens_per_s.unwrap_or(f64::NAN)),
            ));
            if let Some(w) = t.weights_only_tokens_per_s {
                lines.push(format!(
                    "weights alone: batch × {bw} / {} = {} tokens/s (every {}weight read once per \
                     step; no KV, no activations, and the whole embedding table)",
                    si(t.weights_only_bytes, "B"),
                    sig3(w),
                    if r.model.moe.is_some() { "active-expert " } else { "" }
                ));
            }
        }
        Phase::Prefill => lines.push(format!(
            "time to first token ≥ {} ({} tokens); with every fusion below: ≥ {}",
            us(t.ttft_floor_us.unwrap_or(f64::NAN)),
            t.tokens_per_step,
            us(t.fused_ttft_floor_us.unwrap_or(f64::NAN)),
        )),
    }
    let tot = &r.totals;
    lines.push(format!(
        "per step: {} moved ({} weights, {} KV cache reads), {}; compute floor {}, memory \
         floor {}; memory-bound ops {} of the floor",
        si(tot.bytes, "B"),
        si(tot.weight_bytes, "B"),
        si(tot.kv_read_bytes, "B"),
        si(tot.flops, "FLOP"),
        us(tot.compute_floor_us),
        us(tot.memory_floor_us),
        pct(tot.memory_bound_pct),
    ));
    if let Some(g) = &r.target {
        lines.push(format!(
            "target {} tokens/s per sequence: needs {} ({} of {bw}) with every fusion, {} as \
             listed, and {} ({} of the time at the compute peaks): {}",
            sig3(g.tokens_per_s),
            si(g.fused_bandwidth_needed_gbs * 1e9, "B/s"),
            pct(g.bandwidth_pct_of_peak),
            si(g.bandwidth_needed_gbs * 1e9, "B/s"),
            si(g.flops_needed, "FLOP/s"),
            pct(g.compute_busy_pct),
            if g.reachable { "within this device's floor" } else { "beyond this device's floor" }
        ));
    }
    lines
}

const FUSION_NOTE: &str = "Each fusion: the step without it → with it, the others as in the op \
    list (which reads quantized weights packed); (N×) is the unfused/fused traffic of the \
    quantized projections.";

fn fusion_header(r: &ModelReport) -> [&'static str; 4] {
    let last = match r.options.phase {
        Phase::Decode => "tokens/s",
        Phase::Prefill => "time to first token",
    };
    ["fusion", "saves bytes", "saves time", last]
}

fn fusion_row(r: &ModelReport, f: &Fusion) -> Vec<String> {
    let saved = f.floor_without_us - f.floor_with_us;
    let saved_pct = if f.floor_without_us > 0.0 { saved / f.floor_without_us * 100.0 } else { 0.0 };
    let last = match r.options.phase {
        Phase::Decode => format!(
            "{} → {}",
            sig3(f.tokens_per_s_without.unwrap_or(f64::NAN)),
            sig3(f.tokens_per_s_with.unwrap_or(f64::NAN))
        ),
        Phase::Prefill => format!("{} → {}", us(f.floor_without_us), us(f.floor_with_us)),
    };
    let bytes = match f.traffic_ratio {
        Some(x) => format!("{} ({}×)", si(f.bytes_saved, "B"), sig3(x)),
        None => si(f.bytes_saved, "B"),
    };
    vec![f.name.clone(), bytes, format!("{} ({})", us(saved), pct(saved_pct)), last]
}

/// Renders the report for the terminal.
pub fn table_report(r: &ModelReport) -> String {
    let width = usize::from(WIDTH);
    let mut out = String::new();
    for l in header_lines(r) {
        out.push_str(&wrap(&l, width, "", "  "));
    }
    // Cells are short enough for 100 columns (op ≤ 15, numbers ≤ 8, shape wrapped at
    // 30) with one space of padding per column, so the layout is fixed rather than
    // re-balanced by comfy-table: 2 borders + 7 separators + 8 paddings + 80 ≤ 100.
    let mut t = table(&OP_HEADER);
    t.set_content_arrangement(ContentArrangement::Disabled);
    for mut row in op_rows(r) {
        row[2] = wrap(&row[2], SHAPE_WIDTH, "", "").trim_end().to_string();
        t.add_row(row);
    }
    for c in t.column_iter_mut() {
        c.set_padding((0, 1));
    }
    let _ = writeln!(out, "\n{t}");
    for l in summary_lines(r) {
        out.push_str(&wrap(&l, width, "", "  "));
    }
    let mut f = table(&fusion_header(r));
    f.set_content_arrangement(ContentArrangement::Disabled);
    for fu in &r.fusions {
        f.add_row(fusion_row(r, fu));
    }
    let _ = writeln!(out, "\n{f}");
    out.push_str(&wrap(FUSION_NOTE, width, "", "  "));
    out.push_str("assumptions:\n");
    for a in &r.assumptions {
        out.push_str(&wrap(a, width, "  - ", "    "));
    }
    out.push_str(&wrap(
        "Each op's formulas and assumptions, and each fusion's: --format json.",
        width,
        "",
        "  ",
    ));
    out
}

use crate::markdown::cell as md_cell;

fn md_table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let cells: Vec<String> = header.iter().map(|h| md_cell(h)).collect();
    let _ = writeln!(out, "| {} |\n|{}", cells.join(" | "), "---|".repeat(cells.len()));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
}

/// Renders the report as Markdown (the table's cells).
pub fn markdown_report(r: &ModelReport) -> String {
    let mut out = String::from("## rooftop model\n\n");
    for l in header_lines(r) {
        let _ = writeln!(out, "- {}", md_cell(&l));
    }
    out.push_str("\n### Ops (one run each)\n\n");
    md_table(&mut out, &OP_HEADER, &op_rows(r));
    out.push('\n');
    for l in summary_lines(r) {
        let _ = writeln!(out, "- {}", md_cell(&l));
    }
    out.push_str("\n### Fusions\n\n");
    let rows: Vec<Vec<String>> = r.fusions.iter().map(|f| fusion_row(r, f)).collect();
    md_table(&mut out, &fusion_header(r), &rows);
    let _ = writeln!(out, "\n{FUSION_NOTE}");
    out.push_str("\n### Assumptions\n\n");
    for a in &r.assumptions {
        let _ = writeln!(out, "- {}", md_cell(a));
    }
    out
}

/// The whole report as JSON.
pub fn json_report(r: &ModelReport) -> String {
    /// The report with the schema version first.
    #[derive(serde::Serialize)]
    struct Versioned<'a> {
        schema_version: u32,
        #[serde(flatten)]
        report: &'a ModelReport,
    }
    let v = Versioned { schema_version: SCHEMA_VERSION, report: r };
    // Our plain structs serialise without error; non-finite floats become null.
    let mut s =
        serde_json::to_string_pretty(&v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}

/// One CSV row per op (one run each, with its count), then the step's total.
pub fn csv_report(r: &ModelReport) -> Result<String, crate::RenderError> {
    let header = [
        "op",
        "role",
        "count",
        "class",
        "shape",
        "precision",
        "unit",
        "flops",
        "bytes_read",
        "bytes_written",
        "weight_bytes",
        "floor_us",
        "compute_floor_us",
        "memory_floor_us",
        "bound",
        "step_floor_us",
        "share_pct",
    ];
    let mut rows = Vec::with_capacity(r.ops.len() + 1);
    for o in &r.ops {
        let role = serde_json::to_value(o.op.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        rows.push(vec![
            o.op.name.clone(),
            role,
            o.op.count.to_string(),
            o.op.work.class.as_str().to_string(),
            o.op.work.shape.clone(),
            o.op.work.precision.to_string(),
            o.op.work.unit.as_str().to_string(),
            o.op.work.flops.to_string(),
            o.op.work.bytes_read.to_string(),
            o.op.work.bytes_written.to_string(),
            o.op.weight_bytes.to_string(),
            o.floor_us.to_string(),
            o.compute_floor_us.to_string(),
            o.memory_floor_us.to_string(),
            o.bound.as_str().to_string(),
            o.step_floor_us.to_string(),
            o.share_pct.to_string(),
        ]);
    }
    let t = &r.totals;
    rows.push(vec![
        "step".to_string(),
        "total".to_string(),
        "1".to_string(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        t.flops.to_string(),
        t.bytes_read.to_string(),
        t.bytes_written.to_string(),
        t.weight_bytes.to_string(),
        t.floor_us.to_string(),
        t.compute_floor_us.to_string(),
        t.memory_floor_us.to_string(),
        String::new(),
        t.floor_us.to_string(),
        "100".to_string(),
    ]);
    crate::csv::text(&header, rows)
}
