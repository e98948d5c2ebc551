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
use rooftop_core::counters::{analyze_in, CounterFormat, CounterSet, GpuVendor};
use rooftop_core::device::{Catalog, DeviceSpec, Vendor};
use rooftop_ingest::counters as reader;
use rooftop_report::counters::{self as render, RenderOptions, FILLED_FROM_DEVICE};
use std::path::PathBuf;

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

    /// Device for the roofs: catalog id, alias or tool-printed name. Its datasheet peaks
    /// are the roofs, except where the files carry measured roofs (rocprof-compute
    /// roofline.csv): those stay the roofs, and --device only supplies what the files do
    /// not state (architecture, wave size, unit counts). A device of another vendor than
    /// the files' is warned about in the report, and not used at all beside measured
    /// roofs. Default: measured roofs in the files, else the device the files name, else
    /// none.
    #[arg(long, short = 'd', value_parser = crate::offers::DEVICES, hide_possible_values = true)]
    pub device: Option<String>,

    /// Read the input as this format instead of detecting it.
    /// Default: detected from the content.
    #[arg(long = "as", value_enum, value_name = "FORMAT")]
    pub format_as: Option<FormatArg>,

    /// Show one row per dispatch instead of one per kernel name.
    #[arg(long)]
    pub dispatches: bool,

    /// Only kernels whose name contains this text.
    /// Default: every kernel.
    #[arg(long, short = 'k')]
    pub kernel: Option<String>,

    /// Rows per table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
}

/// Analyses a read set (`--kernel` filter, `--device` or the files' device) and writes
/// it in the CLI's format.
pub(crate) fn report(
    catalog: &Catalog,
    mut set: CounterSet,
    device: Option<&str>,
    kernel: Option<&str>,
    opts: &RenderOptions,
    cli: &Cli,
) -> Result<()> {
    if let Some(k) = kernel {
        if !set.retain_kernels(k) {
            return Err(CliError::input(format!("--kernel: no kernel name contains `{k}`")));
        }
    }
    let mut device = device;
    let mut warning = None;
    if let Some(spec) = device.and_then(|d| catalog.lookup(d).ok()) {
        warning = other_vendor(&set, spec);
        if warning.is_none() {
            fill_device_facts(&mut set, spec);
        } else if !set.measured_roofs.is_empty() {
            // Beside measured roofs the device would give only unit counts and launch
            // limits, which another vendor's part cannot give.
            device = None;
        }
    }
    // The kernels now; a dispatch's record only where it is shown (JSON has them all,
    // built as they are written; the other formats with --dispatches).
    let mut rep = analyze_in(set, catalog, device).map_err(|e| CliError::input(e.to_string()))?;
    if let Some(w) = warning {
        rep.roofs.notes.insert(0, w);
    }
    let out = cli.output.as_deref();
    let r = match cli.format {
        OutputFormat::Table => output::emit(&render::table(&rep, opts), out),
        // Written as it is made: every dispatch is in it (gigabytes for a long trace).
        OutputFormat::Json => output::emit_with(out, |w| render::write_json(&rep, w)),
        OutputFormat::Csv => output::emit(&render::csv(&rep, opts)?, out),
        OutputFormat::Md => output::emit(&render::markdown(&rep, opts), out),
        OutputFormat::Html => {
            output::emit(&rooftop_report::html::counters(&rep, opts.dispatches, opts.top), out)
        }
        OutputFormat::Perfetto | OutputFormat::Parquet => {
            return Err(output::no_perfetto("counters"))
        }
    };
    // The process ends next: freeing a report of many thousand dispatches one allocation
    // at a time would take longer than reading it did.
    std::mem::forget(rep);
    r
}

/// The warning for a `--device` of another vendor than the GPU the files come from (an
/// H100 for an MI200 workload): the files name one part, the roofs would be another's.
fn other_vendor(set: &CounterSet, spec: &DeviceSpec) -> Option<String> {
    let files = match set.source.format.vendor() {
        GpuVendor::Amd => Vendor::Amd,
        GpuVendor::Nvidia => Vendor::Nvidia,
    };
    if spec.vendor == files {
        return None;
    }
    let named = match &set.device.name {
        Some(n) => format!("the files name {n}, an {} GPU", files.as_str()),
        None => format!(
            "the files come from an {} GPU ({})",
            files.as_str(),
            set.source.format.as_str()
        ),
    };
    Some(if set.measured_roofs.is_empty() {
        format!(
            "warning: --device {} is {} {}, but {named}: the roofs are {}'s, not the profiled \
             GPU's",
            spec.id,
            rooftop_core::diagnose::article(&spec.name),
            spec.name,
            spec.id
        )
    } else {
        format!(
            "warning: --device {} is {} {}, but {named}: it is not used, and the roofs are the \
             ones the files measured",
            spec.id,
            rooftop_core::diagnose::article(&spec.name),
            spec.name
        )
    })
}

/// Fills the facts the counter formulas need and the files do not state — the
/// architecture (AMD LLVM target, NVIDIA compute capability) and the wave size — from
/// the `--device` entry, when it is of the files' vendor; each one filled is said in a
/// note. What the files state is kept: they describe the GPU that ran.
fn fill_device_facts(set: &mut CounterSet, spec: &DeviceSpec) {
    let vendor = match set.source.format.vendor() {
        GpuVendor::Amd => Vendor::Amd,
        GpuVendor::Nvidia => Vendor::Nvidia,
    };
    if spec.vendor != vendor {
        return;
    }
    let dev = &mut set.device;
    let mut filled = Vec::new();
    let arch = if vendor == Vendor::Amd { &spec.llvm_target } else { &spec.compute_capability };
    if let (None, Some(a)) = (&dev.arch, arch) {
        dev.arch = Some(a.clone());
        filled.push(format!("architecture {a}"));
    }
    if dev.wave_size.is_none() && spec.warp_size > 0 {
        dev.wave_size = Some(spec.warp_size);
        filled.push(format!("wave size {}", spec.warp_size));
    }
    if !filled.is_empty() {
        // Beside the facts, so that no report presents them as the files' own.
        dev.extra.insert(FILLED_FROM_DEVICE.to_string(), filled.join(", "));
        set.source.notes.push(format!(
            "{} from --device {} ({}): the files do not state {}",
            filled.join(" and "),
            spec.id,
            spec.name,
            if filled.len() == 1 { "it" } else { "them" }
        ));
    }
}

pub fn run(catalog: &Catalog, a: &CountersArgs, cli: &Cli) -> Result<()> {
    if a.top == 0 {
        return Err(CliError::input("--top: expected at least 1 row"));
    }
    let set = match a.format_as {
        Some(f) => reader::read_as(&a.path, f.format()),
        None => reader::read_path(&a.path),
    }
    .map_err(|e| CliError::input(e.to_string()))?;
    let opts = RenderOptions { top: a.top, dispatches: a.dispatches };
    report(catalog, set, a.device.as_deref(), a.kernel.as_deref(), &opts, cli)
}
