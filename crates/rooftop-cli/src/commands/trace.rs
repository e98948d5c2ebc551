//! `rooftop trace`: read a PyTorch profiler (Kineto) trace or a JAX profile (XPlane
//! protobuf), or a directory of per-rank traces / per-host profiles, analyse it and
//! render the report. Glue only: reading is `rooftop_ingest::source`, the analysis
//! `rooftop_core::trace::report`, the renderers `rooftop_report::trace`; this module
//! shows progress and decides where each output goes (`--format csv -o DIR` writes one
//! file per table). Directories of ranks, `--format parquet` and `--slurm`:
//! [`super::trace_ranks`].

use crate::args::{Cli, OutputFormat};
use crate::error::{CliError, Result};
use crate::output;
use crate::progress;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rooftop_core::device::DeviceSpec;
use rooftop_core::model::ModelConfig;
use rooftop_core::trace::gaps::critical_path::{CpOptions, WhatIfSpec};
use rooftop_core::trace::report::{analyze, TraceOptions, TraceReport};
use rooftop_core::trace::run::{check_not_empty, check_what_if, DeviceLookup, RankSource};
use rooftop_core::trace::TraceModel;
use rooftop_ingest::kineto::ReadOptions;
use rooftop_report::trace::{self as render, RenderOptions, Section};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// A Kineto trace (JSON, plain or gzip) or a JAX profile (`*.xplane.pb`), detected by
    /// its content; or a directory of per-rank traces (`*.json`, `*.json.gz`) or per-host
    /// profiles (`*.xplane.pb`, directly or in the newest `plugins/profile/<run>/`).
    pub path: PathBuf,

    /// Device for the roofline numbers: catalog id, alias or tool-printed name. Default:
    /// the GPU the trace names in `deviceProperties`; if the catalog does not know it, the
    /// report has no roofline columns.
    #[arg(long, short = 'd', value_parser = crate::offers::DEVICES, hide_possible_values = true)]
    pub device: Option<String>,

    /// Rows per table (ops, kernels, roofline tables, findings), at least 1.
    #[arg(long, default_value_t = 10, value_parser = parse_top)]
    pub top: usize,

    /// What to show: summary, timeline, ops, categories (with the kernel time no work
    /// model covers), gemm, sdpa, conv, norm, elementwise, softmax, pool, embedding,
    /// triton, kernels, short-kernels, findings, xla (JAX profiles), idle, launch, syncs,
    /// graphs, critical-path, modules, memory, inference, all.
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

    /// A Hugging Face `config.json` of the traced model (plain or gzip): the sizes the
    /// trace does not record — MoE expert width, experts and top-k for
    /// `vllm::moe_forward` without its fused-experts op, the head size of flattened
    /// attention shapes. The tensor/expert-parallel degree is inferred from the trace's
    /// attention heads. Default: none.
    #[arg(long = "model-config", value_name = "FILE")]
    pub model_config: Option<PathBuf>,

    /// Threads that parse one trace; 0 means one per core.
    #[arg(long, default_value_t = 0, hide = true)]
    pub threads: usize,

    #[command(flatten)]
    pub ranks: super::trace_ranks::RanksArgs,
}

impl TraceArgs {
    /// `rooftop trace PATH` with every other flag at its default.
    pub(super) fn of(path: &Path) -> Result<TraceArgs> {
        use clap::FromArgMatches as _;
        let cmd = TraceArgs::augment_args(clap::Command::new("trace"));
        let args = [std::ffi::OsStr::new("trace"), "--".as_ref(), path.as_os_str()];
        cmd.try_get_matches_from(args)
            .and_then(|m| TraceArgs::from_arg_matches(&m))
            .map_err(|e| CliError::Runtime(format!("the defaults of `rooftop trace`: {e}")))
    }
}

fn parse_section(s: &str) -> std::result::Result<Section, String> {
    s.parse()
}

fn parse_top(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("0 rows would show nothing: expected at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a row count: expected a whole number ≥ 1")),
    }
}

fn parse_what_if(s: &str) -> std::result::Result<WhatIfSpec, String> {
    s.parse()
}

/// How this command reads a trace: `rooftop_ingest::source`, the `--device` override
/// else the trace's own GPU (with its note or warning on stderr), the critical-path
/// flags.
pub(super) struct Reader<'a> {
    pub(super) catalog: super::CatalogRef<'a>,
    pub(super) device: Option<&'a DeviceSpec>,
    pub(super) read: ReadOptions,
    pub(super) args: &'a TraceArgs,
    /// `--model-config`, read once.
    pub(super) model_config: Option<Arc<ModelConfig>>,
    /// Where a run over many ranks records what `--cp-window` and `--what-if` found in
    /// each rank (`None`: one trace, checked on its own).
    pub(super) checks: Option<&'a super::trace_ranks::RankChecks>,
}

impl RankSource for Reader<'_> {
    fn read(
        &self,
        path: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> std::result::Result<TraceModel, rooftop_core::InputError> {
        read_trace(path, &self.read, progress)
    }

    fn device(&self, model: &TraceModel) -> Option<&DeviceSpec> {
        self.device.or_else(|| trace_device(self.catalog, model))
    }

    fn options(&self, model: &TraceModel) -> TraceOptions {
        let a = self.args;
        let critical_path = CpOptions {
            annotation: a.cp_window.clone(),
            instance: a.cp_instance,
            what_if: a.what_if.clone(),
        };
        if let Some(checks) = self.checks {
            checks.record(model, &critical_path);
        }
        TraceOptions {
            critical_path,
            model_config: self.model_config.clone(),
            ..TraceOptions::for_model(model)
        }
    }
}

impl Reader<'_> {
    /// Reads one trace with a progress bar in bytes; a bad trace is bad input.
    pub(super) fn read_with_bar(&self, path: &Path) -> Result<TraceModel> {
        read_with_bar(path, &self.read)
    }
}

/// Reads one trace of any format `rooftop_ingest::source` reads, refusing one without
/// ops or kernels.
fn read_trace(
    path: &Path,
    opts: &ReadOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> std::result::Result<TraceModel, rooftop_core::InputError> {
    let model = rooftop_ingest::source::read_one(path, opts, progress)?;
    check_not_empty(&model, &path.display().to_string())?;
    Ok(model)
}

/// [`read_trace`] with a progress bar in bytes; a bad trace is bad input.
pub(super) fn read_with_bar(path: &Path, opts: &ReadOptions) -> Result<TraceModel> {
    let pb = bytes_bar("reading");
    let model = read_trace(path, opts, &mut |done, total| {
        pb.set_length(total);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    model.map_err(CliError::input)
}

/// The device a trace names, from the catalog, with the catalog's note on stderr; a
/// warning there, and no device, when the catalog does not have it.
#[allow(clippy::print_stderr)]
pub(super) fn trace_device<'a>(
    catalog: super::CatalogRef<'a>,
    model: &TraceModel,
) -> Option<&'a DeviceSpec> {
    let (device, said) = lookup_device(catalog, model);
    if let Some(line) = said {
        eprintln!("{line}");
    }
    device
}

/// [`trace_device`]'s device and the line it prints, if any.
pub(super) fn lookup_device<'a>(
    catalog: super::CatalogRef<'a>,
    model: &TraceModel,
) -> (Option<&'a DeviceSpec>, Option<String>) {
    match catalog.device_for(model) {
        DeviceLookup::Unnamed => (None, None),
        DeviceLookup::Found { spec, note } => {
            (Some(spec), note.map(|why| format!("rooftop: note: device {}: {why}.", spec.id)))
        }
        DeviceLookup::Unknown(e) => (
            None,
            Some(format!(
                "rooftop: warning: {e} The report has no roofline numbers; pass --device."
            )),
        ),
    }
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

pub fn run(catalog: super::CatalogRef<'_>, args: &TraceArgs, cli: &Cli) -> Result<()> {
    let device = match &args.device {
        Some(name) => Some(catalog.find(name)?),
        None => None,
    };
    let model_config = match &args.model_config {
        Some(p) => Some(Arc::new(
            rooftop_ingest::model_config::read(p)
                .map_err(|e| CliError::input(format!("--model-config: {e}")))?,
        )),
        None => None,
    };
    let reader = Reader {
        catalog,
        device,
        read: ReadOptions { threads: args.threads },
        args,
        model_config,
        checks: None,
    };
    let ro = RenderOptions { top: args.top, section: args.section };
    check_what_if_shown(args, cli)?;
    if args.path.is_dir() && cli.format == OutputFormat::Perfetto {
        return Err(CliError::input(
            "--format perfetto takes one trace file, not a directory: pass one rank's trace \
             (a merged timeline of all ranks is not written yet)",
        ));
    }
    if args.path.is_dir() || args.ranks.slurm || cli.format == OutputFormat::Parquet {
        return super::trace_ranks::run(&reader, cli, ro);
    }
    let model = reader.read_with_bar(&args.path)?;
    let options = reader.options(&model);
    if args.cp_window.is_some() {
        rooftop_core::trace::gaps::critical_path::window(&model, &options.critical_path)
            .map_err(|e| CliError::input(format!("--cp-window: {e} in {}", args.path.display())))?;
    }
    let device = reader.device(&model);
    let spin = progress::bar(0, "analysing");
    if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix} {elapsed}") {
        spin.set_style(style);
    }
    let report = analyze(&model, device, &options);
    spin.finish_and_clear();
    if !args.what_if.is_empty() {
        if report.critical_path.is_none() {
            return Err(CliError::input(format!(
                "--what-if needs the critical path, which could not be computed for {} (see the warnings of --section all)",
                args.path.display()
            )));
        }
        check_what_if(&model, &report).map_err(CliError::input)?;
    }
    // The Perfetto export needs the model's events; every other format only the report.
    let done = emit_one(&report, &model, &options, ro, cli);
    // A large trace's model is a million small allocations: the process ends soon, so
    // let the OS take them back instead of freeing them one by one.
    std::mem::forget(model);
    done
}

/// Refuses `--what-if` where its result would not be shown: the tables and Markdown
/// show it in `--section critical-path` and `all` (JSON and HTML always carry it).
fn check_what_if_shown(args: &TraceArgs, cli: &Cli) -> Result<()> {
    let shown = matches!(args.section, Section::CriticalPath | Section::All)
        || matches!(cli.format, OutputFormat::Json | OutputFormat::Html);
    if args.what_if.is_empty() || shown {
        return Ok(());
    }
    Err(CliError::input(format!(
        "--what-if is reported in the critical-path section, not in `--section {}`: add --section critical-path (or all, or --format json)",
        args.section.as_str()
    )))
}

/// Renders one report to standard output or `-o`.
fn emit_one(
    report: &TraceReport,
    model: &TraceModel,
    options: &TraceOptions,
    ro: RenderOptions,
    cli: &Cli,
) -> Result<()> {
    let out = cli.output.as_deref();
    match cli.format {
        OutputFormat::Html => output::emit(&rooftop_report::html::trace(report), out),
        OutputFormat::Perfetto => output::emit_with(out, |w| {
            rooftop_report::perfetto::write(model, report, options.model_config.clone(), w)
        }),
        // `--format parquet` is the map step (`trace_ranks`), routed before this.
        OutputFormat::Parquet => Err(CliError::input("--format parquet needs -o DIR")),
        OutputFormat::Table => output::emit(&render::table(report, &ro), out),
        OutputFormat::Md => output::emit(&render::markdown(report, &ro), out),
        OutputFormat::Json => output::emit_with(out, |w| render::write_json(report, w)),
        OutputFormat::Csv => {
            let files = render::section_csv_files(report, ro.section)?;
            let no_table = || {
                CliError::input(format!(
                    "the report has no `{}` table to write as CSV",
                    ro.section.as_str()
                ))
            };
            let csv_file = out.is_some_and(names_a_csv_file);
            match (out, files.as_slice()) {
                (Some(file), [(_, text)]) if csv_file => output::emit(text, Some(file)),
                (Some(_), []) if csv_file => Err(no_table()),
                (Some(file), _) if csv_file => Err(CliError::input(format!(
                    "-o {} names one CSV file, but `--section {}` writes {} tables ({}): several \
                     tables need -o DIR, a directory, or narrow to one with --section (gemm, \
                     ops, kernels, findings, ...)",
                    file.display(),
                    ro.section.as_str(),
                    files.len(),
                    table_names(files.iter().map(|(n, _)| n.as_str()))
                ))),
                (Some(dir), _) => write_csv_dir(dir, &files),
                (None, [(_, text)]) => output::emit(text, None),
                (None, []) => Err(no_table()),
                (None, _) => Err(CliError::input(format!(
                    "--format csv writes one file per table ({}): pass -o DIR, or a --section \
                     with one table (ops, gemm, kernels, findings, ...)",
                    files.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
                ))),
            }
        }
    }
}

/// Whether `-o` names a CSV file (`gemm.csv`) rather than a folder of CSV files: one
/// table goes to that file, several are refused.
pub(super) fn names_a_csv_file(path: &Path) -> bool {
    OutputFormat::of_extension(path) == Some(OutputFormat::Csv)
}

/// The first few of `names`, then how many more.
pub(super) fn table_names<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 4;
    let more = names.len().saturating_sub(SHOWN);
    let shown: Vec<&str> = names.take(SHOWN).collect();
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
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
