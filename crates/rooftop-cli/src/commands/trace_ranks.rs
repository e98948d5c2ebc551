//! `rooftop trace` on many ranks: a directory of per-rank traces or of per-rank table
//! folders (the map's output), `--format parquet` (the map step), and `--slurm` (the
//! map and reduce submitted to Slurm). Glue only: the map and reduce are
//! `rooftop_tables::run`, the Slurm plan `rooftop_jobs::trace_dir`, the rendering
//! `rooftop_report::{trace, html}`; this module shows progress and picks the outputs.

use super::trace::{bytes_bar, names_a_csv_file, table_names, write_csv_dir, Reader};
use crate::args::{Cli, OutputFormat};
use crate::error::{CliError, Result};
use crate::output;
use crate::progress;
use clap::Args;
use rooftop_core::trace::comm::reduce::{builtin_link, ReduceOptions, UNEVEN_LAST_NODE};
use rooftop_core::trace::gaps::critical_path::{self, CpOptions};
use rooftop_core::trace::run::{closest_names, RankRun};
use rooftop_core::trace::TraceModel;
use rooftop_ingest::kineto::{ReadOptions, TraceError};
use rooftop_jobs::trace_dir::{absolute, dry_run_text, submitted_text, TraceDirJob};
use rooftop_report::trace::{self as render, RenderOptions, PER_RANK_TABLES_MAX};
use rooftop_tables::run::{map_traces, reduce_tables, workers, MapSettings};
use std::path::{Path, PathBuf};

/// Multi-rank flags of `rooftop trace`.
#[derive(Debug, Args, Default, Clone)]
pub struct RanksArgs {
    /// GPUs per node, to tell intra-node from inter-node collectives (rank r is on node
    /// r / N) and compare each with its link. Default: unknown.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus_per_node: Option<u32>,

    /// Link inside a node that bus bandwidth is compared with, by interconnect-catalog id
    /// (nvlink4-h100, xgmi-mi300, pcie5-x16, ...). Default: the catalog's link for the
    /// traces' GPU.
    #[arg(long, value_name = "LINK")]
    pub intra_link: Option<String>,

    /// Link between nodes, one per GPU (ib-ndr, ib-xdr, roce-400, ...). Default: the
    /// catalog's link for the traces' GPU.
    #[arg(long, value_name = "LINK")]
    pub inter_link: Option<String>,

    /// Ranks read at once; each holds one trace in memory. Default: one per core.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,

    /// Submit the analysis of a directory of rank traces to Slurm instead of running it
    /// here: an array job maps each trace to its Parquet tables, a dependent job writes
    /// the cross-rank report (-o, default WORK_DIR/report.*).
    #[arg(long)]
    pub slurm: bool,

    /// Slurm partition of both jobs. Default: the cluster's default partition.
    #[arg(long, requires = "slurm", value_name = "P")]
    pub partition: Option<String>,

    /// At most N map tasks at once (`--array=...%N`). Default: no limit.
    #[arg(long, requires = "slurm", value_name = "N")]
    pub array_parallelism: Option<u32>,

    /// Folder for the job scripts, logs and tables, on a filesystem the compute nodes
    /// share. Default: ./rooftop-slurm.
    #[arg(long, requires = "slurm", value_name = "DIR")]
    pub work_dir: Option<PathBuf>,

    /// Another #SBATCH option for both jobs, repeatable (--sbatch-arg=--time=00:30:00).
    /// Default: none.
    #[arg(long, requires = "slurm", value_name = "OPT", allow_hyphen_values = true)]
    pub sbatch_arg: Vec<String>,

    /// Print the job scripts and sbatch commands; write and submit nothing.
    #[arg(long, requires = "slurm")]
    pub dry_run: bool,
}

/// Multi-rank work: directories, `--format parquet`, `--slurm`.
pub(super) fn run(reader: &Reader<'_>, cli: &Cli, ro: RenderOptions) -> Result<()> {
    let args = reader.args;
    if args.ranks.slurm {
        return slurm(reader, cli);
    }
    if !args.path.is_dir() {
        // The map step of one trace: its tables into `-o DIR`.
        let Some(out) = cli.output.as_deref() else {
            return Err(CliError::input(
                "--format parquet writes one folder of tables: pass -o DIR",
            ));
        };
        let model = reader.read_with_bar(&args.path)?;
        rooftop_tables::run::write_one(&args.path, &model, reader, out)
            .map_err(|e| CliError::Runtime(e.to_string()))?;
        std::mem::forget(model);
        return Ok(());
    }
    let traces = rooftop_ingest::source::list_dir(&args.path);
    let tables =
        rooftop_tables::list_rank_dirs(&args.path).map_err(|e| CliError::input(e.to_string()))?;
    let r = &args.ranks;
    let reduce = ReduceOptions::with_links(
        r.gpus_per_node,
        r.intra_link.as_deref(),
        r.inter_link.as_deref(),
    )
    .map_err(CliError::input)?;
    match (traces, tables.is_empty()) {
        (Ok(files), true) => from_traces(reader, cli, ro, &files, reduce),
        (Err(TraceError::NoTraces { .. }), false) => {
            if cli.format == OutputFormat::Parquet {
                return Err(CliError::input(format!(
                    "{} holds rank tables already; --format parquet maps traces to tables",
                    args.path.display()
                )));
            }
            let pb = progress::bar(tables.len() as u64, "reading tables");
            let run = reduce_tables(&tables, workers(r.jobs, tables.len()), reduce, &|| pb.inc(1));
            pb.finish_and_clear();
            if !run.ranks.is_empty() {
                refuse_if_not_one_job(&args.path, &run)?;
                emit(cli, ro, &run, false)?;
            }
            run.failure_message().map_or(Ok(()), |e| Err(CliError::input(e)))
        }
        (Ok(_), false) => Err(CliError::input(format!(
            "{} holds both traces and rank-table folders: pass a directory with one kind",
            args.path.display()
        ))),
        (Err(e), _) => Err(no_traces(&e)),
    }
}

/// A directory of rank traces: per-rank reports (or tables) and the cross-rank report.
fn from_traces(
    reader: &Reader<'_>,
    cli: &Cli,
    ro: RenderOptions,
    files: &[PathBuf],
    reduce: ReduceOptions,
) -> Result<()> {
    let tables_out = match (cli.format, cli.output.as_deref()) {
        (OutputFormat::Parquet, Some(d)) => Some(d),
        (OutputFormat::Parquet, None) => {
            return Err(CliError::input(
                "--format parquet writes one folder of tables per rank: pass -o DIR",
            ));
        }
        _ => None,
    };
    let keep_reports = tables_out.is_none()
        && !(matches!(cli.format, OutputFormat::Table | OutputFormat::Md)
            && files.len() > PER_RANK_TABLES_MAX);
    let run = map_with_bar(reader, files, reduce, keep_reports, tables_out)?;
    if let Some(dir) = tables_out {
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "rooftop: wrote the tables of {} under {}",
                rooftop_core::diagnose::count(run.ranks.len() as u64, "rank", "ranks"),
                dir.display()
            );
        }
    } else if !run.ranks.is_empty() {
        refuse_if_not_one_job(&reader.args.path, &run)?;
        emit(cli, ro, &run, true)?;
    }
    run.failure_message().map_or(Ok(()), |e| Err(CliError::input(e)))
}

/// Reads and maps every rank trace of `files` (in parallel, a progress bar in bytes),
/// their tables into `tables_out` when given, their reports kept when `keep_reports`;
/// refuses `--cp-window` and `--what-if` that matched in no rank.
fn map_with_bar(
    reader: &Reader<'_>,
    files: &[PathBuf],
    reduce: ReduceOptions,
    keep_reports: bool,
    tables_out: Option<&Path>,
) -> Result<RankRun> {
    let n_workers = workers(reader.args.ranks.jobs, files.len());
    // One thread per file when the files are read in parallel.
    let threads = if n_workers > 1 { 1 } else { reader.read.threads };
    let checks = RankChecks::default();
    let per_file = Reader {
        read: ReadOptions { threads },
        model_config: reader.model_config.clone(),
        checks: Some(&checks),
        ..*reader
    };
    let settings = MapSettings { workers: n_workers, reduce, keep_reports, tables_out };
    let pb = bytes_bar("reading");
    pb.set_length(files.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).sum());
    let run = map_traces(files, &per_file, &settings, &|n| pb.inc(n));
    pb.finish_and_clear();
    checks.verdict(reader.args)?;
    Ok(run)
}

/// The JSON report of `rooftop trace DIR --format json` for a directory of rank traces
/// or per-host profiles, every multi-rank flag at its default (`device`: `--device`);
/// for `rooftop diff`. A rank that does not read is an error here, not a partial report.
pub(super) fn dir_json(
    dir: &Path,
    catalog: super::CatalogRef<'_>,
    device: Option<&rooftop_core::device::DeviceSpec>,
) -> Result<String> {
    let reduce = ReduceOptions::with_links(None, None, None).map_err(CliError::input)?;
    let files = match rooftop_ingest::source::list_dir(dir) {
        Ok(files) => files,
        Err(e @ TraceError::NoTraces { .. }) => {
            let tables = rooftop_tables::list_rank_dirs(dir).unwrap_or_default();
            if tables.is_empty() {
                return Err(no_traces(&e));
            }
            return Err(CliError::input(format!(
                "{} holds rank tables (`--format parquet`), which keep no per-rank report to \
                 compare: compare the traces they were made from",
                dir.display()
            )));
        }
        Err(e) => return Err(CliError::input(e.to_string())),
    };
    let args = super::trace::TraceArgs::of(dir)?;
    let reader = Reader {
        catalog,
        device,
        read: ReadOptions::default(),
        args: &args,
        model_config: None,
        checks: None,
    };
    let run = map_with_bar(&reader, &files, reduce, true, None)?;
    if let Some(e) = run.failure_message() {
        return Err(CliError::input(e));
    }
    refuse_if_not_one_job(dir, &run)?;
    Ok(render::ranks_json(&run))
}

/// A directory with neither Kineto traces nor JAX profiles (`e`: the Kineto listing's
/// error).
fn no_traces(e: &TraceError) -> CliError {
    CliError::input(format!(
        "{e} (nor JAX profiles: `*.xplane.pb`, directly or under plugins/profile/<run>/)"
    ))
}

/// What `--cp-window` and `--what-if` found in the ranks of a run, recorded as each
/// rank is read: a name that matches in no rank is the same mistake as in one trace,
/// and the same error (exit 2, the closest names).
#[derive(Debug, Default)]
pub(super) struct RankChecks {
    seen: std::sync::Mutex<Seen>,
}

#[derive(Debug, Default)]
struct Seen {
    /// Ranks whose critical-path window was found.
    windows: usize,
    /// The first rank's reason its window was not found.
    no_window: Option<String>,
    /// Per `--what-if` target: whether some rank matched it.
    matched: Vec<bool>,
    /// Per `--what-if` target: the op names closest to it, from the first rank read.
    near: Vec<Vec<String>>,
}

impl RankChecks {
    /// Records what one rank's model holds of the critical-path options `cp`.
    pub(super) fn record(&self, model: &TraceModel, cp: &CpOptions) {
        if cp.annotation.is_none() && cp.what_if.is_empty() {
            return;
        }
        let found = critical_path::what_if_found(model, cp);
        // The closest names come from the first rank read: only it sorts its op names.
        let first = self.seen.lock().is_ok_and(|s| s.near.is_empty());
        let near: Vec<Vec<String>> = if cp.what_if.is_empty() || !first {
            Vec::new()
        } else {
            let mut names: Vec<&str> = model.ops.iter().map(|o| o.name.as_ref()).collect();
            names.sort_unstable();
            names.dedup();
            cp.what_if.iter().map(|w| closest_names(&w.target, names.iter().copied(), 3)).collect()
        };
        let Ok(mut seen) = self.seen.lock() else { return };
        if seen.matched.is_empty() {
            seen.matched = vec![false; cp.what_if.len()];
        }
        if seen.near.is_empty() {
            seen.near = near;
        }
        match found {
            Ok(found) => {
                seen.windows += 1;
                for (m, f) in seen.matched.iter_mut().zip(found) {
                    *m |= f;
                }
            }
            Err(e) => {
                seen.no_window.get_or_insert(e.0);
            }
        }
    }

    /// The error of a `--cp-window` no rank has, or of `--what-if` targets no rank
    /// matched; `Ok` when no rank was read (their failures say why).
    fn verdict(&self, args: &super::trace::TraceArgs) -> Result<()> {
        let Ok(seen) = self.seen.lock() else { return Ok(()) };
        if let (Some(_), 0, Some(why)) = (&args.cp_window, seen.windows, &seen.no_window) {
            return Err(CliError::input(format!(
                "--cp-window: {why} in any rank of {}",
                args.path.display()
            )));
        }
        let bad: Vec<String> = args
            .what_if
            .iter()
            .zip(&seen.matched)
            .enumerate()
            .filter(|(_, (_, &m))| !m)
            .map(|(i, (w, _))| {
                let near = seen.near.get(i).filter(|n| !n.is_empty());
                format!(
                    "--what-if '{}={}' matches no op, runtime call or kernel in the critical \
                     path's window ({}) of any rank{}",
                    w.target,
                    w.factor,
                    args.cp_window
                        .as_deref()
                        .unwrap_or("the first ProfilerStep, else the whole trace"),
                    near.map_or_else(String::new, |n| format!(
                        "; closest op names: {}",
                        n.join(", ")
                    ))
                )
            })
            .collect();
        if bad.is_empty() {
            Ok(())
        } else {
            Err(CliError::input(bad.join("; ")))
        }
    }
}

/// Refuses a directory whose traces are not one job (different GPUs, nothing that ties
/// them together): a cross-rank report of unrelated runs would compare what cannot be
/// compared.
fn refuse_if_not_one_job(dir: &Path, run: &RankRun) -> Result<()> {
    match &run.cross.not_one_job {
        Some(why) => Err(CliError::input(format!(
            "{}: these {} traces are not one job ({why}); analyse each on its own with \
             `rooftop trace FILE`",
            dir.display(),
            run.ranks.len()
        ))),
        None => Ok(()),
    }
}

/// Renders the multi-rank report (`from_traces`: whether per-rank reports can exist),
/// with the notes on how the ranks were laid out on stderr first, as the device's note
/// of a trace is: they are also among the report's cross-rank warnings.
fn emit(cli: &Cli, ro: RenderOptions, run: &RankRun, from_traces: bool) -> Result<()> {
    #[allow(clippy::print_stderr)]
    for w in run.cross.comm.warnings.iter().filter(|w| w.kind == UNEVEN_LAST_NODE) {
        eprintln!("rooftop: note: {}.", w.example);
    }
    {
        let out = cli.output.as_deref();
        match cli.format {
            OutputFormat::Html => {
                let named: Vec<(String, _)> = run
                    .ranks
                    .iter()
                    .filter_map(|r| r.report.clone().map(|rep| (r.label(), rep)))
                    .collect();
                output::emit(&rooftop_report::html::trace_ranks(&named, &run.cross), out)?;
            }
            OutputFormat::Table | OutputFormat::Md => {
                let md = cli.format == OutputFormat::Md;
                output::emit(&render::ranks_text(run, &ro, md, from_traces), out)?;
            }
            OutputFormat::Json => output::emit(&render::ranks_json(run), out)?,
            OutputFormat::Csv => {
                let Some(dir) = out else {
                    return Err(CliError::input(
                        "--format csv for a directory of traces writes one folder per rank: pass -o DIR",
                    ));
                };
                let folders = render::ranks_csv(run, ro.section)?;
                if names_a_csv_file(dir) {
                    // A `.csv` path is one file: the run must have one table.
                    let files: Vec<&(String, String)> =
                        folders.iter().flat_map(|(_, files)| files).collect();
                    let [(_, text)] = files.as_slice() else {
                        return Err(CliError::input(format!(
                            "-o {} names one CSV file, but a directory of traces writes {} \
                             tables ({}), one folder per rank: several tables need -o DIR, a \
                             directory",
                            dir.display(),
                            files.len(),
                            table_names(files.iter().map(|(n, _)| n.as_str()))
                        )));
                    };
                    return output::emit(text, Some(dir));
                }
                for (sub, files) in folders {
                    write_csv_dir(&sub.map_or_else(|| dir.to_path_buf(), |s| dir.join(s)), &files)?;
                }
            }
            OutputFormat::Perfetto | OutputFormat::Parquet => {
                return Err(CliError::input(
                    "--format perfetto takes one trace file, not a directory: pass one rank's trace \
                     (a merged timeline of all ranks is not written yet)",
                ));
            }
        }
    }
    Ok(())
}

/// `--slurm`: writes and submits the map and reduce jobs (or prints them).
fn slurm(reader: &Reader<'_>, cli: &Cli) -> Result<()> {
    let args = reader.args;
    if !args.path.is_dir() {
        return Err(CliError::input(format!(
            "--slurm takes a directory of rank traces; {} is a file",
            args.path.display()
        )));
    }
    let format = match cli.format {
        OutputFormat::Table => "table",
        OutputFormat::Json => "json",
        OutputFormat::Md => "md",
        OutputFormat::Html => "html",
        OutputFormat::Csv => "csv",
        OutputFormat::Perfetto | OutputFormat::Parquet => {
            return Err(CliError::input(
                "with --slurm, --format is the format of the cross-rank report: table, json, md, \
                 html or csv (the map writes Parquet tables anyway)",
            ));
        }
    };
    let traces = rooftop_ingest::kineto::list_traces(&args.path)
        .map_err(|e| CliError::input(e.to_string()))?;
    let r = &args.ranks;
    for link in [&r.intra_link, &r.inter_link].into_iter().flatten() {
        builtin_link(link).map_err(CliError::input)?;
    }
    let plan = TraceDirJob {
        rooftop: std::env::current_exe().map_err(|e| {
            CliError::Runtime(format!("cannot find the rooftop binary's path: {e}"))
        })?,
        traces: traces.iter().map(|p| absolute(p)).collect(),
        work_dir: absolute(r.work_dir.as_deref().unwrap_or(Path::new("rooftop-slurm"))),
        report: cli.output.as_deref().map(absolute),
        report_format: format.to_string(),
        device_files: cli.device_files.clone(),
        device: args.device.clone(),
        top: args.top,
        gpus_per_node: r.gpus_per_node,
        intra_link: r.intra_link.clone(),
        inter_link: r.inter_link.clone(),
        partition: r.partition.clone(),
        array_parallelism: r.array_parallelism,
        sbatch_args: r.sbatch_arg.clone(),
    }
    .plan();
    if r.dry_run {
        return output::emit(&dry_run_text(&plan), None);
    }
    let sbatch = std::env::var("ROOFTOP_SBATCH").unwrap_or_else(|_| "sbatch".to_string());
    let done = plan.submit(&sbatch).map_err(|e| match e {
        rooftop_jobs::JobError::Write { .. } => CliError::Runtime(e.to_string()),
        _ => CliError::input(e.to_string()),
    })?;
    output::emit(&submitted_text(&plan, &done), None)
}
