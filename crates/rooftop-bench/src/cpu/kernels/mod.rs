//! CPU implementations of the suite's kernels: a table per kernel module, keyed by
//! ([`KernelId`], implementation id).

mod fma;
mod gemm;
mod norm;
mod probe;
mod quant;
mod reduce;
mod softmax;
mod stream;

use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::error::BackendError;
use crate::suite::KernelId;

/// Runs one kernel once over its buffers (in the suite's `buffers()` order: inputs, then
/// outputs). Called inside the rayon pool sized by `launch.threads`; `launch.tile` is the
/// kernel's own chunk/tile parameter (`None`: the kernel's default).
pub type CpuKernelFn = fn(&Case, &mut [HostBuf], &Launch) -> Result<(), BackendError>;

/// One CPU implementation of a suite kernel.
#[derive(Debug, Clone, Copy)]
pub struct CpuKernel {
    /// The suite kernel it implements.
    pub kernel: KernelId,
    /// `rooftop` for ours, the library's short name for a built-in (`matrixmultiply`).
    pub implementation: &'static str,
    pub builtin: bool,
    /// Description shown in results (`matrixmultiply 0.3 sgemm/dgemm, threaded`).
    pub label: &'static str,
    /// `--autotune` values of `Launch::tile` for this kernel (empty: no tile parameter).
    pub tiles: &'static [u32],
    pub run: CpuKernelFn,
}

/// Every CPU implementation.
pub fn all() -> impl Iterator<Item = &'static CpuKernel> {
    [
        stream::KERNELS,
        norm::KERNELS,
        softmax::KERNELS,
        reduce::KERNELS,
        gemm::KERNELS,
        quant::KERNELS,
        fma::KERNELS,
        probe::KERNELS,
    ]
    .into_iter()
    .flatten()
}

/// The implementation `implementation` of `kernel`.
pub fn find(kernel: KernelId, implementation: &str) -> Option<&'static CpuKernel> {
    all().find(|k| k.kernel == kernel && k.implementation == implementation)
}

// Helpers shared by the CPU kernel modules.

/// `launch.tile`, or `default` when unset; 0 is refused.
pub(crate) fn tile_or(launch: &Launch, default: usize) -> Result<usize, BackendError> {
    match launch.tile {
        Some(0) => Err(BackendError::BadLaunch("tile must be at least 1".to_string())),
        Some(t) => Ok(t as usize),
        None => Ok(default.max(1)),
    }
}

/// The error for buffers that do not match the kernel's `buffers()`.
pub(crate) fn mismatch(case: &Case, bufs: &[HostBuf], expected: &str) -> BackendError {
    let got: Vec<String> = bufs.iter().map(|b| format!("{} x {}", b.len(), b.kind())).collect();
    BackendError::Other(format!(
        "kernel {} ({}): expected buffers {expected}, got [{}]",
        case.kernel,
        case.label(),
        got.join(", ")
    ))
}

/// Checks that every length in `lens` is `want`.
pub(crate) fn check_lens(case: &Case, lens: &[usize], want: &[usize]) -> Result<(), BackendError> {
    if lens == want {
        Ok(())
    } else {
        Err(BackendError::Other(format!(
            "kernel {} ({}): buffer lengths {lens:?}, expected {want:?}",
            case.kernel,
            case.label()
        )))
    }
}
