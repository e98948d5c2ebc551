//! INTERFACE SKELETON: filled in by the catalog work.

use super::{Catalog, DeviceSpec};

/// A name that matched no device, with the closest suggestions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown device `{query}`")]
pub struct LookupError {
    pub query: String,
    /// Up to three closest ids.
    pub suggestions: Vec<String>,
}

impl Catalog {
    /// Finds a device by id, alias, or a name a real tool prints.
    pub fn lookup(&self, query: &str) -> Result<&DeviceSpec, LookupError> {
        let _ = query;
        todo!("catalog work")
    }
}
