//! Readers of profiler outputs for rooftop. Each reader turns a file into a model type
//! of `rooftop-core` and never prints: problems are errors with the position of the bad
//! input, or counted warnings inside the model.
//!
//! - [`kineto`]: PyTorch profiler (Kineto) Chrome-trace JSON → `TraceModel`.
//! - [`xplane`]: JAX / XLA profiles (XSpace protobuf, `*.xplane.pb`) → `TraceModel`.

pub mod counters;
pub mod kineto;
mod mmap;
pub mod xplane;
