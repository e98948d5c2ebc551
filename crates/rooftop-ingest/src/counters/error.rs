//! Errors of the counter readers: one sentence naming the file, the place (line,
//! column, field) and what was expected.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in a file the problem is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Place {
    /// 1-based line.
    pub line: Option<u64>,
    /// Column name (CSV header) or JSON field path.
    pub field: Option<String>,
}

/// A counter file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterError {
    pub path: PathBuf,
    pub place: Place,
    pub message: String,
}

impl CounterError {
    /// An error about the whole file or directory.
    pub fn new(path: &Path, message: impl Into<String>) -> CounterError {
        CounterError { path: path.to_path_buf(), place: Place::default(), message: message.into() }
    }

    /// A file or directory whose format cannot be told.
    pub fn unknown(path: &Path, message: impl Into<String>) -> CounterError {
        CounterError::new(path, message)
    }

    /// An error at a line (1-based).
    pub fn at_line(path: &Path, line: u64, message: impl Into<String>) -> CounterError {
        CounterError {
            path: path.to_path_buf(),
            place: Place { line: Some(line), field: None },
            message: message.into(),
        }
    }

    /// An error at a line and a named field (column).
    pub fn at_field(
        path: &Path,
        line: u64,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> CounterError {
        CounterError {
            path: path.to_path_buf(),
            place: Place { line: Some(line), field: Some(field.into()) },
            message: message.into(),
        }
    }

    /// An I/O error reading `path`.
    pub fn io(path: &Path, e: &std::io::Error) -> CounterError {
        CounterError::new(path, format!("cannot read: {e}"))
    }
}

impl fmt::Display for CounterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(l) = self.place.line {
            write!(f, ", line {l}")?;
        }
        if let Some(c) = &self.place.field {
            write!(f, ", column `{c}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for CounterError {}
