//! CPU implementation of `chase` (`suite::probe`): one chain of dependent loads on the
//! calling thread of the pool (a latency chain cannot be split across threads;
//! `launch.threads` only sizes the idle pool). An index outside the array is an error,
//! not a panic.

use super::CpuKernel;
use super::{check_lens, mismatch};
use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::error::BackendError;
use crate::suite::KernelId;

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[CpuKernel {
    kernel: KernelId::Chase,
    implementation: "rooftop",
    builtin: false,
    label: "rooftop: one dependent-load chain, single thread",
    tiles: &[],
    run: chase,
}];

fn chase(case: &Case, bufs: &mut [HostBuf], _launch: &Launch) -> Result<(), BackendError> {
    let [HostBuf::U32(next), HostBuf::U32(last)] = bufs else {
        return Err(mismatch(case, bufs, "[next u32, last u32]"));
    };
    let n = case.size_usize("n");
    check_lens(case, &[next.len(), last.len()], &[n, 1])?;
    let mut cur = 0u32;
    for _ in 0..case.size("steps") {
        cur = *next.get(cur as usize).ok_or_else(|| {
            BackendError::Other(format!("chase: index {cur} is outside the {n}-element array"))
        })?;
    }
    last[0] = cur;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::cpu::CpuBackend;
    use crate::harness::{run_case, TimingOptions};
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    fn case(n: u64, steps: u64) -> Case {
        Case {
            kernel: KernelId::Chase.into(),
            sizes: vec![("n", n), ("steps", steps)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        }
    }

    #[test]
    fn follows_a_hand_made_cycle() {
        // 0 -> 2 -> 3 -> 1 -> 0: after 7 steps (one lap + 3) the index is 1.
        let mut b = vec![HostBuf::U32(vec![2, 0, 3, 1]), HostBuf::U32(vec![u32::MAX])];
        chase(&case(4, 7), &mut b, &Launch::default()).unwrap();
        assert_eq!(b[1], HostBuf::U32(vec![1]));
        let mut b = vec![HostBuf::U32(vec![2, 0, 9, 1]), HostBuf::U32(vec![0])];
        assert!(chase(&case(4, 7), &mut b, &Launch::default()).is_err());
    }

    #[test]
    fn cpu_backend_end_to_end() {
        let k = KernelId::Chase.def();
        let c = case(4099, 10_000);
        let mut cpu = CpuBackend::new();
        let imp = cpu.implementations(KernelId::Chase.into()).remove(0);
        let opts = TimingOptions {
            warmup_runs: 1,
            warmup_time_s: 0.0,
            min_runs: 2,
            min_time_s: 0.001,
            ..TimingOptions::default()
        };
        let r = run_case(&mut cpu, k, &c, &imp, None, &opts, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert!(r.timing.is_some());
    }
}
