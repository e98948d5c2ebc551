//! INTERFACE SKELETON: filled in by the catalog work.

use super::DeviceSpec;

/// A set of devices: the embedded catalog, optionally extended by user device files.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub devices: Vec<DeviceSpec>,
}

/// A device file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct DeviceFileError {
    /// File name (or `<embedded catalog>`).
    pub origin: String,
    /// Line and column when known.
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

/// Parses a device file in rooftop's format; `origin` names it in errors.
pub fn parse_device_file(text: &str, origin: &str) -> Result<Vec<DeviceSpec>, DeviceFileError> {
    let _ = (text, origin);
    todo!("catalog work")
}

impl Catalog {
    /// The embedded catalog.
    pub fn builtin() -> Catalog {
        todo!("catalog work")
    }

    /// Adds devices; a device whose id (or alias) matches an existing id replaces it.
    pub fn merge(&mut self, devices: Vec<DeviceSpec>) {
        let _ = devices;
        todo!("catalog work")
    }
}
