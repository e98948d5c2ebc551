//! The trace report as one CSV per section ([`csv_files`]), with full-precision numbers,
//! and the CSV helpers the other trace renderers share.

use super::*;

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
pub fn csv_files(r: &TraceReport) -> Result<Vec<(String, String)>, crate::RenderError> {
    let mut files = Vec::new();
    timeline_csv(r, &mut files)?;
    ops_csv(r, &mut files)?;
    kernels_csv(r, &mut files)?;
    short_kernels_csv(r, &mut files)?;
    findings_csv(r, &mut files)?;
    files.extend(crate::xla::csv_files(r)?);
    files.extend(crate::trace_gaps::csv_files(r)?);
    Ok(files)
}

/// `gpu_timeline.csv` and `window.csv`.
fn timeline_csv(
    r: &TraceReport,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let t = &r.timeline.all;
    let rows: Vec<Vec<String>> = t
        .rows()
        .iter()
        .map(|(key, _, s)| vec![(*key).to_string(), num(s.time_ms), num(s.percent)])
        .collect();
    files.push((
        "gpu_timeline.csv".to_string(),
        crate::csv::text(&["type", "time_ms", "percent"], rows)?,
    ));
    let w = &r.window;
    files.push((
        "window.csv".to_string(),
        crate::csv::text(
            &["start_us", "end_us", "duration_ms", "basis"],
            vec![vec![num(w.start_us), num(w.end_us), num(w.duration_ms), w.basis.clone()]],
        )?,
    ));

    Ok(())
}

/// `ops_summary.csv`, `ops_summary_by_category.csv`, `model_coverage.csv` and one roofline table per category (`GEMM.csv`, ...).
fn ops_csv(r: &TraceReport, files: &mut Vec<(String, String)>) -> Result<(), crate::RenderError> {
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
        crate::csv::text(
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
        )?,
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
        crate::csv::text(
            &["category", "count", "direct_kernel_time_ms", "percent", "cumulative_percent"],
            rows,
        )?,
    ));

    let coverage = &r.model_coverage;
    let mut rows: Vec<Vec<String>> = vec![vec![
        "(modelled)".to_string(),
        String::new(),
        num(coverage.modelled_us),
        onum(coverage.percent),
        String::new(),
    ]];
    rows.extend(coverage.uncovered.iter().map(|u| {
        vec![u.op.clone(), u.kernels.to_string(), num(u.time_us), num(u.percent), u.reason.clone()]
    }));
    files.push((
        "model_coverage.csv".to_string(),
        crate::csv::text(&["op", "kernels", "time_us", "percent_of_kernel_time", "reason"], rows)?,
    ));

    for (name, table_rows) in &r.categories {
        files.push((format!("{name}.csv"), roofline_csv(table_rows)?));
    }

    Ok(())
}

/// `kernel_summary.csv`.
fn kernels_csv(
    r: &TraceReport,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
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
        crate::csv::text(
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
        )?,
    ));

    Ok(())
}

/// `short_kernel_histogram.csv` and `short_kernels_summary.csv`.
fn short_kernels_csv(
    r: &TraceReport,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let s = &r.short_kernels;
    let rows = s
        .histogram
        .iter()
        .map(|b| vec![num(b.bin_start_us), num(b.bin_end_us), b.count.to_string()])
        .collect();
    files.push((
        "short_kernel_histogram.csv".to_string(),
        crate::csv::text(&["bin_start_us", "bin_end_us", "count"], rows)?,
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
        crate::csv::text(
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
        )?,
    ));

    Ok(())
}

/// `findings.csv` and `warnings.csv`.
fn findings_csv(
    r: &TraceReport,
    files: &mut Vec<(String, String)>,
) -> Result<(), crate::RenderError> {
    let rows = r
        .findings
        .iter()
        .map(|f| {
            vec![
                f.id.to_string(),
                f.severity.to_string(),
                onum(f.time_at_stake_us()),
                onum(f.share_pct()),
                f.title.clone(),
                f.evidence.clone(),
                f.recommendation.clone(),
                f.expected_gain.clone().unwrap_or_default(),
            ]
        })
        .collect();
    files.push((
        "findings.csv".to_string(),
        crate::csv::text(
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
        )?,
    ));
    let rows = r
        .warnings
        .iter()
        .map(|w| vec![w.kind.clone(), w.count.to_string(), w.example.clone()])
        .collect();
    files
        .push(("warnings.csv".to_string(), crate::csv::text(&["kind", "count", "example"], rows)?));
    Ok(())
}

/// One roofline table as CSV: fixed columns, then one `param: NAME` column per
/// parameter any row has (TraceLens's naming).
fn roofline_csv(rows: &[OpRow]) -> Result<String, crate::RenderError> {
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
    crate::csv::text(&header, body)
}

/// Whether the CSV file `name` (from [`csv_files`]) belongs to `section` (all of them for
/// `summary` and `all`).
pub fn csv_in_section(section: Section, name: &str) -> bool {
    let stem = name.trim_end_matches(".csv");
    match section {
        Section::Summary | Section::All => true,
        Section::Timeline => stem == "gpu_timeline" || stem == "window",
        Section::Ops => stem == "ops_summary",
        Section::Categories => stem == "ops_summary_by_category" || stem == "model_coverage",
        Section::Gemm => stem == "GEMM",
        Section::Sdpa => stem.starts_with("SDPA"),
        Section::Conv => stem.starts_with("CONV"),
        Section::Norm => stem == "Normalization",
        Section::Elementwise => stem.ends_with("Elementwise") || stem == "DataMovement",
        Section::Softmax => stem == "Softmax",
        Section::Pool => stem == "Pool",
        Section::Embedding => stem == "Embedding",
        Section::Triton => stem == "Triton",
        Section::Kernels => stem == "kernel_summary",
        Section::ShortKernels => stem.starts_with("short_kernel"),
        Section::Findings => stem == "findings",
        Section::Xla => stem.starts_with("xla_"),
        Section::Idle
        | Section::Launch
        | Section::Syncs
        | Section::Graphs
        | Section::CriticalPath
        | Section::Modules
        | Section::Memory
        | Section::Inference => crate::trace_gaps::csv_in_section(section, stem),
    }
}

/// The CSV files of `r` that `section` selects, `(file name, contents)`.
pub fn section_csv_files(
    r: &TraceReport,
    section: Section,
) -> Result<Vec<(String, String)>, crate::RenderError> {
    Ok(csv_files(r)?.into_iter().filter(|(n, _)| csv_in_section(section, n)).collect())
}
