//! `rooftop counters PATH`: read a vendor profiler's output (rocprof, rocprofv3,
//! rocprof-compute, Nsight Compute, Nsight Systems), derive bytes, FLOPs, hit rates and
//! occupancy per dispatch and per kernel, place them on the roofline and diagnose.
//!
//! Reader: `rooftop_ingest::counters`; formulas and analysis:
//! `rooftop_core::counters`; renderers: `rooftop_report::counters`.

use crate::args::{Cli, OutputFormat};
use crate::error::{CliError, Result};
use crate::output;
use clap::{Args, ValueEnum};
use rooftop_core::counters::{analyze, CounterFormat, CounterReport, CounterSet};
use rooftop_core::device::{Catalog, DeviceSpec};
use rooftop_ingest::counters as reader;
use rooftop_report::counters::{self as render, RenderOptions};
use std::path::{Path, PathBuf};

/// Formats `--as` accepts (to override detection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// rocprof v1/v2 `results.csv` / counter CSV.
    Rocprof,
    /// rocprof `results.stats.csv`.
    RocprofStats,
    /// rocprofv3 CSV (`kernel_trace.csv`, `counter_collection.csv`).
    Rocprofv3,
    /// rocprofv3 `results.json`.
    Rocprofv3Json,
    /// rocprof-compute / Omniperf workload folder.
    RocprofCompute,
    /// Nsight Compute `--csv --page raw`.
    NcuRaw,
    /// Nsight Compute `--csv --page details` or `--metrics`.
    Ncu,
    /// `nsys stats --report cuda_gpu_kern_sum --format csv`.
    NsysKernSum,
    /// `nsys stats --report cuda_gpu_trace --format csv`.
    NsysTrace,
    /// `nsys export --type sqlite` database.
    NsysSqlite,
    /// rocprofv3 rocpd database (`--output-format rocpd`).
    Rocpd,
}

impl FormatArg {
    fn format(self) -> CounterFormat {
        match self {
            FormatArg::Rocprof => CounterFormat::RocprofV1,
            FormatArg::RocprofStats => CounterFormat::RocprofStats,
            FormatArg::Rocprofv3 => CounterFormat::Rocprofv3Csv,
            FormatArg::Rocprofv3Json => CounterFormat::Rocprofv3Json,
            FormatArg::RocprofCompute => CounterFormat::RocprofCompute,
            FormatArg::NcuRaw => CounterFormat::NcuRaw,
            FormatArg::Ncu => CounterFormat::NcuDetails,
            FormatArg::NsysKernSum => CounterFormat::NsysKernSum,
            FormatArg::NsysTrace => CounterFormat::NsysGpuTrace,
            FormatArg::NsysSqlite => CounterFormat::NsysSqlite,
            FormatArg::Rocpd => CounterFormat::Rocpd,
        }
    }
}

#[derive(Debug, Args)]
pub struct CountersArgs {
    /// A profiler output file, or a directory (rocprof-compute workload, rocprofv3
    /// output directory, a directory of rocprof pass CSVs). The format is detected from
    /// the content; any file may be gzipped.
    pub path: PathBuf,

    /// Device for the roofs: catalog id, alias or tool-printed name. Default: measured
    /// roofs in the files (rocprof-compute roofline.csv), else the device the files
    /// name, else none.
    #[arg(long, short = 'd')]
    pub device: Option<String>,

    /// Read the input as this format instead of detecting it.
    #[arg(long = "as", value_enum, value_name = "FORMAT")]
    pub format_as: Option<FormatArg>,

    /// Show one row per dispatch instead of one per kernel name.
    #[arg(long)]
    pub dispatches: bool,

    /// Only kernels whose name contains this text.
    #[arg(long, short = 'k')]
    pub kernel: Option<String>,

    /// Rows per table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
}

/// Reads `path` (detected or forced format); bad input is exit code 2.
pub(crate) fn read(path: &Path, format: Option<CounterFormat>) -> Result<CounterSet> {
    let r = match format {
        Some(f) => reader::read_as(path, f),
        None => reader::read_path(path),
    };
    r.map_err(|e| CliError::input(e.to_string()))
}

/// The device for the roofs: `--device`, else the device the files name, else (only
/// when the files give no name) their architecture when exactly one catalog device has
/// it. A named device the catalog lacks is never replaced by a sibling: the second
/// value is the note that says so and how to add it.
pub(crate) fn resolve_device<'a>(
    catalog: &'a Catalog,
    set: &CounterSet,
    flag: Option<&str>,
) -> Result<(Option<&'a DeviceSpec>, Option<String>)> {
    if let Some(name) = flag {
        return super::find_device(catalog, name).map(|d| (Some(d), None));
    }
    let r = rooftop_core::device::resolve_named(
        catalog,
        set.device.name.as_deref(),
        set.device.arch.as_deref(),
    );
    Ok((r.device, r.note))
}

/// Analyses a read set and writes it in the CLI's format.
pub(crate) fn report(
    catalog: &Catalog,
    mut set: CounterSet,
    device: Option<&str>,
    kernel: Option<&str>,
    opts: &RenderOptions,
    cli: &Cli,
) -> Result<()> {
    if let Some(k) = kernel {
        set.dispatches.retain(|d| d.name.contains(k));
        set.aggregates.retain(|a| a.name.contains(k));
        if set.dispatches.is_empty() && set.aggregates.is_empty() {
            return Err(CliError::input(format!("--kernel: no kernel name contains `{k}`")));
        }
    }
    let (dev, unknown) = resolve_device(catalog, &set, device)?;
    let mut rep: CounterReport = analyze(set, dev);
    if let Some(note) = unknown {
        rep.roofs.notes = vec![note];
    }
    let text = match cli.format {
        OutputFormat::Table => render::table(&rep, opts),
        OutputFormat::Json => render::json(&rep),
        OutputFormat::Csv => render::csv(&rep, opts),
        OutputFormat::Md => render::markdown(&rep, opts),
        OutputFormat::Html => rooftop_report::html::counters(&rep, opts.dispatches, opts.top),
        OutputFormat::Perfetto | OutputFormat::Parquet => {
            return Err(output::no_perfetto("counters"))
        }
    };
    let r = output::emit(&text, cli.output.as_deref());
    // The process ends next: freeing a report of many thousand dispatches one allocation
    // at a time would take longer than reading it did.
    std::mem::forget(rep);
    r
}

pub fn run(catalog: &Catalog, a: &CountersArgs, cli: &Cli) -> Result<()> {
    if a.top == 0 {
        return Err(CliError::input("--top: expected at least 1 row"));
    }
    let set = read(&a.path, a.format_as.map(FormatArg::format))?;
    let opts = RenderOptions { top: a.top, dispatches: a.dispatches };
    report(catalog, set, a.device.as_deref(), a.kernel.as_deref(), &opts, cli)
}
