//! Errors of the table reader and writer: each names the file and, where it applies,
//! the column and what was expected.

use std::path::PathBuf;

/// What went wrong reading or writing a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a readable Parquet file: {message}")]
    Parquet { path: PathBuf, message: String },
    #[error("{path}: column `{column}`: expected {expected}, found {found}")]
    Column { path: PathBuf, column: String, expected: String, found: String },
    #[error("{path}: no column `{column}` ({expected}); is this a rooftop `{table}` table?")]
    MissingColumn { path: PathBuf, column: String, expected: String, table: String },
    #[error(
        "{path}: written with table schema version {found}; this rooftop reads versions up to \
         {supported} (update rooftop)"
    )]
    Version { path: PathBuf, found: String, supported: u32 },
    #[error("{path}: row {row}, column `{column}`: {message}")]
    Value { path: PathBuf, row: usize, column: String, message: String },
    #[error("{path}: the `meta` table has {rows} rows; expected exactly one")]
    MetaRows { path: PathBuf, rows: usize },
    #[error("{path}: no rank tables here (expected meta.parquet and collectives.parquet)")]
    NotRankDir { path: PathBuf },
    /// Over one of rooftop's limits (`rooftop_core::limits`, docs/limits.md).
    #[error("{path}: {message}")]
    Limit { path: PathBuf, message: String },
}

impl TableError {
    pub(crate) fn parquet(path: &std::path::Path, e: &dyn std::fmt::Display) -> TableError {
        TableError::Parquet { path: path.to_path_buf(), message: e.to_string() }
    }
}
