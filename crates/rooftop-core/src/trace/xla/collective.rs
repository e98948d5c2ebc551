//! XLA collectives: which HLO ops are collectives, their message sizes from the HLO
//! shapes, and algorithm / bus bandwidth with the NCCL-tests conventions
//! (<https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md>).
//!
//! Message size `S` per rank, as NCCL-tests counts it:
//! - all-reduce: the buffer reduced (operand bytes);
//! - all-gather: the gathered output (operand bytes × group size `n`);
//! - reduce-scatter: the input before scattering (operand bytes);
//! - all-to-all: everything a rank sends (operand bytes);
//! - collective-permute, collective-broadcast, send/recv: the buffer moved.
//!
//! `algbw = S / t`; `busbw = algbw × factor` with factor `2(n-1)/n` for all-reduce,
//! `(n-1)/n` for all-gather, reduce-scatter and all-to-all, `1` for the point-to-point
//! kinds. `t` is the collective's device time (its NCCL/RCCL kernels).

use super::hlo::HloInstr;
use serde::Serialize;

/// The kind of a collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    CollectivePermute,
    CollectiveBroadcast,
    SendRecv,
}

impl CollectiveKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "all-reduce",
            CollectiveKind::AllGather => "all-gather",
            CollectiveKind::ReduceScatter => "reduce-scatter",
            CollectiveKind::AllToAll => "all-to-all",
            CollectiveKind::CollectivePermute => "collective-permute",
            CollectiveKind::CollectiveBroadcast => "collective-broadcast",
            CollectiveKind::SendRecv => "send/recv",
        }
    }

    /// The NCCL-tests bus-bandwidth factor for a group of `n` devices.
    pub fn bus_factor(self, n: u64) -> f64 {
        if n == 0 {
            return 0.0;
        }
        let nf = n as f64;
        match self {
            CollectiveKind::AllReduce => 2.0 * (nf - 1.0) / nf,
            CollectiveKind::AllGather
            | CollectiveKind::ReduceScatter
            | CollectiveKind::AllToAll => (nf - 1.0) / nf,
            CollectiveKind::CollectivePermute
            | CollectiveKind::CollectiveBroadcast
            | CollectiveKind::SendRecv => 1.0,
        }
    }

    /// The formula of [`Self::bus_factor`], for reports.
    pub fn bus_factor_formula(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "2(n-1)/n",
            CollectiveKind::AllGather
            | CollectiveKind::ReduceScatter
            | CollectiveKind::AllToAll => "(n-1)/n",
            _ => "1",
        }
    }
}

/// The collective kind of an opcode or an op name without its `.N` suffix
/// (`all-reduce-start`, `reduce-scatter`, `all-gather-done`, `ragged-all-to-all`).
pub fn kind_from_name(base: &str) -> Option<CollectiveKind> {
    let b = base.strip_suffix("-start").or_else(|| base.strip_suffix("-done")).unwrap_or(base);
    let k = match b {
        "all-reduce" => CollectiveKind::AllReduce,
        "all-gather" => CollectiveKind::AllGather,
        "reduce-scatter" => CollectiveKind::ReduceScatter,
        "all-to-all" | "ragged-all-to-all" => CollectiveKind::AllToAll,
        "collective-permute" => CollectiveKind::CollectivePermute,
        "collective-broadcast" => CollectiveKind::CollectiveBroadcast,
        "send" | "recv" => CollectiveKind::SendRecv,
        _ => return None,
    };
    Some(k)
}

/// The collective kind of an instruction (an `async-start` wrapper takes its wrapped
/// instruction's).
pub fn kind(instr: &HloInstr) -> Option<CollectiveKind> {
    kind_from_name(&instr.core().opcode).or_else(|| kind_from_name(&instr.opcode))
}

/// The message size `S` of a collective in bytes (module docs) for a group of `n`
/// devices, with how it was computed; `None` when the shapes are not known.
pub fn message_bytes(instr: &HloInstr, n: Option<u64>) -> Option<(u128, String)> {
    let k = kind(instr)?;
    let core = instr.core();
    let arrays: Vec<&super::hlo::HloShape> =
        core.operands.iter().filter(|s| !s.is_tuple() && s.dtype != "token").collect();
    let operand_bytes = arrays.iter().try_fold(0u128, |acc, s| acc.checked_add(s.bytes()?))?;
    match k {
        CollectiveKind::AllGather => {
            if let Some(n) = n {
                let s = operand_bytes.checked_mul(u128::from(n))?;
                return Some((s, format!("operand bytes × n = {operand_bytes} × {n}")));
            }
            // Without the group size, the result of a plain all-gather is the gathered
            // buffer.
            if core.opcode == "all-gather" && !core.shape.is_tuple() {
                return Some((core.shape.bytes()?, "result bytes".to_string()));
            }
            None
        }
        CollectiveKind::CollectivePermute | CollectiveKind::CollectiveBroadcast => {
            let first = arrays.first()?.bytes()?;
            Some((first, "operand bytes".to_string()))
        }
        _ => Some((operand_bytes, "operand bytes".to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::xla::hlo::HloShape;

    #[test]
    fn nccl_tests_bus_factors() {
        // NCCL-tests (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
        // allreduce 2(n-1)/n, allgather (n-1)/n.
        assert_eq!(CollectiveKind::AllReduce.bus_factor(8), 2.0 * 7.0 / 8.0);
        assert_eq!(CollectiveKind::AllGather.bus_factor(8), 7.0 / 8.0);
        assert_eq!(CollectiveKind::ReduceScatter.bus_factor(4), 0.75);
        assert_eq!(CollectiveKind::AllToAll.bus_factor(2), 0.5);
        assert_eq!(CollectiveKind::CollectivePermute.bus_factor(2), 1.0);
        assert_eq!(CollectiveKind::AllReduce.bus_factor(0), 0.0);
    }

    #[test]
    fn message_sizes_from_shapes() {
        let ar = HloInstr {
            opcode: "all-reduce-start".into(),
            operands: vec![HloShape::array("bf16", &[1024, 1024]), HloShape::array("f32", &[256])],
            ..HloInstr::default()
        };
        // 1024*1024*2 + 256*4 bytes.
        assert_eq!(message_bytes(&ar, Some(8)).unwrap().0, 2_097_152 + 1024);
        let ag = HloInstr {
            opcode: "all-gather-start".into(),
            operands: vec![HloShape::array("bf16", &[512, 1024])],
            ..HloInstr::default()
        };
        // Gathered over 4 devices: 512*1024*2*4.
        assert_eq!(message_bytes(&ag, Some(4)).unwrap().0, 4_194_304);
        assert!(message_bytes(&ag, None).is_none());
        let wrapped = HloInstr {
            opcode: "async-start".into(),
            inner: Some(Box::new(HloInstr {
                opcode: "reduce-scatter".into(),
                operands: vec![HloShape::array("f32", &[4096])],
                ..HloInstr::default()
            })),
            ..HloInstr::default()
        };
        assert_eq!(kind(&wrapped), Some(CollectiveKind::ReduceScatter));
        assert_eq!(message_bytes(&wrapped, Some(2)).unwrap().0, 16_384);
        assert_eq!(kind_from_name("all-to-all"), Some(CollectiveKind::AllToAll));
        assert_eq!(kind_from_name("fusion"), None);
    }
}
