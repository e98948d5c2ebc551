//! Errors of the XPlane reader: one sentence naming the file and, for bad bytes, the
//! byte offset and the field path where decoding failed.

use std::path::PathBuf;

/// Why an XPlane profile could not be read.
#[derive(Debug, thiserror::Error)]
pub enum XplaneError {
    /// The file or directory could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a valid XSpace protobuf at this position.
    #[error(
        "{}: not a valid XSpace protobuf (a jax.profiler `.xplane.pb`): at byte {offset}, in \
         {field}: {message}",
        path.display()
    )]
    Decode { path: PathBuf, offset: u64, field: String, message: String },
    /// A well-formed protobuf without anything a profiler writes.
    #[error(
        "{}: a protobuf without profiler planes ({planes} planes, none named `/device:...` or \
         `/host:...`): expected an XSpace written by jax.profiler / XProf (`*.xplane.pb`)",
        path.display()
    )]
    NotAProfile { path: PathBuf, planes: usize },
    /// A directory without `*.xplane.pb` files.
    #[error(
        "{}: no XPlane profiles in this directory: expected `*.xplane.pb` files (one per \
         host), directly or under plugins/profile/<run>/",
        path.display()
    )]
    NoProfiles { path: PathBuf },
}

impl XplaneError {
    /// The file (or directory) the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            XplaneError::Io { path, .. }
            | XplaneError::Decode { path, .. }
            | XplaneError::NotAProfile { path, .. }
            | XplaneError::NoProfiles { path } => path,
        }
    }
}
