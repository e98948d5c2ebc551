//! `rooftop ceilings`: measure this machine's roofs and write them as a device file.

use super::bench::{write_atomic, AnyBackend, BackendKind};
use crate::args::Cli;
use crate::error::{CliError, Result};
use crate::output;
use crate::progress;
use clap::Args;
use rooftop_bench::ceilings;
use rooftop_bench::harness::{Progress, TimingOptions};
use rooftop_core::device::Catalog;

/// `-o FILE` writes the measured roofs as a device file (docs/device-format.md) for
/// `--device-file`; the table (or `--format`) still goes to standard output.
#[derive(Debug, Args)]
pub struct CeilingsArgs {
    /// Backend to measure.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,

    /// GPU to use with --backend cuda|wgpu: an index or part of its name.
    #[arg(long, value_name = "NAME|INDEX")]
    pub adapter: Option<String>,

    /// Only DRAM bandwidth and the vector FMA peaks (what `bench` measures first), in
    /// about a second, instead of the whole working-set sweep.
    #[arg(long)]
    pub quick: bool,

    /// Minimum seconds of sampled time per sweep point.
    #[arg(long = "min-time", default_value_t = 0.1)]
    pub min_time: f64,

    /// Also write the working-set sweep (pattern, bytes, GB/s) as CSV.
    #[arg(long, value_name = "FILE")]
    pub sweep_csv: Option<std::path::PathBuf>,
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
pub(crate) fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

pub fn run(_catalog: &Catalog, a: &CeilingsArgs, cli: &Cli) -> Result<()> {
    // Refused before measuring rather than after.
    if cli.format == crate::args::OutputFormat::Perfetto {
        return Err(output::no_perfetto("ceilings"));
    }
    if !(a.min_time.is_finite() && a.min_time > 0.0) {
        return Err(CliError::input(format!(
            "--min-time: expected seconds > 0, got {}",
            a.min_time
        )));
    }
    let mut any = AnyBackend::new(a.backend, a.adapter.as_deref())?;
    let timing = TimingOptions { min_time_s: a.min_time, min_runs: 5, ..TimingOptions::default() };
    let opts = any.ceiling_options(a.quick, timing);
    let stop = progress::interrupt_flag();
    let pb = progress::bar(1, "ceilings");
    let measured = ceilings::measure(any.as_dyn(), &opts, &stop, &mut |p| {
        let (Progress::Checking { label } | Progress::Sampling { label, .. }) = p;
        pb.set_message(label.to_string());
    });
    pb.finish_and_clear();
    let c =
        measured.map_err(|e| CliError::Runtime(format!("measuring the ceilings failed: {e}")))?;
    if let Some(p) = &a.sweep_csv {
        write_atomic(p, &rooftop_report::bench::ceilings_csv(&c))?;
    }
    let fmt = output::format(cli.format);
    // `--format html -o report.html` means the report, not a device file named .html.
    let html_out = fmt == rooftop_report::Format::Html
        && cli.output.as_deref().is_some_and(|p| {
            p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
        });
    let device_file = cli.output.as_ref().filter(|_| !html_out);
    if let Some(p) = device_file {
        let base = any.device_spec(Some(&c))?;
        let toml = ceilings::device_file_toml(&base, &c, &today());
        // The file must load back as a device before we call it done.
        rooftop_core::device::parse_device_file(&toml, &p.display().to_string()).map_err(|e| {
            CliError::Runtime(format!("the device file rooftop wrote does not parse: {e}"))
        })?;
        write_atomic(p, &toml)?;
    }
    let text = match fmt {
        rooftop_report::Format::Table => rooftop_report::bench::ceilings_table(&c),
        rooftop_report::Format::Json => {
            let mut s = serde_json::to_string_pretty(&c).unwrap_or_default();
            s.push('\n');
            s
        }
        rooftop_report::Format::Csv => rooftop_report::bench::ceilings_csv(&c),
        rooftop_report::Format::Markdown => rooftop_report::bench::ceilings_markdown(&c),
        rooftop_report::Format::Html => rooftop_report::html::ceilings(&c),
        rooftop_report::Format::Perfetto => return Err(output::no_perfetto("ceilings")),
    };
    output::emit(&text, if html_out { cli.output.as_deref() } else { None })?;
    if let Some(p) = device_file {
        eprintln!(
            "rooftop: wrote {} (use it with --device-file {} --device <id>)",
            p.display(),
            p.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn today_is_a_plausible_date() {
        let t = super::today();
        assert_eq!(t.len(), 10);
        assert!(t.as_str() >= "2024-01-01", "{t}");
    }
}
