//! PyTorch profiler trace analysis: TraceLens-equivalent tables (GPU timeline, ops
//! summary, per-category roofline tables, kernels, short kernels) plus roofline
//! attainment, bound, tile/wave efficiency and findings.

pub mod model;

pub use model::{
    Annotation, CpuOp, Dims, GpuEvent, GpuKind, OpArgs, Schema, TraceDevice, TraceModel,
    TraceWarning,
};
