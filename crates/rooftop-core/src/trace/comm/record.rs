//! The map step's view of one rank's collectives: one [`CollectiveRecord`] per
//! communication kernel, in start order, with the arguments PyTorch recorded and the
//! computation the GPU ran since the previous collective.
//!
//! Arguments come from the kernel itself (libkineto copies them from the launching
//! `record_param_comms` op onto NCCL kernels, PyTorch ≥ 2.1), else from the nearest
//! enclosing `record_param_comms` op of the launch (older traces), else only the kind
//! the kernel name shows ([`super::kind::CollectiveKind::from_kernel_name`]); each
//! record says which ([`ArgsFrom`]).
//!
//! Invariant: records are in the order of `model.gpu` (start time), times on the
//! trace's own clock; `index` is the position among this rank's communication kernels.

use super::kind::CollectiveKind;
use crate::trace::model::{CommArgs, GpuKind, TraceModel};
use crate::trace::timeline::is_comm;
use serde::Serialize;
use std::sync::Arc;

/// Where a record's arguments came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ArgsFrom {
    /// The kernel's own `args` (PyTorch ≥ 2.1).
    Kernel,
    /// The enclosing `record_param_comms` CPU op.
    Op,
    /// Nothing recorded: the kind (if any) is from the kernel name.
    #[default]
    KernelName,
}

impl ArgsFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            ArgsFrom::Kernel => "kernel",
            ArgsFrom::Op => "record_param_comms",
            ArgsFrom::KernelName => "kernel_name",
        }
    }

    pub fn parse(s: &str) -> Option<ArgsFrom> {
        [ArgsFrom::Kernel, ArgsFrom::Op, ArgsFrom::KernelName].into_iter().find(|a| a.as_str() == s)
    }
}

/// One communication kernel of one rank.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct CollectiveRecord {
    /// Position among this rank's communication kernels (start order).
    pub index: u32,
    pub kernel: String,
    pub device: i64,
    pub stream: i64,
    /// Start on the trace's own clock (add the rank's `base_time_ns` to compare ranks).
    pub ts_ns: i64,
    pub dur_ns: i64,
    pub kind: CollectiveKind,
    pub args_from: ArgsFrom,
    /// The recorded arguments (all `None` when `args_from` is `KernelName`).
    pub args: CommArgs,
    /// Summed duration of the computation kernels that started since the previous
    /// collective of the same process group started on this rank (since the trace
    /// began, for the group's first).
    pub compute_before_ns: i64,
    /// The longest of those: its launching op's name (else the kernel's name).
    pub compute_before: Option<String>,
}

impl CollectiveRecord {
    /// Message size in bytes ([`super::kind::message_bytes`]).
    pub fn message_bytes(&self) -> Option<u64> {
        super::kind::message_bytes(
            self.args.in_nelems,
            self.args.out_nelems,
            self.args.dtype.as_deref(),
        )
    }
}

/// `record_param_comms`: the op PyTorch's c10d wraps each collective call in.
pub const PARAM_COMMS_OP: &str = "record_param_comms";

/// Per process group: the compute total at its previous collective, and the longest
/// computation kernel since (duration, position).
type Window = (i64, Option<(i64, usize)>);

/// The collectives of one rank's trace.
pub fn collectives(model: &TraceModel) -> Vec<CollectiveRecord> {
    use foldhash::HashMap;
    let mut out = Vec::new();
    // Computation since the previous collective of the same process group: a running
    // total of compute time, its value at each group's previous collective, and per
    // group the longest kernel since then.
    let mut compute_ns: i64 = 0;
    let mut groups: HashMap<Option<Arc<str>>, Window> = HashMap::default();
    // The kind of each collective name, read once per name (a trace repeats a few).
    let mut kinds: HashMap<Arc<str>, Option<CollectiveKind>> = HashMap::default();
    for (i, ev) in model.gpu.iter().enumerate() {
        if !is_comm(ev) {
            if ev.kind == GpuKind::Kernel {
                compute_ns += ev.dur_ns;
                for (_, longest) in groups.values_mut() {
                    if longest.is_none_or(|(d, _)| ev.dur_ns > d) {
                        *longest = Some((ev.dur_ns, i));
                    }
                }
            }
            continue;
        }
        let (args, args_from) = match (&ev.comm, enclosing_comm_op(model, ev.op)) {
            (Some(a), _) => ((**a).clone(), ArgsFrom::Kernel),
            (None, Some(a)) => (a.clone(), ArgsFrom::Op),
            (None, None) => (CommArgs::default(), ArgsFrom::KernelName),
        };
        let kind = args
            .collective
            .as_ref()
            .and_then(|c| match kinds.get(c.as_ref()) {
                Some(&k) => k,
                None => {
                    *kinds.entry(Arc::clone(c)).or_insert(CollectiveKind::from_collective_name(c))
                }
            })
            .or_else(|| CollectiveKind::from_kernel_name(&ev.name))
            .unwrap_or_default();
        // A group's first collective: the computation since the trace began.
        let (since, longest) = match groups.get(&args.pg_name) {
            Some(g) => *g,
            None => (0, longest_before(model, i)),
        };
        let compute_before = longest.and_then(|(_, j)| {
            let k = model.gpu.get(j)?;
            let op = k.op.and_then(|o| model.ops.get(o as usize)).map(|o| o.name.to_string());
            Some(op.unwrap_or_else(|| k.name.to_string()))
        });
        groups.insert(args.pg_name.clone(), (compute_ns, None));
        out.push(CollectiveRecord {
            index: out.len() as u32,
            kernel: ev.name.to_string(),
            device: ev.device,
            stream: ev.stream,
            ts_ns: ev.ts_ns,
            dur_ns: ev.dur_ns,
            kind,
            args_from,
            args,
            compute_before_ns: compute_ns - since,
            compute_before,
        });
    }
    out
}

/// The longest computation kernel before position `end` of `model.gpu`.
fn longest_before(model: &TraceModel, end: usize) -> Option<(i64, usize)> {
    model.gpu[..end]
        .iter()
        .enumerate()
        .filter(|(_, g)| g.kind == GpuKind::Kernel && !is_comm(g))
        .fold(None, |best: Option<(i64, usize)>, (j, g)| match best {
            Some((d, _)) if d >= g.dur_ns => best,
            _ => Some((g.dur_ns, j)),
        })
}

/// The arguments of the nearest `record_param_comms` op enclosing `op` (itself
/// included).
fn enclosing_comm_op(model: &TraceModel, op: Option<u32>) -> Option<&CommArgs> {
    let mut cur = op;
    // The call tree is a tree, but bound the walk anyway: a corrupt parent chain must
    // not loop.
    for _ in 0..256 {
        let o = model.ops.get(cur? as usize)?;
        if let Some(c) = &o.comm {
            if &*o.name == PARAM_COMMS_OP || c.collective.is_some() {
                return Some(c);
            }
        }
        cur = o.parent;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::model::{CpuOp, GpuEvent};

    fn kernel(name: &str, ts_us: i64, dur_us: i64, op: Option<u32>) -> GpuEvent {
        GpuEvent {
            name: name.into(),
            ts_ns: ts_us * 1000,
            dur_ns: dur_us * 1000,
            op,
            ..GpuEvent::default()
        }
    }

    #[test]
    fn args_from_kernel_op_or_name_and_compute_before() {
        let args = CommArgs {
            collective: Some("allreduce".into()),
            in_nelems: Some(1024),
            out_nelems: Some(1024),
            dtype: Some("Float".into()),
            ..CommArgs::default()
        };
        let model = TraceModel {
            ops: vec![
                CpuOp { name: "aten::mm".into(), ..CpuOp::default() },
                CpuOp {
                    name: PARAM_COMMS_OP.into(),
                    comm: Some(Box::new(CommArgs {
                        collective: Some("_allgather_base".into()),
                        ..CommArgs::default()
                    })),
                    ..CpuOp::default()
                },
                CpuOp { name: "nccl:_all_gather_base".into(), parent: Some(1), ..CpuOp::default() },
            ],
            gpu: vec![
                kernel("gemm_a", 0, 30, Some(0)),
                kernel("gemm_b", 30, 50, None),
                GpuEvent {
                    comm: Some(Box::new(args.clone())),
                    ..kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 80, 10, None)
                },
                kernel("ncclDevKernel_AllGather_RING_LL", 95, 10, Some(2)),
                kernel("gemm_a", 110, 5, Some(0)),
                kernel("ncclDevKernel_Broadcast_RING_LL", 120, 10, None),
            ],
            ..TraceModel::default()
        };
        let r = collectives(&model);
        assert_eq!(r.len(), 3);
        assert_eq!(
            (r[0].index, r[0].kind, r[0].args_from),
            (0, CollectiveKind::AllReduce, ArgsFrom::Kernel)
        );
        assert_eq!(r[0].args, args);
        assert_eq!(r[0].message_bytes(), Some(4096));
        // 30 + 50 µs of compute before it; the longest kernel had no op: its name.
        assert_eq!(r[0].compute_before_ns, 80_000);
        assert_eq!(r[0].compute_before.as_deref(), Some("gemm_b"));
        // The all-gather's launch is inside record_param_comms (through its child).
        assert_eq!((r[1].kind, r[1].args_from), (CollectiveKind::AllGather, ArgsFrom::Op));
        assert_eq!((r[1].compute_before_ns, r[1].compute_before.as_deref()), (0, None));
        assert_eq!((r[2].kind, r[2].args_from), (CollectiveKind::Broadcast, ArgsFrom::KernelName));
        assert_eq!(r[2].compute_before.as_deref(), Some("aten::mm"));
        assert_eq!(r[2].message_bytes(), None);
    }
}
