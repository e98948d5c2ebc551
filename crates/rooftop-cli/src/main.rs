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
    let cli = args::Cli::parse();
    match commands::run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rooftop: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
