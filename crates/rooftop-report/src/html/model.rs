//! HTML of `rooftop model`: the step's ops on the device's roofline (each op a hollow
//! mark at its arithmetic intensity and attainable rate, area proportional to its share
//! of the step's floor: a budget, not a measurement), the op budget and the fusions as
//! sortable tables, the throughput lines, the assumptions, and the roofs with their
//! provenance. Every number is the report's own, formatted as the terminal formats it.

use super::roofs::{chart_roofs, device_roofs};
use super::{anchor, kv, notes, roofline_block, roofs_table, Cell, Page, Row, Section, Table};
use crate::svg::{Mark, RooflineChart};
use crate::MISSING;
use rooftop_core::device::DeviceSpec;
use rooftop_core::model::budget::ModelReport;
use rooftop_core::model::Phase;
use rooftop_core::units::{pct, si, sig3, us};

/// The page of a model budget on `device` (the spec the budget used).
pub fn model(r: &ModelReport, device: &DeviceSpec) -> String {
    let o = &r.options;
    let step = match o.phase {
        Phase::Decode => format!("decode, batch {}, context {}", o.batch, o.context),
        Phase::Prefill => format!("prefill, batch {}, {} tokens", o.batch, o.tokens),
    };
    let mut page = Page {
        title: format!("rooftop model: {} ({step})", r.model.name),
        subtitle: vec![
            format!("device: {} [{}]", r.device_name, r.device_id),
            format!(
                "weights {}, activations {}, KV cache {}; model from {}",
                r.weights_label, r.act_dtype, o.kv_dtype, r.model.source
            ),
        ],
        ..Page::default()
    };

    // The ops on the roofline.
    // The compute roof of the op with the largest share of the step is highlighted.
    let primary = r
        .ops
        .iter()
        .filter(|b| b.roof.is_some())
        .max_by(|a, b| a.step_floor_us.total_cmp(&b.step_floor_us))
        .and_then(|b| b.roof.as_ref())
        .map(|c| (c.precision, c.unit));
    let entries = device_roofs(device, primary);
    let mut chart = RooflineChart {
        roofs: chart_roofs(&entries),
        marks: Vec::new(),
        title: page.title.clone(),
    };
    let mut left_out = Vec::new();
    for (i, b) in r.ops.iter().enumerate() {
        let w = &b.op.work;
        let bytes = w.bytes();
        let intensity = if bytes > 0.0 { w.flops / bytes } else { f64::INFINITY };
        let rate = if b.floor_us > 0.0 { w.flops / (b.floor_us * 1e-6) } else { 0.0 };
        if intensity.is_finite() && intensity > 0.0 && rate > 0.0 {
            chart.marks.push(Mark {
                intensity,
                rate,
                weight: b.step_floor_us,
                bound: Some(b.bound),
                hollow: true,
                row: Some(anchor("op", &[&i.to_string()])),
                tip: vec![
                    format!("{} × {}", b.op.name, b.op.count),
                    format!("shape: {}", w.shape),
                    format!("floor: {} per run, {} of the step", us(b.floor_us), pct(b.share_pct)),
                    format!("attainable: {}", si(rate, "FLOP/s")),
                    format!("intensity: {} FLOP/B; bound: {}", sig3(intensity), b.bound.as_str()),
                ],
            });
        } else {
            left_out.push(format!(
                "{} is not on the chart: {} (a log axis has no zero or infinity).",
                b.op.name,
                if w.flops == 0.0 { "it does no FLOPs" } else { "it moves no bytes" }
            ));
        }
    }
    left_out.push(
        "A budget, not a measurement: each op sits at its attainable rate (outlined), where \
         its floor time puts it on the roofs."
            .to_string(),
    );
    page.sections.push(Section::new(
        "roofline",
        "Ops on the roofline",
        roofline_block(&chart, &left_out),
    ));

    page.sections.push(Section::new("step", "The step", step_summary(r)));
    page.sections.push(Section::new("ops", format!("Ops ({})", r.ops.len()), ops_table(r)));
    page.sections.push(Section::new("fusions", "Fusions", fusions_table(r)));
    page.sections.push(Section::new("assumptions", "Assumptions", notes(&r.assumptions)));
    page.sections.push(Section::new("roofs", "Roofs and their provenance", roofs_table(&entries)));
    page.render()
}

/// Parameters, storage, throughput and the target budget as a definition list.
fn step_summary(r: &ModelReport) -> String {
    let t = &r.throughput;
    let tot = &r.totals;
    let mut items = vec![
        (
            "parameters".to_string(),
            format!(
                "{} ({} active per token)",
                si(r.params.total as f64, ""),
                si(r.params.active_per_token as f64, "")
            ),
        ),
        ("weights stored".to_string(), si(t.total_weight_storage_bytes, "B")),
        ("KV cache".to_string(), si(t.kv_cache_bytes, "B")),
        (
            "moved per step".to_string(),
            format!(
                "{} ({} weights, {} KV cache reads)",
                si(tot.bytes, "B"),
                si(tot.weight_bytes, "B"),
                si(tot.kv_read_bytes, "B")
            ),
        ),
        ("FLOPs per step".to_string(), si(tot.flops, "FLOP")),
        (
            "floors".to_string(),
            format!(
                "compute {}, memory {}; memory-bound ops {} of the floor",
                us(tot.compute_floor_us),
                us(tot.memory_floor_us),
                pct(tot.memory_bound_pct)
            ),
        ),
    ];
    match r.options.phase {
        Phase::Decode => {
            items.push((
                "decode floor".to_string(),
                format!(
                    "{} per step: at most {} tokens/s; with every fusion {} ({} tokens/s)",
                    us(t.step_floor_us),
                    sig3(t.tokens_per_s.unwrap_or(f64::NAN)),
                    us(t.fused_step_floor_us),
                    sig3(t.fused_tokens_per_s.unwrap_or(f64::NAN))
                ),
            ));
            if let Some(w) = t.weights_only_tokens_per_s {
                items.push((
                    "weights alone".to_string(),
                    format!(
                        "{} tokens/s (batch × {} / {})",
                        sig3(w),
                        si(r.peak_bw_gbs * 1e9, "B/s"),
                        si(t.weights_only_bytes, "B")
                    ),
                ));
            }
        }
        Phase::Prefill => items.push((
            "time to first token".to_string(),
            format!(
                "at least {} ({} tokens); with every fusion {}",
                us(t.ttft_floor_us.unwrap_or(f64::NAN)),
                t.tokens_per_step,
                us(t.fused_ttft_floor_us.unwrap_or(f64::NAN))
            ),
        )),
    }
    if let Some(g) = &r.target {
        items.push((
            format!("target {} tokens/s", sig3(g.tokens_per_s)),
            format!(
                "needs {} ({} of the bandwidth) with every fusion, {} as listed, and {} ({} of \
                 the time at the compute peaks): {}",
                si(g.fused_bandwidth_needed_gbs * 1e9, "B/s"),
                pct(g.bandwidth_pct_of_peak),
                si(g.bandwidth_needed_gbs * 1e9, "B/s"),
                si(g.flops_needed, "FLOP/s"),
                pct(g.compute_busy_pct),
                if g.reachable {
                    "within this device's floor"
                } else {
                    "beyond this device's floor"
                }
            ),
        ));
    }
    kv(&items)
}

fn ops_table(report: &ModelReport) -> String {
    let r = report;
    let mut table =
        Table::new(&["op", "#×", "shape", "#FLOP", "#bytes", "#floor", "bound", "roof", "#share"]);
    for (i, b) in r.ops.iter().enumerate() {
        let w = &b.op.work;
        let roof = b.roof.as_ref().map_or_else(
            || MISSING.to_string(),
            |c| {
                let text = format!("{} {} {}", c.precision, c.unit, si(c.tflops * 1e12, "FLOP/s"));
                match &c.note {
                    Some(note) => format!("{text} ({note})"),
                    None => text,
                }
            },
        );
        table.rows.push(Row {
            id: Some(anchor("op", &[&i.to_string()])),
            cells: vec![
                Cell::name(&b.op.name),
                Cell::num(&b.op.count.to_string(), Some(b.op.count as f64)),
                Cell::text(&w.shape),
                Cell::num(&si(w.flops, ""), Some(w.flops)),
                Cell::num(&si(w.bytes(), "B"), Some(w.bytes())),
                Cell::num(&us(b.floor_us), Some(b.floor_us)),
                Cell::text(b.bound.as_str()),
                Cell::text(&roof),
                Cell::num(&pct(b.share_pct), Some(b.share_pct)),
            ],
        });
    }
    let tot = &r.totals;
    table.push(vec![
        Cell::text("step total"),
        Cell::text(""),
        Cell::text(""),
        Cell::num(&si(tot.flops, ""), Some(tot.flops)),
        Cell::num(&si(tot.bytes, "B"), Some(tot.bytes)),
        Cell::num(&us(r.throughput.step_floor_us), Some(r.throughput.step_floor_us)),
        Cell::text(""),
        Cell::text(""),
        Cell::num("100%", Some(100.0)),
    ]);
    table.render()
}

fn fusions_table(r: &ModelReport) -> String {
    if r.fusions.is_empty() {
        return super::note("No fusion applies to this step.");
    }
    let last = match r.options.phase {
        Phase::Decode => "tokens/s without → with",
        Phase::Prefill => "time to first token without → with",
    };
    let mut t = Table::new(&["fusion", "what it merges", "#saves bytes", "#saves time", last]);
    for f in &r.fusions {
        let saved = f.floor_without_us - f.floor_with_us;
        let saved_pct =
            if f.floor_without_us > 0.0 { saved / f.floor_without_us * 100.0 } else { 0.0 };
        let bytes = match f.traffic_ratio {
            Some(x) => format!("{} ({}×)", si(f.bytes_saved, "B"), sig3(x)),
            None => si(f.bytes_saved, "B"),
        };
        let change = match r.options.phase {
            Phase::Decode => format!(
                "{} → {}",
                sig3(f.tokens_per_s_without.unwrap_or(f64::NAN)),
                sig3(f.tokens_per_s_with.unwrap_or(f64::NAN))
            ),
            Phase::Prefill => format!("{} → {}", us(f.floor_without_us), us(f.floor_with_us)),
        };
        t.push(vec![
            Cell::text(&f.name),
            Cell::text(&f.description),
            Cell::num(&bytes, Some(f.bytes_saved)),
            Cell::num(&format!("{} ({})", us(saved), pct(saved_pct)), Some(saved)),
            Cell::text(&change),
        ]);
    }
    let mut out = t.render();
    let assumptions: Vec<String> = r
        .fusions
        .iter()
        .flat_map(|f| f.assumptions.iter().map(move |a| format!("{}: {a}", f.name)))
        .collect();
    out.push_str(&notes(&assumptions));
    out
}
