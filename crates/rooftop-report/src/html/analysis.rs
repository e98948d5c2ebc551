//! HTML of `rooftop analyze` (one or more analyses on one chart) and `rooftop devices`.

use super::roofs::{analysis_roofs, chart_roofs, device_roofs, RoofEntry};
use super::{
    anchor, esc, finding, kv, note, notes, roofline_block, roofs_table, Cell, Page, Section, Table,
};
use crate::devices::DeviceRow;
use crate::rows::{analysis_rows, analysis_title, device_footer, device_rows, Row as TextRow};
use crate::svg::{Mark, RooflineChart};
use crate::MISSING;
use rooftop_core::analysis::Analysis;
use rooftop_core::device::DeviceSpec;
use rooftop_core::units::{pct, si, sig3, us};
use std::fmt::Write as _;

/// The (metric, value, source) rows every format shows, as a table.
fn rows_table(rows: Vec<TextRow>) -> String {
    let mut t = Table::new(&["metric", "value", "source"]);
    for [m, v, s] in rows {
        t.push(vec![Cell::text(&m), Cell::text(&v), Cell::text(&s)]);
    }
    t.render()
}

/// The chart's marks of one analysis: its measured point (or, without a time, its
/// attainable point, hollow), and one more per memory level with counter bytes.
fn marks(a: &Analysis, i: usize) -> (Vec<Mark>, Vec<String>) {
    let r = &a.roofline;
    let mut out = Vec::new();
    let mut left_out = Vec::new();
    let row = Some(anchor("a", &[&i.to_string()]));
    let name = a.kernel_name.clone().unwrap_or_else(|| a.work.class.as_str().to_string());
    let mut tip = vec![name.clone(), format!("shape: {}", a.work.shape)];
    let top =
        a.findings.first().map(|f| format!("top finding: {} ({})", f.title, f.severity.as_str()));
    let (rate, hollow) = if let Some(m) = &r.achieved {
        tip.push(format!("time: {}", us(m.time_us)));
        tip.push(format!("achieved: {}", si(m.achieved_tflops * 1e12, "FLOP/s")));
        tip.push(format!("roofline attainment: {}", pct(m.roofline_attainment_pct)));
        (m.achieved_tflops * 1e12, false)
    } else {
        tip.push(format!(
            "attainable: {} (no measured time)",
            si(r.attainable_tflops * 1e12, "FLOP/s")
        ));
        tip.push(format!("floor time: {}", us(r.floor_time_us)));
        (r.attainable_tflops * 1e12, true)
    };
    tip.push(format!(
        "intensity: {} FLOP/B (DRAM); bound: {}",
        sig3(r.arithmetic_intensity),
        r.bound.as_str()
    ));
    tip.extend(top.clone());
    let weight = r.achieved.as_ref().map_or(r.floor_time_us, |m| m.time_us);
    if r.arithmetic_intensity.is_finite() && r.arithmetic_intensity > 0.0 && rate > 0.0 {
        out.push(Mark {
            intensity: r.arithmetic_intensity,
            rate,
            weight,
            bound: Some(r.bound),
            hollow,
            row: row.clone(),
            tip,
        });
    } else {
        left_out.push(format!(
            "{name} {} is not on the chart: {} (a log axis has no zero or infinity).",
            a.work.shape,
            if r.flops == 0.0 { "it does no FLOPs" } else { "it moves no bytes" }
        ));
    }
    for l in &r.levels {
        if l.arithmetic_intensity.is_finite() && l.arithmetic_intensity > 0.0 && rate > 0.0 {
            let mut tip = vec![
                format!("{name} at {}", l.level.as_str().to_ascii_uppercase()),
                format!("shape: {}", a.work.shape),
                format!("{} traffic: {}", l.level.as_str(), si(l.bytes, "B")),
                format!("intensity: {} FLOP/B", sig3(l.arithmetic_intensity)),
            ];
            if let Some(u) = l.utilization_pct {
                tip.push(format!("{} of the {} bandwidth", pct(u), l.level.as_str()));
            }
            tip.extend(top.clone());
            out.push(Mark {
                intensity: l.arithmetic_intensity,
                rate,
                weight,
                bound: Some(r.bound),
                hollow,
                row: row.clone(),
                tip,
            });
        }
    }
    (out, left_out)
}

/// The report of one or more analyses. With `device`, every roof of the device is drawn
/// and its spec listed; without, the roofs the analyses used.
pub fn analyses(items: &[Analysis], device: Option<&DeviceSpec>) -> String {
    let mut page = Page {
        title: match items {
            [one] => format!("rooftop analyze: {}", analysis_title(one)),
            _ => format!("rooftop analyze: {} analyses", items.len()),
        },
        ..Page::default()
    };
    if let Some(d) = device {
        page.subtitle.push(format!("device: {} [{}]", d.name, d.id));
    }
    let mut entries: Vec<RoofEntry> = match (device, items.first()) {
        (Some(d), first) => {
            let primary =
                first.and_then(|a| a.roofline.compute_roof.as_ref()).map(|c| (c.precision, c.unit));
            device_roofs(d, primary)
        }
        (None, Some(a)) => analysis_roofs(a),
        (None, None) => Vec::new(),
    };
    // Counter-derived levels of an analysis that the device list lacks.
    for a in items {
        for e in analysis_roofs(a) {
            if !entries
                .iter()
                .any(|x| x.roof.memory == e.roof.memory && x.roof.label == e.roof.label)
            {
                entries.push(e);
            }
        }
    }
    let mut chart = RooflineChart {
        roofs: chart_roofs(&entries),
        marks: Vec::new(),
        title: page.title.clone(),
    };
    let mut left_out = Vec::new();
    for (i, a) in items.iter().enumerate() {
        let (m, l) = marks(a, i);
        chart.marks.extend(m);
        left_out.extend(l);
    }
    page.sections.push(Section::new("roofline", "Roofline", roofline_block(&chart, &left_out)));
    let many = items.len() > 1;
    if many {
        // One sortable row per analysis (the marks point here), details below.
        let mut t = Table::new(&[
            "op",
            "shape",
            "kernel",
            "#time",
            "#achieved",
            "#attainment",
            "bound",
            "top finding",
        ]);
        for (i, a) in items.iter().enumerate() {
            let m = a.roofline.achieved.as_ref();
            let cells = vec![
                Cell::text(a.work.class.as_str()),
                Cell::text(&a.work.shape),
                Cell::name(a.kernel_name.as_deref().unwrap_or(MISSING)),
                Cell::num(
                    &m.map_or_else(|| MISSING.to_string(), |m| us(m.time_us)),
                    m.map(|m| m.time_us),
                ),
                Cell::num(
                    &m.map_or_else(
                        || MISSING.to_string(),
                        |m| si(m.achieved_tflops * 1e12, "FLOP/s"),
                    ),
                    m.map(|m| m.achieved_tflops),
                ),
                Cell::num(
                    &m.map_or_else(|| MISSING.to_string(), |m| pct(m.roofline_attainment_pct)),
                    m.map(|m| m.roofline_attainment_pct),
                ),
                Cell::text(a.roofline.bound.as_str()),
                Cell::text(&a.findings.first().map_or_else(
                    || MISSING.to_string(),
                    |f| format!("{} ({})", f.title, f.severity.as_str()),
                )),
            ];
            t.rows.push(super::Row { id: Some(anchor("a", &[&i.to_string()])), cells });
        }
        page.sections.push(Section::new(
            "analyses",
            format!("Analyses ({})", items.len()),
            t.render(),
        ));
    }
    for (i, a) in items.iter().enumerate() {
        let mut body = String::new();
        if let Some(k) = &a.kernel_name {
            let _ = write!(body, "<p>Kernel <code>{}</code></p>", esc(k));
        }
        let mut t = Table::new(&["metric", "value", "source"]);
        for [m, v, s] in analysis_rows(a) {
            t.push(vec![Cell::text(&m), Cell::text(&v), Cell::text(&s)]);
        }
        if !many {
            if let Some(first) = t.rows.first_mut() {
                first.id = Some(anchor("a", &[&i.to_string()]));
            }
        }
        body.push_str(&t.render());
        if !a.work.assumptions.is_empty() {
            body.push_str("<h3>Assumptions</h3>");
            body.push_str(&notes(&a.work.assumptions));
        }
        body.push_str("<h3>Findings</h3>");
        if a.findings.is_empty() {
            body.push_str(&note(if a.roofline.achieved.is_none() {
                "None without a measured time (pass --time-us)."
            } else {
                "None."
            }));
        }
        for f in &a.findings {
            body.push_str(&finding(&f.into(), None));
        }
        let title = if many { analysis_title(a) } else { "Analysis".to_string() };
        let mut section = Section::new(anchor("analysis", &[&i.to_string()]), title, body);
        section.nav = !many;
        page.sections.push(section);
    }
    page.sections.push(Section::new("roofs", "Roofs and their provenance", roofs_table(&entries)));
    if let Some(d) = device {
        page.sections.push(Section::new("device", "Device spec used", device_body(d)));
    }
    page.render()
}

fn device_body(d: &DeviceSpec) -> String {
    let mut body = rows_table(device_rows(d));
    body.push_str(&notes(&device_footer(d)));
    body
}

/// The device list as a sortable table, headed by the columns' labels
/// ([`crate::devices::COLUMNS`]; `#` marks a numeric column). Peaks and bandwidth are
/// catalog figures (`si` shows them to three digits with their unit; the cell sorts on
/// the exact figure); the ridge point is computed (`sig3`).
pub fn devices(devs: &[DeviceSpec]) -> String {
    let header: Vec<String> = crate::devices::COLUMNS
        .iter()
        .map(|c| if c.unit.is_empty() { c.label.to_string() } else { format!("#{}", c.label) })
        .collect();
    let mut t = Table::new(&header.iter().map(String::as_str).collect::<Vec<_>>());
    let dash = || MISSING.to_string();
    for d in devs {
        let r = DeviceRow::of(d);
        t.push(vec![
            Cell::name(&r.id),
            Cell::text(&r.name),
            Cell::text(r.vendor.as_str()),
            Cell::num(
                &r.fp16_matrix_tflops.map_or_else(dash, |v| si(v * 1e12, "FLOP/s")),
                r.fp16_matrix_tflops,
            ),
            Cell::num(&r.fp32_tflops.map_or_else(dash, |v| si(v * 1e12, "FLOP/s")), r.fp32_tflops),
            Cell::num(&si(r.bandwidth_gbs * 1e9, "B/s"), Some(r.bandwidth_gbs)),
            Cell::num(
                &r.ridge_flop_per_byte.map_or_else(dash, |v| format!("{} FLOP/B", sig3(v))),
                r.ridge_flop_per_byte,
            ),
            Cell::text(r.confidence),
        ]);
    }
    let mut body = t.render();
    body.push_str(&note(
        "Dense catalog peaks; ridge = FP16 (else BF16) matrix, else FP32, over DRAM bandwidth. \
         `rooftop devices ID --format html` shows one device with its roofline and every figure's source.",
    ));
    Page {
        title: format!("rooftop devices: {} devices", devs.len()),
        subtitle: Vec::new(),
        sections: vec![Section::new("devices", "Devices", body)],
    }
    .render()
}

/// One device: its roofs on a chart (no marks), every figure with its source.
pub fn device_detail(d: &DeviceSpec) -> String {
    let entries = device_roofs(d, crate::devices::headline_peak(d));
    let chart = RooflineChart {
        roofs: chart_roofs(&entries),
        marks: Vec::new(),
        title: format!("roofs of {}", d.name),
    };
    let facts = vec![
        ("id".to_string(), d.id.clone()),
        ("vendor / arch".to_string(), format!("{} {}", d.vendor.as_str(), d.arch)),
    ];
    Page {
        title: format!("rooftop devices: {}", d.name),
        subtitle: vec![format!("[{}]", d.id)],
        sections: vec![
            Section::new(
                "roofline",
                "Roofs",
                format!("{}{}", kv(&facts), roofline_block(&chart, &[])),
            ),
            Section::new("roofs", "Roofs and their provenance", roofs_table(&entries)),
            Section::new("device", "Every figure", device_body(d)),
        ],
    }
    .render()
}
