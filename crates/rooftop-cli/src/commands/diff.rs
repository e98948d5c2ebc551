//! `rooftop diff` (being written).

use crate::args::Cli;
use crate::error::{CliError, Result};
use clap::Args;

#[derive(Debug, Args)]
pub struct DiffArgs {}

pub fn run(_args: &DiffArgs, _cli: &Cli) -> Result<()> {
    Err(CliError::Runtime("rooftop diff is not available yet".to_string()))
}
