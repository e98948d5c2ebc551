//! `rooftop trace`: read a PyTorch profiler (Kineto) trace or a JAX profile (XPlane
//! protobuf), or a directory of per-rank traces / per-host profiles, analyse it and
//! render the report.
//!
//! The format is detected by content ([`super::trace_source`]): the readers are
//! `rooftop_ingest::kineto` and `rooftop_ingest::xplane`, the analysis
//! `rooftop_core::trace::report`,
//! the renderers `rooftop_report::trace`; this module picks the device, shows progress
//! and decides where each output goes (`--format csv -o DIR` writes one file per table).
//! Directories of ranks, `--format parquet` and `--slurm`: [`super::trace_ranks`].

use crate::args::{Cli, OutputFormat};
use crate::error::{CliError, Result};
use crate::output;
use crate::progress;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rooftop_core::device::{lookup_with_facts, Catalog, DeviceFacts, DeviceSpec};
use rooftop_core::trace::gaps::critical_path::{CpOptions, WhatIfSpec};
use rooftop_core::trace::report::{analyze, TraceOptions, TraceReport};
use rooftop_core::trace::TraceModel;
use rooftop_ingest::kineto::{ReadOptions, TraceError};
use rooftop_report::trace::{self as render, RenderOptions, Section};
use std::path::{Path, PathBuf};

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

    #[command(flatten)]
    pub ranks: super::trace_ranks::RanksArgs,
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
pub(super) fn trace_options(args: &TraceArgs, model: &TraceModel) -> TraceOptions {
    TraceOptions { critical_path: cp_options(args), ..super::trace_source::options(model) }
}

/// The error of a trace that cannot be read: bad input, exit code 2.
pub(super) fn read_error(e: &TraceError) -> CliError {
    CliError::input(e.to_string())
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
    if args.path.is_dir() || args.ranks.slurm || cli.format == OutputFormat::Parquet {
        return super::trace_ranks::run(catalog, override_device, args, cli, &opts, render_opts);
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
pub(super) fn bytes_bar(what: &str) -> ProgressBar {
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
pub(super) fn trace_device<'a>(catalog: &'a Catalog, model: &TraceModel) -> Option<&'a DeviceSpec> {
    let dev = model.devices.first()?;
    let facts = DeviceFacts { units: dev.num_sms, clock_mhz: dev.clock_mhz };
    match lookup_with_facts(catalog, &dev.name, facts) {
        Ok((d, why)) => {
            if let Some(why) = why {
                #[allow(clippy::print_stderr)]
                {
                    eprintln!("rooftop: note: device {}: {why}.", d.id);
                }
            }
            Some(d)
        }
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
pub(super) fn section_files(section: Section, name: &str) -> bool {
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
        // `--format parquet` is the map step (`trace_ranks`), routed before this.
        OutputFormat::Parquet => Err(CliError::input("--format parquet needs -o DIR")),
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
pub(super) fn write_csv_dir(dir: &Path, files: &[(String, String)]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::Runtime(format!("cannot create the CSV directory {}: {e}", dir.display()))
    })?;
    for (name, text) in files {
        output::emit(text, Some(&dir.join(name)))?;
    }
    Ok(())
}
