//! What a collective is: its kind from PyTorch's `Collective name` or, in traces
//! without it, from the NCCL/RCCL kernel name; element sizes of c10 dtypes; and the
//! NCCL-tests bandwidth formulas.
//!
//! Bandwidths follow NCCL-tests' definitions
//! (<https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md>,
//! docs/reference/formulas.md#collective-bandwidth-algbw-and-busbw): the algorithm
//! bandwidth is the message size over the time, `algbw = S / t`, and the bus bandwidth
//! scales it by the data each rank must move so that it compares with the hardware's link
//! bandwidth: all-reduce `busbw = algbw · 2(n−1)/n`; all-gather, reduce-scatter and
//! all-to-all `algbw · (n−1)/n`; broadcast and reduce `algbw · 1`. `S` is the full buffer:
//! the output of an all-gather, the input of a reduce-scatter, the (equal) input and output
//! of the others — so `S = max(in, out)` elements times the element size.

use serde::Serialize;

/// A collective's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    /// All-to-all with per-destination split sizes (`all_to_allv`).
    #[serde(rename = "all_to_allv")]
    AllToAllV,
    Broadcast,
    Reduce,
    Gather,
    Scatter,
    Barrier,
    /// Point-to-point: `send`, `recv`, NCCL `SendRecv` kernels.
    SendRecv,
    /// A communication kernel whose kind neither its arguments nor its name say.
    #[default]
    Unknown,
}

impl CollectiveKind {
    /// Every kind, in table order.
    pub const ALL: [CollectiveKind; 12] = [
        CollectiveKind::AllReduce,
        CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter,
        CollectiveKind::AllToAll,
        CollectiveKind::AllToAllV,
        CollectiveKind::Broadcast,
        CollectiveKind::Reduce,
        CollectiveKind::Gather,
        CollectiveKind::Scatter,
        CollectiveKind::Barrier,
        CollectiveKind::SendRecv,
        CollectiveKind::Unknown,
    ];

    /// The stable name (JSON, Parquet, CSV).
    pub fn as_str(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "all_reduce",
            CollectiveKind::AllGather => "all_gather",
            CollectiveKind::ReduceScatter => "reduce_scatter",
            CollectiveKind::AllToAll => "all_to_all",
            CollectiveKind::AllToAllV => "all_to_allv",
            CollectiveKind::Broadcast => "broadcast",
            CollectiveKind::Reduce => "reduce",
            CollectiveKind::Gather => "gather",
            CollectiveKind::Scatter => "scatter",
            CollectiveKind::Barrier => "barrier",
            CollectiveKind::SendRecv => "send_recv",
            CollectiveKind::Unknown => "unknown",
        }
    }

    /// The kind of a stable name ([`Self::as_str`]).
    pub fn parse(s: &str) -> Option<CollectiveKind> {
        CollectiveKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The kind PyTorch's `Collective name` denotes (`ProcessGroupNCCL`'s
    /// `RECORD_PARAM_COMMS` names, any case, `_base`/`_coalesced`/`_tensor` variants
    /// included). `None` for names that are not a data collective (`wait`,
    /// `coalesced`) or unknown ones.
    pub fn from_collective_name(name: &str) -> Option<CollectiveKind> {
        let n: String = name
            .trim()
            .trim_start_matches('_')
            .chars()
            .filter(|c| *c != '_')
            .collect::<String>()
            .to_ascii_lowercase();
        let n = n.trim_start_matches("nccl:").trim_start_matches("c10d::");
        // Longest prefixes first: `allgatherintotensorcoalesced` is an all-gather,
        // `reducescatter` is not a `reduce`, `alltoallv` is not an `alltoall`.
        let table: [(&str, CollectiveKind); 12] = [
            ("allreduce", CollectiveKind::AllReduce),
            ("allgather", CollectiveKind::AllGather),
            ("reducescatter", CollectiveKind::ReduceScatter),
            ("alltoallv", CollectiveKind::AllToAllV),
            ("alltoall", CollectiveKind::AllToAll),
            ("broadcast", CollectiveKind::Broadcast),
            ("reduce", CollectiveKind::Reduce),
            ("gather", CollectiveKind::Gather),
            ("scatter", CollectiveKind::Scatter),
            ("barrier", CollectiveKind::Barrier),
            ("send", CollectiveKind::SendRecv),
            ("recv", CollectiveKind::SendRecv),
        ];
        // `alltoallbase` is PyTorch's name for the equal-split all-to-all.
        table.into_iter().find(|(p, _)| n.starts_with(p)).map(|(_, k)| k)
    }

    /// The kind an NCCL/RCCL kernel name shows: `ncclDevKernel_AllReduce_Sum_bf16_RING_LL`,
    /// `ncclKernel_AllGather_RING_LL_Sum_int8_t`, `ncclDevKernel_SendRecv`, ... `None`
    /// when the name does not say (RCCL's `ncclDevKernel_Generic`, custom kernels).
    pub fn from_kernel_name(name: &str) -> Option<CollectiveKind> {
        let l = name.to_ascii_lowercase();
        // NCCL runs all-to-all as SendRecv work; custom kernels may say `alltoall`.
        let table: [(&str, CollectiveKind); 9] = [
            ("allreduce", CollectiveKind::AllReduce),
            ("all_reduce", CollectiveKind::AllReduce),
            ("allgather", CollectiveKind::AllGather),
            ("all_gather", CollectiveKind::AllGather),
            ("reducescatter", CollectiveKind::ReduceScatter),
            ("reduce_scatter", CollectiveKind::ReduceScatter),
            ("broadcast", CollectiveKind::Broadcast),
            ("sendrecv", CollectiveKind::SendRecv),
            ("alltoall", CollectiveKind::AllToAll),
        ];
        if let Some((_, k)) = table.iter().find(|(p, _)| l.contains(p)) {
            return Some(*k);
        }
        // `ncclDevKernel_Reduce_Sum_f32_RING_LL`: a Reduce kernel (checked after
        // ReduceScatter).
        if l.contains("kernel_reduce_") || l.contains("kernel_reduce(") {
            return Some(CollectiveKind::Reduce);
        }
        None
    }

    /// Whether every member takes part in each instance at once, so that arrival skew
    /// and wait time mean something (everything but point-to-point and unknown kinds).
    pub fn is_synchronising(self) -> bool {
        !matches!(self, CollectiveKind::SendRecv | CollectiveKind::Unknown)
    }

    /// The NCCL-tests bus-bandwidth factor for `n` ranks (module doc); `None` where
    /// NCCL-tests defines none (all-to-all-v with uneven splits, gather, scatter,
    /// barrier, point-to-point, unknown) or `n` is 0.
    pub fn bus_factor(self, n: u32) -> Option<f64> {
        if n == 0 {
            return None;
        }
        let n = f64::from(n);
        match self {
            CollectiveKind::AllReduce => Some(2.0 * (n - 1.0) / n),
            CollectiveKind::AllGather
            | CollectiveKind::ReduceScatter
            | CollectiveKind::AllToAll => Some((n - 1.0) / n),
            // NCCL-tests `sendrecv_perf`: the bus carries what one peer sends.
            CollectiveKind::Broadcast | CollectiveKind::Reduce | CollectiveKind::SendRecv => {
                Some(1.0)
            }
            _ => None,
        }
    }
}

/// Bytes per element of a dtype as c10 (`Float`, `BFloat16`, ...) or Python
/// (`float32`, `torch.bfloat16`) names it; `None` for names we do not know.
pub fn dtype_bytes(dtype: &str) -> Option<u64> {
    let d = dtype.trim().trim_start_matches("torch.").trim_start_matches("c10::");
    let l = d.to_ascii_lowercase();
    Some(match l.as_str() {
        "double" | "float64" | "long" | "int64" | "complexfloat" | "complex64" | "uint64" => 8,
        "float" | "float32" | "int" | "int32" | "uint32" | "complexhalf" | "complex32" => 4,
        "half" | "float16" | "bfloat16" | "short" | "int16" | "uint16" => 2,
        "byte" | "uint8" | "char" | "int8" | "bool" | "qint8" | "quint8" => 1,
        "complexdouble" | "complex128" => 16,
        _ if l.starts_with("float8") => 1,
        _ => return None,
    })
}

/// Message size `S` in bytes (module doc): `max(in, out)` elements times the element
/// size; `None` when a count or the dtype is unknown.
pub fn message_bytes(
    in_nelems: Option<u64>,
    out_nelems: Option<u64>,
    dtype: Option<&str>,
) -> Option<u64> {
    let elems = match (in_nelems, out_nelems) {
        (Some(i), Some(o)) => i.max(o),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => return None,
    };
    elems.checked_mul(dtype_bytes(dtype?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collective_names_from_process_group_nccl() {
        use CollectiveKind as K;
        for (name, kind) in [
            ("allreduce", K::AllReduce),
            ("allreduce_coalesced", K::AllReduce),
            ("_allgather_base", K::AllGather),
            ("all_gather", K::AllGather),
            ("allgather_into_tensor_coalesced", K::AllGather),
            ("_reduce_scatter_base", K::ReduceScatter),
            ("reduce_scatter_tensor_coalesced", K::ReduceScatter),
            ("all_to_all", K::AllToAll),
            ("alltoall_base", K::AllToAll),
            ("all_to_allv", K::AllToAllV),
            ("broadcast", K::Broadcast),
            ("reduce", K::Reduce),
            ("gather", K::Gather),
            ("scatter", K::Scatter),
            ("barrier", K::Barrier),
            ("send", K::SendRecv),
            ("recv", K::SendRecv),
            ("nccl:all_reduce", K::AllReduce),
        ] {
            assert_eq!(CollectiveKind::from_collective_name(name), Some(kind), "{name}");
        }
        assert_eq!(CollectiveKind::from_collective_name("wait"), None);
        assert_eq!(CollectiveKind::from_collective_name("coalesced"), None);
    }

    #[test]
    fn kernel_names_from_nccl_and_rccl() {
        use CollectiveKind as K;
        for (name, kind) in [
            (
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                K::AllReduce,
            ),
            ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", K::AllReduce),
            ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", K::AllGather),
            ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", K::ReduceScatter),
            ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclWorkElem)", K::Broadcast),
            ("ncclDevKernel_Reduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", K::Reduce),
            ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", K::SendRecv),
        ] {
            assert_eq!(CollectiveKind::from_kernel_name(name), Some(kind), "{name}");
        }
        assert_eq!(CollectiveKind::from_kernel_name("ncclDevKernel_Generic_1"), None);
    }

    #[test]
    fn nccl_tests_bus_factors() {
        // NCCL-tests' bus factors
        // (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md),
        // by hand for n = 8: all-reduce 2·7/8 = 1.75,
        // all-gather / reduce-scatter / all-to-all 7/8 = 0.875, broadcast / reduce 1.
        assert_eq!(CollectiveKind::AllReduce.bus_factor(8), Some(1.75));
        assert_eq!(CollectiveKind::AllGather.bus_factor(8), Some(0.875));
        assert_eq!(CollectiveKind::ReduceScatter.bus_factor(8), Some(0.875));
        assert_eq!(CollectiveKind::AllToAll.bus_factor(8), Some(0.875));
        assert_eq!(CollectiveKind::Broadcast.bus_factor(8), Some(1.0));
        assert_eq!(CollectiveKind::Reduce.bus_factor(8), Some(1.0));
        // n = 2: all-reduce 2·1/2 = 1.
        assert_eq!(CollectiveKind::AllReduce.bus_factor(2), Some(1.0));
        assert_eq!(CollectiveKind::AllToAllV.bus_factor(8), None);
        assert_eq!(CollectiveKind::SendRecv.bus_factor(2), Some(1.0));
        assert_eq!(CollectiveKind::AllReduce.bus_factor(0), None);
    }

    #[test]
    fn message_sizes() {
        assert_eq!(dtype_bytes("BFloat16"), Some(2));
        assert_eq!(dtype_bytes("Float"), Some(4));
        assert_eq!(dtype_bytes("torch.float32"), Some(4));
        assert_eq!(dtype_bytes("Long"), Some(8));
        assert_eq!(dtype_bytes("Float8_e4m3fn"), Some(1));
        assert_eq!(dtype_bytes("Quaternion"), None);
        // All-gather of 1,024 bf16 per rank over 4 ranks: S is the 4,096-element output.
        assert_eq!(message_bytes(Some(1024), Some(4096), Some("BFloat16")), Some(8192));
        // Reduce-scatter: S is the input.
        assert_eq!(message_bytes(Some(4096), Some(1024), Some("Float")), Some(16384));
        assert_eq!(message_bytes(None, None, Some("Float")), None);
        assert_eq!(message_bytes(Some(1), Some(1), None), None);
        for k in CollectiveKind::ALL {
            assert_eq!(CollectiveKind::parse(k.as_str()), Some(k));
            // JSON names the kinds as `as_str` does.
            assert_eq!(serde_json::to_value(k).ok(), Some(serde_json::Value::from(k.as_str())));
        }
    }
}
