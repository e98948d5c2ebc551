//! `rooftop trace`: read a PyTorch profiler (Kineto) trace or a JAX profile (XPlane
//! protobuf), or a directory of per-rank traces / per-host profiles, analyse it and
//! render the report.
//!
//! The format is detected by content ([`super::trace_source`]): the readers are
//! `rooftop_ingest::kineto` and `rooftop_ingest::xplane`, the analysis
//! `rooftop_core::trace::report`,
//! the renderers `rooftop_report::trace`; this module picks the device, shows progress
//! and decides where each output goes (`--format csv -o DIR` writes one file per table).

use crate::args::{Cli, OutputFormat};
use crate::error::{CliError, Result};
use crate::output;
use crate::progress;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rooftop_core::device::{Catalog, DeviceSpec};
use rooftop_core::trace::gaps::critical_path::{CpOptions, WhatIfSpec};
use rooftop_core::trace::report::{analyze, cross_rank, TraceOptions, TraceReport};
use rooftop_core::trace::TraceModel;
use rooftop_ingest::kineto::ReadOptions;
use rooftop_report::trace::{self as render, RenderOptions, Section};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// A Kineto trace (JSON, plain or gzip) or a JAX profile (`*.xplane.pb`), detected by
    /// its content; or a directory of per-rank traces (`*.json`, `*.json.gz`) or per-host
    /// profiles (`*.xplane.pb`, directly or in the newest `plugins/profile/<run>/`).
    pub path: PathBuf,

    /// Device for the roofline numbers: catalog id, alias or tool-printed name. Default:
    /// the GPU the trace names in `deviceProperties`; if the catalog does not know it, the
    /// report has no roofline columns.
    #[arg(long, short = 'd')]
    pub device: Option<String>,

    /// Rows per table (ops, kernels, roofline tables, findings).
    #[arg(long, default_value_t = 10)]
    pub top: usize,

    /// What to show: summary, timeline, ops, categories, gemm, sdpa, conv, norm,
    /// elementwise, kernels, short-kernels, findings, xla (JAX profiles), idle, launch,
    /// syncs, graphs, critical-path, modules, memory, inference, all.
    #[arg(long, default_value = "summary", value_parser = parse_section)]
    pub section: Section,

    /// What if an op were faster: `NAME=FACTOR` scales the time of the op named NAME
    /// (a trailing `*` matches a prefix), of what it calls and of the kernels it
    /// launches, then recomputes the critical path (`aten::mm=0.5`: twice as fast).
    /// Repeatable. Default: none.
    #[arg(long = "what-if", value_name = "NAME=FACTOR", value_parser = parse_what_if)]
    pub what_if: Vec<WhatIfSpec>,

    /// The critical path's window: the CPU annotation named this (`ProfilerStep#7`), or
    /// else whose name contains it (`execute_context`). Default: the first
    /// `ProfilerStep#` annotation, else the whole trace.
    #[arg(long = "cp-window", value_name = "ANNOTATION")]
    pub cp_window: Option<String>,

    /// Which of the annotations `--cp-window` matches, by start time, from 0.
    #[arg(long = "cp-instance", value_name = "N", default_value_t = 0)]
    pub cp_instance: usize,

    /// Threads that parse one trace; 0 means one per core.
    #[arg(long, default_value_t = 0, hide = true)]
    pub threads: usize,
}

fn parse_section(s: &str) -> std::result::Result<Section, String> {
    s.parse()
}

fn parse_what_if(s: &str) -> std::result::Result<WhatIfSpec, String> {
    s.parse()
}

fn cp_options(args: &TraceArgs) -> CpOptions {
    CpOptions {
        annotation: args.cp_window.clone(),
        instance: args.cp_instance,
        what_if: args.what_if.clone(),
    }
}

/// The analysis options for one model: the critical-path flags, and what the model's
/// source needs (`trace_source::options`).
fn trace_options(args: &TraceArgs, model: &TraceModel) -> TraceOptions {
    TraceOptions { critical_path: cp_options(args), ..super::trace_source::options(model) }
}

pub fn run(catalog: &Catalog, args: &TraceArgs, cli: &Cli) -> Result<()> {
    let opts = ReadOptions { threads: args.threads };
    let override_device = match &args.device {
        Some(name) => Some(super::find_device(catalog, name)?),
        None => None,
    };
    let render_opts = RenderOptions { top: args.top, section: args.section };
    if args.path.is_dir() && cli.format == OutputFormat::Perfetto {
        return Err(CliError::input(
            "--format perfetto takes one trace file, not a directory: pass one rank's trace \
             (a merged timeline of all ranks is not written yet)",
        ));
    }
    if args.path.is_dir() {
        return run_dir(catalog, override_device, args, cli, &opts, render_opts);
    }
    let pb = bytes_bar("reading");
    let model = super::trace_source::read_one(&args.path, &opts, &mut |done, total| {
        pb.set_length(total);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let model = model.map_err(CliError::input)?;
    let options = trace_options(args, &model);
    if args.cp_window.is_some() {
        rooftop_core::trace::gaps::critical_path::window(&model, &options.critical_path)
            .map_err(|e| CliError::input(format!("--cp-window: {e} in {}", args.path.display())))?;
    }
    let device = override_device.or_else(|| trace_device(catalog, &model));
    let spin = spinner("analysing");
    let report = analyze(&model, device, &options);
    spin.finish_and_clear();
    // The Perfetto export needs the model's events; every other format only the report.
    let done = emit_one(&report, &model, device, render_opts, cli);
    // A large trace's model is a million small allocations: the process ends soon, so
    // let the OS take them back instead of freeing them one by one.
    std::mem::forget(model);
    done
}

/// A progress bar in bytes, shown after a second.
fn bytes_bar(what: &str) -> ProgressBar {
    let pb = progress::bar(0, what);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} {prefix} [{bar:30}] {binary_bytes}/{binary_total_bytes} {elapsed}",
    ) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb
}

/// A spinner for a step without a measure of progress, shown after a second.
fn spinner(what: &str) -> ProgressBar {
    let pb = progress::bar(0, what);
    if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix} {elapsed}") {
        pb.set_style(style);
    }
    pb
}

/// The catalog entry for the GPU the trace names, or `None` with a warning on stderr.
fn trace_device<'a>(catalog: &'a Catalog, model: &TraceModel) -> Option<&'a DeviceSpec> {
    let name = &model.devices.first()?.name;
    match catalog.lookup(name) {
        Ok(d) => Some(d),
        Err(e) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "rooftop: warning: {e} The report has no roofline numbers; pass --device."
                );
            }
            None
        }
    }
}

/// The CSV files a section selects (all of them for `summary` and `all`).
fn section_files(section: Section, name: &str) -> bool {
    let stem = name.trim_end_matches(".csv");
    match section {
        Section::Summary | Section::All => true,
        Section::Timeline => stem == "gpu_timeline" || stem == "window",
        Section::Ops => stem == "ops_summary",
        Section::Categories => stem == "ops_summary_by_category",
        Section::Gemm => stem == "GEMM",
        Section::Sdpa => stem.starts_with("SDPA"),
        Section::Conv => stem.starts_with("CONV"),
        Section::Norm => stem == "Normalization",
        Section::Elementwise => stem.ends_with("Elementwise"),
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
        | Section::Inference => rooftop_report::trace_gaps::csv_in_section(section, stem),
    }
}

/// Renders one report to standard output or `-o`.
fn emit_one(
    report: &TraceReport,
    model: &TraceModel,
    device: Option<&DeviceSpec>,
    ro: RenderOptions,
    cli: &Cli,
) -> Result<()> {
    match cli.format {
        OutputFormat::Html => {
            output::emit(&rooftop_report::html::trace(report, device), cli.output.as_deref())
        }
        OutputFormat::Perfetto => {
            output::emit(&rooftop_report::perfetto::trace(model, report), cli.output.as_deref())
        }
        OutputFormat::Table => output::emit(&render::table(report, &ro), cli.output.as_deref()),
        OutputFormat::Md => output::emit(&render::markdown(report, &ro), cli.output.as_deref()),
        OutputFormat::Json => output::emit(&render::json(report), cli.output.as_deref()),
        OutputFormat::Csv => {
            let files: Vec<(String, String)> = render::csv_files(report)
                .into_iter()
                .filter(|(n, _)| section_files(ro.section, n))
                .collect();
            match cli.output.as_deref() {
                Some(dir) => write_csv_dir(dir, &files),
                None => csv_to_stdout(&files, ro.section),
            }
        }
    }
}

/// One CSV on standard output, when the section has exactly one table.
fn csv_to_stdout(files: &[(String, String)], section: Section) -> Result<()> {
    match files {
        [(_, text)] => output::emit(text, None),
        [] => Err(CliError::input(format!(
            "the report has no `{}` table to write as CSV",
            section.as_str()
        ))),
        _ => Err(CliError::input(format!(
            "--format csv writes one file per table ({}): pass -o DIR, or a --section with \
             one table (ops, gemm, kernels, findings, ...)",
            files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Writes `files` into `dir` (created if needed).
fn write_csv_dir(dir: &Path, files: &[(String, String)]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::Runtime(format!("cannot create the CSV directory {}: {e}", dir.display()))
    })?;
    for (name, text) in files {
        output::emit(text, Some(&dir.join(name)))?;
    }
    Ok(())
}

/// What reading and analysing one rank gave: its `distributedInfo.rank` and report, or
/// the reader's error.
type RankOutcome = std::result::Result<(Option<i64>, TraceReport), String>;

/// A directory of per-rank traces: one report per rank, then the cross-rank table.
fn run_dir(
    catalog: &Catalog,
    override_device: Option<&DeviceSpec>,
    args: &TraceArgs,
    cli: &Cli,
    opts: &ReadOptions,
    ro: RenderOptions,
) -> Result<()> {
    let files = super::trace_source::list(&args.path)?;
    let total: u64 = files.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).sum();
    let pb = bytes_bar("reading");
    pb.set_length(total);
    // Each worker reads one rank, analyses it and drops its model before the next: memory
    // holds at most one model per worker, whatever the number of ranks.
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let workers = workers.min(files.len()).max(1);
    let per_file = ReadOptions { threads: if workers > 1 { 1 } else { opts.threads } };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, RankOutcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(i) else { break };
                let mut seen = 0;
                let model = super::trace_source::read_one(path, &per_file, &mut |done, _| {
                    pb.inc(done.saturating_sub(seen));
                    seen = seen.max(done);
                });
                let outcome = match model {
                    Ok(m) => {
                        let device = override_device.or_else(|| trace_device(catalog, &m));
                        let report = analyze(&m, device, &trace_options(args, &m));
                        Ok((m.rank, report))
                    }
                    Err(e) => Err(e),
                };
                if let Ok(mut r) = results.lock() {
                    r.push((i, outcome));
                }
            });
        }
    });
    pb.finish_and_clear();
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|r| r.0);

    let mut failures = Vec::new();
    let mut ranks: Vec<(Option<i64>, String, TraceReport)> = Vec::new();
    for (i, outcome) in results {
        let path = &files[i];
        let name = path
            .file_name()
            .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        match outcome {
            Ok((rank, report)) => ranks.push((rank, name, report)),
            Err(e) => failures.push(e),
        }
    }
    // By `distributedInfo.rank` where the traces state it, then by file name.
    ranks.sort_by(|a, b| (a.0.is_none(), a.0, &a.1).cmp(&(b.0.is_none(), b.0, &b.1)));
    let label = |rank: Option<i64>, name: &str| match rank {
        Some(r) => format!("rank {r} ({name})"),
        None => name.to_string(),
    };
    let named: Vec<(String, TraceReport)> =
        ranks.iter().map(|(r, n, rep)| (label(*r, n), rep.clone())).collect();
    let cross = cross_rank(&named);

    if !named.is_empty() {
        match cli.format {
            OutputFormat::Html => {
                let device = override_device.or_else(|| {
                    let id = named.first().and_then(|(_, r)| r.device.catalog_id.as_deref())?;
                    catalog.lookup(id).ok()
                });
                let text = rooftop_report::html::trace_ranks(&named, &cross, device);
                output::emit(&text, cli.output.as_deref())?;
            }
            OutputFormat::Perfetto => {
                return Err(CliError::input(
                    "--format perfetto takes one trace file, not a directory: pass one rank's \
                     trace (a merged timeline of all ranks is not written yet)",
                ));
            }
            OutputFormat::Table | OutputFormat::Md => {
                let md = cli.format == OutputFormat::Md;
                let mut text = String::new();
                for (name, rep) in &named {
                    let _ = if md {
                        writeln!(text, "# {name}\n\n{}", render::markdown(rep, &ro))
                    } else {
                        writeln!(text, "== {name} ==\n{}", render::table(rep, &ro))
                    };
                }
                let _ = if md {
                    write!(text, "# Across ranks\n\n{}", render::cross_rank_markdown(&cross))
                } else {
                    write!(text, "== Across ranks ==\n{}", render::cross_rank_table(&cross))
                };
                output::emit(&text, cli.output.as_deref())?;
            }
            OutputFormat::Json => {
                let parse =
                    |s: String| serde_json::from_str::<serde_json::Value>(&s).unwrap_or_default();
                let ranks_json: Vec<serde_json::Value> = ranks
                    .iter()
                    .zip(&named)
                    .map(|((rank, file, _), (_, rep))| {
                        serde_json::json!({
                            "name": file,
                            "rank": rank,
                            "report": parse(render::json(rep)),
                        })
                    })
                    .collect();
                let v = serde_json::json!({
                    "ranks": ranks_json,
                    "cross_rank": parse(render::cross_rank_json(&cross)),
                });
                let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
                text.push('\n');
                output::emit(&text, cli.output.as_deref())?;
            }
            OutputFormat::Csv => {
                let Some(dir) = cli.output.as_deref() else {
                    return Err(CliError::input(
                        "--format csv for a directory of traces writes one folder per rank: \
                         pass -o DIR",
                    ));
                };
                for ((_, file, rep), _) in ranks.iter().zip(&named) {
                    let stem = file
                        .trim_end_matches(".gz")
                        .trim_end_matches(".json")
                        .trim_end_matches(".xplane.pb");
                    let files: Vec<(String, String)> = render::csv_files(rep)
                        .into_iter()
                        .filter(|(n, _)| section_files(ro.section, n))
                        .collect();
                    write_csv_dir(&dir.join(stem), &files)?;
                }
                write_csv_dir(
                    dir,
                    &[("cross_rank.csv".to_string(), render::cross_rank_csv(&cross))],
                )?;
            }
        }
    }
    match failures.len() {
        0 => Ok(()),
        1 => Err(CliError::input(failures.remove(0))),
        n => Err(CliError::input(format!("{n} traces could not be read: {}", failures.join("; ")))),
    }
}
