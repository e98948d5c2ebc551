//! rooftop's benchmark harness.
//!
//! A [`Backend`](backend::Backend) allocates buffers, uploads inputs, runs a named kernel
//! with a launch configuration, times it and reads results back. The [`suite`] states,
//! for every kernel, its buffers, its reference implementation and tolerance, and its
//! work (FLOPs and bytes through `rooftop-core`'s work models). The [`harness`] checks a
//! kernel's output against the reference on fresh random input before it times anything,
//! then times it as hyperfine times commands (warm-up, at least N runs and T seconds, raw
//! samples kept, outliers flagged). [`export`] turns results into the documented JSON
//! schema (`docs/bench-schema.md`) with achieved rates against measured and theoretical
//! roofs. [`ceilings`] measures a machine's real roofs with the same kernels.
//!
//! Backends: [`cpu`] (always), [`mock`] (deterministic, for tests of the whole
//! pipeline), CUDA and wgpu behind features (later issues).

pub mod backend;
pub mod case;
pub mod ceilings;
pub mod cpu;
pub mod error;
pub mod export;
pub mod harness;
pub mod mock;
pub mod rng;
pub mod spec;
pub mod stats;
pub mod suite;
pub mod workspace;

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "wgpu")]
pub mod wgpu;

pub use backend::{
    Backend, BackendInfo, BufId, DType, HostBuf, Implementation, KernelCall, Launch, Scalar,
    SourceKernel, SourceLang,
};
pub use case::{Case, Selection};
pub use error::{BackendError, BenchError, SuiteError};
