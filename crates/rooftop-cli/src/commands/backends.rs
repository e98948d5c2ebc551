//! The backends `--backend` selects, with the GPU ones behind cargo features: a build
//! without a feature still accepts the name and says how to get it.

use crate::error::{CliError, Result};
use clap::ValueEnum;
use rooftop_bench::backend::Backend;
use rooftop_bench::ceilings::{CeilingOptions, Ceilings};
use rooftop_bench::cpu::CpuBackend;
use rooftop_bench::harness::TimingOptions;
use rooftop_bench::mock::{MockBackend, MockConfig};
use rooftop_core::device::DeviceSpec;

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

/// A backend and what it knows about its device.
pub(crate) enum AnyBackend {
    Cpu(Box<CpuBackend>),
    Mock(MockBackend),
    #[cfg(feature = "cuda")]
    Cuda(Box<rooftop_bench::cuda::CudaBackend>),
    #[cfg(feature = "wgpu")]
    Wgpu(Box<rooftop_bench::wgpu::WgpuBackend>),
}

/// The error for a backend this binary was built without.
#[allow(dead_code)]
fn not_built(backend: &str, feature: &str) -> CliError {
    CliError::input(format!(
        "--backend {backend}: this rooftop was built without the `{feature}` feature; \
         rebuild with `cargo build --release --features {feature}`"
    ))
}

impl AnyBackend {
    /// Opens the backend; `adapter` picks a GPU (index or part of its name).
    pub(crate) fn new(kind: BackendKind, adapter: Option<&str>) -> Result<AnyBackend> {
        if adapter.is_some() && matches!(kind, BackendKind::Cpu | BackendKind::Mock) {
            return Err(CliError::input(
                "--adapter only applies to --backend cuda or --backend wgpu",
            ));
        }
        Ok(match kind {
            BackendKind::Cpu => AnyBackend::Cpu(Box::new(CpuBackend::new())),
            BackendKind::Mock => AnyBackend::Mock(MockBackend::new(MockConfig::from_env())),
            #[cfg(feature = "cuda")]
            BackendKind::Cuda => AnyBackend::Cuda(Box::new(
                rooftop_bench::cuda::CudaBackend::open(adapter)
                    .map_err(|e| CliError::Runtime(format!("--backend cuda: {e}")))?,
            )),
            #[cfg(not(feature = "cuda"))]
            BackendKind::Cuda => return Err(not_built("cuda", "cuda")),
            #[cfg(feature = "wgpu")]
            BackendKind::Wgpu => AnyBackend::Wgpu(Box::new(
                rooftop_bench::wgpu::WgpuBackend::open(adapter)
                    .map_err(|e| CliError::Runtime(format!("--backend wgpu: {e}")))?,
            )),
            #[cfg(not(feature = "wgpu"))]
            BackendKind::Wgpu => return Err(not_built("wgpu", "wgpu")),
        })
    }

    pub(crate) fn as_dyn(&mut self) -> &mut dyn Backend {
        match self {
            AnyBackend::Cpu(b) => b.as_mut(),
            AnyBackend::Mock(b) => b,
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.as_mut(),
            #[cfg(feature = "wgpu")]
            AnyBackend::Wgpu(b) => b.as_mut(),
        }
    }

    /// The device's theoretical spec (datasheet / the CPU's own reports), given the
    /// measured ceilings for what the device cannot tell (a CPU's DRAM bandwidth).
    pub(crate) fn device_spec(&self, ceilings: Option<&Ceilings>) -> Result<DeviceSpec> {
        match self {
            AnyBackend::Cpu(b) => {
                b.cpu().device_spec(ceilings).map_err(|e| CliError::input(e.to_string()))
            }
            AnyBackend::Mock(_) => Ok(rooftop_bench::mock::device_spec()),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => {
                b.device_spec(ceilings).map_err(|e| CliError::Runtime(e.to_string()))
            }
            #[cfg(feature = "wgpu")]
            AnyBackend::Wgpu(b) => {
                b.device_spec(ceilings).map_err(|e| CliError::Runtime(e.to_string()))
            }
        }
    }

    /// Ceilings measurement options for this backend.
    pub(crate) fn ceiling_options(&self, quick: bool, timing: TimingOptions) -> CeilingOptions {
        match self {
            AnyBackend::Cpu(b) => CeilingOptions::for_cpu(b.cpu(), quick, timing),
            AnyBackend::Mock(_) => CeilingOptions::new(quick, timing),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.ceiling_options(quick, timing),
            #[cfg(feature = "wgpu")]
            AnyBackend::Wgpu(b) => b.ceiling_options(quick, timing),
        }
    }
}
