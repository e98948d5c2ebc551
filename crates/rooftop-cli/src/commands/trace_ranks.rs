//! `rooftop trace` on many ranks: a directory of per-rank traces or of per-rank table
//! folders (the map's output), `--format parquet` (the map step, here), and `--slurm`
//! (the map and reduce submitted to Slurm). Glue only: reading is
//! `rooftop_ingest::kineto`, the map and reduce `rooftop_core::trace::{comm, ranks}`,
//! the tables `rooftop_tables`, the jobs `rooftop_jobs`, the rendering
//! `rooftop_report::{trace, collectives, html}`.
//!
//! Memory is bounded: `--jobs` workers (default one per core) each hold one rank's
//! trace at a time and drop it after its map; what stays is each rank's report (for
//! the per-rank sections) and its collectives in the reducer's compact form.

use super::trace::{
    bytes_bar, read_error, section_files, trace_device, trace_options, write_csv_dir, TraceArgs,
};
use crate::args::{Cli, OutputFormat};
use crate::error::{CliError, Result};
use crate::output;
use crate::progress;
use clap::Args;
use rooftop_core::device::{Catalog, DeviceSpec};
use rooftop_core::trace::comm::reduce::ReduceOptions;
use rooftop_core::trace::comm::{collectives, Interconnects, Link};
use rooftop_core::trace::ranks::{CrossRank, MultiRank, RankMeta};
use rooftop_core::trace::report::{analyze, TraceReport};
use rooftop_ingest::kineto::{self, ReadOptions, TraceError};
use rooftop_jobs::SlurmPlan;
use rooftop_report::trace::{self as render, RenderOptions};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Per-rank reports are printed in the terminal and Markdown for at most this many
/// ranks (the cross-rank sections always).
const PER_RANK_TABLES_MAX: usize = 8;

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

/// One rank as read: its label parts and, for traces, its report.
struct RankOut {
    rank: Option<i64>,
    file: String,
    report: Option<TraceReport>,
}

/// Multi-rank work: directories, `--format parquet`, `--slurm`.
pub fn run(
    catalog: &Catalog,
    override_device: Option<&DeviceSpec>,
    args: &TraceArgs,
    cli: &Cli,
    opts: &ReadOptions,
    ro: RenderOptions,
) -> Result<()> {
    if args.ranks.slurm {
        return slurm(args, cli);
    }
    if !args.path.is_dir() {
        return map_one(catalog, override_device, args, cli, opts);
    }
    // Per-host JAX profiles when the directory has any, else per-rank Kineto traces.
    let traces = rooftop_ingest::xplane::list_profiles(&args.path)
        .or_else(|_| kineto::list_traces(&args.path));
    let tables =
        rooftop_tables::list_rank_dirs(&args.path).map_err(|e| CliError::input(e.to_string()))?;
    let reduce = reduce_options(&args.ranks)?;
    match (traces, tables.is_empty()) {
        (Ok(files), true) => {
            from_traces(catalog, override_device, args, cli, opts, ro, &files, reduce)
        }
        (Err(TraceError::NoTraces { .. }), false) => {
            if cli.format == OutputFormat::Parquet {
                return Err(CliError::input(format!(
                    "{} holds rank tables already; --format parquet maps traces to tables",
                    args.path.display()
                )));
            }
            from_tables(args, cli, ro, &tables, reduce)
        }
        (Ok(_), false) => Err(CliError::input(format!(
            "{} holds both traces and rank-table folders: pass a directory with one kind",
            args.path.display()
        ))),
        (Err(e), _) => Err(CliError::input(format!(
            "{e} (nor JAX profiles: `*.xplane.pb`, directly or under plugins/profile/<run>/)"
        ))),
    }
}

fn find_link(id: Option<&str>) -> Result<Option<Link>> {
    let Some(id) = id else { return Ok(None) };
    let ic = Interconnects::builtin();
    ic.link(id).cloned().map(Some).ok_or_else(|| {
        CliError::input(format!(
            "unknown link `{id}`; the interconnect catalog has: {}",
            ic.link_ids().join(", ")
        ))
    })
}

fn reduce_options(a: &RanksArgs) -> Result<ReduceOptions> {
    Ok(ReduceOptions {
        gpus_per_node: a.gpus_per_node,
        intra_link: find_link(a.intra_link.as_deref())?,
        inter_link: find_link(a.inter_link.as_deref())?,
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// `rank3.json.gz` → `rank3`; `host0.xplane.pb` → `host0`.
fn stem(file: &str) -> &str {
    if let Some(f) = file.strip_suffix(".xplane.pb") {
        return f;
    }
    let f = file.strip_suffix(".gz").or_else(|| file.strip_suffix(".GZ")).unwrap_or(file);
    f.strip_suffix(".json").or_else(|| f.strip_suffix(".JSON")).unwrap_or(f)
}

fn workers(args: &RanksArgs, n: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    args.jobs.map_or(cores, |j| j as usize).min(n).max(1)
}

fn map_error(e: &rooftop_tables::TableError) -> CliError {
    CliError::Runtime(e.to_string())
}

/// The map step of one trace: its tables into `-o DIR`.
fn map_one(
    catalog: &Catalog,
    override_device: Option<&DeviceSpec>,
    args: &TraceArgs,
    cli: &Cli,
    opts: &ReadOptions,
) -> Result<()> {
    let Some(out) = cli.output.as_deref() else {
        return Err(CliError::input("--format parquet writes one folder of tables: pass -o DIR"));
    };
    let pb = bytes_bar("reading");
    let model = super::trace_source::read_one(&args.path, opts, &mut |done, total| {
        pb.set_length(total);
        pb.set_position(done);
    });
    pb.finish_and_clear();
    let model = model.map_err(CliError::input)?;
    let device = override_device.or_else(|| trace_device(catalog, &model));
    // The map needs the timeline and the collectives, not the full report.
    let topts = trace_options(args, &model);
    let name = file_name(&args.path);
    let meta = RankMeta::of(&name, &model, device.map(|d| d.id.as_str()), topts.include_unlinked);
    let records = collectives(&model);
    let input = rooftop_tables::RankInput {
        meta: &meta,
        model: &model,
        collectives: &records,
        source_bytes: std::fs::metadata(&args.path).ok().map(|m| m.len()),
        include_unlinked: topts.include_unlinked,
    };
    rooftop_tables::write_rank(out, &input).map_err(|e| map_error(&e))?;
    std::mem::forget(model);
    Ok(())
}

/// A directory of rank traces: per-rank reports (or tables) and the cross-rank report.
#[allow(clippy::too_many_arguments)]
fn from_traces(
    catalog: &Catalog,
    override_device: Option<&DeviceSpec>,
    args: &TraceArgs,
    cli: &Cli,
    opts: &ReadOptions,
    ro: RenderOptions,
    files: &[PathBuf],
    reduce: ReduceOptions,
) -> Result<()> {
    let parquet_out = match (cli.format, cli.output.as_deref()) {
        (OutputFormat::Parquet, Some(d)) => Some(d),
        (OutputFormat::Parquet, None) => {
            return Err(CliError::input(
                "--format parquet writes one folder of tables per rank: pass -o DIR",
            ));
        }
        _ => None,
    };
    let keep_reports = parquet_out.is_none()
        && !(matches!(cli.format, OutputFormat::Table | OutputFormat::Md)
            && files.len() > PER_RANK_TABLES_MAX);
    let total: u64 = files.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).sum();
    let pb = bytes_bar("reading");
    pb.set_length(total);
    let n_workers = workers(&args.ranks, files.len());
    let per_file = ReadOptions { threads: if n_workers > 1 { 1 } else { opts.threads } };
    let next = AtomicUsize::new(0);
    let multi = Mutex::new(MultiRank::new(reduce));
    let results: Mutex<Vec<(usize, std::result::Result<RankOut, String>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..n_workers {
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
                        let topts = trace_options(args, &m);
                        // The full report only where it is shown.
                        let report = keep_reports.then(|| analyze(&m, device, &topts));
                        let file = file_name(path);
                        let meta = RankMeta::of(
                            &file,
                            &m,
                            device.map(|d| d.id.as_str()),
                            topts.include_unlinked,
                        );
                        let records = collectives(&m);
                        let written = parquet_out.map_or(Ok(()), |dir| {
                            let input = rooftop_tables::RankInput {
                                meta: &meta,
                                model: &m,
                                collectives: &records,
                                source_bytes: std::fs::metadata(path).ok().map(|x| x.len()),
                                include_unlinked: topts.include_unlinked,
                            };
                            rooftop_tables::write_rank(&dir.join(stem(&file)), &input)
                                .map(|_| ())
                                .map_err(|e| e.to_string())
                        });
                        let rank = m.rank;
                        drop(m);
                        if let Ok(mut mr) = multi.lock() {
                            mr.add(meta, &records);
                        }
                        written.map(|()| RankOut { rank, file, report })
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
    let mut ranks = Vec::new();
    for (_, r) in results {
        match r {
            Ok(x) => ranks.push(x),
            Err(e) => failures.push(e),
        }
    }
    let cross = multi.into_inner().map(MultiRank::finish).unwrap_or_default();
    if let Some(dir) = parquet_out {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("rooftop: wrote the tables of {} ranks under {}", ranks.len(), dir.display());
        }
    } else if !ranks.is_empty() {
        emit(cli, ro, override_device, catalog, ranks, &cross, true)?;
    }
    finish(failures)
}

/// A directory of rank-table folders: the reduce.
fn from_tables(
    args: &TraceArgs,
    cli: &Cli,
    ro: RenderOptions,
    dirs: &[PathBuf],
    reduce: ReduceOptions,
) -> Result<()> {
    let pb = progress::bar(dirs.len() as u64, "reading tables");
    let next = AtomicUsize::new(0);
    let multi = Mutex::new(MultiRank::new(reduce));
    let results: Mutex<Vec<(usize, std::result::Result<RankOut, String>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers(&args.ranks, dirs.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(dir) = dirs.get(i) else { break };
                let outcome = match rooftop_tables::read_rank(dir) {
                    Ok((meta, records)) => {
                        let out =
                            RankOut { rank: meta.rank, file: meta.name.clone(), report: None };
                        if let Ok(mut mr) = multi.lock() {
                            mr.add(meta, &records);
                        }
                        Ok(out)
                    }
                    Err(e) => Err(e.to_string()),
                };
                pb.inc(1);
                if let Ok(mut r) = results.lock() {
                    r.push((i, outcome));
                }
            });
        }
    });
    pb.finish_and_clear();
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|r| r.0);
    let (mut ranks, mut failures) = (Vec::new(), Vec::new());
    for (_, r) in results {
        match r {
            Ok(x) => ranks.push(x),
            Err(e) => failures.push(e),
        }
    }
    let cross = multi.into_inner().map(MultiRank::finish).unwrap_or_default();
    if !ranks.is_empty() {
        let catalog = Catalog::builtin();
        emit(cli, ro, None, &catalog, ranks, &cross, false)?;
    }
    finish(failures)
}

fn finish(mut failures: Vec<String>) -> Result<()> {
    match failures.len() {
        0 => Ok(()),
        1 => Err(CliError::input(failures.remove(0))),
        n => Err(CliError::input(format!("{n} ranks could not be read: {}", failures.join("; ")))),
    }
}

/// Renders the multi-rank report. `from_traces`: whether per-rank reports exist.
fn emit(
    cli: &Cli,
    ro: RenderOptions,
    override_device: Option<&DeviceSpec>,
    catalog: &Catalog,
    mut ranks: Vec<RankOut>,
    cross: &CrossRank,
    from_traces: bool,
) -> Result<()> {
    // By `distributedInfo.rank` where the traces state it, then by file name.
    ranks.sort_by(|a, b| {
        (a.rank.is_none(), a.rank, &a.file).cmp(&(b.rank.is_none(), b.rank, &b.file))
    });
    let label = |r: &RankOut| match r.rank {
        Some(n) => format!("rank {n} ({})", r.file),
        None => r.file.clone(),
    };
    let named: Vec<(String, &TraceReport)> =
        ranks.iter().filter_map(|r| r.report.as_ref().map(|rep| (label(r), rep))).collect();
    let top = ro.top;
    match cli.format {
        OutputFormat::Html => {
            let device = override_device
                .or_else(|| catalog.lookup(cross.comm.collectives.links.device.as_deref()?).ok());
            let owned: Vec<(String, TraceReport)> =
                named.iter().map(|(n, r)| (n.clone(), (*r).clone())).collect();
            output::emit(
                &rooftop_report::html::trace_ranks(&owned, cross, device),
                cli.output.as_deref(),
            )
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
            if md {
                let _ = write!(text, "# Across ranks\n\n{}", render::cross_rank_markdown(cross));
                text.push_str(&rooftop_report::collectives::markdown(cross, top));
            } else {
                let _ = write!(text, "== Across ranks ==\n{}", render::cross_rank_table(cross));
                text.push_str(&rooftop_report::collectives::table(cross, top));
            }
            if named.is_empty() {
                let why = if from_traces {
                    format!("more than {PER_RANK_TABLES_MAX} ranks")
                } else {
                    "rank tables hold no per-rank report".to_string()
                };
                let _ = writeln!(
                    text,
                    "\nPer-rank reports are not shown ({why}): run `rooftop trace` on one rank's \
                     trace, or use --format json or html."
                );
            }
            output::emit(&text, cli.output.as_deref())
        }
        OutputFormat::Json => {
            let parse =
                |s: String| serde_json::from_str::<serde_json::Value>(&s).unwrap_or_default();
            let ranks_json: Vec<serde_json::Value> = ranks
                .iter()
                .map(|r| {
                    let mut v = serde_json::json!({ "name": r.file, "rank": r.rank });
                    if let (Some(rep), Some(obj)) = (&r.report, v.as_object_mut()) {
                        obj.insert("report".to_string(), parse(render::json(rep)));
                    }
                    v
                })
                .collect();
            let v = serde_json::json!({
                "ranks": ranks_json,
                "cross_rank": parse(render::cross_rank_json(cross)),
            });
            let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
            text.push('\n');
            output::emit(&text, cli.output.as_deref())
        }
        OutputFormat::Csv => {
            let Some(dir) = cli.output.as_deref() else {
                return Err(CliError::input(
                    "--format csv for a directory of traces writes one folder per rank: pass -o DIR",
                ));
            };
            for r in &ranks {
                if let Some(rep) = &r.report {
                    let files: Vec<(String, String)> = render::csv_files(rep)
                        .into_iter()
                        .filter(|(n, _)| section_files(ro.section, n))
                        .collect();
                    write_csv_dir(&dir.join(stem(&r.file)), &files)?;
                }
            }
            let mut files = vec![("cross_rank.csv".to_string(), render::cross_rank_csv(cross))];
            files.extend(rooftop_report::collectives::csv_files(cross));
            write_csv_dir(dir, &files)
        }
        OutputFormat::Perfetto | OutputFormat::Parquet => Err(CliError::input(
            "--format perfetto takes one trace file, not a directory: pass one rank's trace \
             (a merged timeline of all ranks is not written yet)",
        )),
    }
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        return p.to_path_buf();
    }
    std::env::current_dir().map_or_else(|_| p.to_path_buf(), |d| d.join(p))
}

/// `--slurm`: writes and submits the map and reduce jobs (or prints them).
fn slurm(args: &TraceArgs, cli: &Cli) -> Result<()> {
    if !args.path.is_dir() {
        return Err(CliError::input(format!(
            "--slurm takes a directory of rank traces; {} is a file",
            args.path.display()
        )));
    }
    let (format, ext) = match cli.format {
        OutputFormat::Table => ("table", "txt"),
        OutputFormat::Json => ("json", "json"),
        OutputFormat::Md => ("md", "md"),
        OutputFormat::Html => ("html", "html"),
        OutputFormat::Csv => ("csv", "csv"),
        OutputFormat::Perfetto | OutputFormat::Parquet => {
            return Err(CliError::input(
                "with --slurm, --format is the format of the cross-rank report: table, json, md, \
                 html or csv (the map writes Parquet tables anyway)",
            ));
        }
    };
    let traces: Vec<PathBuf> = kineto::list_traces(&args.path)
        .map_err(|e| read_error(&e))?
        .iter()
        .map(|p| absolute(p))
        .collect();
    let work_dir = absolute(args.ranks.work_dir.as_deref().unwrap_or(Path::new("rooftop-slurm")));
    let report =
        cli.output.as_deref().map_or_else(|| work_dir.join(format!("report.{ext}")), absolute);
    let rooftop = std::env::current_exe()
        .map_err(|e| CliError::Runtime(format!("cannot find the rooftop binary's path: {e}")))?;
    let mut common = Vec::new();
    for f in &cli.device_files {
        common.push("--device-file".to_string());
        common.push(absolute(f).display().to_string());
    }
    let mut map_args = common.clone();
    if let Some(d) = &args.device {
        map_args.extend(["--device".to_string(), d.clone()]);
    }
    let mut reduce_args = common;
    reduce_args.extend(["--top".to_string(), args.top.to_string()]);
    let r = &args.ranks;
    if let Some(g) = r.gpus_per_node {
        reduce_args.extend(["--gpus-per-node".to_string(), g.to_string()]);
    }
    for (flag, v) in [("--intra-link", &r.intra_link), ("--inter-link", &r.inter_link)] {
        if let Some(v) = v {
            find_link(Some(v))?;
            reduce_args.extend([flag.to_string(), v.clone()]);
        }
    }
    let plan = SlurmPlan {
        rooftop,
        traces,
        work_dir,
        report,
        report_format: format.to_string(),
        map_args,
        reduce_args,
        partition: r.partition.clone(),
        array_parallelism: r.array_parallelism,
        sbatch_args: r.sbatch_arg.clone(),
    };
    if r.dry_run {
        let [map, reduce] = plan.commands("sbatch", "<map job id>");
        let text = format!(
            "# {} (written at submission)\n{}\n# {}\n{}\n# {}: one trace per line, {} ranks\n\n# submission (nothing was submitted):\n{}\n{}\n",
            plan.map_script_path().display(),
            plan.map_script(),
            plan.reduce_script_path().display(),
            plan.reduce_script(),
            plan.manifest_path().display(),
            plan.traces.len(),
            map.join(" "),
            reduce.join(" ")
        );
        return output::emit(&text, None);
    }
    let sbatch = std::env::var("ROOFTOP_SBATCH").unwrap_or_else(|_| "sbatch".to_string());
    let done = plan.submit(&sbatch).map_err(|e| match e {
        rooftop_jobs::JobError::Write { .. } => CliError::Runtime(e.to_string()),
        _ => CliError::input(e.to_string()),
    })?;
    let limit =
        plan.array_parallelism.map_or_else(String::new, |p| format!(", at most {p} at once"));
    let text = format!(
        "submitted map job {} ({} array tasks{limit}) and reduce job {} (runs after the map)\n\
         report: {}\ntables: {}\nlogs:   {}\n",
        done.map_job,
        plan.traces.len(),
        done.reduce_job,
        plan.report.display(),
        plan.tables_dir().display(),
        plan.logs_dir().display()
    );
    output::emit(&text, None)
}
