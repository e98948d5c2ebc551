//! The CLI's error: one sentence for the user and an exit code.

use std::fmt;

/// An error that ends the command.
#[derive(Debug)]
pub enum CliError {
    /// Bad input: exit code 2.
    Input(String),
    /// Anything else (writing the output failed): exit code 1.
    Runtime(String),
    /// Stopped by Ctrl-C (SIGINT), its partial results kept: exit code 130, as a shell
    /// reports a process SIGINT ended (128 + 2).
    Interrupted(String),
}

impl CliError {
    pub fn input(msg: impl Into<String>) -> CliError {
        CliError::Input(msg.into())
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Input(_) => 2,
            CliError::Runtime(_) => 1,
            CliError::Interrupted(_) => 130,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input(m) | CliError::Runtime(m) | CliError::Interrupted(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CliError {}

/// A renderer's failure is rooftop's, not the input's: exit code 1.
impl From<rooftop_report::RenderError> for CliError {
    fn from(e: rooftop_report::RenderError) -> Self {
        CliError::Runtime(e.to_string())
    }
}

pub type Result<T> = std::result::Result<T, CliError>;
