//! The normalised content of a PyTorch profiler (Kineto) trace, as the reader in
//! `rooftop-ingest` produces it and the analysis in [`super`] consumes it.
//!
//! Times are integer nanoseconds on the trace's own clock (Kineto writes microseconds
//! with three decimals). Indices are positions in the model's vectors.

use serde::{Serialize, Serializer};
use std::sync::Arc;

/// What produced the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Schema {
    /// `cpu_op`, `kernel`, `cuda_runtime`, `ac2g` flows (PyTorch ≥ 1.9).
    #[default]
    Current,
    /// 2021 legacy: `Operator`, `Kernel`, `Runtime`, flow category `async`.
    Legacy,
}

/// One GPU (or the single device) as `deviceProperties` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct TraceDevice {
    /// Device index as the trace numbers it (`id`).
    pub index: i64,
    pub name: String,
    /// SMs / CUs (`numSms`), if given.
    pub num_sms: Option<u32>,
    /// Compute capability `major.minor`, if given.
    pub compute_capability: Option<String>,
    pub total_memory_bytes: Option<u64>,
    /// Threads per warp / wavefront (`warpSize`: 32 on NVIDIA, 64 on AMD CDNA).
    pub warp_size: Option<u32>,
    /// The peak (boost) clock, when the profile states it (XPlane `clock_rate`). Tells
    /// apart parts that share a name or gfx target (MI350X at 2.2 GHz, MI355X at 2.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clock_mhz: Option<f64>,
}

/// One argument's shape as Kineto records it in `Input Dims`: a tensor's dims, a
/// tensor list's dims, or nothing (scalars, `None`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Dims {
    Tensor(Vec<i64>),
    List(Vec<Vec<i64>>),
}

impl Dims {
    /// The dims of a plain tensor argument (an empty list for scalars).
    pub fn tensor(&self) -> Option<&[i64]> {
        match self {
            Dims::Tensor(d) => Some(d),
            Dims::List(_) => None,
        }
    }
}

/// The recorded arguments of a CPU op (`record_shapes=True`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Default)]
pub struct OpArgs {
    /// `Input Dims` (legacy: `Input dims`), one entry per argument.
    pub input_dims: Vec<Dims>,
    /// `Input type` (`c10::BFloat16`, `float`, `Scalar`, `ScalarList`, ...).
    pub input_types: Vec<String>,
    /// `Input Strides`, one entry per argument, when recorded.
    pub input_strides: Vec<Dims>,
    /// `Concrete Inputs` as strings (`''` for tensors, `'1'`, `'False'`, `'[1, 1]'`).
    pub concrete_inputs: Vec<String>,
}

/// A CPU op (`cpu_op`, legacy `Operator`) with its place in the per-thread call tree.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct CpuOp {
    /// Shared between the ops of one name (a step runs the same few hundred ops
    /// thousands of times): one allocation per name, not per op.
    pub name: Arc<str>,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub pid: i64,
    pub tid: i64,
    /// `External id` (legacy `external id`).
    pub external_id: Option<i64>,
    /// Kineto's `Record function id`/`Ev Idx`, when present.
    pub seq: Option<i64>,
    /// Autograd `Sequence number`: a backward op carries the number of the forward op
    /// it differentiates.
    pub sequence_number: Option<i64>,
    /// Shared between ops with identical arguments: a trace repeats the same few
    /// shapes every step (65 distinct argument lists for 1,258 ops in the TraceLens
    /// H100 ViT trace), and one copy per op was ~0.7 kB of heap each. Reads through
    /// `op.args.input_dims` as before; build one with `OpArgs { .. }.into()`.
    #[serde(serialize_with = "serialize_args")]
    pub args: Arc<OpArgs>,
    /// The innermost enclosing CPU op on the same thread.
    pub parent: Option<u32>,
    pub children: Vec<u32>,
    /// GPU events launched by runtime calls made directly inside this op (not inside a
    /// child op), in launch order.
    pub launched: Vec<u32>,
    /// Collective arguments of a `record_param_comms` op (`None` for every other op).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<Box<CommArgs>>,
}

fn serialize_args<S: Serializer>(args: &Arc<OpArgs>, s: S) -> Result<S::Ok, S::Error> {
    args.as_ref().serialize(s)
}

/// Kind of GPU activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GpuKind {
    #[default]
    Kernel,
    Memcpy,
    Memset,
}

impl GpuKind {
    /// The kind as the reports name it (`kernel`, `memcpy`, `memset`: its serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            GpuKind::Kernel => "kernel",
            GpuKind::Memcpy => "memcpy",
            GpuKind::Memset => "memset",
        }
    }
}

/// One GPU activity (`kernel`, `gpu_memcpy`, `gpu_memset`; legacy `Kernel`, `Memcpy`,
/// `Memset`).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct GpuEvent {
    pub kind: GpuKind,
    /// Shared: the readers keep one copy of each distinct name (a trace runs the same
    /// kernels, with names of hundreds of bytes, thousands of times).
    pub name: Arc<str>,
    pub ts_ns: i64,
    pub dur_ns: i64,
    /// `pid` of a GPU track is the device index.
    pub device: i64,
    pub stream: i64,
    pub correlation: Option<i64>,
    pub external_id: Option<i64>,
    /// Grid, block, shared memory and registers, when the trace states any
    /// ([`GpuEvent::grid`] and the other accessors read through it). Shared between
    /// the events of one launch configuration: inline, the four fields were 56 of a
    /// GPU event's 200 bytes, and every analysis pass over the events read them.
    #[serde(flatten, serialize_with = "serialize_launch")]
    pub launch: Option<Arc<LaunchDims>>,
    /// Bytes copied or set (`gpu_memcpy` / `gpu_memset` `bytes`; ROCm copies: the
    /// runtime event's `size`).
    pub bytes: Option<u64>,
    /// The runtime call that launched it (`cudaLaunchKernel`, `hipGraphLaunch`, ...),
    /// found by `correlation` or a launch flow; `None` when no runtime call matches.
    /// Shared, like [`GpuEvent::name`].
    pub launcher: Option<Arc<str>>,
    /// The innermost CPU op enclosing that runtime call; without one, the op with the
    /// activity's `External id`.
    pub op: Option<u32>,
    /// Index in [`TraceModel::runtime`] of the launching runtime call, when one matched.
    pub runtime: Option<u32>,
    /// Collective arguments Kineto copies onto NCCL/RCCL kernels (PyTorch ≥ 2.1);
    /// `None` for every other event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comm: Option<Box<CommArgs>>,
}

// serde hands a `serialize_with` function a reference to the field's own type.
#[allow(clippy::ref_option)]
fn serialize_launch<S: Serializer>(
    launch: &Option<Arc<LaunchDims>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    launch.as_deref().copied().unwrap_or_default().serialize(s)
}

/// How a kernel was launched, as far as the trace states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub struct LaunchDims {
    /// Grid in blocks (workgroups) for both vendors. From the kernel event, or on ROCm
    /// from its runtime launch event; `hipExtModuleLaunchKernel` states a global work
    /// size in work-items (its HIP signature), which the reader divides by the block
    /// (rounding up).
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub shared_memory_bytes: Option<u64>,
    pub registers_per_thread: Option<u32>,
}

impl LaunchDims {
    /// A copy of its own for one event (readers share copies through a [`LaunchPool`]);
    /// `None` when it states nothing.
    pub fn shared(self) -> Option<Arc<LaunchDims>> {
        (self != LaunchDims::default()).then(|| Arc::new(self))
    }
}

impl GpuEvent {
    /// Grid in blocks (workgroups), when known ([`LaunchDims::grid`]).
    pub fn grid(&self) -> Option<[u32; 3]> {
        self.launch.as_ref().and_then(|l| l.grid)
    }

    /// Block (workgroup) size in threads, when known.
    pub fn block(&self) -> Option<[u32; 3]> {
        self.launch.as_ref().and_then(|l| l.block)
    }

    /// Shared (LDS) memory per block in bytes, when known.
    pub fn shared_memory_bytes(&self) -> Option<u64> {
        self.launch.as_ref().and_then(|l| l.shared_memory_bytes)
    }

    /// Registers per thread, when known.
    pub fn registers_per_thread(&self) -> Option<u32> {
        self.launch.as_ref().and_then(|l| l.registers_per_thread)
    }

    /// The launch configuration (every field `None` when the trace states none).
    pub fn launch_dims(&self) -> LaunchDims {
        self.launch.as_deref().copied().unwrap_or_default()
    }
}

/// One shared copy of each distinct launch configuration, for the readers that make
/// [`GpuEvent`]s.
#[derive(Debug, Default)]
pub struct LaunchPool {
    pool: foldhash::HashSet<Arc<LaunchDims>>,
}

impl LaunchPool {
    /// The shared copy of `dims`; `None` when it states nothing.
    pub fn get(&mut self, dims: LaunchDims) -> Option<Arc<LaunchDims>> {
        if let Some(d) = self.pool.get(&dims) {
            return Some(Arc::clone(d));
        }
        let d = dims.shared()?;
        self.pool.insert(Arc::clone(&d));
        Some(d)
    }
}

/// The collective arguments PyTorch records on `record_param_comms` and libkineto
/// copies onto the collective's GPU kernel (`output_json.cpp`, `appendCollectiveArgs`).
/// Every field is optional: older traces write fewer of them, and a field of an
/// unexpected type reads as absent. The texts are shared: a trace repeats the same few
/// groups, types and collectives on every collective, and a record copies them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct CommArgs {
    /// `Collective name` (`allreduce`, `_allgather_base`, `reduce_scatter_tensor_coalesced`,
    /// `all_to_allv`, `send`, ...).
    pub collective: Option<Arc<str>>,
    /// `In msg nelems`: elements in the input (all input tensors).
    pub in_nelems: Option<u64>,
    /// `Out msg nelems`.
    pub out_nelems: Option<u64>,
    /// `Group size`: ranks in the process group.
    pub group_size: Option<u32>,
    /// `dtype` as c10 names it (`Float`, `BFloat16`, `Half`, `Long`, ...).
    pub dtype: Option<Arc<str>>,
    /// `Process Group Name`: the group's id, the same on every member (`"0"` is the
    /// default group).
    pub pg_name: Option<Arc<str>>,
    /// `Process Group Description` (`default_pg`, `mesh_tp`, ...).
    pub pg_desc: Option<Arc<str>>,
    /// `Process Group Ranks` as written: `"[0, 1, 2, 3]"`; PyTorch truncates lists of
    /// more than 30 ranks to `"[0, 1, ..., 28, 63]"`.
    pub pg_ranks: Option<Arc<str>>,
    /// `In split size` (all-to-all-v sends per destination, in elements), as written.
    pub in_split: Option<Arc<str>>,
    /// `Out split size`, as written.
    pub out_split: Option<Arc<str>>,
    /// `Seq`: the collective's sequence number in its group (newer PyTorch).
    pub seq: Option<i64>,
    /// `Src Rank` / `Dst Rank` of point-to-point ops.
    pub src_rank: Option<i64>,
    pub dst_rank: Option<i64>,
}

/// A `gpu_user_annotation` range (or `user_annotation` on the CPU).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Annotation {
    pub name: String,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub on_gpu: bool,
}

/// A CUDA/HIP runtime or driver call (`cuda_runtime`, `cuda_driver`, legacy `Runtime`):
/// launches, copies, synchronisations, event records, allocations.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct RuntimeCall {
    /// Shared, like [`GpuEvent::name`].
    pub name: Arc<str>,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub pid: i64,
    pub tid: i64,
    pub correlation: Option<i64>,
    /// The innermost CPU op on the same thread enclosing the call (as for
    /// [`GpuEvent::op`]).
    pub op: Option<u32>,
}

/// What a `cuda_sync` event synchronises (`cuda_sync_kind`, PyTorch ≥ 2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SyncKind {
    /// `Context Sync`: `cudaDeviceSynchronize`, every stream.
    Context,
    /// `Stream Sync`: `cudaStreamSynchronize` (and synchronous copies).
    Stream,
    /// `Event Sync`: `cudaEventSynchronize`.
    Event,
    /// `Stream Wait Event`: `cudaStreamWaitEvent`, a stream waits for an event recorded on
    /// another stream (no CPU blocking).
    StreamWaitEvent,
    #[default]
    Other,
}

/// The GPU side of a synchronisation (`cuda_sync` events on a stream's track).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct SyncEvent {
    pub kind: SyncKind,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub device: i64,
    /// The stream synchronised or made to wait (`4294967295`, i.e. all, for a context
    /// sync).
    pub stream: i64,
    pub correlation: Option<i64>,
    /// `wait_on_stream`: the stream whose event is waited for (`Stream Wait Event`,
    /// `Event Sync`).
    pub wait_on_stream: Option<i64>,
    /// `wait_on_cuda_event_record_corr_id`: the correlation of the `cudaEventRecord`
    /// that recorded the event waited for.
    pub wait_on_record_correlation: Option<i64>,
    /// Index in [`TraceModel::runtime`] of the runtime call with the same correlation.
    pub runtime: Option<u32>,
}

/// A Python `nn.Module` call: a `python_function` event named `nn.Module: X_n`
/// (`with_stack=True` or `with_modules=True`).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ModuleCall {
    /// The module's name without the `nn.Module: ` prefix (`Linear_3`).
    pub name: String,
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub pid: i64,
    pub tid: i64,
}

/// A `[memory]` instant event of the caching allocator (`profile_memory=True`).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct MemoryEvent {
    pub ts_ns: i64,
    pub pid: i64,
    pub tid: i64,
    /// `Bytes`: positive for an allocation, negative for a free.
    pub bytes: i64,
    /// `Addr`, the block's address.
    pub addr: Option<i64>,
    /// `Total Allocated` after the event, bytes.
    pub total_allocated: Option<i64>,
    /// `Total Reserved` after the event, bytes.
    pub total_reserved: Option<i64>,
    /// `Device Type` (0: CPU, 1: CUDA, as `c10::DeviceType` numbers them).
    pub device_type: Option<i64>,
    /// `Device Id` (-1 for the CPU).
    pub device_id: Option<i64>,
}

/// A counted problem the reader tolerated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceWarning {
    /// Stable key. The reader's: `missing_device_properties`, `missing_field`,
    /// `bad_timestamp`, `negative_duration`, `unknown_category`, `unsupported_phase`,
    /// `bad_event`, `unlinked_gpu_event`, `gpu_event_without_op`, `no_gpu_events`,
    /// `duplicate_gpu_event`.
    pub kind: String,
    pub count: u64,
    /// One example, with its byte offset, line and column when known.
    pub example: String,
}

/// Everything the analysis needs from one trace file (one rank).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct TraceModel {
    pub schema: Schema,
    pub devices: Vec<TraceDevice>,
    /// `cpu_op` (legacy `Operator`) events, sorted by (pid, tid, ts, longer first).
    pub ops: Vec<CpuOp>,
    /// Sorted by (ts, device, stream).
    pub gpu: Vec<GpuEvent>,
    /// Sorted by ts. Legacy traces' `ProfilerStep#N` operators are annotations here, as
    /// in the current schema.
    pub annotations: Vec<Annotation>,
    /// `distributedInfo.rank`, when present.
    pub rank: Option<i64>,
    /// `distributedInfo.world_size`, when present.
    pub world_size: Option<i64>,
    /// `baseTimeNanoseconds`: epoch offset of the `ts` clock, when the trace states it.
    pub base_time_ns: Option<i64>,
    pub warnings: Vec<TraceWarning>,
    /// What a JAX/XLA profile (XPlane) carries beyond this model: the HLO instruction
    /// of each op, modules, host threads, step markers. `None` for Kineto traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xla: Option<Box<super::xla::XlaInfo>>,
    /// Every runtime and driver call, sorted by (pid, tid, ts).
    pub runtime: Vec<RuntimeCall>,
    /// `cuda_sync` events, sorted by ts.
    pub syncs: Vec<SyncEvent>,
    /// `nn.Module` calls, sorted by (pid, tid, ts, longer first).
    pub modules: Vec<ModuleCall>,
    /// `[memory]` allocator events, sorted by ts (file order among equal times).
    pub memory: Vec<MemoryEvent>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_configuration_is_one_shared_copy_and_reads_back_through_the_event() {
        // The four launch fields inline took 56 bytes of every GPU event; shared, 8.
        assert_eq!(std::mem::size_of::<Option<Arc<LaunchDims>>>(), 8);
        assert!(std::mem::size_of::<GpuEvent>() <= 152, "a GPU event grew");
        let mut pool = LaunchPool::default();
        assert_eq!(pool.get(LaunchDims::default()), None, "nothing stated: no copy");
        let dims = LaunchDims {
            grid: Some([132, 1, 1]),
            block: Some([384, 1, 1]),
            shared_memory_bytes: Some(50_176),
            registers_per_thread: Some(64),
        };
        let a = pool.get(dims).unwrap();
        let b = pool.get(dims).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "equal configurations share one copy");
        let other = pool.get(LaunchDims { registers_per_thread: Some(32), ..dims }).unwrap();
        assert!(!Arc::ptr_eq(&a, &other));
        let g = GpuEvent { launch: Some(a), ..GpuEvent::default() };
        assert_eq!(
            (g.grid(), g.block(), g.shared_memory_bytes(), g.registers_per_thread()),
            (Some([132, 1, 1]), Some([384, 1, 1]), Some(50_176), Some(64))
        );
        assert_eq!(g.launch_dims(), dims);
        let none = GpuEvent::default();
        assert_eq!(
            (none.grid(), none.block(), none.launch_dims()),
            (None, None, LaunchDims::default())
        );
        // Serialized as the four fields were, in their place.
        let json = serde_json::to_value(&g).unwrap();
        assert_eq!(json["grid"], serde_json::json!([132, 1, 1]));
        assert_eq!(json["registers_per_thread"], 64);
        assert_eq!(serde_json::to_value(&none).unwrap()["block"], serde_json::Value::Null);
    }
}
