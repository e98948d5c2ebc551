//! Suite kernels: fma (being written).

use super::Kernel;

/// The kernels of this module.
pub fn kernels() -> Vec<&'static dyn Kernel> {
    Vec::new()
}
