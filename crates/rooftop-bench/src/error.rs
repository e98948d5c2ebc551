//! Errors of the harness, the suite and the backends.

use thiserror::Error;

/// A backend failed to allocate, copy, compile or run.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum BackendError {
    #[error("kernel `{kernel}` has no `{implementation}` implementation on the {backend} backend")]
    NoImplementation { backend: String, kernel: String, implementation: String },
    #[error("buffer {0} does not exist (freed or never allocated)")]
    BadBuffer(u32),
    #[error("buffer {buffer}: expected {expected}, got {got}")]
    BufferMismatch { buffer: u32, expected: String, got: String },
    #[error("cannot allocate {bytes} bytes: {reason}")]
    OutOfMemory { bytes: u64, reason: String },
    #[error("invalid launch configuration: {0}")]
    BadLaunch(String),
    #[error("{0}")]
    Other(String),
}

/// A kernel selection or case the suite cannot build.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SuiteError {
    #[error("unknown kernel `{name}`{}", suggest(.suggestions))]
    UnknownKernel { name: String, suggestions: Vec<String> },
    #[error("kernel `{kernel}`: {message}")]
    BadConfig { kernel: String, message: String },
}

/// Why a device file of measured ceilings could not be handed out
/// ([`checked_device_file`](crate::ceilings::checked_device_file)).
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DeviceFileWriteError {
    /// The entry could not be written as TOML (a figure TOML cannot hold).
    #[error("the device file could not be written: {0}")]
    Write(#[source] rooftop_core::device::DeviceFileError),
    /// The text rooftop wrote does not load back as a device (a bug in rooftop).
    #[error("the device file rooftop wrote does not parse: {0}")]
    LoadBack(#[source] rooftop_core::device::DeviceFileError),
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", s.join(", "))
    }
}

/// Anything that stops one benchmark case.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum BenchError {
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Suite(#[from] SuiteError),
    #[error("{kernel}: needs {need_bytes} bytes of buffers but the {backend} backend has {have_bytes} bytes available")]
    TooLarge { kernel: String, backend: String, need_bytes: u64, have_bytes: u64 },
    #[error("{0}")]
    Model(String),
}
