//! The sections of a trace report laid out as [`Block`]s (title, header, rows, notes):
//! the header lines, timeline, ops, categories, the roofline tables, kernels, short
//! kernels, findings and warnings, and [`blocks`], which picks them by [`Section`].

use super::*;
use crate::MISSING;

pub(super) fn dim3(d: Option<[u32; 3]>) -> String {
    d.map_or_else(|| MISSING.to_string(), |[x, y, z]| format!("{x}×{y}×{z}"))
}

pub(super) fn launch(cfgs: &[LaunchConfig]) -> String {
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

pub(super) fn header_lines(r: &TraceReport) -> String {
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
    if let Some(line) = no_shapes_line(r) {
        out.push_str(&wrap(&line, usize::from(WIDTH), "", "  "));
    }
    out
}

/// The one notice of a trace without recorded shapes, with the fix.
pub(super) fn no_shapes_line(r: &TraceReport) -> Option<String> {
    (r.model_coverage.shapes_recorded == Some(false)).then(|| {
        "shapes: not recorded, so no op has FLOPs, bytes or a roofline (the GEMM, CONV, ... \
         tables are empty); profile with torch.profiler.profile(record_shapes=True)"
            .to_string()
    })
}

/// One sentence on how much kernel time the work models cover.
pub(super) fn coverage_note(r: &TraceReport) -> Option<String> {
    let c = &r.model_coverage;
    let share = c.percent?;
    let mut s = format!(
        "Work models cover {} of the non-communication kernel time ({} of {})",
        pct(share),
        ms(c.modelled_us / 1e3),
        ms(c.kernel_time_us / 1e3)
    );
    let rest: Vec<String> = c
        .uncovered
        .iter()
        .take(3)
        .map(|u| format!("{} {} ({})", u.op, us(u.time_us), pct(u.percent)))
        .collect();
    if rest.is_empty() {
        s.push('.');
    } else {
        let _ = write!(
            s,
            "; without a model: {}{}; --section categories lists each with its reason.",
            rest.join(", "),
            if c.uncovered.len() > 3 { ", ..." } else { "" }
        );
    }
    Some(s)
}

/// The kernel time outside every work model, one row per op and reason.
pub(super) fn coverage_block(r: &TraceReport, top: usize) -> Block {
    let c = &r.model_coverage;
    let title = if c.uncovered.is_empty() {
        "Kernel time without a work model: none".to_string()
    } else {
        format!(
            "Kernel time without a work model (top {} of {})",
            top.min(c.uncovered.len()),
            c.uncovered.len()
        )
    };
    let mut b = Block::new(title, &["op", "kernels", "time", "% kernel time", "why no model"]);
    b.min_widths = vec![(0, 24)];
    if c.uncovered.is_empty() {
        b.header.clear();
    }
    for u in c.uncovered.iter().take(top) {
        b.rows.push(vec![
            u.op.clone(),
            u.kernels.to_string(),
            us(u.time_us),
            pct(u.percent),
            u.reason.clone(),
        ]);
    }
    match (c.percent, coverage_note(r)) {
        (Some(_), Some(n)) => b.notes.push(n),
        _ => b.notes.push(
            "No kernel time to model: the trace has no kernels outside communication.".to_string(),
        ),
    }
    b
}

pub(super) fn timeline_blocks(r: &TraceReport) -> Vec<Block> {
    let mut out = Vec::new();
    let n = r.timeline.per_device.len();
    let title = if n > 1 {
        format!(
            "GPU timeline, all {n} devices together (busy when any device is; per device below)"
        )
    } else {
        "GPU timeline".to_string()
    };
    let mut b = Block::new(title, &["", "time", "% of window"]);
    for (_, label, share) in r.timeline.all.rows() {
        b.rows.push(vec![label.to_string(), ms(share.time_ms), pct(share.percent)]);
    }
    if r.timeline.all.total.time_ms == 0.0 {
        b.notes.push(
            "No GPU time: the trace has no GPU events (kernel, memcpy or memset) that a \
             runtime call launched."
                .to_string(),
        );
    }
    if r.timeline.unlinked_excluded > 0 {
        b.notes.push(format!(
            "{} with no launching runtime call {} not counted.",
            rooftop_core::diagnose::count(r.timeline.unlinked_excluded, "GPU event", "GPU events"),
            if r.timeline.unlinked_excluded == 1 { "is" } else { "are" }
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

pub(super) fn ops_block(r: &TraceReport, top: usize) -> Block {
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

pub(super) fn by_category_block(r: &TraceReport) -> Block {
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
pub(super) fn params_text(row: &OpRow) -> String {
    row.params
        .0
        .iter()
        .filter(|(k, v)| !k.starts_with("stride") && *v != ParamValue::Null)
        .map(|(k, v)| format!("{k}={}", v.tracelens_repr().replace("c10::", "").replace('\'', "")))
        .collect::<Vec<_>>()
        .join(" ")
}

pub(super) fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map_or_else(|| MISSING.to_string(), f)
}

pub(super) fn roofline_table_block(name: &str, rows: &[OpRow], top: usize) -> Block {
    let mut b = Block::new(
        format!(
            "{name} (top {} of {})",
            top.min(rows.len()),
            rooftop_core::diagnose::count(rows.len() as u64, "row", "rows")
        ),
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
            r.bound.map_or_else(|| MISSING.to_string(), |x| x.as_str().to_string()),
        ]);
    }
    let unmodelled = rows.iter().filter(|r| r.unmodelled.is_some()).count();
    if unmodelled > 0 {
        b.notes.push(format!(
            "{} unmodelled: times only, no FLOPs or bytes.",
            rooftop_core::diagnose::count(unmodelled as u64, "row", "rows")
        ));
    }
    b.notes.push(
        "time = summed kernel time of all calls; TFLOP/s and TB/s are means over calls; \
         roofline = attainment of the roofline floor."
            .to_string(),
    );
    b
}

pub(super) fn kernels_block(r: &TraceReport, top: usize) -> Block {
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

pub(super) fn short_kernel_blocks(r: &TraceReport, top: usize) -> Vec<Block> {
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
            k.input_dims.clone().unwrap_or_else(|| MISSING.to_string()),
            k.count.to_string(),
            us(k.total_us),
            us(k.mean_us),
            pct(k.percent_of_total_time),
        ]);
    }
    vec![h, t]
}

pub(super) fn findings_block(r: &TraceReport, top: usize) -> Block {
    let mut b = Block::new(
        format!(
            "Findings by time at stake (top {} of {})",
            top.min(r.findings.len()),
            r.findings.len()
        ),
        &["severity", "at stake", "finding"],
    );
    for f in r.findings.iter().take(top) {
        b.rows.push(vec![f.severity.to_string(), stake_cell(f), finding_text(f)]);
    }
    if r.findings.is_empty() {
        b.notes.push("No trace-wide findings.".to_string());
    }
    b
}

pub(super) fn warnings_block(r: &TraceReport) -> Option<Block> {
    if r.warnings.is_empty() {
        return None;
    }
    let mut b = Block::new("Warnings", &["kind", "count", "example"]);
    for w in &r.warnings {
        b.rows.push(vec![w.kind.clone(), w.count.to_string(), w.example.clone()]);
    }
    Some(b)
}

pub(super) fn category_tables_blocks(r: &TraceReport, names: &[&str], top: usize) -> Vec<Block> {
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
        b.notes.push(empty_tables_reason(r, names));
        out.push(b);
    }
    out
}

/// Why a roofline section has no rows: no shapes, or no op of its kind.
fn empty_tables_reason(r: &TraceReport, names: &[&str]) -> String {
    if r.model_coverage.shapes_recorded == Some(false) {
        // The ops the section would show, by our category, as the ops table lists them.
        let cats: Vec<&str> = names
            .iter()
            .filter_map(|n| Table::ALL.iter().find(|t| t.as_str() == *n))
            .map(|t| t.category().as_str())
            .collect();
        let listed: Vec<&str> = r
            .ops_summary
            .ops
            .iter()
            .filter(|o| cats.iter().any(|c| o.category.split('/').any(|x| x == *c)))
            .map(|o| o.name.as_str())
            .take(3)
            .collect();
        return format!(
            "No rows: the trace was recorded without shapes, so no op can be modelled{}; \
             profile with torch.profiler.profile(record_shapes=True).",
            if listed.is_empty() {
                String::new()
            } else {
                format!(" (the ops table lists {})", listed.join(", "))
            }
        );
    }
    if r.xla.is_none() && r.ops_summary.ops.is_empty() {
        return "No rows: the trace has no CPU ops that launched GPU work.".to_string();
    }
    if names.is_empty() {
        "No rows: no op in the trace launched GPU work.".to_string()
    } else {
        format!("No rows: the trace has no op of this kind ({}).", names.join(", "))
    }
}

pub(super) fn blocks(r: &TraceReport, opts: &RenderOptions) -> Vec<Block> {
    let top = opts.top;
    let mut out = Vec::new();
    match opts.section {
        Section::Summary => {
            out.extend(timeline_blocks(r).into_iter().take(1));
            out.extend(crate::trace_gaps::summary_blocks(r));
            if r.xla.is_some() {
                out.extend(crate::xla::summary_blocks(r, top));
            } else {
                let mut b = ops_block(r, top);
                b.notes.extend(coverage_note(r));
                out.push(b);
            }
            out.push(findings_block(r, top));
        }
        Section::Timeline => out.extend(timeline_blocks(r)),
        Section::Ops => out.push(ops_block(r, top)),
        Section::Categories => {
            out.push(by_category_block(r));
            out.extend(category_tables_blocks(r, &[], top));
            out.push(coverage_block(r, top));
        }
        Section::Gemm
        | Section::Sdpa
        | Section::Conv
        | Section::Norm
        | Section::Elementwise
        | Section::Softmax
        | Section::Pool
        | Section::Embedding
        | Section::Triton => {
            out.extend(category_tables_blocks(r, opts.section.tables(), top));
        }
        Section::Kernels => out.push(kernels_block(r, top)),
        Section::ShortKernels => out.extend(short_kernel_blocks(r, top)),
        Section::Findings => out.push(findings_block(r, top)),
        Section::Xla => {
            out.extend(crate::xla::blocks(r, top));
            if r.xla.is_none() {
                let mut b = Block::new("XLA", &[]);
                b.notes.push(
                    "No XLA section: this is a PyTorch trace, not a JAX profile (`*.xplane.pb`)."
                        .to_string(),
                );
                out.push(b);
            }
        }
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
            out.push(coverage_block(r, top));
            out.push(kernels_block(r, top));
            out.extend(short_kernel_blocks(r, top));
            out.extend(crate::xla::blocks(r, top));
            out.push(findings_block(r, top));
            out.extend(crate::trace_gaps::blocks(r, Section::All, top));
        }
    }
    for b in &mut out {
        explain_if_empty(r, b);
    }
    if opts.section != Section::Summary {
        out.extend(warnings_block(r));
    }
    out
}

/// Says why a table has no rows (and drops its empty header), unless a note already
/// starts with `No`.
fn explain_if_empty(r: &TraceReport, b: &mut Block) {
    if b.header.is_empty() || !b.rows.is_empty() {
        return;
    }
    b.header.clear();
    if b.notes.iter().any(|n| n.starts_with("No ")) {
        return;
    }
    let no_gpu = r.timeline.all.total.time_ms == 0.0 && r.kernels.is_empty();
    let why = if no_gpu {
        "No rows: the trace has no GPU events (kernel, memcpy or memset) to analyse.".to_string()
    } else if b.title.starts_with("Ops by") {
        "No rows: no CPU op launched GPU work (record the trace with the CPU activity, \
         `activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]`)."
            .to_string()
    } else if b.title.starts_with("Short kernels") {
        format!("No rows: no kernel ran shorter than {} µs.", sig3(r.short_kernels.threshold_us))
    } else {
        "No rows: nothing of this kind in the trace.".to_string()
    };
    b.notes.insert(0, why);
}

#[cfg(test)]
mod missing_tests {
    use super::*;

    /// A launch the trace does not state is "—", as every missing value in a table.
    #[test]
    fn a_missing_launch_is_an_em_dash() {
        assert_eq!(dim3(None), "—");
        assert_eq!(launch(&[]), "—");
        assert_eq!(dim3(Some([2, 1, 1])), "2×1×1");
    }
}
