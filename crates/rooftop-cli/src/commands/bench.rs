//! `rooftop bench`: check and time the kernel suite (or chosen kernels) on a backend and
//! judge every result against the roofs. The work is [`rooftop_bench::job`]'s; this module
//! turns the flags into a request, draws the progress bars and chooses where output goes.

use super::backends::{self, job_error, BackendKind};
use crate::args::Cli;
use crate::error::{CliError, Result};
use crate::output;
use crate::progress;
use clap::Args;
use indicatif::ProgressBar;
use rooftop_bench::harness::TimingOptions;
use rooftop_bench::job::{self, BenchPlan, BenchRequest, Exports, JobEvent};
use rooftop_bench::suite;
use rooftop_core::device::Catalog;
use rooftop_report::{compare, Format};
use std::path::PathBuf;

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
    #[arg(
        long,
        short = 'k',
        value_delimiter = ',',
        value_parser = crate::offers::KERNELS,
        hide_possible_values = true
    )]
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
    /// Default: none (each kernel's own size list).
    #[arg(long, value_name = "V,V,...", value_delimiter = ',')]
    pub single_config: Option<Vec<String>>,

    /// Problem sizes in elements, comma-separated (1-D kernels: N; row kernels: ROWS x
    /// COLS with the default COLS; gemm: S elements per matrix, M = N = K = √S, so 16M is
    /// 4096³). Suffixes K, M, G are binary. The fma
    /// probe keeps its iteration count (set it with --single-config). Default: each
    /// kernel's own sizes.
    #[arg(long, value_name = "S,S,...", value_delimiter = ',')]
    pub sizes: Option<Vec<String>>,

    /// Element type (fp32 or fp64; kernel-dependent). Default: fp32.
    #[arg(long, value_parser = crate::offers::BENCH_DTYPES, hide_possible_values = true)]
    pub dtype: Option<String>,

    /// Quantized kernels: weight bits (4 or 8). Without any quantization option the suite
    /// runs Q4_0 and int4 in groups of 128. Default: 4 with the other quantization options.
    #[arg(long)]
    pub bits: Option<u32>,

    /// Quantized kernels: weights per scale (32, 64 or 128).
    /// Default: 128 (affine; the GGML formats have fixed blocks of 32).
    #[arg(long = "group-size")]
    pub group_size: Option<u32>,

    /// Quantized kernels: weight format (affine, q4_0, q8_0).
    /// Default: Q4_0 and 4-bit affine when no quantization option is given, else affine.
    #[arg(long)]
    pub wformat: Option<String>,

    /// Kernel variant (fma: vector or scalar; quantized kernels: zp for a stored zero
    /// point, sym for the implicit one).
    /// Default: each kernel's default variant (fma: vector).
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
    /// Default: none (each backend's default launch).
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
    /// results then have no "% of measured ceiling". On a CPU, which reports no DRAM
    /// bandwidth, only compute-bound kernels (gemm, fma) can then run, unless
    /// `--device`/`--device-file` names a device with `memory.bandwidth_gbs`.
    #[arg(long)]
    pub no_ceilings: bool,

    /// Judge results against this catalog or device-file device instead of the detected
    /// one (e.g. a file written by `rooftop ceilings -o`).
    /// Default: the detected device.
    #[arg(long, short = 'd', value_parser = crate::offers::DEVICES, hide_possible_values = true)]
    pub device: Option<String>,

    /// Warm-up runs before sampling.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,

    /// Minimum seconds of warm-up: wall clock, or the kernel time the backend reports if
    /// that reaches it first.
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
    /// Default: none.
    #[arg(
        long,
        value_name = "A,B",
        value_delimiter = ',',
        requires = "spec",
        conflicts_with = "kernel"
    )]
    pub compare: Option<Vec<String>>,

    /// Also write the results as JSON (docs/bench-schema.md), rewritten after every case.
    /// Default: none.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,

    /// Also write the results as CSV, rewritten after every case.
    /// Default: none.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,

    /// Also write the results as Markdown, rewritten after every case.
    /// Default: none.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
}

fn request(catalog: &Catalog, a: &BenchArgs) -> Result<BenchRequest> {
    let device =
        a.device.as_deref().map(|d| super::find_device(catalog, d).cloned()).transpose()?;
    let (kernels, spec_kernels) =
        job::parse_kernels(&a.kernel, a.spec.is_some()).map_err(job_error)?;
    let sizes = |v: &Option<Vec<String>>, flag| {
        v.as_deref().map(|s| job::parse_sizes(s, flag)).transpose().map_err(job_error)
    };
    Ok(BenchRequest {
        kernels,
        spec_kernels,
        all_kernels: a.all_kernels,
        single_config: sizes(&a.single_config, "--single-config")?,
        sizes: sizes(&a.sizes, "--sizes")?,
        dtype: flag(a.dtype.as_deref(), "--dtype")?,
        bits: a.bits,
        group_size: a.group_size,
        wformat: flag(a.wformat.as_deref(), "--wformat")?,
        variant: flag(a.variant.as_deref(), "--variant")?,
        threads: a.threads,
        tile: a.tile,
        sweep: a.sweep.clone(),
        autotune: a.autotune,
        no_builtin: a.no_builtin,
        no_ceilings: a.no_ceilings,
        timing: TimingOptions {
            warmup_runs: a.warmup,
            warmup_time_s: a.warmup_time,
            min_runs: a.min_runs,
            max_runs: a.max_runs,
            min_time_s: a.min_time,
            min_sample_s: a.min_sample_time,
            flush_cache: a.flush_cache,
            seed: a.seed,
        },
        spec: a.spec.clone(),
        compare: a.compare.clone(),
        device,
    })
}

/// An optional flag's value parsed by [`job::parse_flag`].
fn flag<T>(text: Option<&str>, flag: &str) -> Result<Option<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    text.map(|t| job::parse_flag(t, flag)).transpose().map_err(job_error)
}

fn kernel_list() -> String {
    let rows = suite::all().into_iter().map(|k| {
        let default = if k.in_default_suite() { "yes" } else { "no" };
        let head = format!("{:<15} {:<10} {default:<8} ", k.name(), k.size_params().join(","));
        rooftop_report::wrap_text(k.summary(), 100, &head, &" ".repeat(head.chars().count()))
    });
    std::iter::once("kernel          sizes      default  summary\n".to_string())
        .chain(rows)
        .collect()
}

/// The progress bars of a run: one per stage.
fn show(pb: &mut Option<ProgressBar>, e: &JobEvent<'_>) {
    match e {
        JobEvent::Started { stage, steps } => *pb = Some(progress::bar(*steps, stage.name())),
        JobEvent::Step => pb.iter().for_each(|b| b.inc(1)),
        JobEvent::Finished => pb.take().iter().for_each(ProgressBar::finish_and_clear),
        JobEvent::Progress { .. } => pb.iter().zip(e.message()).for_each(|(b, m)| b.set_message(m)),
    }
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
    // Ctrl-C now stops the run and keeps its results: backend start-up (CPU detection)
    // takes a moment, and the exports must say when it was interrupted.
    let stop = progress::interrupt_flag();
    // A run whose results could not be written is refused before it starts.
    for (p, flag) in [
        (&a.export_json, "--export-json"),
        (&a.export_csv, "--export-csv"),
        (&a.export_markdown, "--export-markdown"),
    ] {
        if let Some(p) = p {
            output::check_writable(p, flag, false)?;
        }
    }
    let req = request(catalog, a)?;
    let settings = req.settings().map_err(job_error)?;
    let mut any = backends::open(a.backend, a.adapter.as_deref())?;
    let plan = BenchPlan::new(&req, settings, &mut any).map_err(job_error)?;
    let exports = Exports::default()
        .with(a.export_json.as_deref(), |r| Ok(rooftop_report::bench::json_report(r)))
        .with(a.export_csv.as_deref(), |r| Ok(rooftop_report::bench::csv_report(r)?))
        .with(a.export_markdown.as_deref(), |r| Ok(rooftop_report::bench::markdown_report(r)));
    let mut pb = None;
    let out = job::run(&plan, &mut any, &exports, &stop, started, &mut |e| show(&mut pb, &e))
        .map_err(job_error)?;
    let report = &out.report;
    let fmt = output::format(cli.format);
    let mut text = match fmt {
        Format::Table => rooftop_report::bench::table_report(report),
        // Perfetto was refused before the run.
        Format::Json | Format::Perfetto => rooftop_report::bench::json_report(report),
        Format::Csv => rooftop_report::bench::csv_report(report)?,
        Format::Markdown => rooftop_report::bench::markdown_report(report),
        Format::Html => rooftop_report::html::bench(report),
    };
    let cmp = out.comparisons.as_ref();
    match (cmp, fmt) {
        (Some(c), Format::Table) => text = format!("{text}\n{}", compare::text(c)),
        (Some(c), Format::Markdown) => text = format!("{text}\n{}", compare::markdown(c)),
        _ => {}
    }
    output::emit(&text, cli.output.as_deref())?;
    // Machine formats keep their schema: the comparison summary goes to the terminal.
    if let (Some(c), false) = (cmp, matches!(fmt, Format::Table | Format::Markdown)) {
        eprint!("{}", compare::text(c));
    }
    match out.failure() {
        Some(e) if out.report.interrupted => Err(CliError::Interrupted(e.to_string())),
        Some(e) => Err(job_error(e)),
        None => Ok(()),
    }
}
