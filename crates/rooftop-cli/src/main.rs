//! The `rooftop` binary: parse arguments, run one command, print its output.
//!
//! Libraries never print; this crate owns stdout, stderr and the exit code. Exit codes:
//! 0 success, 2 bad input (unknown device, invalid dimensions, unreadable file,
//! conflicting flags), 1 anything else (an output that could not be written).

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod commands;
mod error;
mod output;
mod progress;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // The Parquet reader can panic on damaged files; rooftop-tables turns that into an
    // error naming the file, so stay silent about those panics.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !rooftop_tables::in_reader() {
            default_hook(info);
        }
    }));
    let cli = args::Cli::parse();
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
