//! rooftop's benchmark harness.
//!
//! A [`Backend`] allocates buffers, uploads inputs, runs a named kernel
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
//! pipeline), `cuda` and `wgpu` behind the cargo features of those names; [`any`] opens
//! whichever one is asked for. [`job`] is a whole `rooftop bench` run as one call: plan,
//! quick ceilings, every case, exports, comparisons.
//!
//! # Benchmark your own kernel
//!
//! A kernel of your own is described by a [`spec::KernelSpec`] (its sizes, buffers and
//! what it computes: here the suite's `copy`, whose reference checks it and whose work
//! model gives its bytes), so that it implements [`suite::Kernel`] like the suite's
//! kernels; a [`spec::HostBackend`] runs it as a Rust closure. The harness checks it
//! against the reference on random inputs before timing it (`examples/own-kernel` does
//! the same for two SGEMMs, with this CPU's roofs).
//!
//! ```
//! use rooftop_bench::backend::{DType, HostBuf};
//! use rooftop_bench::harness::TimingOptions;
//! use rooftop_bench::spec::{self, BufferDecl, HostBackend, HostCall, KernelSpec, SpecSet};
//! use rooftop_bench::suite::KernelId;
//! use rooftop_bench::Selection;
//!
//! /// b = a. (The harness may hand an output longer than the kernel writes, with a guard
//! /// past the end that the check looks at: write only what the kernel owns.)
//! fn my_copy(call: &mut HostCall<'_>) -> Result<(), String> {
//!     let n = call.size("N");
//!     match &mut call.buffers[..] {
//!         [HostBuf::F32(a), HostBuf::F32(b)] => {
//!             b[..n].copy_from_slice(&a[..n]);
//!             Ok(())
//!         }
//!         _ => Err("expected two f32 buffers".to_string()),
//!     }
//! }
//!
//! let spec = KernelSpec::builtin("my_copy", KernelId::Copy, &[("n", "N")])?
//!     .sizes(&["N"], &[&[4096]])
//!     .buffer(BufferDecl::input("a", DType::F32, "N")?)
//!     .buffer(BufferDecl::output("b", DType::F32, "N")?);
//! let set = SpecSet::new(&[spec])?;
//! let mut host = HostBackend::new();
//! host.register("my_copy", my_copy);
//!
//! // A short timing budget: one warm-up run, three samples.
//! let timing = TimingOptions {
//!     warmup_runs: 1,
//!     warmup_time_s: 0.0,
//!     min_runs: 3,
//!     min_time_s: 0.0,
//!     ..TimingOptions::default()
//! };
//! let results =
//!     spec::run::bench_kernel(&mut host, &set, "my_copy", &Selection::default(), false, &timing)?;
//! assert_eq!(results.len(), 1);
//! assert!(results[0].check.passed, "{:?}", results[0].check.first_failure);
//! let t = results[0].timing.as_ref().expect("timed after the check passed");
//! assert!(t.stats.median_s > 0.0 && t.times_s.len() >= 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod any;
pub mod backend;
pub mod case;
pub mod ceilings;
pub mod cpu;
pub mod error;
pub mod export;
pub mod harness;
pub mod job;
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
pub use case::{Case, KernelRef, Selection, Variant, WeightFormatKind};
pub use error::{BackendError, BenchError, DeviceFileWriteError, SuiteError};
pub use suite::KernelId;
