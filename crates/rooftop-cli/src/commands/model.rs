//! `rooftop model` (being written).

use crate::args::Cli;
use crate::error::{CliError, Result};
use clap::Args;
use rooftop_core::device::Catalog;

#[derive(Debug, Args)]
pub struct ModelArgs {}

pub fn run(_catalog: &Catalog, _args: &ModelArgs, _cli: &Cli) -> Result<()> {
    Err(CliError::Runtime("rooftop model is not available yet".to_string()))
}
