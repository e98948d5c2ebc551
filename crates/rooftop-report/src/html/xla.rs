//! HTML of the XLA section of `rooftop trace` reports (JAX profiles): the XLA op summary,
//! categories, modules, steps, GEMM fusion tiles, collectives, host threads and the
//! device capabilities the profile states, as sortable tables. Numbers come from
//! `TraceReport::xla`.

use super::{note, notes, Cell, Section, Table};
use crate::MISSING;
use rooftop_core::trace::report::TraceReport;
use rooftop_core::trace::xla::report::XlaReport;
use rooftop_core::units::{pct, si, sig3, us};

fn ms(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else {
        us(v * 1e3)
    }
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> Cell {
    Cell::num(&v.map_or_else(|| MISSING.to_string(), f), v)
}

fn count(n: u64) -> Cell {
    Cell::num(&n.to_string(), Some(n as f64))
}

fn bytes(v: f64) -> String {
    si(v, "B")
}

/// The XLA sections of one report (none for PyTorch traces). `prefix` keeps ids unique
/// across ranks; `label` prefixes titles.
#[allow(clippy::many_single_char_names)]
pub(crate) fn sections(r: &TraceReport, prefix: &str, label: &str) -> Vec<Section> {
    let Some(x) = &r.xla else { return Vec::new() };
    let id = |s: &str| format!("{prefix}xla-{s}");
    let title = |s: &str| if label.is_empty() { s.to_string() } else { format!("{label}: {s}") };
    let mut out = Vec::new();

    out.extend(ops_section(x, &id, &title));
    out.extend(categories_section(x, &id, &title));
    out.extend(steps_section(x, &id, &title));
    out.extend(tiles_section(x, &id, &title));
    out.extend(collectives_section(x, &id, &title));
    out.extend(host_section(x, &id, &title));
    out.extend(devices_section(x, &id, &title));
    out
}

/// The XLA ops with their work and roofline.
fn ops_section(
    x: &XlaReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let mut t = Table::new(&[
        "HLO op",
        "category",
        "module",
        "#execs",
        "#total",
        "#mean",
        "#%",
        "#FLOP",
        "#bytes",
        "model",
        "#TFLOP/s",
        "#TB/s",
        "#roofline",
        "bound",
        "framework op",
    ]);
    for o in &x.ops {
        t.push(vec![
            Cell::name_sub(&o.name, o.shape.as_deref().unwrap_or("")),
            Cell::text(&o.category),
            Cell::text(o.module.as_deref().unwrap_or(MISSING)),
            count(o.occurrences),
            Cell::num(&us(o.total_us), Some(o.total_us)),
            Cell::num(&us(o.mean_us), Some(o.mean_us)),
            Cell::num(&pct(o.percent), Some(o.percent)),
            opt(o.flops.filter(|&f| f > 0.0), |f| si(f, "FLOP")),
            opt(o.bytes, bytes),
            Cell::text(o.model.as_deref().or(o.unmodelled.as_deref()).unwrap_or(MISSING)),
            opt(o.achieved_tflops, sig3),
            opt(o.achieved_tbs, sig3),
            opt(o.roofline_attainment_pct, pct),
            Cell::text(o.bound.map_or(MISSING, |b| b.as_str())),
            Cell::text(o.framework_op.as_deref().unwrap_or(MISSING)),
        ]);
    }
    let mut body = t.render();
    let mut n = vec![
        format!(
            "Time of one execution = union of its kernels; % of all XLA op time ({}). FLOP and \
             bytes are one execution's, from the HLO shapes in the profile (GEMM, attention and \
             convolution models; other ops: operands + result bytes, the memory roof only).",
            ms(x.total_op_time_ms)
        ),
        format!("XPlane layout: {}.", x.layout),
    ];
    n.extend(x.notes.iter().cloned());
    body.push_str(&notes(&n));
    out.push(Section::new(id("ops"), title(&format!("XLA ops ({})", x.ops.len())), body));
    out
}

/// Time per op category, and the modules.
fn categories_section(
    x: &XlaReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let mut t = Table::new(&["category", "#ops", "#execs", "#time", "#%"]);
    for c in &x.categories {
        t.push(vec![
            Cell::text(&c.category),
            count(c.ops),
            count(c.occurrences),
            Cell::num(&ms(c.time_ms), Some(c.time_ms)),
            Cell::num(&pct(c.percent), Some(c.percent)),
        ]);
    }
    let mut body = t.render();
    let mut m = Table::new(&[
        "module",
        "#program",
        "#runs",
        "#ops",
        "#kernels",
        "#device time",
        "#mean/run",
        "#min",
        "#max",
    ]);
    for r in &x.modules {
        m.push(vec![
            Cell::name_sub(&r.name, if r.has_hlo { "" } else { "no HLO in the profile" }),
            opt(r.program_id.map(|p| p as f64), |p| format!("{p}")),
            count(r.runs),
            count(r.ops),
            count(r.kernels),
            Cell::num(&ms(r.device_time_ms), Some(r.device_time_ms)),
            Cell::num(&ms(r.mean_run_ms), Some(r.mean_run_ms)),
            Cell::num(&ms(r.min_run_ms), Some(r.min_run_ms)),
            Cell::num(&ms(r.max_run_ms), Some(r.max_run_ms)),
        ]);
    }
    body.push_str("<h3>Modules</h3>");
    body.push_str(&m.render());
    out.push(Section::new(id("categories"), title("XLA op categories and modules"), body));
    out
}

/// The steps of the profile.
fn steps_section(
    x: &XlaReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let s = &x.steps;
    let mut t = Table::new(&[
        "#step",
        "#device",
        "#start",
        "#span",
        "#busy",
        "#idle",
        "#kernels",
        "#gap to next",
    ]);
    for r in &s.rows {
        t.push(vec![
            count(r.index),
            Cell::num(&r.device.to_string(), Some(r.device as f64)),
            Cell::num(&ms(r.start_ms), Some(r.start_ms)),
            Cell::num(&ms(r.span_ms), Some(r.span_ms)),
            Cell::num(&ms(r.busy_ms), Some(r.busy_ms)),
            Cell::num(&ms(r.idle_ms), Some(r.idle_ms)),
            count(r.kernels),
            opt(r.gap_to_next_ms, ms),
        ]);
    }
    let mut body = note(&match s.basis.strip_prefix("module:") {
        Some(m) => {
            format!("Steps are the executions of {m}, the module with the most device time.")
        }
        None => "No module ran on a device.".to_string(),
    });
    body.push_str(&t.render());
    if !s.markers.is_empty() {
        let mut mk = Table::new(&["name", "#step", "#duration"]);
        for k in &s.markers {
            mk.push(vec![
                Cell::name(&k.name),
                opt(k.step.map(|v| v as f64), |v| format!("{v}")),
                Cell::num(&us(k.dur_ns as f64 / 1e3), Some(k.dur_ns as f64 / 1e3)),
            ]);
        }
        body.push_str("<h3>Step markers on the host</h3>");
        body.push_str(&mk.render());
    }
    out.push(Section::new(id("steps"), title("Steps"), body));
    out
}

/// The GEMMs with a tile configuration and their tile and wave efficiency.
fn tiles_section(
    x: &XlaReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let tiles: Vec<_> = x.ops.iter().filter_map(|o| o.tile.as_ref().map(|t| (o, t))).collect();
    if !tiles.is_empty() {
        let mut t = Table::new(&[
            "HLO op",
            "output",
            "tile",
            "#tiles",
            "#grid",
            "#tile eff",
            "#waves",
            "#wave eff",
        ]);
        let join = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join("×");
        for (o, tl) in tiles {
            t.push(vec![
                Cell::name(&o.name),
                Cell::text(&join(&tl.output_dims)),
                Cell::text(&join(&tl.output_tile)),
                count(tl.tiles),
                opt(tl.grid_blocks.map(|g| g as f64), |g| format!("{g}")),
                Cell::num(&pct(tl.tile_eff * 100.0), Some(tl.tile_eff)),
                opt(tl.waves.map(|w| w as f64), |w| format!("{w}")),
                opt(tl.wave_eff.map(|w| w * 100.0), pct),
            ]);
        }
        let mut body = t.render();
        body.push_str(&note(
            "Output tile from the fusion's HLO backend config; tiles = product of ceil(output dim / \
             tile); grid = blocks of the op's longest kernel launch; waves over the catalog device's \
             compute units.",
        ));
        out.push(Section::new(id("tiles"), title("GEMM fusion tiles"), body));
    }

    out
}

/// The collectives and their bus bandwidth.
fn collectives_section(
    x: &XlaReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    if !x.collectives.is_empty() {
        let mut t = Table::new(&[
            "HLO op",
            "kind",
            "#n",
            "#message",
            "#execs",
            "#mean",
            "#min",
            "#max",
            "#algbw GB/s",
            "#busbw GB/s",
        ]);
        for c in &x.collectives {
            t.push(vec![
                Cell::name_sub(&c.name, c.message_basis.as_deref().unwrap_or("")),
                Cell::text(c.kind.map_or(MISSING, |k| k.as_str())),
                opt(c.group_size.map(|n| n as f64), |n| format!("{n}")),
                opt(c.message_bytes, bytes),
                count(c.occurrences),
                Cell::num(&us(c.mean_us), Some(c.mean_us)),
                Cell::num(&us(c.min_us), Some(c.min_us)),
                Cell::num(&us(c.max_us), Some(c.max_us)),
                opt(c.algbw_gbs, sig3),
                opt(c.busbw_gbs, sig3),
            ]);
        }
        let mut body = t.render();
        body.push_str(&note(
            "Message size from the HLO shapes (nccl-tests convention); algbw = size / mean time; \
             busbw = algbw × 2(n-1)/n (all-reduce) or (n-1)/n (all-gather, reduce-scatter, all-to-all).",
        ));
        out.push(Section::new(id("collectives"), title("Collectives"), body));
    }

    out
}

/// The busiest host threads.
fn host_section(
    x: &XlaReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    if !x.host_threads.is_empty() {
        let mut t =
            Table::new(&["thread", "plane", "#events", "#busy", "longest outermost events"]);
        for h in &x.host_threads {
            let top = h
                .top
                .iter()
                .map(|(n, c, d)| format!("{n} (×{c}, {})", us(*d as f64 / 1e3)))
                .collect::<Vec<_>>()
                .join("; ");
            t.push(vec![
                Cell::name(&h.name),
                Cell::text(&h.plane),
                count(h.events),
                Cell::num(&us(h.busy_ns as f64 / 1e3), Some(h.busy_ns as f64)),
                Cell::text(&top),
            ]);
        }
        out.push(Section::new(id("host"), title("Host threads"), t.render()));
    }

    out
}

/// The devices the profile names.
fn devices_section(
    x: &XlaReport,
    id: &dyn Fn(&str) -> String,
    title: &dyn Fn(&str) -> String,
) -> Vec<Section> {
    let mut out = Vec::new();
    let devs: Vec<_> =
        x.devices.iter().filter(|d| d.core_count.is_some() || d.clock_khz.is_some()).collect();
    if !devs.is_empty() {
        let mut t = Table::new(&[
            "device",
            "vendor",
            "target",
            "#cores",
            "#clock",
            "#memory BW",
            "#memory",
        ]);
        for d in devs {
            t.push(vec![
                Cell::text(&d.plane),
                Cell::text(d.vendor.as_deref().unwrap_or(MISSING)),
                Cell::text(d.llvm_target.as_deref().unwrap_or(MISSING)),
                opt(d.core_count.map(|c| c as f64), |c| format!("{c}")),
                opt(d.clock_khz.map(|k| k as f64 * 1e3), |v| si(v, "Hz")),
                opt(d.memory_bandwidth_bps, |v| si(v, "B/s")),
                opt(d.memory_bytes.map(|m| m as f64), bytes),
            ]);
        }
        let mut body = t.render();
        body.push_str(&note(
            "As the runtime reported them (provenance: profile); roofline numbers use the catalog device.",
        ));
        out.push(Section::new(id("devices"), title("Devices as the profile states them"), body));
    }
    out
}
