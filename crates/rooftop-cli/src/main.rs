//! The `rooftop` binary: parse arguments, run one command, print its output.
//!
//! Libraries never print; this crate owns stdout, stderr and the exit code. Exit codes
//! (also in `--help`): 0 success, 1 a regression (`diff`) or anything else that failed
//! (an output that could not be written), 2 bad input or usage (unknown device, invalid
//! dimensions, unreadable file, conflicting flags, an output path that cannot be
//! written), 130 interrupted by Ctrl-C (the partial results kept).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod commands;
mod error;
mod offers;
mod output;
mod progress;

use std::process::ExitCode;

fn main() -> ExitCode {
    // First of all: a Ctrl-C during start-up must not kill the process before the
    // commands that keep partial results can see it.
    progress::install_interrupt_handler();
    // Runs that keep partial results take Ctrl-C from the start, so that one during
    // argument parsing still ends with an export saying "interrupted".
    if std::env::args().skip(1).any(|a| a == "bench" || a == "ceilings") {
        let _ = progress::interrupt_flag();
    }
    // The Parquet reader can panic on damaged files; rooftop-tables turns that into an
    // error naming the file, so stay silent about those panics.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !rooftop_tables::in_reader() {
            default_hook(info);
        }
    }));
    commands::warm_catalog(std::env::args_os());
    let cli = args::Cli::parsed();
    // A limit variable that is set but unusable is refused before any work
    // (docs/limits.md).
    if let Some(bad) = rooftop_core::limits::check_env().first() {
        eprintln!("rooftop: error: {bad}");
        return ExitCode::from(2);
    }
    match commands::run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rooftop: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
