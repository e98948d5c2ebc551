//! The backends `--backend` selects ([`rooftop_bench::any`] opens them), and the CLI's
//! reading of the bench library's errors.

use crate::error::{CliError, Result};
use clap::ValueEnum;
use rooftop_bench::any::{self, AnyBackend};
use rooftop_bench::job::JobError;

/// Backends `--backend` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// This machine's CPU cores (always available).
    Cpu,
    /// NVIDIA GPUs through the CUDA driver, NVRTC and cuBLAS (build feature `cuda`).
    Cuda,
    /// Any GPU through wgpu: Vulkan, Metal, DX12 (build feature `wgpu`).
    Wgpu,
    /// Deterministic simulated backend for tests (hidden).
    #[value(hide = true)]
    Mock,
}

/// Opens the backend; `adapter` picks a GPU (index or part of its name).
pub(crate) fn open(kind: BackendKind, adapter: Option<&str>) -> Result<AnyBackend> {
    let kind = match kind {
        BackendKind::Cpu => any::BackendKind::Cpu,
        BackendKind::Cuda => any::BackendKind::Cuda,
        BackendKind::Wgpu => any::BackendKind::Wgpu,
        BackendKind::Mock => any::BackendKind::Mock,
    };
    AnyBackend::open(kind, adapter).map_err(job_error)
}

/// Input errors exit with 2, the rest with 1.
pub(crate) fn job_error(e: JobError) -> CliError {
    match e {
        JobError::Input(m) => CliError::Input(m),
        other => CliError::Runtime(other.to_string()),
    }
}
