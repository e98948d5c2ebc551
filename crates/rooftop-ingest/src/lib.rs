//! Readers of profiler outputs for rooftop. Each reader turns a file into a model type
//! of `rooftop-core` and never prints: problems are errors with the position of the bad
//! input, or counted warnings inside the model.
//!
//! - [`kineto`]: PyTorch profiler (Kineto) Chrome-trace JSON → `TraceModel`;
//! - [`xplane`]: JAX / XLA profiles (XSpace protobuf, `*.xplane.pb`) → `TraceModel`;
//! - [`counters`]: vendor profiler outputs (rocprof*, Nsight Compute, Nsight Systems,
//!   their CSV, JSON and SQLite forms) → `CounterSet`;
//! - [`compressed`]: every user file may be gzip-compressed (told by content);
//! - [`model_config`]: Hugging Face `config.json` files and built-in presets →
//!   `ModelConfig` (for `rooftop_core::model`);
//! - [`session`]: profiling sessions: run a program under ncu, nsys or rocprof* with a
//!   counter preset, then read what the profiler wrote with the [`counters`] readers;
//! - [`source`]: one trace of any of these formats, told by content, or a directory of
//!   per-rank traces / per-host profiles (what `rooftop trace` reads).

pub mod compressed;
pub mod counters;
pub mod kineto;
mod mmap;
pub mod model_config;
pub mod session;
pub mod source;
pub mod xplane;

pub use source::{read, read_one, ReadError};

/// What a program reading a trace needs, with `rooftop_core`'s prelude:
///
/// ```no_run
/// use rooftop_ingest::prelude::*;
///
/// let model = read(std::path::Path::new("step.trace.json.gz"))?;
/// let report = TraceReport::of(&model);
/// for op in report.top_ops(10) {
///     println!("{} {:.1} µs {:?}", op.name, op.kernel_time_us.sum, op.roofline_attainment_pct);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub mod prelude {
    pub use crate::kineto::ReadOptions;
    pub use crate::source::{read, read_one, ReadError};
    pub use rooftop_core::prelude::*;
}
