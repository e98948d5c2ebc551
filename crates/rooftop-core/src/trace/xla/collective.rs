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
pub enum XlaCollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    AllToAll,
    CollectivePermute,
    CollectiveBroadcast,
    SendRecv,
}

impl XlaCollectiveKind {
    pub fn as_str(self) -> &'static str {
        match self {
            XlaCollectiveKind::AllReduce => "all-reduce",
            XlaCollectiveKind::AllGather => "all-gather",
            XlaCollectiveKind::ReduceScatter => "reduce-scatter",
            XlaCollectiveKind::AllToAll => "all-to-all",
            XlaCollectiveKind::CollectivePermute => "collective-permute",
            XlaCollectiveKind::CollectiveBroadcast => "collective-broadcast",
            XlaCollectiveKind::SendRecv => "send/recv",
        }
    }

    /// The NCCL-tests bus-bandwidth factor for a group of `n` devices.
    pub fn bus_factor(self, n: u64) -> f64 {
        if n == 0 {
            return 0.0;
        }
        let nf = n as f64;
        match self {
            XlaCollectiveKind::AllReduce => 2.0 * (nf - 1.0) / nf,
            XlaCollectiveKind::AllGather
            | XlaCollectiveKind::ReduceScatter
            | XlaCollectiveKind::AllToAll => (nf - 1.0) / nf,
            XlaCollectiveKind::CollectivePermute
            | XlaCollectiveKind::CollectiveBroadcast
            | XlaCollectiveKind::SendRecv => 1.0,
        }
    }

    /// The formula of [`Self::bus_factor`], for reports.
    pub fn bus_factor_formula(self) -> &'static str {
        match self {
            XlaCollectiveKind::AllReduce => "2(n-1)/n",
            XlaCollectiveKind::AllGather
            | XlaCollectiveKind::ReduceScatter
            | XlaCollectiveKind::AllToAll => "(n-1)/n",
            _ => "1",
        }
    }
}

/// The collective kind of an opcode or an op name without its `.N` suffix
/// (`all-reduce-start`, `reduce-scatter`, `all-gather-done`, `ragged-all-to-all`).
pub fn kind_from_name(base: &str) -> Option<XlaCollectiveKind> {
    let b = base.strip_suffix("-start").or_else(|| base.strip_suffix("-done")).unwrap_or(base);
    let k = match b {
        "all-reduce" => XlaCollectiveKind::AllReduce,
        "all-gather" => XlaCollectiveKind::AllGather,
        "reduce-scatter" => XlaCollectiveKind::ReduceScatter,
        "all-to-all" | "ragged-all-to-all" => XlaCollectiveKind::AllToAll,
        "collective-permute" => XlaCollectiveKind::CollectivePermute,
        "collective-broadcast" => XlaCollectiveKind::CollectiveBroadcast,
        "send" | "recv" => XlaCollectiveKind::SendRecv,
        _ => return None,
    };
    Some(k)
}

/// The collective kind of an instruction (an `async-start` wrapper takes its wrapped
/// instruction's).
pub fn kind(instr: &HloInstr) -> Option<XlaCollectiveKind> {
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
        XlaCollectiveKind::AllGather => {
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
        XlaCollectiveKind::CollectivePermute | XlaCollectiveKind::CollectiveBroadcast => {
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
        assert_eq!(XlaCollectiveKind::AllReduce.bus_factor(8), 2.0 * 7.0 / 8.0);
        assert_eq!(XlaCollectiveKind::AllGather.bus_factor(8), 7.0 / 8.0);
        assert_eq!(XlaCollectiveKind::ReduceScatter.bus_factor(4), 0.75);
        assert_eq!(XlaCollectiveKind::AllToAll.bus_factor(2), 0.5);
        assert_eq!(XlaCollectiveKind::CollectivePermute.bus_factor(2), 1.0);
        assert_eq!(XlaCollectiveKind::AllReduce.bus_factor(0), 0.0);
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
        assert_eq!(kind(&wrapped), Some(XlaCollectiveKind::ReduceScatter));
        assert_eq!(message_bytes(&wrapped, Some(2)).unwrap().0, 16_384);
        assert_eq!(kind_from_name("all-to-all"), Some(XlaCollectiveKind::AllToAll));
        assert_eq!(kind_from_name("fusion"), None);
    }
}
