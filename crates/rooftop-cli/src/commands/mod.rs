//! One module per command; each turns parsed arguments into core requests and returns
//! the rendered output.

mod analyze;
mod backends;
pub mod bench;
pub mod ceilings;
pub mod completions;
pub mod counters;
mod devices;
pub mod diff;
pub mod model;
pub mod profile;
pub mod trace;
pub mod trace_ranks;

use crate::args::{Cli, Command};
use crate::error::{CliError, Result};
use crate::output;
use rooftop_core::device::{Catalog, DeviceSpec};
use rooftop_core::trace::run::{device_for, device_for_builtin, DeviceLookup};
use rooftop_core::trace::TraceModel;

/// Runs the command `cli` names.
pub fn run(cli: &Cli) -> Result<()> {
    if matches!(cli.command, Command::Completions(_) | Command::Man) {
        // No catalog and no format: the global flags they ignore are warned about.
        return completions::run(cli);
    }
    if cli.format == crate::args::OutputFormat::Parquet && !matches!(cli.command, Command::Trace(_))
    {
        return Err(CliError::input(
            "--format parquet writes a trace's tables: only `rooftop trace` takes it",
        ));
    }
    if matches!(cli.command, Command::Bench(_) | Command::Ceilings(_)) {
        // From here on, Ctrl-C stops these runs and keeps what they measured.
        let _ = crate::progress::interrupt_flag();
    }
    if let Some(p) = &cli.output {
        // `trace --format csv|parquet -o DIR` writes a folder.
        let dir_ok = matches!(cli.command, Command::Trace(_))
            && matches!(
                cli.format,
                crate::args::OutputFormat::Csv | crate::args::OutputFormat::Parquet
            );
        output::check_writable(p, "-o", dir_ok)?;
    }
    if let Command::Diff(a) = &cli.command {
        // A comparison of two exports reads no device: a device file is not even parsed
        // (traces read the catalog when they are analysed).
        return diff::run(a, cli);
    }
    // With device files, the embedded catalog and the files merged; without, the
    // embedded one, of which `trace`, `analyze` and `model` read only the entry of the
    // device they need when its name decides it (`CatalogRef`), the others all of it.
    let loaded = if cli.device_files.is_empty() { None } else { Some(load_catalog(cli)?) };
    let one = loaded.as_ref().map_or(CatalogRef::Builtin, CatalogRef::Loaded);
    let all = || loaded.as_ref().unwrap_or_else(|| Catalog::builtin());
    let fmt = output::format(cli.format);
    let text = match &cli.command {
        Command::Devices(a) => devices::run(all(), a, fmt)?,
        Command::Analyze(a) => analyze::run(one, a, fmt)?,
        // These write their own output (export files, CSV directories, partial results
        // on Ctrl-C).
        Command::Bench(a) => return bench::run(all(), a, cli),
        Command::Ceilings(a) => return ceilings::run(all(), a, cli),
        Command::Trace(a) => return trace::run(one, a, cli),
        Command::Model(a) => return model::run(one, a, cli),
        Command::Diff(a) => return diff::run(a, cli),
        Command::Counters(a) => return counters::run(all(), a, cli),
        Command::Profile(a) => return profile::run(all(), a, cli),
        Command::Completions(_) | Command::Man => return completions::run(cli),
    };
    output::emit(&text, cli.output.as_deref())
}

/// Starts parsing the embedded catalog on a thread of its own, so that a command that
/// first reads its input finds it ready (about 6 M instructions, 2 ms of one core: a
/// sixth of the CPU time of a 2.6 MB trace's run). [`Catalog::builtin`] waits for it
/// where it is needed sooner.
///
/// Called before the arguments are parsed (on the other core, while they are), so it
/// goes by the raw arguments `args`: not for the commands that need no catalog, nor for
/// help or the version. A misjudged argument only costs the head start, or a parse
/// that is not needed.
///
/// Not for `trace`, `analyze` and `model` without device files either: they read only
/// the entry of the device they need ([`CatalogRef`]), the whole catalog only when its
/// name does not decide the device. `trace` learns that name from the trace: the
/// devices' names are read on the thread pool while it reads ([`Catalog::warm_named`]),
/// which took a third of a millisecond on the main thread after the 27.9 MB trace, and
/// the thread that shows progress bars is started there too.
pub fn warm_catalog(args: impl IntoIterator<Item = std::ffi::OsString>) {
    const NO_CATALOG: [&str; 8] =
        ["completions", "man", "diff", "help", "--help", "-h", "--version", "-V"];
    const ONE_DEVICE: [&str; 3] = ["trace", "analyze", "model"];
    let args: Vec<std::ffi::OsString> = args.into_iter().skip(1).collect();
    if args.iter().any(|a| NO_CATALOG.iter().any(|n| a == *n)) {
        return;
    }
    let device_files = args.iter().any(|a| a.as_encoded_bytes().starts_with(b"--device-file"));
    if !device_files && args.iter().any(|a| ONE_DEVICE.iter().any(|n| a == *n)) {
        if args.iter().any(|a| a == "trace") {
            // On the pool the trace is read on (created here rather than at the first
            // parse, at the same cost): no thread of its own to start.
            rayon::spawn(|| {
                Catalog::warm_named();
                crate::progress::start_showing();
            });
        }
        return;
    }
    // A failure to start the thread only loses the head start.
    let _ = std::thread::Builder::new().name("catalog".into()).spawn(|| {
        Catalog::builtin();
    });
}

/// The catalog a command reads: the user's device files merged into the embedded one,
/// or the embedded one alone, of which a command that needs one device reads only that
/// device's entry when its name decides it ([`Catalog::builtin_named`]), all of it
/// otherwise.
#[derive(Clone, Copy)]
pub enum CatalogRef<'a> {
    Loaded(&'a Catalog),
    Builtin,
}

impl<'a> CatalogRef<'a> {
    /// The device the trace `model` names ([`device_for`]); from the embedded catalog,
    /// reading only that device when the name decides it.
    pub fn device_for(self, model: &TraceModel) -> DeviceLookup<'a> {
        match self {
            CatalogRef::Loaded(c) => device_for(c, model),
            CatalogRef::Builtin => device_for_builtin(model),
        }
    }

    /// [`find_device`]; from the embedded catalog, reading only that device when the
    /// name decides it.
    pub fn find(self, name: &str) -> Result<&'a DeviceSpec> {
        match self {
            CatalogRef::Builtin => match Catalog::builtin_named(name) {
                Some(d) => Ok(d),
                None => find_device(Catalog::builtin(), name),
            },
            CatalogRef::Loaded(c) => find_device(c, name),
        }
    }
}

/// The embedded catalog plus the user's device files, in order.
pub(super) fn load_catalog(cli: &Cli) -> Result<Catalog> {
    let mut catalog = Catalog::builtin().clone();
    for path in &cli.device_files {
        let text = rooftop_ingest::compressed::read_text(path)
            .map_err(|e| CliError::input(format!("cannot read device file {e}")))?;
        // merge_file resolves `extends` against everything loaded so far, so a later
        // file may extend a device an earlier file defined.
        catalog
            .merge_file(&text, &path.display().to_string())
            .map_err(|e| CliError::input(e.to_string()))?;
    }
    Ok(catalog)
}

/// Looks a device up, turning a miss into one sentence with suggestions.
fn find_device<'a>(catalog: &'a Catalog, name: &str) -> Result<&'a DeviceSpec> {
    catalog.lookup(name).map_err(|e| CliError::input(e.to_string()))
}
