//! `rooftop trace` (being written).

use crate::args::Cli;
use crate::error::{CliError, Result};
use clap::Args;
use rooftop_core::device::Catalog;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// A Kineto trace (`.json` or `.json.gz`), or a directory of per-rank traces.
    pub path: PathBuf,
}

pub fn run(_catalog: &Catalog, _args: &TraceArgs, _cli: &Cli) -> Result<()> {
    Err(CliError::Runtime("rooftop trace is not available yet".to_string()))
}
