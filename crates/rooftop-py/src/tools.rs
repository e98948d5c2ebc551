//! `rooftop.counters`, `rooftop.model`, `rooftop.devices` and `rooftop.bench`: what
//! `rooftop counters`, `rooftop model`, `rooftop devices` and `rooftop bench --backend
//! cpu` do (`crates/rooftop-cli/src/commands/`), and the renderers of their reports
//! (`rooftop_report`).

use crate::{find_device, load_catalog, Content, Error, Report, Result, TextOptions};
use pyo3::prelude::*;
use rooftop_bench::any::{AnyBackend, BackendKind};
use rooftop_bench::export::BenchReport;
use rooftop_bench::harness::TimingOptions;
use rooftop_bench::job::{self, BenchOutcome, BenchPlan, BenchRequest, Exports, JobError};
use rooftop_bench::spec::compare::Comparison;
use rooftop_core::analysis::Analysis;
use rooftop_core::counters::{analyze_in, CounterFormat, CounterReport};
use rooftop_core::device::{DeviceSpec, Vendor};
use rooftop_core::model::{
    budget, ModelConfig, ModelError, ModelReport, Phase, RawConfig, StepOptions, WeightScheme,
};
use rooftop_core::units::Precision;
use rooftop_ingest::model_config::{self, ModelFileError};
use rooftop_report::Format;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

// ---- counters ----------------------------------------------------------------------

/// A counter report.
#[derive(Debug)]
pub(crate) struct CountersContent {
    report: CounterReport,
}

impl CountersContent {
    pub(crate) fn render(&self, fmt: Format, o: &TextOptions) -> String {
        let opts = rooftop_report::counters::RenderOptions {
            top: o.top.unwrap_or(20).max(1),
            dispatches: o.dispatches,
        };
        match fmt {
            Format::Table => rooftop_report::counters::table(&self.report, &opts),
            Format::Markdown => rooftop_report::counters::markdown(&self.report, &opts),
            Format::Html => rooftop_report::html::counters(&self.report, opts.dispatches, opts.top),
            _ => rooftop_report::counters::json(&self.report),
        }
    }
}

/// The formats `rooftop counters --as` names, by the same names.
fn counter_format(name: &str) -> Result<CounterFormat> {
    Ok(match name {
        "rocprof" => CounterFormat::RocprofV1,
        "rocprof-stats" => CounterFormat::RocprofStats,
        "rocprofv3" => CounterFormat::Rocprofv3Csv,
        "rocprofv3-json" => CounterFormat::Rocprofv3Json,
        "rocprof-compute" => CounterFormat::RocprofCompute,
        "ncu-raw" => CounterFormat::NcuRaw,
        "ncu" => CounterFormat::NcuDetails,
        "nsys-kern-sum" => CounterFormat::NsysKernSum,
        "nsys-trace" => CounterFormat::NsysGpuTrace,
        "nsys-sqlite" => CounterFormat::NsysSqlite,
        "rocpd" => CounterFormat::Rocpd,
        other => {
            return Err(Error::input(format!(
                "unknown counter format `{other}` for input_format: expected rocprof, \
                 rocprof-stats, rocprofv3, rocprofv3-json, rocprof-compute, ncu-raw, ncu, \
                 nsys-kern-sum, nsys-trace, nsys-sqlite or rocpd"
            )))
        }
    })
}

/// Reads a vendor profiler's output and analyses it: `rooftop counters PATH`.
#[pyfunction]
#[pyo3(signature = (path, device=None, *, input_format=None, kernel=None, device_files=Vec::new()))]
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn counters(
    py: Python<'_>,
    path: PathBuf,
    device: Option<String>,
    input_format: Option<String>,
    kernel: Option<String>,
    device_files: Vec<PathBuf>,
) -> PyResult<Report> {
    let run = || -> Result<Report> {
        let format = input_format.as_deref().map(counter_format).transpose()?;
        let catalog = load_catalog(&device_files)?;
        let mut set = match format {
            Some(f) => rooftop_ingest::counters::read_as(&path, f),
            None => rooftop_ingest::counters::read_path(&path),
        }
        .map_err(|e| Error::input(e.to_string()))?;
        if let Some(k) = kernel.as_deref() {
            if !set.retain_kernels(k) {
                return Err(Error::input(format!("kernel: no kernel name contains `{k}`")));
            }
        }
        let report = analyze_in(set, &catalog, device.as_deref())
            .map_err(|e| Error::input(e.to_string()))?;
        Ok(Report::new(Content::Counters(Box::new(CountersContent { report })), Vec::new()))
    };
    Ok(py.detach(run)?)
}

// ---- analyze -----------------------------------------------------------------------

/// One analysed operation and the device it ran on.
#[derive(Debug)]
pub(crate) struct AnalysisContent {
    pub(crate) analysis: Analysis,
    pub(crate) device: DeviceSpec,
}

impl AnalysisContent {
    pub(crate) fn render(&self, fmt: Format) -> Result<String> {
        let items = std::slice::from_ref(&self.analysis);
        match fmt {
            // The HTML report draws every roof of the device, so it takes the spec.
            Format::Html => Ok(rooftop_report::html::analyses(items, Some(&self.device))),
            _ => Ok(rooftop_report::analyses(fmt, items)?),
        }
    }
}

// ---- model -------------------------------------------------------------------------

/// A model step's budget and the device.
#[derive(Debug)]
pub(crate) struct ModelContent {
    report: ModelReport,
    device: DeviceSpec,
}

impl ModelContent {
    pub(crate) fn render(&self, fmt: Format) -> Result<String> {
        Ok(rooftop_report::model::render(&self.report, fmt, &self.device)?)
    }
}

/// The model `rooftop.model` was given: a preset, a config file or a config's JSON.
fn load_model(
    preset: Option<&str>,
    config: Option<&PathBuf>,
    json: Option<&str>,
) -> Result<ModelConfig> {
    if let Some(text) = json {
        if let Some(why) = rooftop_core::model::config::not_an_object(text) {
            return Err(Error::input(format!("the config dict is not a valid config.json: {why}")));
        }
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| {
            Error::input(format!("the config dict is not a valid config.json: {e}"))
        })?;
        return ModelConfig::from_raw(&raw, "the config dict", None)
            .map_err(|e| Error::input(e.to_string()));
    }
    let r = match (preset, config) {
        (Some(name), _) => model_config::preset(name),
        (None, Some(path)) => model_config::read(path),
        (None, None) => {
            return Err(Error::input("give a model: a config.json path, a dict or a preset name"))
        }
    };
    r.map_err(|e| match e {
        ModelFileError::BadPreset { .. } => Error::Runtime(e.to_string()),
        _ => Error::input(e.to_string()),
    })
}

/// The keyword arguments of `rooftop.model`, as `rooftop model`'s flags.
#[derive(Debug)]
struct StepFlags {
    weights: String,
    kv_dtype: Option<String>,
    phase: String,
    context: Option<u64>,
    batch: u64,
    tokens: Option<u64>,
    target_tokens_per_s: Option<f64>,
}

/// The CLI's `step_options`, naming keywords instead of flags.
fn step_options(f: &StepFlags) -> Result<StepOptions> {
    let weights: WeightScheme =
        f.weights.parse().map_err(|e| Error::input(format!("weights: {e}")))?;
    let kv_dtype = match &f.kv_dtype {
        Some(s) => s.parse::<Precision>().map_err(|e| Error::input(format!("kv_dtype: {e}")))?,
        None => weights.act_dtype(),
    };
    let phase = match f.phase.as_str() {
        "decode" => Phase::Decode,
        "prefill" => Phase::Prefill,
        other => return Err(Error::input(format!("phase `{other}`: expected decode or prefill"))),
    };
    match phase {
        Phase::Decode if f.tokens.is_some() => {
            return Err(Error::input(
                "tokens applies to phase='prefill'; decode attends to `context` positions",
            ))
        }
        Phase::Prefill if f.context.is_some() => {
            return Err(Error::input(
                "context applies to phase='decode'; prefill attends to its own `tokens`",
            ))
        }
        _ => {}
    }
    if f.batch == 0 {
        return Err(Error::input("batch must be at least 1"));
    }
    let context = f.context.unwrap_or(4096);
    if context == 0 {
        return Err(Error::input("context must be at least 1"));
    }
    let tokens = f.tokens.unwrap_or(2048);
    if tokens == 0 {
        return Err(Error::input("tokens must be at least 1"));
    }
    if let Some(t) = f.target_tokens_per_s {
        if !(t.is_finite() && t > 0.0) {
            return Err(Error::input(format!(
                "target_tokens_per_s must be a positive number, got {t}"
            )));
        }
    }
    // The option the phase does not use is 0, so the report does not show a default
    // that played no part.
    let (context, tokens) = match phase {
        Phase::Decode => (context, 0),
        Phase::Prefill => (0, tokens),
    };
    Ok(StepOptions { phase, batch: f.batch, context, tokens, weights, kv_dtype })
}

/// The budget of one LLM step: `rooftop model`.
#[pyfunction]
#[pyo3(signature = (device, *, preset=None, config=None, config_json=None, weights="bf16".to_string(),
                    kv_dtype=None, phase="decode".to_string(), context=None, batch=1, tokens=None,
                    target_tokens_per_s=None, device_files=Vec::new()))]
#[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
pub(crate) fn model(
    py: Python<'_>,
    device: String,
    preset: Option<String>,
    config: Option<PathBuf>,
    config_json: Option<String>,
    weights: String,
    kv_dtype: Option<String>,
    phase: String,
    context: Option<u64>,
    batch: u64,
    tokens: Option<u64>,
    target_tokens_per_s: Option<f64>,
    device_files: Vec<PathBuf>,
) -> PyResult<Report> {
    let flags = StepFlags { weights, kv_dtype, phase, context, batch, tokens, target_tokens_per_s };
    let run = || -> Result<Report> {
        let cfg = load_model(preset.as_deref(), config.as_ref(), config_json.as_deref())?;
        let opts = step_options(&flags)?;
        let catalog = load_catalog(&device_files)?;
        let spec = find_device(&catalog, &device)?;
        let report = budget(&cfg, &opts, &spec, flags.target_tokens_per_s).map_err(|e| {
            let hint = match e {
                ModelError::Roofline { .. } => {
                    "; try bf16, fp16 or a weight-only format (q8_0, q4_0, int4-g128)"
                }
                _ => "",
            };
            Error::input(format!(
                "{} on {} with weights {}: {e}{hint}",
                cfg.name, spec.id, flags.weights
            ))
        })?;
        Ok(Report::new(Content::Model(Box::new(ModelContent { report, device: spec })), Vec::new()))
    };
    Ok(py.detach(run)?)
}

// ---- devices -----------------------------------------------------------------------

/// The catalog, or one device.
#[derive(Debug)]
pub(crate) enum DevicesContent {
    List(Vec<DeviceSpec>),
    One(Box<DeviceSpec>),
}

impl DevicesContent {
    pub(crate) fn render(&self, fmt: Format) -> Result<String> {
        match self {
            DevicesContent::List(list) => Ok(rooftop_report::device_list(fmt, list)?),
            DevicesContent::One(d) => Ok(rooftop_report::device_detail(fmt, d)?),
        }
    }
}

/// The device catalog (`rooftop devices`), or one device (`rooftop devices NAME`).
#[pyfunction]
#[pyo3(signature = (name=None, *, vendor=None, device_files=Vec::new()))]
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn devices(
    name: Option<String>,
    vendor: Option<String>,
    device_files: Vec<PathBuf>,
) -> PyResult<Report> {
    let catalog = load_catalog(&device_files)?;
    if let Some(name) = name {
        let d = find_device(&catalog, &name)?;
        return Ok(Report::new(Content::Devices(DevicesContent::One(Box::new(d))), Vec::new()));
    }
    let vendor = match vendor.as_deref() {
        None => None,
        Some(v) => Some(v.parse::<Vendor>().map_err(|_| {
            Error::input(format!("unknown vendor `{v}`: expected nvidia, amd, apple, intel or cpu"))
        })?),
    };
    let list: Vec<DeviceSpec> =
        catalog.devices.iter().filter(|d| vendor.is_none_or(|v| d.vendor == v)).cloned().collect();
    Ok(Report::new(Content::Devices(DevicesContent::List(list)), Vec::new()))
}

// ---- bench -------------------------------------------------------------------------

/// A bench run's report and, with `compare`, its comparisons.
#[derive(Debug)]
pub(crate) struct BenchContent {
    report: BenchReport,
    comparisons: Option<Vec<Comparison>>,
}

impl BenchContent {
    pub(crate) fn render(&self, fmt: Format) -> String {
        let cmp = self.comparisons.as_deref();
        match fmt {
            Format::Table => {
                let text = rooftop_report::bench::table_report(&self.report);
                cmp.map_or(text.clone(), |c| {
                    format!("{text}\n{}", rooftop_report::compare::text(c))
                })
            }
            Format::Markdown => {
                let text = rooftop_report::bench::markdown_report(&self.report);
                cmp.map_or(text.clone(), |c| {
                    format!("{text}\n{}", rooftop_report::compare::markdown(c))
                })
            }
            Format::Html => rooftop_report::html::bench(&self.report),
            _ => rooftop_report::bench::json_report(&self.report),
        }
    }
}

/// `rooftop.bench`'s keyword arguments: `rooftop bench`'s flags with `-` as `_`, the
/// same defaults (`None`: the flag not given).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchKw {
    #[serde(default)]
    kernel: Vec<String>,
    #[serde(default)]
    all_kernels: bool,
    single_config: Option<Vec<String>>,
    sizes: Option<Vec<String>>,
    dtype: Option<String>,
    bits: Option<u32>,
    group_size: Option<u32>,
    wformat: Option<String>,
    variant: Option<String>,
    threads: Option<u32>,
    tile: Option<u32>,
    #[serde(default)]
    sweep: Vec<String>,
    #[serde(default)]
    autotune: bool,
    #[serde(default)]
    no_builtin: bool,
    #[serde(default)]
    no_ceilings: bool,
    device: Option<String>,
    warmup: Option<u32>,
    warmup_time: Option<f64>,
    min_runs: Option<u32>,
    max_runs: Option<u32>,
    min_time: Option<f64>,
    min_sample_time: Option<f64>,
    #[serde(default)]
    flush_cache: bool,
    seed: Option<u64>,
    spec: Option<PathBuf>,
    compare: Option<Vec<String>>,
}

fn bench_request(kw: BenchKw, device_files: &[PathBuf]) -> Result<BenchRequest> {
    if kw.all_kernels && !kw.kernel.is_empty() {
        return Err(Error::input("all_kernels and kernel exclude each other: give one"));
    }
    if kw.compare.is_some() && (kw.spec.is_none() || !kw.kernel.is_empty()) {
        return Err(Error::input("compare needs spec and excludes kernel"));
    }
    let catalog = load_catalog(device_files)?;
    let device = kw.device.as_deref().map(|d| find_device(&catalog, d)).transpose()?;
    let d = TimingOptions::default();
    let (kernels, spec_kernels) =
        job::parse_kernels(&kw.kernel, kw.spec.is_some()).map_err(job_error)?;
    let sizes = |v: Option<Vec<String>>, flag| {
        v.map(|s| job::parse_sizes(&s, flag)).transpose().map_err(job_error)
    };
    Ok(BenchRequest {
        kernels,
        spec_kernels,
        all_kernels: kw.all_kernels,
        single_config: sizes(kw.single_config, "--single-config")?,
        sizes: sizes(kw.sizes, "--sizes")?,
        dtype: flag(kw.dtype.as_deref(), "--dtype")?,
        bits: kw.bits,
        group_size: kw.group_size,
        wformat: flag(kw.wformat.as_deref(), "--wformat")?,
        variant: flag(kw.variant.as_deref(), "--variant")?,
        threads: kw.threads,
        tile: kw.tile,
        sweep: kw.sweep,
        autotune: kw.autotune,
        no_builtin: kw.no_builtin,
        no_ceilings: kw.no_ceilings,
        timing: TimingOptions {
            warmup_runs: kw.warmup.unwrap_or(d.warmup_runs),
            warmup_time_s: kw.warmup_time.unwrap_or(d.warmup_time_s),
            min_runs: kw.min_runs.unwrap_or(d.min_runs),
            max_runs: kw.max_runs.unwrap_or(d.max_runs),
            min_time_s: kw.min_time.unwrap_or(d.min_time_s),
            min_sample_s: kw.min_sample_time.unwrap_or(d.min_sample_s),
            flush_cache: kw.flush_cache,
            seed: kw.seed.unwrap_or(d.seed),
        },
        spec: kw.spec,
        compare: kw.compare,
        device,
    })
}

/// An optional keyword's value parsed by [`job::parse_flag`] (errors name the flag, as
/// `rooftop bench`'s do).
fn flag<T>(text: Option<&str>, flag: &str) -> Result<Option<T>>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
{
    text.map(|t| job::parse_flag(t, flag)).transpose().map_err(job_error)
}

fn job_error(e: JobError) -> Error {
    match e {
        JobError::Input(m) => Error::Input(m),
        other => Error::Runtime(other.to_string()),
    }
}

/// Times the kernel suite (or chosen kernels) on this machine's CPU: `rooftop bench`.
/// The run goes on another thread while this one waits with the GIL released and looks
/// for Ctrl-C (`KeyboardInterrupt`) every 100 ms, which stops the run between samples.
#[pyfunction]
#[pyo3(signature = (params_json, device_files=Vec::new()))]
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn bench(
    py: Python<'_>,
    params_json: String,
    device_files: Vec<PathBuf>,
) -> PyResult<Report> {
    let started = Instant::now();
    let kw: BenchKw =
        serde_json::from_str(&params_json).map_err(|e| Error::input(format!("bench: {e}")))?;
    let req = bench_request(kw, &device_files)?;
    let settings = req.settings().map_err(job_error)?;
    let stop = AtomicBool::new(false);
    let outcome = std::thread::scope(|s| -> PyResult<BenchOutcome> {
        let worker = s.spawn(|| -> Result<BenchOutcome> {
            let mut any = AnyBackend::open(BackendKind::Cpu, None).map_err(job_error)?;
            let plan = BenchPlan::new(&req, settings, &mut any).map_err(job_error)?;
            job::run(&plan, &mut any, &Exports::default(), &stop, started, &mut |_| {})
                .map_err(job_error)
        });
        let mut interrupted = None;
        while !worker.is_finished() {
            py.detach(|| std::thread::sleep(Duration::from_millis(100)));
            if let Err(e) = py.check_signals() {
                stop.store(true, Ordering::SeqCst);
                interrupted = Some(e);
            }
        }
        let out = py
            .detach(|| worker.join())
            .map_err(|_| Error::Runtime("the benchmark thread panicked".to_string()))?;
        match interrupted {
            Some(e) => Err(e),
            None => Ok(out?),
        }
    })?;
    if let Some(e) = outcome.failure() {
        return Err(job_error(e).into());
    }
    let content = BenchContent { report: outcome.report, comparisons: outcome.comparisons };
    Ok(Report::new(Content::Bench(Box::new(content)), Vec::new()))
}
