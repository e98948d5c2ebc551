//! `rooftop bench`: check and time the kernel suite (or chosen kernels) on a backend,
//! then judge every result against the measured ceilings and the theoretical peaks.

use crate::args::Cli;
use crate::error::{CliError, Result};
use crate::output;
use crate::progress;
use clap::Args;
use rooftop_bench::backend::{Backend, Launch};
use rooftop_bench::ceilings::{self, Residency};
use rooftop_bench::error::BenchError;
use rooftop_bench::export::{self, BenchReport, Roofs, RunTime, TimingRecord};
use rooftop_bench::harness::{self, CaseResult, Progress, TimingOptions, Workspace};
use rooftop_bench::spec::{self, SpecKernel, SpecSet};
use rooftop_bench::suite::{self, Kernel};
use rooftop_bench::{Case, Selection};
use rooftop_core::device::Catalog;
use rooftop_core::units::Precision;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

pub(crate) use super::backends::{AnyBackend, BackendKind};

#[derive(Debug, Args)]
#[allow(clippy::struct_excessive_bools)]
pub struct BenchArgs {
    /// Backend to run on.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,

    /// GPU to use with --backend cuda|wgpu: an index or part of its name
    /// (`rooftop devices --local` lists them). Default: the first CUDA device, or the
    /// high-performance wgpu adapter.
    #[arg(long, value_name = "NAME|INDEX")]
    pub adapter: Option<String>,

    /// Kernel(s) to run, comma-separated or repeated (`--list` shows them). Default: the
    /// default suite.
    #[arg(long, short = 'k', value_delimiter = ',')]
    pub kernel: Vec<String>,

    /// Run every kernel, probes (fma, chase) included.
    #[arg(long, conflicts_with = "kernel")]
    pub all_kernels: bool,

    /// List the kernels with their size parameters and exit.
    #[arg(long)]
    pub list: bool,

    /// One configuration: one value per size parameter, in the kernel's order
    /// (gemm: M,N,K; rmsnorm: ROWS,COLS; triad: N). Suffixes K, M, G are binary
    /// (1M = 1,048,576).
    #[arg(long, value_name = "V,V,...", value_delimiter = ',')]
    pub single_config: Option<Vec<String>>,

    /// Problem sizes in elements, comma-separated (1-D kernels: N; row kernels: ROWS x
    /// COLS with the default COLS; gemm: M=N=K). Suffixes K, M, G are binary.
    #[arg(long, value_name = "S,S,...", value_delimiter = ',')]
    pub sizes: Option<Vec<String>>,

    /// Element type (fp32 or fp64; kernel-dependent). Default: fp32.
    #[arg(long)]
    pub dtype: Option<String>,

    /// Quantized kernels: weight bits (4 or 8). Without any quantization option the suite
    /// runs Q4_0 and int4 in groups of 128.
    #[arg(long)]
    pub bits: Option<u32>,

    /// Quantized kernels: weights per scale (32, 64 or 128).
    #[arg(long = "group-size")]
    pub group_size: Option<u32>,

    /// Quantized kernels: weight format (affine, q4_0, q8_0).
    #[arg(long)]
    pub wformat: Option<String>,

    /// Kernel variant (fma: vector or scalar; quantized kernels: zp for a stored zero
    /// point, sym for the implicit one).
    #[arg(long)]
    pub variant: Option<String>,

    /// Worker threads (CPU). Default: all the process may use.
    #[arg(long)]
    pub threads: Option<u32>,

    /// Kernel tile / chunk parameter (CPU). Default: the kernel's own.
    #[arg(long)]
    pub tile: Option<u32>,

    /// Sweep a launch parameter, e.g. `threads=1,2` or `tile=64,128` (repeatable: the
    /// product is swept). Every point is reported, the best first.
    #[arg(long, value_name = "PARAM=V,V,...")]
    pub sweep: Vec<String>,

    /// Sweep the backend's launch parameters (CPU: threads and tile size) and report the
    /// best with the whole sweep.
    #[arg(long)]
    pub autotune: bool,

    /// Only our kernels: skip the built-in baselines (e.g. matrixmultiply's GEMM).
    #[arg(long)]
    pub no_builtin: bool,

    /// Do not measure the quick ceilings (DRAM bandwidth, FMA peak) before the suite;
    /// results then have no "% of measured ceiling".
    #[arg(long)]
    pub no_ceilings: bool,

    /// Judge results against this catalog or device-file device instead of the detected
    /// one (e.g. a file written by `rooftop ceilings -o`).
    #[arg(long, short = 'd')]
    pub device: Option<String>,

    /// Warm-up runs before sampling.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,

    /// Minimum seconds of warm-up.
    #[arg(long = "warmup-time", default_value_t = 0.05)]
    pub warmup_time: f64,

    /// Minimum number of samples per case.
    #[arg(long = "min-runs", default_value_t = 10)]
    pub min_runs: u32,

    /// Maximum number of samples per case.
    #[arg(long = "max-runs", default_value_t = 10_000)]
    pub max_runs: u32,

    /// Minimum seconds of sampled kernel time per case.
    #[arg(long = "min-time", default_value_t = 0.25)]
    pub min_time: f64,

    /// Minimum seconds per sample: shorter kernels run several times per sample.
    #[arg(long = "min-sample-time", default_value_t = 5e-4)]
    pub min_sample_time: f64,

    /// Evict the caches before every sample (one run per sample) instead of timing warm.
    #[arg(long)]
    pub flush_cache: bool,

    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0x5EED_2026)]
    pub seed: u64,

    /// Benchmark your own kernels, described in this spec file (docs/spec.md): every
    /// kernel at every size of the spec, or those of --kernel / --compare at
    /// --single-config. Default: the suite instead.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,

    /// With --spec: run two spec'd kernels at the same sizes and say which is faster, by
    /// how much, with its uncertainty (ratio of means ± σ, as hyperfine).
    #[arg(
        long,
        value_name = "A,B",
        value_delimiter = ',',
        requires = "spec",
        conflicts_with = "kernel"
    )]
    pub compare: Option<Vec<String>>,

    /// Also write the results as JSON (docs/bench-schema.md), rewritten after every case.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,

    /// Also write the results as CSV, rewritten after every case.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,

    /// Also write the results as Markdown, rewritten after every case.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
}

/// Parses `1M`, `4096`, `2Gi`, `16k` (binary multiples).
pub(crate) fn parse_size(text: &str, flag: &str) -> Result<u64> {
    let trimmed = text.trim();
    let (digits, multiplier) = match trimmed.trim_end_matches('i').char_indices().last() {
        Some((at, suffix)) if suffix.is_ascii_alphabetic() => {
            let mult: u64 = match suffix.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => {
                    return Err(CliError::input(format!(
                        "{flag}: `{text}` has an unknown suffix `{suffix}` (expected K, M or G)"
                    )))
                }
            };
            (&trimmed[..at], mult)
        }
        _ => (trimmed, 1),
    };
    let value: u64 = digits.trim().parse().map_err(|_| {
        CliError::input(format!("{flag}: `{text}` is not a size (expected e.g. 4096, 16M, 1G)"))
    })?;
    value
        .checked_mul(multiplier)
        .filter(|v| *v > 0)
        .ok_or_else(|| CliError::input(format!("{flag}: `{text}` must be between 1 and 2^64-1")))
}

fn selection(a: &BenchArgs) -> Result<Selection> {
    let parse_list = |v: &Option<Vec<String>>, flag: &str| -> Result<Option<Vec<u64>>> {
        v.as_ref()
            .map(|items| items.iter().map(|s| parse_size(s, flag)).collect::<Result<Vec<_>>>())
            .transpose()
    };
    let dtype = a
        .dtype
        .as_deref()
        .map(|s| {
            s.parse::<Precision>()
                .map_err(|_| CliError::input(format!("--dtype: unknown precision `{s}`")))
        })
        .transpose()?;
    Ok(Selection {
        single_config: parse_list(&a.single_config, "--single-config")?,
        sizes: parse_list(&a.sizes, "--sizes")?,
        dtype,
        bits: a.bits,
        group_size: a.group_size,
        wformat: a.wformat.clone(),
        variant: a.variant.clone(),
    })
}

/// Launches to run each case with: the sweep product, the autotune space, or one.
fn launch_sweep(a: &BenchArgs) -> Result<Option<Vec<Launch>>> {
    if a.sweep.is_empty() {
        return Ok(None);
    }
    let mut launches = vec![Launch { threads: a.threads, tile: a.tile, ..Launch::default() }];
    for s in &a.sweep {
        let (key, values) = s.split_once('=').ok_or_else(|| {
            CliError::input(format!("--sweep `{s}`: expected PARAM=V,V,... (threads or tile)"))
        })?;
        let values: Vec<u32> = values
            .split(',')
            .map(|v| {
                v.trim().parse::<u32>().ok().filter(|n| (1..=1_048_576).contains(n)).ok_or_else(
                    || {
                        CliError::input(format!(
                            "--sweep `{s}`: `{v}` is not a positive integer up to 1048576"
                        ))
                    },
                )
            })
            .collect::<Result<_>>()?;
        let mut next = Vec::new();
        for l in &launches {
            for &v in &values {
                let mut l = *l;
                match key.trim() {
                    "threads" => l.threads = Some(v),
                    "tile" => l.tile = Some(v),
                    other => {
                        return Err(CliError::input(format!(
                            "--sweep: unknown parameter `{other}` (expected threads or tile)"
                        )))
                    }
                }
                next.push(l);
            }
        }
        launches = next;
    }
    Ok(Some(launches))
}

fn timing_options(a: &BenchArgs) -> Result<TimingOptions> {
    for (v, flag) in [
        (a.warmup_time, "--warmup-time"),
        (a.min_time, "--min-time"),
        (a.min_sample_time, "--min-sample-time"),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(CliError::input(format!("{flag}: expected seconds >= 0, got {v}")));
        }
    }
    if a.min_runs == 0 || a.max_runs < a.min_runs {
        return Err(CliError::input(format!(
            "--min-runs {} / --max-runs {}: need 1 <= min-runs <= max-runs",
            a.min_runs, a.max_runs
        )));
    }
    Ok(TimingOptions {
        warmup_runs: a.warmup,
        warmup_time_s: a.warmup_time,
        min_runs: a.min_runs,
        max_runs: a.max_runs,
        min_time_s: a.min_time,
        min_sample_s: a.min_sample_time,
        flush_cache: a.flush_cache,
        seed: a.seed,
    })
}

fn kernel_list() -> String {
    let mut out = String::from("kernel          sizes      default  summary\n");
    for k in suite::all() {
        let head = format!(
            "{:<15} {:<10} {:<8} ",
            k.name(),
            k.size_params().join(","),
            if k.in_default_suite() { "yes" } else { "no" }
        );
        let indent = " ".repeat(head.chars().count());
        out.push_str(&rooftop_report::wrap_text(k.summary(), 100, &head, &indent));
    }
    out
}

/// One unit of work: a case with one implementation, at one or several launches.
struct Job {
    kernel: &'static dyn Kernel,
    /// The spec'd kernel, for kernels of `--spec`.
    spec: Option<&'static SpecKernel>,
    case: Case,
    implementation: rooftop_bench::backend::Implementation,
}

/// The spec'd kernels to run: `--compare A,B`, `--kernel`, or all of the spec.
fn spec_kernels(a: &BenchArgs, set: &SpecSet) -> Result<Vec<&'static SpecKernel>> {
    let names: Vec<&str> = match (&a.compare, a.kernel.is_empty()) {
        (Some(c), _) => {
            let [x, y] = &c[..] else {
                return Err(CliError::input(format!(
                    "--compare: expected two kernels A,B, got {}",
                    c.len()
                )));
            };
            if x == y {
                return Err(CliError::input(format!("--compare: `{x}` with itself")));
            }
            vec![x.as_str(), y.as_str()]
        }
        (None, false) => a.kernel.iter().map(String::as_str).collect(),
        (None, true) => return Ok(set.kernels().to_vec()),
    };
    let ks = names
        .iter()
        .map(|n| set.find(n).map_err(|e| CliError::input(format!("--spec {}: {e}", spec_path(a)))))
        .collect::<Result<Vec<_>>>()?;
    if let [x, y] = ks[..] {
        if a.compare.is_some() && x.spec().vars != y.spec().vars {
            return Err(CliError::input(format!(
                "--compare: `{}` has size variables [{}], `{}` [{}]: they must be the same",
                x.spec().name,
                x.spec().vars.join(", "),
                y.spec().name,
                y.spec().vars.join(", ")
            )));
        }
    }
    Ok(ks)
}

fn spec_path(a: &BenchArgs) -> String {
    a.spec.as_ref().map_or_else(String::new, |p| p.display().to_string())
}

/// Options of the suite that do not apply to spec'd kernels.
fn refuse_suite_options(a: &BenchArgs) -> Result<()> {
    let given = [
        (a.all_kernels, "--all-kernels"),
        (a.list, "--list"),
        (a.sizes.is_some(), "--sizes (use --single-config or the spec's `sizes`)"),
        (!a.sweep.is_empty(), "--sweep (list blocks in the spec's `block` and use --autotune)"),
        (a.threads.is_some(), "--threads"),
        (a.tile.is_some(), "--tile"),
        (
            a.dtype.is_some() || a.bits.is_some() || a.group_size.is_some(),
            "--dtype/--bits/--group-size (the spec's `work` sets them)",
        ),
        (
            a.wformat.is_some() || a.variant.is_some(),
            "--wformat/--variant (the spec's `work` sets them)",
        ),
    ];
    match given.iter().find(|(g, _)| *g) {
        Some((_, flag)) => {
            Err(CliError::input(format!("--spec: {flag} does not apply to spec'd kernels")))
        }
        None => Ok(()),
    }
}

fn plan_spec(
    a: &BenchArgs,
    backend: &mut dyn Backend,
    set: &SpecSet,
    sel: &Selection,
) -> Result<Vec<Job>> {
    let kernels = spec_kernels(a, set)?;
    let mut jobs = Vec::new();
    for k in kernels {
        let name = k.spec().name.as_str();
        let Some(implementation) = backend.implementations(name).into_iter().next() else {
            return Err(CliError::input(format!(
                "the {} backend has no implementation of `{name}` after loading its source",
                backend.info().backend
            )));
        };
        let cases =
            k.cases(sel).map_err(|e| CliError::input(format!("--spec {}: {e}", spec_path(a))))?;
        for case in cases {
            jobs.push(Job {
                kernel: k,
                spec: Some(k),
                case,
                implementation: implementation.clone(),
            });
        }
    }
    Ok(jobs)
}

fn plan(
    a: &BenchArgs,
    backend: &mut dyn Backend,
    sel: &Selection,
) -> Result<(Vec<Job>, Vec<String>)> {
    let explicit = !a.kernel.is_empty();
    let kernels: Vec<&'static dyn Kernel> = if explicit {
        a.kernel
            .iter()
            .map(|n| suite::find(n).map_err(|e| CliError::input(format!("--kernel: {e}"))))
            .collect::<Result<_>>()?
    } else if a.all_kernels {
        suite::all()
    } else {
        suite::all().into_iter().filter(|k| k.in_default_suite()).collect()
    };
    let mut jobs = Vec::new();
    let mut notes = Vec::new();
    for k in kernels {
        let impls: Vec<_> = backend
            .implementations(k.name())
            .into_iter()
            .filter(|i| !(a.no_builtin && i.builtin))
            .collect();
        if impls.is_empty() {
            let msg =
                format!("the {} backend has no `{}` kernel", backend.info().backend, k.name());
            if explicit {
                return Err(CliError::input(msg));
            }
            notes.push(format!("{msg}: skipped"));
            continue;
        }
        let cases = k.cases(sel).map_err(|e| CliError::input(e.to_string()))?;
        for case in cases {
            for i in &impls {
                jobs.push(Job {
                    kernel: k,
                    spec: None,
                    case: case.clone(),
                    implementation: i.clone(),
                });
            }
        }
    }
    // Refuse impossible sizes before running anything.
    if let Some(avail) = backend.available_memory_bytes() {
        for j in &jobs {
            let bytes: u64 =
                j.kernel.buffers(&j.case).iter().map(rooftop_bench::suite::BufferSpec::bytes).sum();
            if bytes.saturating_mul(2) > avail {
                return Err(CliError::input(format!(
                    "{} {}: needs {} of buffers (twice {}: device copy and host reference) \
                     but the {} backend has {} available",
                    j.case.kernel,
                    j.case.label(),
                    rooftop_core::units::si(bytes as f64 * 2.0, "B"),
                    rooftop_core::units::si(bytes as f64, "B"),
                    backend.info().backend,
                    rooftop_core::units::si(avail as f64, "B"),
                )));
            }
        }
    }
    Ok((jobs, notes))
}

fn bench_error(e: BenchError) -> CliError {
    match e {
        BenchError::Suite(_) | BenchError::TooLarge { .. } => CliError::input(e.to_string()),
        other => CliError::Runtime(other.to_string()),
    }
}

/// Writes `text` to `path` through a temporary file and a rename, so a reader (or a
/// Ctrl-C) never sees a half-written file.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("rooftop-tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| CliError::Runtime(format!("cannot write {}: {e}", path.display())))
}

fn write_exports(a: &BenchArgs, rep: &BenchReport) -> Result<()> {
    if let Some(p) = &a.export_json {
        write_atomic(p, &rooftop_report::bench::json_report(rep))?;
    }
    if let Some(p) = &a.export_csv {
        write_atomic(p, &rooftop_report::bench::csv_report(rep))?;
    }
    if let Some(p) = &a.export_markdown {
        write_atomic(p, &rooftop_report::bench::markdown_report(rep))?;
    }
    Ok(())
}

pub fn run(catalog: &Catalog, a: &BenchArgs, cli: &Cli) -> Result<()> {
    if a.list {
        return output::emit(&kernel_list(), cli.output.as_deref());
    }
    // Refused before the run rather than after it.
    if cli.format == crate::args::OutputFormat::Perfetto {
        return Err(output::no_perfetto("bench"));
    }
    let started = std::time::Instant::now();
    // Install the Ctrl-C handler first: backend start-up (CPU detection) takes a moment.
    let stop = progress::interrupt_flag();
    let sel = selection(a)?;
    let timing = timing_options(a)?;
    let sweep = launch_sweep(a)?;
    let mut any = AnyBackend::new(a.backend, a.adapter.as_deref())?;
    let set = match &a.spec {
        Some(path) => {
            refuse_suite_options(a)?;
            let set = spec::parse::load(path).map_err(|e| CliError::input(e.to_string()))?;
            if let AnyBackend::Mock(m) = &mut any {
                // The mock simulates the spec'd kernels from their references.
                for k in set.kernels() {
                    m.add_kernel(*k);
                }
                if let Ok(v) = std::env::var("ROOFTOP_MOCK_OOB") {
                    m.set_write_past_end(v.split(',').map(str::to_string).collect());
                }
            }
            spec::load_sources(any.as_dyn(), &set)
                .map_err(|e| CliError::input(format!("--spec {}: {e}", path.display())))?;
            Some(set)
        }
        None => None,
    };
    let (jobs, mut notes) = match &set {
        Some(set) => {
            let jobs = plan_spec(a, any.as_dyn(), set, &sel)?;
            (jobs, Vec::new())
        }
        None => plan(a, any.as_dyn(), &sel)?,
    };
    if jobs.is_empty() {
        return Err(CliError::input("nothing to run: no kernel matched the selection"));
    }

    // Buffers are kept from case to case (the suite's cases share a few shapes), and so
    // are results: the quick ceilings measure the suite's own triad, copy, read and write cases
    // with the suite's timing, and the suite shows those results rather than measuring
    // the same cases twice.
    let mut ws = Workspace::new();
    ws.remember_results();
    // Ceilings first (quick), unless told otherwise.
    let ceilings = if a.no_ceilings {
        None
    } else {
        let pb = progress::bar(1, "ceilings");
        let opts = any.ceiling_options(true, timing.clone());
        let r = ceilings::measure_in(&mut ws, any.as_dyn(), &opts, &stop, &mut |p| {
            let (Progress::Checking { label } | Progress::Sampling { label, .. }) = p;
            pb.set_message(label.to_string());
        });
        pb.finish_and_clear();
        match r {
            Ok(c) => Some(c),
            Err(e) => {
                notes.push(format!("quick ceilings not measured: {e}"));
                None
            }
        }
    };
    let theoretical = match &a.device {
        Some(id) => super::find_device(catalog, id)?.clone(),
        None => any.device_spec(ceilings.as_ref()).map_err(|e| {
            if a.no_ceilings {
                CliError::input(format!("{e} (or drop --no-ceilings)"))
            } else {
                e
            }
        })?,
    };
    let analysis_spec = ceilings
        .as_ref()
        .map_or_else(|| theoretical.clone(), |c| ceilings::calibrated_spec(&theoretical, c));

    let ceilings_s = ws.total.total_s;
    let info = any.as_dyn().info().clone();
    let mut report = BenchReport {
        schema_version: export::SCHEMA_VERSION,
        tool: format!("rooftop {}", env!("CARGO_PKG_VERSION")),
        backend: info.clone(),
        device: export::device_record(&analysis_spec),
        ceilings: ceilings.clone(),
        timing: TimingRecord::of(&timing, &info.timer),
        results: Vec::new(),
        warnings: notes,
        interrupted: false,
        time_spent: RunTime::of(started.elapsed().as_secs_f64(), ws.total, ceilings_s),
    };
    let roofs =
        Roofs { theoretical: &theoretical, analysis: &analysis_spec, ceilings: ceilings.as_ref() };

    // An export file exists (with no results yet) as soon as the cases start.
    write_exports(a, &report)?;
    let pb = progress::bar(jobs.len() as u64, "bench");
    let mut failed_checks = 0usize;
    // The best result of each job, for --compare.
    let mut bests: Vec<CaseResult> = Vec::new();
    // Every result with its kernel, to judge them again if a ceiling changes.
    let mut all: Vec<(&'static dyn Kernel, CaseResult)> = Vec::new();
    for job in &jobs {
        if stop.load(Ordering::Relaxed) {
            report.interrupted = true;
            break;
        }
        let backend = any.as_dyn();
        let launches: Vec<Launch> = if let Some(k) = job.spec {
            let all = k.launches(&job.case).map_err(|e| CliError::input(e.to_string()))?;
            if a.autotune {
                all
            } else {
                all.into_iter().take(1).collect()
            }
        } else if let Some(s) = &sweep {
            s.clone()
        } else if a.autotune {
            let call_launch = backend.default_launch(&job.case);
            let ids = [];
            let call = rooftop_bench::backend::KernelCall {
                case: &job.case,
                implementation: &job.implementation.id,
                buffers: &ids,
                launch: &call_launch,
                scalars: &[],
            };
            backend.launch_space(&call)
        } else {
            let mut l = backend.default_launch(&job.case);
            if a.threads.is_some() {
                l.threads = a.threads;
            }
            if a.tile.is_some() {
                l.tile = a.tile;
            }
            vec![l]
        };
        let mut on_progress = |p: Progress<'_>| match p {
            Progress::Checking { label } => pb.set_message(format!("{label}: checking")),
            Progress::Sampling { label, runs, .. } => {
                pb.set_message(format!("{label}: {runs} samples"));
            }
        };
        let results = if let (Some(k), Some(set)) = (job.spec, &set) {
            spec::run::autotune_in(
                &mut ws,
                backend,
                set,
                k,
                &job.case,
                &job.implementation,
                &launches,
                &timing,
                &stop,
                &mut on_progress,
            )
        } else if launches.len() > 1 {
            harness::autotune_in(
                &mut ws,
                backend,
                job.kernel,
                &job.case,
                &job.implementation,
                &launches,
                &timing,
                &stop,
                &mut on_progress,
            )
        } else {
            harness::run_case_in(
                &mut ws,
                backend,
                job.kernel,
                &job.case,
                &job.implementation,
                launches.first().copied(),
                &timing,
                &stop,
                &mut on_progress,
            )
            .map(|r| vec![r])
        }
        .map_err(bench_error)?;
        if let Some(best) = results.first() {
            bests.push(best.clone());
        }
        for r in &results {
            if !r.check.passed {
                failed_checks += 1;
            }
            if r.interrupted {
                report.interrupted = true;
            }
            report.results.push(export::evaluate(job.kernel, r, roofs).map_err(bench_error)?);
            all.push((job.kernel, r.clone()));
        }
        export::link_builtins(&mut report.results);
        report.time_spent = RunTime::of(started.elapsed().as_secs_f64(), ws.total, ceilings_s);
        write_exports(a, &report)?;
        pb.inc(1);
    }
    pb.finish_and_clear();
    // Roofs a result beat: re-measured, then raised (rooftop_bench::ceilings::adjust);
    // every result is then judged again against the final ceilings.
    let mut ceilings = ceilings;
    if let (Some(c), false) = (ceilings.as_mut(), stop.load(Ordering::Relaxed)) {
        let rows: Vec<_> = report
            .results
            .iter()
            .filter_map(|rec| {
                let achieved =
                    if rec.residency.is_some() { rec.achieved_gbs } else { rec.achieved_gflops };
                let label =
                    export::result_label(&rec.kernel, &rec.config.label, &rec.implementation.id);
                Some((rec.roof?, rec.residency.unwrap_or(Residency::Dram), achieved?, label))
            })
            .collect();
        let beaten = ceilings::adjust::beaten(c, &rows);
        if !beaten.is_empty() {
            let pb = progress::bar(1, "ceilings");
            let opts = any.ceiling_options(true, timing.clone());
            let changed = ceilings::adjust::remeasure_beaten(
                &mut ws,
                any.as_dyn(),
                &opts,
                c,
                &beaten,
                &stop,
                &mut |p| {
                    let (Progress::Checking { label } | Progress::Sampling { label, .. }) = p;
                    pb.set_message(format!("re-measuring: {label}"));
                },
            )
            .map_err(bench_error)?;
            pb.finish_and_clear();
            if changed {
                let analysis = ceilings::calibrated_spec(&theoretical, c);
                let roofs =
                    Roofs { theoretical: &theoretical, analysis: &analysis, ceilings: Some(c) };
                report.results = all
                    .iter()
                    .map(|(k, r)| export::evaluate(*k, r, roofs))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(bench_error)?;
                report.device = export::device_record(&analysis);
                report.ceilings = Some(c.clone());
            }
        }
    }
    ws.release(any.as_dyn());
    if stop.load(Ordering::Relaxed) {
        report.interrupted = true;
    }
    export::link_builtins(&mut report.results);
    report.time_spent = RunTime::of(started.elapsed().as_secs_f64(), ws.total, ceilings_s);
    write_exports(a, &report)?;

    let fmt = output::format(cli.format);
    let text = match fmt {
        rooftop_report::Format::Table => rooftop_report::bench::table_report(&report),
        // Perfetto was refused before the run.
        rooftop_report::Format::Json | rooftop_report::Format::Perfetto => {
            rooftop_report::bench::json_report(&report)
        }
        rooftop_report::Format::Csv => rooftop_report::bench::csv_report(&report),
        rooftop_report::Format::Markdown => rooftop_report::bench::markdown_report(&report),
        rooftop_report::Format::Html => rooftop_report::html::bench(&report),
    };
    let comparisons = a.compare.as_ref().map(|names| compare_results(names, &bests));
    let text = match (&comparisons, fmt) {
        (Some(c), rooftop_report::Format::Table) => {
            format!("{text}\n{}", rooftop_report::compare::text(c))
        }
        (Some(c), rooftop_report::Format::Markdown) => {
            format!("{text}\n{}", rooftop_report::compare::markdown(c))
        }
        _ => text,
    };
    output::emit(&text, cli.output.as_deref())?;
    if let (Some(c), false) = (
        &comparisons,
        matches!(fmt, rooftop_report::Format::Table | rooftop_report::Format::Markdown),
    ) {
        // Machine formats keep their schema: the summary goes to the terminal.
        #[allow(clippy::print_stderr)]
        {
            eprint!("{}", rooftop_report::compare::text(c));
        }
    }
    if report.interrupted {
        return Err(CliError::Runtime(format!(
            "interrupted by Ctrl-C: {} results kept{}",
            report.results.len(),
            if a.export_json.is_some() || a.export_csv.is_some() || a.export_markdown.is_some() {
                " in the export files"
            } else {
                ""
            }
        )));
    }
    if failed_checks > 0 {
        return Err(CliError::Runtime(format!(
            "{} failed {} check against the reference (not timed)",
            rooftop_core::diagnose::count(failed_checks as u64, "result", "results"),
            if failed_checks == 1 { "its" } else { "their" }
        )));
    }
    Ok(())
}

/// Pairs the results of the two kernels of `--compare` case by case (same sizes).
fn compare_results(names: &[String], bests: &[CaseResult]) -> Vec<spec::compare::Comparison> {
    let (Some(x), Some(y)) = (names.first(), names.get(1)) else { return Vec::new() };
    bests
        .iter()
        .filter(|r| r.case.kernel == x)
        .filter_map(|ra| {
            bests
                .iter()
                .find(|rb| rb.case.kernel == y && rb.case.sizes == ra.case.sizes)
                .map(|rb| spec::compare::compare(ra, rb))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096", "--sizes").unwrap(), 4096);
        assert_eq!(parse_size("1M", "--sizes").unwrap(), 1_048_576);
        assert_eq!(parse_size("16k", "--sizes").unwrap(), 16_384);
        assert_eq!(parse_size("2Gi", "--sizes").unwrap(), 2 * 1_073_741_824);
        assert!(parse_size("0", "--sizes").is_err());
        assert!(parse_size("12Q", "--sizes").unwrap_err().to_string().contains("suffix `Q`"));
        assert!(parse_size("abc", "--sizes").is_err());
    }
}
