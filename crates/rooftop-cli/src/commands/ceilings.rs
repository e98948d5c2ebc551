//! `rooftop ceilings` (being written).

use crate::args::Cli;
use crate::error::{CliError, Result};
use clap::Args;
use rooftop_core::device::Catalog;

#[derive(Debug, Args)]
pub struct CeilingsArgs {}

pub fn run(_catalog: &Catalog, _args: &CeilingsArgs, _cli: &Cli) -> Result<()> {
    Err(CliError::Runtime("rooftop ceilings is not available yet".to_string()))
}
