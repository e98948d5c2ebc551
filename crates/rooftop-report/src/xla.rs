//! The XLA section of `rooftop trace` reports (JAX profiles): blocks for the terminal and
//! Markdown (laid out like the other trace sections, [`crate::trace`]) and one CSV per
//! table. Every number comes from `TraceReport::xla`; nothing is computed here.

use crate::trace::{ms, num, onum, short, Block};
use crate::MISSING;
use rooftop_core::trace::report::TraceReport;
use rooftop_core::trace::xla::report::{XlaOpRow, XlaReport};
use rooftop_core::units::{pct, si, sig3, us};
use std::fmt::Write as _;

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or_else(|| MISSING.to_string(), f)
}

fn bytes(v: f64) -> String {
    si(v, "B")
}

/// A percentage for narrow cells: `<0.01%` below 0.01%.
fn pct_short(v: f64) -> String {
    if v > 0.0 && v < 0.01 {
        "<0.01%".to_string()
    } else {
        pct(v)
    }
}

/// A rate in a narrow cell: three significant digits, `<0.01` below 0.01.
fn rate(v: Option<f64>) -> String {
    match v {
        None => MISSING.to_string(),
        Some(x) if x > 0.0 && x < 0.01 => "<0.01".to_string(),
        Some(x) => sig3(x),
    }
}

fn roof(r: &XlaOpRow) -> String {
    match (r.roofline_attainment_pct, r.bound) {
        (Some(a), Some(b)) => format!("{}\n{}", pct_short(a), b.as_str()),
        (None, Some(b)) => b.as_str().to_string(),
        _ => MISSING.to_string(),
    }
}

/// `name` shortened to `max` characters keeping its end (XLA's `.N` uniquifier).
fn short_mid(name: &str, max: usize) -> String {
    let n = name.chars().count();
    if n <= max || max < 8 {
        return short(name, max);
    }
    let tail = max / 3;
    let head: String = name.chars().take(max - tail - 1).collect();
    let end: String = name.chars().skip(n - tail).collect();
    format!("{head}…{end}")
}

fn ops_block(x: &XlaReport, top: usize, title: &str) -> Block {
    let mut b = Block::new(
        format!("{title} (top {} of {})", top.min(x.ops.len()), x.ops.len()),
        &["HLO op / category", "execs", "mean", "% time", "work", "TFLOP/s", "TB/s", "roofline"],
    );
    b.min_widths = vec![(0, 24)];
    for r in x.ops.iter().take(top) {
        let work = match (r.flops.filter(|&f| f > 0.0), r.bytes) {
            (Some(f), Some(by)) => format!("{}\n{}", si(f, "FLOP"), bytes(by)),
            (None, Some(by)) => format!("-\n{}", bytes(by)),
            _ => MISSING.to_string(),
        };
        b.rows.push(vec![
            format!("{}\n{}", short_mid(&r.name, 22), r.category),
            r.occurrences.to_string(),
            us(r.mean_us),
            pct_short(r.percent),
            work,
            rate(r.achieved_tflops),
            rate(r.achieved_tbs),
            roof(r),
        ]);
    }
    b.notes.push(format!(
        "Time of one execution = union of its kernels; % of all XLA op time ({}). Work from the \
         HLO shapes in the profile (GEMM/attention/conv models; other ops: operands + result \
         bytes, memory roof only); achieved rates and roofline attainment from the mean \
         execution.",
        ms(x.total_op_time_ms)
    ));
    b
}

fn categories_block(x: &XlaReport) -> Block {
    let mut b = Block::new("XLA op categories", &["category", "ops", "execs", "time", "%"]);
    for c in &x.categories {
        b.rows.push(vec![
            c.category.clone(),
            c.ops.to_string(),
            c.occurrences.to_string(),
            ms(c.time_ms),
            pct(c.percent),
        ]);
    }
    b
}

fn modules_block(x: &XlaReport) -> Block {
    let mut b = Block::new(
        "XLA modules",
        &["module", "program", "runs", "ops", "kernels", "device time", "mean/run", "min…max"],
    );
    for m in &x.modules {
        b.rows.push(vec![
            format!("{}{}", m.name, if m.has_hlo { "" } else { " (no HLO)" }),
            m.program_id.map_or_else(|| MISSING.to_string(), |p| p.to_string()),
            m.runs.to_string(),
            m.ops.to_string(),
            m.kernels.to_string(),
            ms(m.device_time_ms),
            ms(m.mean_run_ms),
            format!("{}…{}", ms(m.min_run_ms), ms(m.max_run_ms)),
        ]);
    }
    b.notes.push(
        "device time of a run = union of its kernels on the device; runs are counted per device."
            .to_string(),
    );
    b
}

fn steps_blocks(x: &XlaReport, top: usize) -> Vec<Block> {
    let s = &x.steps;
    let mut out = Vec::new();
    let basis = s.basis.strip_prefix("module:").map_or_else(
        || "no module ran".to_string(),
        |m| format!("executions of {m}, the module with the most device time"),
    );
    let mut b = Block::new(
        format!("Steps ({basis}; top {} of {})", top.min(s.rows.len()), s.rows.len()),
        &["step", "device", "start", "span", "busy", "idle", "kernels", "gap to next"],
    );
    for r in s.rows.iter().take(top) {
        b.rows.push(vec![
            r.index.to_string(),
            r.device.to_string(),
            ms(r.start_ms),
            ms(r.span_ms),
            ms(r.busy_ms),
            ms(r.idle_ms),
            r.kernels.to_string(),
            opt(r.gap_to_next_ms, ms),
        ]);
    }
    b.notes.push(
        "span = first kernel start to last kernel end of the step on the device; busy = union of \
         all device activity in the span; start is from the start of the timeline window."
            .to_string(),
    );
    out.push(b);
    if !s.markers.is_empty() {
        let mut m = Block::new("Step markers on the host", &["name", "step", "duration"]);
        for k in s.markers.iter().take(top) {
            m.rows.push(vec![
                k.name.clone(),
                k.step.map_or_else(|| MISSING.to_string(), |n| n.to_string()),
                us(k.dur_ns as f64 / 1e3),
            ]);
        }
        out.push(m);
    }
    out
}

fn tiles_block(x: &XlaReport) -> Option<Block> {
    let rows: Vec<&XlaOpRow> = x.ops.iter().filter(|r| r.tile.is_some()).collect();
    if rows.is_empty() {
        return None;
    }
    let mut b = Block::new(
        "GEMM fusion tiles (from the HLO backend config)",
        &["HLO op", "output", "tile", "tiles", "grid", "tile eff", "waves", "wave eff"],
    );
    for r in rows {
        let Some(t) = &r.tile else { continue };
        let join = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join("×");
        b.rows.push(vec![
            short(&r.name, 24),
            join(&t.output_dims),
            join(&t.output_tile),
            t.tiles.to_string(),
            t.grid_blocks.map_or_else(|| MISSING.to_string(), |g| g.to_string()),
            pct(t.tile_eff * 100.0),
            t.waves.map_or_else(|| MISSING.to_string(), |w| w.to_string()),
            opt(t.wave_eff.map(|w| w * 100.0), pct),
        ]);
    }
    b.notes.push(
        "tiles = product of ceil(output dim / tile) (docs/reference/formulas.md); grid = blocks of \
         the op's longest \
         kernel launch, which should equal tiles; waves over the catalog device's compute units."
            .to_string(),
    );
    Some(b)
}

fn collectives_block(x: &XlaReport) -> Option<Block> {
    if x.collectives.is_empty() {
        return None;
    }
    let mut b = Block::new(
        "Collectives",
        &["HLO op", "kind", "n", "message", "execs", "mean", "algbw", "busbw"],
    );
    for c in &x.collectives {
        b.rows.push(vec![
            short(&c.name, 28),
            c.kind.map_or_else(|| MISSING.to_string(), |k| k.as_str().to_string()),
            c.group_size.map_or_else(|| MISSING.to_string(), |n| n.to_string()),
            opt(c.message_bytes, bytes),
            c.occurrences.to_string(),
            us(c.mean_us),
            opt(c.algbw_gbs.map(|g| g * 1e9), |v| si(v, "B/s")),
            opt(c.busbw_gbs.map(|g| g * 1e9), |v| si(v, "B/s")),
        ]);
    }
    b.notes.push(
        "message size from the HLO shapes (nccl-tests convention); algbw = size / mean time; \
         busbw = algbw × 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter, \
         all-to-all."
            .to_string(),
    );
    Some(b)
}

fn host_block(x: &XlaReport, top: usize) -> Option<Block> {
    if x.host_threads.is_empty() {
        return None;
    }
    let mut threads: Vec<_> = x.host_threads.iter().collect();
    threads.sort_by_key(|t| std::cmp::Reverse(t.busy_ns));
    let mut b = Block::new(
        format!("Host threads (top {} of {})", top.min(threads.len()), threads.len()),
        &["thread", "events", "busy", "longest outermost events"],
    );
    b.min_widths = vec![(3, 50)];
    for t in threads.into_iter().take(top) {
        let top_events = t
            .top
            .iter()
            .take(3)
            .map(|(n, c, d)| format!("{} (×{c}, {})", short(n, 32), us(*d as f64 / 1e3)))
            .collect::<Vec<_>>()
            .join("\n");
        b.rows.push(vec![
            format!("{}\n{}", short(&t.name, 28), t.plane),
            t.events.to_string(),
            us(t.busy_ns as f64 / 1e3),
            top_events,
        ]);
    }
    Some(b)
}

fn devices_block(x: &XlaReport) -> Option<Block> {
    let with_info: Vec<_> =
        x.devices.iter().filter(|d| d.core_count.is_some() || d.clock_khz.is_some()).collect();
    if with_info.is_empty() {
        return None;
    }
    let others = x.devices.len() - with_info.len();
    let mut b = Block::new(
        "Devices as the profile states them",
        &["device", "vendor", "target", "cores", "clock", "memory BW", "memory"],
    );
    for d in with_info {
        b.rows.push(vec![
            d.plane.clone(),
            d.vendor.clone().unwrap_or_else(|| MISSING.to_string()),
            d.llvm_target.clone().unwrap_or_else(|| MISSING.to_string()),
            d.core_count.map_or_else(|| MISSING.to_string(), |c| c.to_string()),
            opt(d.clock_khz.map(|k| k as f64 * 1e3), |v| si(v, "Hz")),
            opt(d.memory_bandwidth_bps, |v| si(v, "B/s")),
            opt(d.memory_bytes.map(|m| m as f64), bytes),
        ]);
    }
    b.notes.push(format!(
        "As the runtime reported them (provenance: profile); roofline numbers use the catalog \
         device in the header.{}",
        if others > 0 {
            format!(
                " {} state no capabilities.",
                rooftop_core::diagnose::count(
                    others as u64,
                    "more device plane",
                    "more device planes"
                )
            )
        } else {
            String::new()
        }
    ));
    Some(b)
}

fn about(x: &XlaReport) -> String {
    let mut s = format!("XPlane layout: {}", x.layout);
    if !x.hostnames.is_empty() {
        let _ = write!(s, "; host {}", x.hostnames.join(", "));
    }
    for n in &x.notes {
        s.push_str(". ");
        s.push_str(n);
    }
    s
}

/// The XLA blocks of the one-screen summary: the top XLA ops.
pub(crate) fn summary_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let Some(x) = &r.xla else { return Vec::new() };
    let mut b = ops_block(x, top.min(10), "XLA ops by device time");
    b.notes.push(about(x));
    vec![b]
}

/// Every XLA block (`--section xla`, and in `--section all`).
pub(crate) fn blocks(r: &TraceReport, top: usize) -> Vec<Block> {
    let Some(x) = &r.xla else { return Vec::new() };
    let mut out = Vec::new();
    let mut b = ops_block(x, top, "XLA ops by device time");
    b.notes.push(about(x));
    out.push(b);
    out.push(categories_block(x));
    out.push(modules_block(x));
    out.extend(steps_blocks(x, top));
    out.extend(tiles_block(x));
    out.extend(collectives_block(x));
    out.extend(host_block(x, top));
    out.extend(devices_block(x));
    out
}

/// An optional text as a CSV cell (empty when absent).
fn text(v: Option<&String>) -> String {
    v.cloned().unwrap_or_default()
}

/// The XLA CSV files (`xla_*.csv`); none for PyTorch traces.
pub(crate) fn csv_files(r: &TraceReport) -> Result<Vec<(String, String)>, crate::RenderError> {
    let Some(x) = &r.xla else { return Ok(Vec::new()) };
    let mut files = Vec::new();
    ops_csv(x, &mut files)?;
    categories_csv(x, &mut files)?;
    modules_csv(x, &mut files)?;
    steps_csv(x, &mut files)?;
    collectives_csv(x, &mut files)?;
    host_csv(x, &mut files)?;
    Ok(files)
}

/// `xla_ops.csv`: one row per XLA op with its work and roofline.
fn ops_csv(x: &XlaReport, files: &mut Vec<(String, String)>) -> Result<(), crate::RenderError> {
    let rows = x
        .ops
        .iter()
        .map(|o| {
            vec![
                text(o.module.as_ref()),
                o.program_id.map(|p| p.to_string()).unwrap_or_default(),
                o.name.clone(),
                o.category.clone(),
                text(o.opcode.as_ref()),
                text(o.fusion_kind.as_ref()),
                text(o.custom_call_target.as_ref()),
                text(o.framework_op.as_ref()),
                text(o.shape.as_ref()),
                text(o.operands.as_ref()),
                o.occurrences.to_string(),
                o.kernels.to_string(),
                num(o.total_us),
                num(o.mean_us),
                num(o.min_us),
                num(o.max_us),
                num(o.percent),
                num(o.cumulative_percent),
                onum(o.flops),
                onum(o.bytes),
                text(o.model.as_ref()),
                onum(o.achieved_tflops),
                onum(o.achieved_tbs),
                onum(o.roofline_attainment_pct),
                o.bound.map(|b| b.as_str().to_string()).unwrap_or_default(),
                onum(o.floor_time_us),
                o.tile.as_ref().map(|t| t.tiles.to_string()).unwrap_or_default(),
                o.tile
                    .as_ref()
                    .and_then(|t| t.grid_blocks)
                    .map(|g| g.to_string())
                    .unwrap_or_default(),
                onum(o.tile.as_ref().map(|t| t.tile_eff)),
                onum(o.tile.as_ref().and_then(|t| t.wave_eff)),
                text(o.unmodelled.as_ref()),
            ]
        })
        .collect();
    files.push((
        "xla_ops.csv".to_string(),
        crate::csv::text(
            &[
                "module",
                "program_id",
                "hlo_op",
                "category",
                "opcode",
                "fusion_kind",
                "custom_call_target",
                "framework_op",
                "shape",
                "operands",
                "occurrences",
                "kernels",
                "total_us",
                "mean_us",
                "min_us",
                "max_us",
                "percent",
                "cumulative_percent",
                "flops",
                "bytes",
                "model",
                "achieved_tflops",
                "achieved_tbs",
                "roofline_attainment_pct",
                "bound",
                "floor_time_us",
                "tiles",
                "grid_blocks",
                "tile_eff",
                "wave_eff",
                "unmodelled",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// `xla_categories.csv`: time per op category.
fn categories_csv(
    x: &XlaReport,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let rows = x
        .categories
        .iter()
        .map(|c| {
            vec![
                c.category.clone(),
                c.ops.to_string(),
                c.occurrences.to_string(),
                num(c.time_ms),
                num(c.percent),
            ]
        })
        .collect();
    files.push((
        "xla_categories.csv".to_string(),
        crate::csv::text(&["category", "ops", "occurrences", "time_ms", "percent"], rows)?,
    ));
    Ok(())
}

/// `xla_modules.csv`: the compiled modules and their runs.
fn modules_csv(x: &XlaReport, files: &mut Vec<(String, String)>) -> Result<(), crate::RenderError> {
    let rows = x
        .modules
        .iter()
        .map(|m| {
            vec![
                m.name.clone(),
                m.program_id.map(|p| p.to_string()).unwrap_or_default(),
                m.has_hlo.to_string(),
                m.runs.to_string(),
                m.devices.to_string(),
                m.ops.to_string(),
                m.kernels.to_string(),
                num(m.device_time_ms),
                num(m.mean_run_ms),
                num(m.min_run_ms),
                num(m.max_run_ms),
            ]
        })
        .collect();
    files.push((
        "xla_modules.csv".to_string(),
        crate::csv::text(
            &[
                "module",
                "program_id",
                "has_hlo",
                "runs",
                "devices",
                "ops",
                "kernels",
                "device_time_ms",
                "mean_run_ms",
                "min_run_ms",
                "max_run_ms",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// `xla_steps.csv`: the steps of the profile.
fn steps_csv(x: &XlaReport, files: &mut Vec<(String, String)>) -> Result<(), crate::RenderError> {
    let rows = x
        .steps
        .rows
        .iter()
        .map(|r| {
            vec![
                x.steps.basis.clone(),
                r.index.to_string(),
                r.device.to_string(),
                num(r.start_ms),
                num(r.span_ms),
                num(r.busy_ms),
                num(r.idle_ms),
                r.kernels.to_string(),
                onum(r.gap_to_next_ms),
            ]
        })
        .collect();
    files.push((
        "xla_steps.csv".to_string(),
        crate::csv::text(
            &[
                "basis",
                "step",
                "device",
                "start_ms",
                "span_ms",
                "busy_ms",
                "idle_ms",
                "kernels",
                "gap_to_next_ms",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// `xla_collectives.csv`: the collectives and their bus bandwidth.
fn collectives_csv(
    x: &XlaReport,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let rows = x
        .collectives
        .iter()
        .map(|c| {
            vec![
                text(c.module.as_ref()),
                c.name.clone(),
                c.kind.map(|k| k.as_str().to_string()).unwrap_or_default(),
                c.group_size.map(|n| n.to_string()).unwrap_or_default(),
                text(c.group_size_basis.as_ref()),
                c.occurrences.to_string(),
                onum(c.message_bytes),
                text(c.message_basis.as_ref()),
                num(c.mean_us),
                num(c.min_us),
                num(c.max_us),
                onum(c.algbw_gbs),
                onum(c.busbw_gbs),
                text(c.bus_factor.as_ref()),
            ]
        })
        .collect();
    files.push((
        "xla_collectives.csv".to_string(),
        crate::csv::text(
            &[
                "module",
                "hlo_op",
                "kind",
                "group_size",
                "group_size_basis",
                "occurrences",
                "message_bytes",
                "message_basis",
                "mean_us",
                "min_us",
                "max_us",
                "algbw_gbs",
                "busbw_gbs",
                "bus_factor",
            ],
            rows,
        )?,
    ));
    Ok(())
}

/// `xla_host_threads.csv`: the busiest host threads.
fn host_csv(x: &XlaReport, files: &mut Vec<(String, String)>) -> Result<(), crate::RenderError> {
    let rows = x
        .host_threads
        .iter()
        .map(|t| {
            vec![
                t.plane.clone(),
                t.name.clone(),
                t.events.to_string(),
                num(t.busy_ns as f64 / 1e3),
                t.top.first().map(|e| e.0.clone()).unwrap_or_default(),
                t.top.first().map(|e| num(e.2 as f64 / 1e3)).unwrap_or_default(),
            ]
        })
        .collect();
    files.push((
        "xla_host_threads.csv".to_string(),
        crate::csv::text(
            &["plane", "thread", "events", "busy_us", "longest_event", "longest_event_total_us"],
            rows,
        )?,
    ));
    Ok(())
}
