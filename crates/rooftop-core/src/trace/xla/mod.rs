//! JAX / XLA profiles (XPlane): what a [`TraceModel`] read from an `*.xplane.pb` carries
//! beyond the PyTorch shape of the model, and the XLA analysis on top of it.
//!
//! The XPlane reader (`rooftop_ingest::xplane`) turns a profile into the same
//! [`TraceModel`] the Kineto reader produces, so the timeline, kernel summary, short
//! kernels and findings apply unchanged:
//! - every device activity (kernel, memcpy, memset) is a [`GpuEvent`];
//! - every execution of an HLO instruction on a device is a [`CpuOp`](super::CpuOp)
//!   named after the instruction (`gemm_fusion_dot.3`), whose `launched` events are the
//!   kernels that carried its `hlo_op` stat; its `args` hold the instruction's operand
//!   shapes and element types;
//! - [`XlaInfo`] (the model's `xla` field) holds, parallel to `ops`, the HLO instruction
//!   each op executed (decoded from the `HloProto` the profile's `/host:metadata` plane
//!   carries), and the modules, host threads and step markers of the profile.
//!
//! Submodules: [`hlo`] (shapes, element types, instructions), [`classify`] (XLA op
//! categories), [`work`] (roofline work models from HLO: GEMMs, convolutions, fused
//! attention, memory-bound ops), [`collective`] (message sizes, algorithm and bus
//! bandwidth), [`report`] (the XLA section of the trace report).

pub mod classify;
pub mod collective;
pub mod hlo;
pub mod report;
pub mod work;

use super::model::{GpuEvent, GpuKind, TraceModel};
use super::ops::{Category, OpModel, OpModelError, Table};
use hlo::HloInstr;
use serde::Serialize;
use std::sync::Arc;

/// How the profile lays out what the analysis reads (`docs/jax.md`, "Layouts").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum XplaneLayout {
    /// Device activities on `Stream #N` lines with their `hlo_op`/`hlo_module` stats on
    /// each event (the CUPTI and ROCm tracers of JAX on GPU).
    #[default]
    EventStats,
    /// Device activities on `Stream #N` lines with the per-kernel stats on the event
    /// metadata, shared by every launch of the kernel.
    MetadataStats,
    /// No stream lines: the device's `XLA Ops` line is the activity (TPU planes and
    /// profiles already processed by XProf).
    XlaOpsLine,
}

impl XplaneLayout {
    pub fn as_str(self) -> &'static str {
        match self {
            XplaneLayout::EventStats => "stream lines, stats on each event",
            XplaneLayout::MetadataStats => "stream lines, stats on event metadata",
            XplaneLayout::XlaOpsLine => "XLA Ops lines (no stream lines)",
        }
    }
}

/// One XLA module (a jitted computation) seen in the profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct XlaModule {
    /// `hlo_module` (`jit_loss_fn`).
    pub name: String,
    /// `program_id` (the number in `jit_loss_fn(17)`), when stated.
    pub program_id: Option<i64>,
    /// Whether the profile carries the module's HLO (its ops have shapes).
    pub has_hlo: bool,
}

/// What the analysis knows about one op of the model (same index as `model.ops`).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct XlaOp {
    /// Index in [`XlaInfo::modules`].
    pub module: Option<u32>,
    /// The module execution this op ran in, numbered from 0 per (device, module).
    pub run: u32,
    /// The `hlo_op` name as the profile states it (one shared copy per name).
    pub hlo_op: Arc<str>,
    /// The HLO instruction, when the module's HLO is in the profile (shared by every
    /// execution of the instruction).
    pub instr: Option<Arc<HloInstr>>,
    /// The framework op (`jit(loss_fn)/jvp()/dot_general`): the device event's `name`
    /// stat, else the instruction's metadata.
    pub framework_op: Option<Arc<str>>,
    /// XLA's own cost-analysis FLOPs of one execution, when the profile carries them
    /// (`flops` / `model_flops` stats).
    pub profile_flops: Option<f64>,
    /// XLA's own cost-analysis bytes of one execution (`bytes_accessed` stat).
    pub profile_bytes: Option<f64>,
}

/// One host thread (line of a `/host:` plane): what it spent its time on.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct HostThread {
    /// The plane (`/host:CPU`).
    pub plane: String,
    /// The line's display name (`python3`, `Host Threads/7`).
    pub name: String,
    pub events: u64,
    /// Union of the thread's event intervals.
    pub busy_ns: i64,
    /// First event start and last event end (trace clock).
    pub start_ns: i64,
    pub end_ns: i64,
    /// The outermost events' names by summed duration, longest first (at most 5):
    /// `(name, count, total_ns)`.
    pub top: Vec<(String, u64, i64)>,
}

/// A step marker on the host (`jax.profiler.StepTraceAnnotation`: an event with a
/// `step_num` stat).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepMarker {
    pub name: String,
    pub step: Option<i64>,
    pub ts_ns: i64,
    pub dur_ns: i64,
}

/// Device capabilities the profile states on a device plane.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct XlaDevice {
    /// Device index (`N` of `/device:GPU:N`).
    pub index: i64,
    pub plane: String,
    pub vendor: Option<String>,
    /// `clock_rate`, kHz.
    pub clock_khz: Option<u64>,
    /// `core_count` (SMs / CUs).
    pub core_count: Option<u64>,
    /// `memory_bandwidth`, bytes/s, as the runtime reports it.
    pub memory_bandwidth_bps: Option<f64>,
    pub memory_bytes: Option<u64>,
    /// LLVM target seen in the device's kernel names (`gfx950`), when any.
    pub llvm_target: Option<String>,
}

/// The XLA content of a model read from an XPlane.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct XlaInfo {
    pub layout: XplaneLayout,
    /// `XSpace.hostnames` (one host per file).
    pub hostnames: Vec<String>,
    pub modules: Vec<XlaModule>,
    /// Parallel to `TraceModel::ops`.
    pub ops: Vec<XlaOp>,
    pub devices: Vec<XlaDevice>,
    pub host_threads: Vec<HostThread>,
    pub step_markers: Vec<StepMarker>,
    /// Kernel time XLA replayed from command buffers (CUDA graphs), µs: the kernels it
    /// recorded under a `command_buffer_N` thunk, whether or not they went back to their
    /// own instruction.
    pub command_buffer_kernel_us: f64,
}

impl XlaInfo {
    fn op(&self, i: usize) -> Option<&XlaOp> {
        self.ops.get(i)
    }

    /// The HLO instruction of op `i`, shared by every execution of it.
    pub(crate) fn instr_of(&self, i: usize) -> Option<&Arc<HloInstr>> {
        self.op(i)?.instr.as_ref()
    }
}

/// The roofline table of op `i` of an XLA model (`None`: no work model for its
/// instruction), the hook `ops::op_table_in` calls.
pub fn op_table(model: &TraceModel, i: usize) -> Option<Table> {
    let x = model.xla.as_deref()?;
    let instr = x.op(i)?.instr.as_deref()?;
    work::table_of(instr)
}

/// The work model of op `i` of an XLA model, the hook `ops::model_op_in` calls.
pub fn model_op(model: &TraceModel, i: usize) -> Result<OpModel, OpModelError> {
    let name = model.ops.get(i).map_or("?", |o| o.name.as_ref());
    let Some(op) = model.xla.as_deref().and_then(|x| x.op(i)) else {
        return Err(OpModelError::Unmodelled(name.to_string()));
    };
    match op.instr.as_deref() {
        Some(instr) => work::model(instr),
        None => Err(OpModelError::BadArgs {
            op: name.to_string(),
            reason: "the profile carries no HLO for this op's module (no shapes)".to_string(),
        }),
    }
}

/// The GPU event op `i` is known by: its first kernel, else (an op that launched no
/// kernel) its first memcpy or memset. A command buffer's replay can start with a
/// memset (XLA zeroes a GEMM's workspace); the memset does not make the GEMM a copy.
pub(crate) fn first_kernel(model: &TraceModel, i: usize) -> Option<&GpuEvent> {
    let launched = &model.ops.get(i)?.launched;
    let event = |&e: &u32| model.gpu.get(e as usize);
    launched
        .iter()
        .filter_map(event)
        .find(|g| g.kind == GpuKind::Kernel)
        .or_else(|| launched.first().and_then(event))
}

/// Whether op `i` is the thunk of a command buffer (`command_buffer_N`): XLA records
/// the library kernels (cuBLAS, cuDNN) it replays from a command buffer under the
/// buffer's thunk, so one execution can hold kernels of several categories.
pub fn is_command_buffer(model: &TraceModel, i: usize) -> bool {
    model
        .xla
        .as_deref()
        .and_then(|x| x.op(i))
        .is_some_and(|op| op.instr.is_none() && op.hlo_op.starts_with("command_buffer"))
}

/// The category of kernel `ev` by its own name, where its op does not say it: a kernel
/// of a command buffer's thunk ([`is_command_buffer`]). `None` for every other event
/// (its op's category is its own, as for PyTorch traces).
pub fn own_category(model: &TraceModel, ev: &GpuEvent) -> Option<Category> {
    if ev.kind != GpuKind::Kernel || !ev.op.is_some_and(|o| is_command_buffer(model, o as usize)) {
        return None;
    }
    super::ops::categorize_kernel(&ev.name)
}

/// Our category of op `i` of an XLA model, the hook `ops::categorize_in` calls.
pub fn category(model: &TraceModel, i: usize) -> Category {
    let Some(x) = model.xla.as_deref() else { return Category::Other };
    let first_kernel = first_kernel(model, i).map(|g| g.name.as_ref());
    match x.op(i) {
        Some(op) => classify::classify(op.instr.as_deref(), &op.hlo_op, first_kernel).category,
        None => Category::Other,
    }
}
