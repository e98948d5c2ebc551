//! `rooftop profile --with TOOL [--preset P | --counters A,B] -- PROGRAM ARGS`: a shell
//! over `rooftop_ingest::session`: print the plan (`--dry-run`) or run the session, then
//! analyse its output as `rooftop counters` does.

use crate::args::Cli;
use crate::error::{CliError, Result};
use crate::output;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;
use rooftop_core::device::Catalog;
use rooftop_ingest::session::{presets, shell_line, Preset, Progress, Session, SessionError, Tool};
use rooftop_report::counters::RenderOptions;
use std::fmt::Write as _;
use std::path::PathBuf;

/// `--with` values: the library's tools, with its help lines.
fn tools() -> impl TypedValueParser<Value = Tool> {
    let values = Tool::ALL.map(|t| PossibleValue::new(t.binary()).help(t.about()));
    PossibleValuesParser::new(values).try_map(|s| s.parse::<Tool>())
}

/// `--preset` values: the library's presets, with its help lines.
fn presets() -> impl TypedValueParser<Value = Preset> {
    let values = Preset::ALL.map(|p| PossibleValue::new(p.as_str()).help(p.about()));
    PossibleValuesParser::new(values).try_map(|s| s.parse::<Preset>())
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The profiler to run. Required.
    #[arg(long = "with", value_parser = tools(), required_unless_present = "list_presets")]
    pub with: Option<Tool>,

    /// Counter preset (`--list-presets` shows what each collects).
    #[arg(long, value_parser = presets(), default_value = "memory")]
    pub preset: Preset,

    /// An explicit counter / metric list instead of a preset (comma-separated, the
    /// tool's own names). AMD lists are split into passes within the per-block limits.
    /// Default: none (the preset's list).
    #[arg(long, value_delimiter = ',', conflicts_with = "preset")]
    pub counters: Option<Vec<String>>,

    /// Directory for the profiler's output (created). Default: `rooftop-profile`.
    #[arg(long, default_value = "rooftop-profile")]
    pub out: PathBuf,

    /// The profiler binary, when it is not on PATH under its usual name.
    /// Default: the --with profiler's usual name on PATH.
    #[arg(long, value_name = "PATH")]
    pub profiler: Option<PathBuf>,

    /// Print the commands (and the input file) instead of running them.
    #[arg(long)]
    pub dry_run: bool,

    /// List the presets and their counters, then exit.
    #[arg(long)]
    pub list_presets: bool,

    /// Device for the roofs (as `counters --device`).
    /// Default: the device the profiler's output names.
    #[arg(long, short = 'd', value_parser = crate::offers::DEVICES, hide_possible_values = true)]
    pub device: Option<String>,

    /// Rows per table.
    #[arg(long, default_value_t = 20)]
    pub top: usize,

    /// The program to profile and its arguments, after `--`.
    #[arg(last = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
}

/// The session the flags describe.
fn session(tool: Tool, a: &ProfileArgs) -> Result<Session> {
    let mut s = Session::new(tool, a.preset, &a.out);
    if let Some(c) = &a.counters {
        s = s.with_counters(c.iter().cloned()).map_err(|e| session_error(&e))?;
    }
    Ok(match &a.profiler {
        Some(p) => s.profiler(p),
        None => s,
    })
}

/// The library's error in the CLI's words (naming the flag at fault).
fn session_error(e: &SessionError) -> CliError {
    let msg = match e {
        SessionError::NotFound(_) => format!("{e}, or pass its path with --profiler"),
        SessionError::NoSuchProfiler(_) => format!("--profiler {e}"),
        SessionError::CountersUnsupported(_) | SessionError::EmptyCounterName => {
            format!("--counters: {e}")
        }
        SessionError::CreateDir { .. } => format!("--out {e}"),
        _ => e.to_string(),
    };
    if e.is_bad_input() {
        CliError::Input(msg)
    } else {
        CliError::Runtime(msg)
    }
}

fn list_presets() -> String {
    let mut out = String::new();
    // A counter in two groups of a preset is collected once: list it once.
    let flat = |g: &[&[&str]]| {
        let mut seen: Vec<&str> = Vec::new();
        for c in g.concat() {
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
        seen.join(", ")
    };
    for (name, what, nv, amd) in presets::PRESETS {
        let _ = writeln!(out, "{name}: {what}");
        let nv_text = if nv.is_empty() { "--set full".to_string() } else { flat(nv) };
        out.push_str(&rooftop_report::wrap_text(&nv_text, 100, "  ncu: ", "       "));
        out.push_str(&rooftop_report::wrap_text(&flat(amd), 100, "  amd: ", "       "));
    }
    out.push_str(
        "nsys collects no counters (durations and launch shapes); rocprof-compute collects \
         its own full set.\n",
    );
    out
}

pub fn run(catalog: &Catalog, a: &ProfileArgs, cli: &Cli) -> Result<()> {
    if a.list_presets {
        return output::emit(&list_presets(), cli.output.as_deref());
    }
    let Some(tool) = a.with else {
        return Err(CliError::input(
            "--with: name the profiler (ncu, nsys, rocprof, rocprofv3, rocprof-compute)",
        ));
    };
    let Some((program, args)) = a.program.split_first() else {
        return Err(CliError::input(
            "no program to profile: put it after `--`, e.g. rooftop profile --with ncu -- ./app",
        ));
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = session(tool, a)?;
    if a.dry_run {
        return output::emit(&s.plan(program, &args).script(), cli.output.as_deref());
    }
    s.run_with(program, &args, |p| match p {
        Progress::Note(n) => eprintln!("rooftop: {n}"),
        Progress::Running(c) => eprintln!("rooftop: running {}", shell_line(c)),
    })
    .map_err(|e| session_error(&e))?;
    let set = s.read().map_err(|e| session_error(&e))?;
    let opts = RenderOptions { top: a.top, dispatches: false };
    super::counters::report(catalog, set, a.device.as_deref(), None, &opts, cli)
}
