//! PyTorch profiler trace analysis: TraceLens-equivalent tables (GPU timeline, ops
//! summary, per-category roofline tables, kernels, short kernels) plus roofline
//! attainment, bound, tile/wave efficiency and findings.
//!
//! - [`model`]: the normalised trace the reader in `rooftop-ingest` produces.
//! - [`ops`]: op classification (category) and TraceLens-equivalent work models per op.
//! - [`attrib`]: kernels per op, direct and subtree (union of their busy time).
//! - [`tables`]: per-category roofline tables, one row per unique (op, shapes, dtypes).
//! - [`timeline`]: GPU timeline (compute, comm, memcpy, memset, idle; exposed comm).
//! - [`summary`]: ops summary, by category, kernel summary, short kernels.
//! - [`findings`]: trace-wide findings ranked by time at stake.
//! - [`gaps`]: where the time goes between the kernels (HTA's analyses): idle causes,
//!   launch latency and queues, syncs, CUDA graphs, critical path, modules, memory.
//! - [`inference`]: vLLM/SGLang traces: steps by phase, MoE, paged attention, FP8
//!   quantisation models, custom all-reduce kernels as communication.
//! - [`report`]: `TraceReport` (the stable JSON schema) and `analyze()`.
//! - [`xla`]: JAX/XLA profiles (XPlane): HLO, XLA op work models, the XLA report section.
//! - [`comm`]: collectives across ranks (matching, bandwidth, skew, stragglers).
//! - [`ranks`]: multi-rank runs as map (per-rank meta and collectives) and reduce.
//! - [`run`]: what front ends share: the device a trace names, how a multi-rank run
//!   reads its ranks ([`run::RankSource`]) and what it gives back.

pub mod attrib;
pub mod comm;
pub mod findings;
pub mod gaps;
pub mod inference;
pub mod model;
pub mod ops;
pub mod ranks;
pub mod report;
pub mod run;
pub mod summary;
pub mod tables;
pub mod timeline;
pub mod xla;

pub use model::{
    Annotation, CommArgs, CpuOp, Dims, GpuEvent, GpuKind, LaunchDims, LaunchPool, MemoryEvent,
    ModuleCall, OpArgs, RuntimeCall, Schema, SyncEvent, SyncKind, TraceDevice, TraceModel,
    TraceWarning,
};
