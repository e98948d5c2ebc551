//! `rooftop diff BASE NEW`: compare two exports (bench, trace, analyze, counters JSON),
//! or two traces, row by row, and gate a CI job on regressions.
//!
//! A trace (anything `rooftop trace` reads: a PyTorch profiler trace, plain or gzip, a
//! JAX profile, a directory of ranks) is analysed as `rooftop trace PATH --format json`
//! analyses it, with its own GPU from the catalog unless `--device` names one, and its
//! report is compared as that export would be: the same rows, read back from the same
//! JSON.
//!
//! Exit codes: 0 when nothing regressed by more than `--fail-above` (or no gate was
//! given), 1 when something did (the report is printed first), 2 for bad input (a file
//! that cannot be read, is neither a trace nor a rooftop export, or is of another kind
//! than the other). The comparison itself is `rooftop_report::diff`.

use super::CatalogRef;
use crate::args::{Cli, OutputFormat};
use crate::error::{CliError, Result};
use crate::output;
use clap::builder::TypedValueParser as _;
use clap::Args;
use rooftop_core::device::Catalog;
use rooftop_core::device::DeviceSpec;
use rooftop_core::trace::report::{analyze, TraceOptions};
use rooftop_ingest::kineto::ReadOptions;
use rooftop_ingest::source::looks_like_trace;
use rooftop_report::diff::{self, render, Metric, Options, Status};
use std::cell::{OnceCell, RefCell};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline: a trace `rooftop trace` reads (PyTorch profiler JSON, plain or gzip;
    /// a JAX `*.xplane.pb`; a directory of ranks), or an export: `rooftop bench --export-json`, `rooftop trace
    /// --format json`, `rooftop analyze --format json` or `rooftop counters --format json`.
    pub base: PathBuf,

    /// What to compare with it: a trace, or an export of the same kind.
    pub new: PathBuf,

    /// Exit with code 1 when a row (or the total) regressed by more than this, e.g. `5%`;
    /// set it above the run-to-run spread of the machine (the test sees only the spread
    /// within each run). Exit 2 when no row of the two exports matched. Default: no gate
    /// (exit 0 whatever changed).
    #[arg(long = "fail-above", value_name = "PCT", value_parser = diff::parse_pct)]
    pub fail_above: Option<f64>,

    /// What to compare: time (bench: median; trace: mean per call; lower is better),
    /// attainment (roofline %, higher is better), flops or bandwidth (achieved rates).
    #[arg(
        long,
        default_value = "time",
        value_parser = crate::offers::METRICS.try_map(|s| Metric::from_str(&s)),
        hide_possible_values = true
    )]
    pub metric: Metric,

    /// Changes smaller than this are "unchanged", whatever the test says.
    #[arg(long = "min-change", value_name = "PCT", default_value = "1%", value_parser = diff::parse_pct)]
    pub min_change: f64,

    /// Significance level of the noise test (Mann-Whitney U on bench samples, Welch's t on
    /// trace rows): a change with a larger p-value is noise.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,

    /// For traces: the device to judge both on, as `rooftop trace --device`. Default: each
    /// trace's own GPU, from the catalog (exports carry the device they were judged on).
    #[arg(long, short = 'd', value_parser = crate::offers::DEVICES, hide_possible_values = true)]
    pub device: Option<String>,
}

/// Where the device an export was judged on is: a bench export's `device.id`, an
/// analyze export's `device_id`, a counters export's `device.device_id`, a trace export's
/// `device.catalog_id`.
const DEVICE_AT: [&str; 4] =
    ["/device/id", "/device_id", "/device/device_id", "/device/catalog_id"];

/// One side of the comparison, the device it was judged on when it says, and whether it
/// was a trace: a trace (`is_trace`, or an export's reader finding `traceEvents`) is
/// analysed here with `judge`'s catalog and device, an export read as it is.
fn read(
    path: &Path,
    is_trace: bool,
    judge: &Judge<'_>,
) -> Result<(diff::Export, Option<String>, bool)> {
    let origin = path.display().to_string();
    let (text, export) = if is_trace {
        let (catalog, device) = judge.get()?;
        let text = if path.is_dir() {
            super::trace_ranks::dir_json(path, catalog, device)?
        } else {
            trace_json(path, catalog, device, &judge.said)?
        };
        let export = diff::load(&text, &origin);
        (text, export)
    } else {
        let text = rooftop_ingest::compressed::read_text(path)
            .map_err(|e| CliError::input(format!("cannot read {e}")))?;
        match diff::load(&text, &origin) {
            // A trace whose `traceEvents` come after its first MiB: analysed after all.
            Err(diff::DiffError::Trace { .. }) => {
                drop(text);
                return read(path, true, judge);
            }
            export => (text, export),
        }
    };
    let export = export.map_err(|e| CliError::input(e.to_string()))?;
    let device = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| {
        DEVICE_AT
            .iter()
            .find_map(|p| v.pointer(p).and_then(serde_json::Value::as_str).map(str::to_string))
    });
    Ok((export, device, is_trace))
}

/// The catalog and `--device` that traces are judged with, read at the first trace:
/// exports carry their device, and a comparison of two reads neither.
struct Judge<'a> {
    cli: &'a Cli,
    device: Option<&'a str>,
    loaded: OnceCell<Catalog>,
    /// The notes on the devices said so far.
    said: RefCell<HashSet<String>>,
}

impl Judge<'_> {
    fn get(&self) -> Result<(CatalogRef<'_>, Option<&DeviceSpec>)> {
        let catalog = if self.cli.device_files.is_empty() {
            CatalogRef::Builtin
        } else {
            if self.loaded.get().is_none() {
                // Set once: the cell is empty here.
                let _ = self.loaded.set(super::load_catalog(self.cli)?);
            }
            self.loaded.get().map_or(CatalogRef::Builtin, CatalogRef::Loaded)
        };
        let device = match self.device {
            Some(name) => Some(catalog.find(name)?),
            None => None,
        };
        Ok((catalog, device))
    }
}

/// The JSON report of `rooftop trace PATH --format json` (`--device` when given).
#[allow(clippy::print_stderr)]
fn trace_json(
    path: &Path,
    catalog: CatalogRef<'_>,
    device: Option<&DeviceSpec>,
    said_lines: &RefCell<HashSet<String>>,
) -> Result<String> {
    let model = super::trace::read_with_bar(path, &ReadOptions::default())?;
    let device = device.or_else(|| {
        let (found, said) = super::trace::lookup_device(catalog, &model);
        // Once for both sides when they say the same.
        if let Some(line) = said.filter(|l| said_lines.borrow_mut().insert(l.clone())) {
            eprintln!("{line}");
        }
        found
    });
    let report = analyze(&model, device, &TraceOptions::for_model(&model));
    let mut json = Vec::new();
    rooftop_report::trace::write_json(&report, &mut json).map_err(|e| {
        CliError::Runtime(format!("cannot write the report of {}: {e}", path.display()))
    })?;
    String::from_utf8(json).map_err(|e| {
        CliError::Runtime(format!("the report of {} is not UTF-8: {e}", path.display()))
    })
}

pub fn run(args: &DiffArgs, cli: &Cli) -> Result<()> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(CliError::input(format!(
            "--alpha: expected a level in (0, 1), got {}",
            args.alpha
        )));
    }
    let judge = Judge {
        cli,
        device: args.device.as_deref(),
        loaded: OnceCell::new(),
        said: RefCell::default(),
    };
    let trace = |p: &Path| p.is_dir() || looks_like_trace(p);
    let (base, base_device, base_trace) = read(&args.base, trace(&args.base), &judge)?;
    let (new, new_device, new_trace) = read(&args.new, trace(&args.new), &judge)?;
    if !base_trace && !new_trace {
        for w in ignored_flags(args, cli) {
            eprintln!("rooftop: warning: {w}");
        }
    }
    if let (Some(b), Some(n)) = (&base_device, &new_device) {
        if b != n {
            eprintln!(
                "rooftop: warning: the two sides were judged on different devices ({} on {b}, \
                 {} on {n}): times and attainment compare hardware as well as code",
                args.base.display(),
                args.new.display()
            );
        }
    }
    let opts = Options {
        metric: args.metric,
        alpha: args.alpha,
        min_change_pct: args.min_change,
        fail_above_pct: args.fail_above,
    };
    let d = diff::compare(&base, &new, &opts).map_err(|e| CliError::input(e.to_string()))?;
    let text = match cli.format {
        OutputFormat::Table => render::table(&d),
        OutputFormat::Md => render::markdown(&d),
        OutputFormat::Csv => render::csv(&d)?,
        OutputFormat::Json => render::json(&d),
        OutputFormat::Html => render::html(&d),
        OutputFormat::Perfetto | OutputFormat::Parquet => return Err(output::no_perfetto("diff")),
    };
    output::emit(&text, cli.output.as_deref())?;
    let matched = d.rows.iter().filter(|r| !matches!(r.status, Status::Added | Status::Removed));
    if matched.count() == 0 && !d.rows.is_empty() {
        let why = format!(
            "no row of {} matched a row of {} ({} removed, {} added): they look like reports \
             of different work, and no row was compared",
            args.base.display(),
            args.new.display(),
            d.count(Status::Removed),
            d.count(Status::Added)
        );
        // A gate that compared nothing must not pass.
        if args.fail_above.is_some() {
            return Err(CliError::input(why));
        }
        eprintln!("rooftop: warning: {why}");
    }
    if d.failing().is_empty() {
        Ok(())
    } else {
        Err(CliError::Runtime(render::verdict(&d)))
    }
}

/// One sentence per flag that has no effect on a comparison of two exports: they carry
/// the device they were judged on, so neither `--device-file` nor `--device` is read.
fn ignored_flags(args: &DiffArgs, cli: &Cli) -> Vec<String> {
    [("--device-file", !cli.device_files.is_empty()), ("--device", args.device.is_some())]
        .into_iter()
        .filter(|(_, given)| *given)
        .map(|(flag, _)| format!("{flag} has no effect on `diff` of two exports"))
        .collect()
}
