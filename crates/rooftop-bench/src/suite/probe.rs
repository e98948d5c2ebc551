//! Latency probe: `chase` follows a random single-cycle permutation of `n` u32 indices
//! (`next = a[cur]`, Sattolo's algorithm, `rng::Init::Cycle`) for `steps` dependent
//! loads from index 0 and writes the final index. Each load's address depends on the
//! previous load, so the time per step is the load-to-use latency of the memory level
//! that holds `n * 4` bytes (plus TLB misses for large n); hardware prefetchers cannot
//! follow a random cycle. Inherently single-threaded: a backend runs one chain.
//!
//! Size parameters `n` (elements) and `steps`; defaults n = 4 Ki, 64 Ki, 1 Mi, 32 Mi
//! (16 KiB .. 128 MiB: L1, L2, L3, DRAM on most CPUs) with 2^20 steps. `--sizes` lists
//! values of n (steps stays 2^20). Not in the default suite (`ceilings` and
//! `--all-kernels` run it); `latency_accesses` = steps, so results read as ns/access.
//!
//! Work: no FLOPs; bytes are the kernel's demand, 4 B per dependent u32 load (+ the 4 B
//! result), not cache-line traffic — a miss moves a 64 B line, 16 times the demand, and
//! GB/s of this kernel is not a bandwidth. The core's `CopySpec` over `steps` u32-sized
//! (fp32 stand-in) elements gives the reads; the write is replaced by the one result.

use super::{bad, model_err, BufferSpec, Kernel, Tolerance};
use crate::backend::{DType, HostBuf};
use crate::case::{Case, KernelRef, Selection};
use crate::error::SuiteError;
use crate::rng::Init;
use crate::suite::KernelId;
use rooftop_core::ops::copy::CopySpec;
use rooftop_core::ops::Work;
use rooftop_core::units::Precision;

/// Default array sizes (elements) of `chase`.
pub const DEFAULT_NS: [u64; 4] = [1 << 12, 1 << 16, 1 << 20, 1 << 25];

/// Default dependent loads per run.
pub const DEFAULT_STEPS: u64 = 1 << 20;

/// The pointer-chase latency probe.
#[derive(Debug)]
pub struct Chase;

pub(super) static CHASE: Chase = Chase;

impl Kernel for Chase {
    fn id(&self) -> KernelRef {
        KernelRef::Suite(KernelId::Chase)
    }

    fn summary(&self) -> &'static str {
        "pointer chase over a random cycle of n u32 (load-to-use latency, single thread)"
    }

    fn size_params(&self) -> &'static [&'static str] {
        &["n", "steps"]
    }

    fn in_default_suite(&self) -> bool {
        false
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        let name = self.name();
        match sel.dtype {
            None | Some(Precision::Fp32) => {}
            Some(p) => {
                return Err(bad(name, format!("follows u32 indices; --dtype {p} does not apply")))
            }
        }
        let shapes: Vec<(u64, u64)> = if let Some(c) = &sel.single_config {
            let [n, steps] = c.as_slice() else {
                return Err(bad(
                    name,
                    format!("--single-config takes 2 values (n,steps), got {}", c.len()),
                ));
            };
            vec![(*n, *steps)]
        } else {
            let ns = sel.sizes.clone().unwrap_or_else(|| DEFAULT_NS.to_vec());
            ns.into_iter().map(|n| (n, DEFAULT_STEPS)).collect()
        };
        if shapes.is_empty() {
            return Err(bad(name, "no sizes given"));
        }
        shapes
            .into_iter()
            .map(|(n, steps)| {
                if n == 0 || steps == 0 {
                    return Err(bad(
                        name,
                        format!("n and steps must be at least 1, got n={n} steps={steps}"),
                    ));
                }
                if n > u64::from(u32::MAX) + 1 {
                    return Err(bad(
                        name,
                        format!("u32 indices address at most 2^32 elements, got n={n}"),
                    ));
                }
                if usize::try_from(n).is_err() {
                    return Err(bad(name, format!("n = {n} does not fit this machine")));
                }
                Ok(Case {
                    kernel: self.id(),
                    sizes: vec![("n", n), ("steps", steps)],
                    dtype: Precision::Fp32,
                    weights: None,
                    variant: None,
                })
            })
            .collect()
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        vec![
            BufferSpec::input("next", DType::U32, case.size_usize("n"), Init::Cycle),
            BufferSpec::output("last", DType::U32, 1),
        ]
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let Some(next) = buffers.first().and_then(HostBuf::as_u32) else { return Vec::new() };
        let mut cur = 0u32;
        for _ in 0..case.size("steps") {
            match next.get(cur as usize) {
                Some(&v) => cur = v,
                None => return Vec::new(),
            }
        }
        vec![HostBuf::U32(vec![cur])]
    }

    fn tolerance(&self, _case: &Case) -> Tolerance {
        // An index: exact.
        Tolerance::EXACT
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let steps = case.size("steps");
        let mut w = CopySpec { elements: steps, dtype: Precision::Fp32 }
            .work()
            .map_err(|e| model_err(self.name(), e))?;
        w.bytes_written = 4.0;
        w.bytes_formula = format!(
            "read steps*4 (dependent u32 loads) = {steps}*4 = {} B; write 4 B (the last index)",
            steps * 4
        );
        w.shape = format!("n={} steps={steps} u32", case.size("n"));
        w.assumptions = vec![
            "latency probe: one chain of dependent u32 loads, single-threaded; report ns per \
             access"
                .to_string(),
            "bytes are the loads' demand (4 B each), not cache-line traffic (64 B per miss)"
                .to_string(),
            "no arithmetic".to_string(),
        ];
        Ok(w)
    }

    fn latency_accesses(&self, case: &Case) -> Option<u64> {
        Some(case.size("steps"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{run_case, TimingOptions};
    use crate::mock::{MockBackend, MockConfig};
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
    fn reference_follows_the_cycle() {
        // 0 -> 2 -> 3 -> 1 -> 0: after 1 step 2, after 3 steps 1, after 4 steps 0.
        let next = [HostBuf::U32(vec![2, 0, 3, 1])];
        assert_eq!(Chase.reference(&case(4, 1), &next), vec![HostBuf::U32(vec![2])]);
        assert_eq!(Chase.reference(&case(4, 3), &next), vec![HostBuf::U32(vec![1])]);
        assert_eq!(Chase.reference(&case(4, 4), &next), vec![HostBuf::U32(vec![0])]);
        // An index out of range gives no output (a failed check), not a panic.
        assert!(Chase.reference(&case(2, 3), &[HostBuf::U32(vec![5, 0])]).is_empty());
    }

    #[test]
    fn work_and_latency_by_hand() {
        // 1,000 steps: read 1000*4 = 4,000 B, write 4 B, 0 FLOPs, 1,000 accesses.
        let c = case(64, 1000);
        let w = Chase.work(&c).unwrap();
        assert_eq!((w.bytes_read, w.bytes_written, w.flops), (4000.0, 4.0, 0.0));
        assert_eq!(Chase.latency_accesses(&c), Some(1000));
        assert!(!Chase.in_default_suite());
    }

    #[test]
    fn selections() {
        let cs = Chase.cases(&Selection::default()).unwrap();
        assert_eq!(cs.len(), 4);
        assert_eq!(cs[3].sizes, vec![("n", 1 << 25), ("steps", 1 << 20)]);
        let cs =
            Chase.cases(&Selection { single_config: Some(vec![10, 5]), ..Selection::default() });
        assert_eq!(cs.unwrap()[0], case(10, 5));
        for sel in [
            Selection { single_config: Some(vec![10]), ..Selection::default() },
            Selection { single_config: Some(vec![0, 5]), ..Selection::default() },
            Selection { sizes: Some(vec![1 << 33]), ..Selection::default() },
            Selection { dtype: Some(Precision::Fp64), ..Selection::default() },
        ] {
            assert!(matches!(Chase.cases(&sel), Err(SuiteError::BadConfig { .. })), "{sel:?}");
        }
    }

    #[test]
    fn mock_backend_end_to_end() {
        let k = KernelId::Chase.def();
        let mut mock = MockBackend::new(MockConfig::default());
        let imp = crate::backend::Backend::implementations(&mock, KernelId::Chase.into()).remove(0);
        let opts = TimingOptions { min_time_s: 0.001, min_runs: 3, ..TimingOptions::default() };
        let r = run_case(
            &mut mock,
            k,
            &case(1000, 2500),
            &imp,
            None,
            &opts,
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
        assert!(r.check.passed, "{:?}", r.check);
    }
}
