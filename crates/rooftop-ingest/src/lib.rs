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
