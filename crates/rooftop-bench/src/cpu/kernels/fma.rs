//! CPU implementations: fma (being written).

use super::CpuKernel;

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[];
