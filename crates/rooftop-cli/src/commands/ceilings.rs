//! `rooftop ceilings`: measure this machine's roofs and write them as a device file.

use super::backends::{self, job_error, BackendKind};
use crate::args::Cli;
use crate::error::{CliError, Result};
use crate::output;
use crate::progress;
use clap::Args;
use rooftop_bench::harness::Progress;
use rooftop_bench::job::write_atomic;
use rooftop_core::device::Catalog;

/// `-o FILE` writes the measured roofs as a device file (docs/device-format.md) for
/// `--device-file`; the table (or `--format`) still goes to standard output.
#[derive(Debug, Args)]
pub struct CeilingsArgs {
    /// Backend to measure.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,

    /// GPU to use with --backend cuda|wgpu: an index or part of its name.
    /// Default: the first GPU.
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
    /// Default: none.
    #[arg(long, value_name = "FILE")]
    pub sweep_csv: Option<std::path::PathBuf>,
}

pub fn run(_catalog: &Catalog, a: &CeilingsArgs, cli: &Cli) -> Result<()> {
    // Refused before measuring rather than after.
    if cli.format == crate::args::OutputFormat::Perfetto {
        return Err(output::no_perfetto("ceilings"));
    }
    let stop = progress::interrupt_flag();
    // Refused before measuring rather than losing the measurement at the end.
    if let Some(p) = &a.sweep_csv {
        output::check_writable(p, "--sweep-csv", false)?;
    }
    let timing = rooftop_bench::any::ceilings_timing(a.min_time).map_err(job_error)?;
    let mut any = backends::open(a.backend, a.adapter.as_deref())?;
    let pb = progress::bar(1, "ceilings");
    let measured = any.measure_ceilings(a.quick, timing, &stop, &mut |p| {
        let (Progress::Checking { label } | Progress::Sampling { label, .. }) = p;
        pb.set_message(label.to_string());
    });
    pb.finish_and_clear();
    if stop.load(std::sync::atomic::Ordering::SeqCst) {
        // A partial sweep is no ceiling: nothing is written.
        return Err(CliError::Interrupted(
            "interrupted by Ctrl-C: the ceilings were not all measured; no device file written"
                .to_string(),
        ));
    }
    let c = measured.map_err(job_error)?;
    if let Some(p) = &a.sweep_csv {
        write_atomic(p, &rooftop_report::bench::ceilings_csv(&c)?).map_err(job_error)?;
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
        let toml = any.device_file(&c, &p.display().to_string()).map_err(job_error)?;
        write_atomic(p, &toml).map_err(job_error)?;
    }
    let text = match fmt {
        rooftop_report::Format::Table => rooftop_report::bench::ceilings_table(&c),
        rooftop_report::Format::Json => rooftop_report::bench::ceilings_json(&c),
        rooftop_report::Format::Csv => rooftop_report::bench::ceilings_csv(&c)?,
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
