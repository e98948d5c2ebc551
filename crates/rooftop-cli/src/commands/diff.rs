//! `rooftop diff BASE NEW`: compare two exports (bench, trace, analyze JSON) row by row
//! and gate a CI job on regressions.
//!
//! Exit codes: 0 when nothing regressed by more than `--fail-above` (or no gate was
//! given), 1 when something did (the report is printed first), 2 for bad input (a file
//! that cannot be read, is not a rooftop export, or is of another kind than the other).
//! The comparison itself is `rooftop_report::diff`.

use crate::args::{Cli, OutputFormat};
use crate::error::{CliError, Result};
use crate::output;
use clap::builder::TypedValueParser as _;
use clap::Args;
use rooftop_report::diff::{self, render, Metric, Options, Status};
use std::path::PathBuf;
use std::str::FromStr;

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline export: `rooftop bench --export-json`, `rooftop trace --format json`,
    /// `rooftop analyze --format json` or `rooftop counters --format json`.
    pub base: PathBuf,

    /// The export to compare with it (same kind).
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
}

/// An export and the device it was judged on (a bench export's `device.id`; a trace
/// or analyze export's `device_id` or `device.id`), when it says.
fn read(path: &std::path::Path) -> Result<(diff::Export, Option<String>)> {
    let text = rooftop_ingest::compressed::read_text(path)
        .map_err(|e| CliError::input(format!("cannot read {e}")))?;
    let export = diff::load(&text, &path.display().to_string())
        .map_err(|e| CliError::input(e.to_string()))?;
    let device = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| {
        ["/device/id", "/device_id", "/device/device_id"]
            .iter()
            .find_map(|p| v.pointer(p).and_then(serde_json::Value::as_str).map(str::to_string))
    });
    Ok((export, device))
}

pub fn run(args: &DiffArgs, cli: &Cli) -> Result<()> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(CliError::input(format!(
            "--alpha: expected a level in (0, 1), got {}",
            args.alpha
        )));
    }
    let (base, base_device) = read(&args.base)?;
    let (new, new_device) = read(&args.new)?;
    if let (Some(b), Some(n)) = (&base_device, &new_device) {
        if b != n {
            eprintln!(
                "rooftop: warning: the exports were judged on different devices ({} on {b}, \
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
            "no row of {} matched a row of {} ({} removed, {} added): they look like exports \
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
