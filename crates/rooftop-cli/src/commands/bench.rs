//! `rooftop bench` (being written).

use crate::args::Cli;
use crate::error::{CliError, Result};
use clap::Args;
use rooftop_core::device::Catalog;

#[derive(Debug, Args)]
pub struct BenchArgs {}

pub fn run(_catalog: &Catalog, _args: &BenchArgs, _cli: &Cli) -> Result<()> {
    Err(CliError::Runtime("rooftop bench is not available yet".to_string()))
}
