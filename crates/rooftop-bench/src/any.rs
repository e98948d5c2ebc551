//! One type for every backend: [`AnyBackend`] opens the backend a [`BackendKind`] names
//! and answers what the [`Backend`] trait does not (the device's theoretical spec, the
//! ceilings options for its caches and peaks). The GPU backends are behind the `cuda`
//! and `wgpu` cargo features; a build without a feature still knows the name and says
//! how to get it.
//!
//! ```
//! use rooftop_bench::any::{AnyBackend, BackendKind};
//!
//! let mut backend = AnyBackend::open(BackendKind::Cpu, None)?;
//! assert_eq!(backend.as_dyn().info().backend, "cpu");
//! # Ok::<(), rooftop_bench::job::JobError>(())
//! ```

use crate::backend::Backend;
use crate::ceilings::{self, CeilingOptions, Ceilings};
use crate::cpu::CpuBackend;
use crate::harness::{Progress, TimingOptions};
use crate::job::JobError;
use crate::mock::{MockBackend, MockConfig};
use rooftop_core::device::DeviceSpec;
use std::sync::atomic::AtomicBool;

/// The backends rooftop knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// This machine's CPU cores (always available).
    Cpu,
    /// NVIDIA GPUs through the CUDA driver, NVRTC and cuBLAS (build feature `cuda`).
    Cuda,
    /// Any GPU through wgpu: Vulkan, Metal, DX12 (build feature `wgpu`).
    Wgpu,
    /// The deterministic simulated backend of the tests ([`crate::mock`]).
    Mock,
}

/// A backend and what it knows about its device.
#[derive(Debug)]
pub enum AnyBackend {
    /// The CPU backend.
    Cpu(Box<CpuBackend>),
    /// The simulated backend.
    Mock(MockBackend),
    /// An NVIDIA GPU.
    #[cfg(feature = "cuda")]
    Cuda(Box<crate::cuda::CudaBackend>),
    /// A GPU through wgpu.
    #[cfg(feature = "wgpu")]
    Wgpu(Box<crate::wgpu::WgpuBackend>),
}

/// The timing of `rooftop ceilings`: every point sampled for at least `min_time_s` seconds
/// and 5 samples.
///
/// # Errors
/// `min_time_s` is not a positive number.
pub fn ceilings_timing(min_time_s: f64) -> Result<TimingOptions, JobError> {
    if !(min_time_s.is_finite() && min_time_s > 0.0) {
        return Err(JobError::Input(format!("--min-time: expected seconds > 0, got {min_time_s}")));
    }
    Ok(TimingOptions { min_time_s, min_runs: 5, ..TimingOptions::default() })
}

/// The error for a backend this build lacks.
#[allow(dead_code)]
fn not_built(backend: &str, feature: &str) -> JobError {
    JobError::Input(format!(
        "--backend {backend}: this rooftop was built without the `{feature}` feature; \
         rebuild with `cargo build --release --features {feature}`"
    ))
}

impl AnyBackend {
    /// Opens the backend; `adapter` picks a GPU (an index or part of its name). The mock
    /// takes its configuration from the environment ([`MockConfig::from_env`]).
    ///
    /// # Errors
    /// An adapter for the CPU or the mock, a backend this build lacks (input errors), or
    /// a GPU that does not open.
    pub fn open(kind: BackendKind, adapter: Option<&str>) -> Result<AnyBackend, JobError> {
        if adapter.is_some() && matches!(kind, BackendKind::Cpu | BackendKind::Mock) {
            return Err(JobError::Input(
                "--adapter only applies to --backend cuda or --backend wgpu".to_string(),
            ));
        }
        Ok(match kind {
            BackendKind::Cpu => AnyBackend::Cpu(Box::default()),
            BackendKind::Mock => AnyBackend::Mock(MockBackend::new(MockConfig::from_env())),
            #[cfg(feature = "cuda")]
            BackendKind::Cuda => AnyBackend::Cuda(Box::new(
                crate::cuda::CudaBackend::open(adapter)
                    .map_err(|e| JobError::Runtime(format!("--backend cuda: {e}")))?,
            )),
            #[cfg(not(feature = "cuda"))]
            BackendKind::Cuda => return Err(not_built("cuda", "cuda")),
            #[cfg(feature = "wgpu")]
            BackendKind::Wgpu => AnyBackend::Wgpu(Box::new(
                crate::wgpu::WgpuBackend::open(adapter)
                    .map_err(|e| JobError::Runtime(format!("--backend wgpu: {e}")))?,
            )),
            #[cfg(not(feature = "wgpu"))]
            BackendKind::Wgpu => return Err(not_built("wgpu", "wgpu")),
        })
    }

    /// The backend behind the [`Backend`] trait.
    pub fn as_dyn(&mut self) -> &mut dyn Backend {
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
    ///
    /// # Errors
    /// A CPU without a known DRAM bandwidth and no ceilings (input), or a GPU whose spec
    /// cannot be built.
    pub fn device_spec(&self, ceilings: Option<&Ceilings>) -> Result<DeviceSpec, JobError> {
        match self {
            AnyBackend::Cpu(b) => {
                b.cpu().device_spec(ceilings).map_err(|e| JobError::Input(e.to_string()))
            }
            AnyBackend::Mock(_) => Ok(crate::mock::device_spec()),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => {
                b.device_spec(ceilings).map_err(|e| JobError::Runtime(e.to_string()))
            }
            #[cfg(feature = "wgpu")]
            AnyBackend::Wgpu(b) => {
                b.device_spec(ceilings).map_err(|e| JobError::Runtime(e.to_string()))
            }
        }
    }

    /// This backend's compute peaks with no memory roof (CPU only: see
    /// [`CpuInfo::compute_only_spec`](crate::cpu::info::CpuInfo::compute_only_spec)).
    pub fn compute_only_spec(&self) -> Option<DeviceSpec> {
        match self {
            AnyBackend::Cpu(b) => b.cpu().compute_only_spec(),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(_) => None,
            #[cfg(feature = "wgpu")]
            AnyBackend::Wgpu(_) => None,
            AnyBackend::Mock(_) => None,
        }
    }

    /// Ceilings measurement options for this backend's caches and peaks.
    pub fn ceiling_options(&self, quick: bool, timing: TimingOptions) -> CeilingOptions {
        match self {
            AnyBackend::Cpu(b) => CeilingOptions::for_cpu(b.cpu(), quick, timing),
            AnyBackend::Mock(_) => CeilingOptions::new(quick, timing),
            #[cfg(feature = "cuda")]
            AnyBackend::Cuda(b) => b.ceiling_options(quick, timing),
            #[cfg(feature = "wgpu")]
            AnyBackend::Wgpu(b) => b.ceiling_options(quick, timing),
        }
    }

    /// Measures this device's ceilings: `quick` (DRAM and the vector FMA peaks) or the
    /// whole sweep, with `timing` (see [`ceilings_timing`]).
    ///
    /// # Errors
    /// The measurement failed.
    pub fn measure_ceilings(
        &mut self,
        quick: bool,
        timing: TimingOptions,
        stop: &AtomicBool,
        progress: &mut dyn FnMut(Progress<'_>),
    ) -> Result<Ceilings, JobError> {
        let opts = self.ceiling_options(quick, timing);
        ceilings::measure(self.as_dyn(), &opts, stop, progress)
            .map_err(|e| JobError::Runtime(format!("measuring the ceilings failed: {e}")))
    }

    /// The device file (docs/device-format.md) of this device with `c`'s measured roofs,
    /// dated today and checked to load back ([`ceilings::checked_device_file`]); `origin`
    /// names the file.
    ///
    /// # Errors
    /// No device spec ([`AnyBackend::device_spec`]), or a file that does not load back.
    pub fn device_file(&self, c: &Ceilings, origin: &str) -> Result<String, JobError> {
        let base = self.device_spec(Some(c))?;
        ceilings::checked_device_file(&base, c, &ceilings::today_utc(), origin)
            .map_err(|e| JobError::Runtime(e.to_string()))
    }
}
