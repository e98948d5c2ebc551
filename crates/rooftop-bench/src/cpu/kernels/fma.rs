//! CPU implementation of `fma`: the accumulators, split into blocks of 12 independent
//! chains (one vector register each, or one scalar each for the `scalar` variant), run
//! `x <- x * a + b` `iters` times; rayon spreads the blocks over the threads.
//!
//! Twelve chains per thread cover FMA latency x FMA pipes on current x86 cores (4 cycles x
//! 2 pipes = 8 in flight on Zen 2-4 and Intel Skylake to Raptor Lake) with room to spare,
//! and with `a`, `b` and 12 accumulators use 14 of the 16 ymm registers.

use super::gemm::microkernel::{self, Isa, FMA_CHAINS};
use super::CpuKernel;
use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::error::BackendError;
use rayon::prelude::*;

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[CpuKernel {
    kernel: "fma",
    implementation: "rooftop",
    builtin: false,
    label: "rooftop FMA chains: blocks of 12 independent accumulators (vfmadd on 256-bit \
            vectors, or scalar vfmadd for the scalar variant), rayon over blocks",
    tiles: &[],
    run,
}];

fn run(case: &Case, bufs: &mut [HostBuf], _launch: &Launch) -> Result<(), BackendError> {
    let iters = case.size("iters");
    let scalar = case.variant == Some("scalar");
    let isa = Isa::detect();
    match bufs {
        [HostBuf::F32(x0), HostBuf::F32(a), HostBuf::F32(b), HostBuf::F32(acc)] => {
            let (a, b) = scalars(a, b)?;
            same_len(x0.len(), acc.len())?;
            acc.copy_from_slice(x0);
            let block = if scalar { FMA_CHAINS } else { FMA_CHAINS * isa.f32_lanes() };
            acc.par_chunks_mut(block).for_each(|x| {
                if scalar {
                    microkernel::fma_scalar_f32(isa, x, a, b, iters);
                } else {
                    microkernel::fma_vector_f32(isa, x, a, b, iters);
                }
            });
            Ok(())
        }
        [HostBuf::F64(x0), HostBuf::F64(a), HostBuf::F64(b), HostBuf::F64(acc)] => {
            let (a, b) = scalars(a, b)?;
            same_len(x0.len(), acc.len())?;
            acc.copy_from_slice(x0);
            let block = if scalar { FMA_CHAINS } else { FMA_CHAINS * isa.f64_lanes() };
            acc.par_chunks_mut(block).for_each(|x| {
                if scalar {
                    microkernel::fma_scalar_f64(isa, x, a, b, iters);
                } else {
                    microkernel::fma_vector_f64(isa, x, a, b, iters);
                }
            });
            Ok(())
        }
        _ => Err(BackendError::Other(
            "fma takes 4 buffers (x0, a, b, acc), all f32 or all f64".to_string(),
        )),
    }
}

fn scalars<T: Copy>(a: &[T], b: &[T]) -> Result<(T, T), BackendError> {
    match (a.first(), b.first()) {
        (Some(&a), Some(&b)) => Ok((a, b)),
        _ => Err(BackendError::Other("fma: the a and b buffers are empty".to_string())),
    }
}

fn same_len(x0: usize, acc: usize) -> Result<(), BackendError> {
    if x0 == acc {
        Ok(())
    } else {
        Err(BackendError::BufferMismatch {
            buffer: 3,
            expected: format!("{x0} elements (as x0)"),
            got: format!("{acc} elements"),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::backend::{Backend, Launch};
    use crate::cpu::CpuBackend;
    use crate::harness::{run_case, TimingOptions};
    use crate::suite;
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    /// Every variant on 1 and 3 threads passes the suite's closed-form check.
    #[test]
    fn passes_the_closed_form_check_on_any_thread_count() {
        let mut be = CpuBackend::new();
        let kernel = suite::find("fma").unwrap();
        let opts = TimingOptions {
            min_runs: 1,
            min_time_s: 0.0,
            warmup_runs: 1,
            warmup_time_s: 0.0,
            ..TimingOptions::default()
        };
        let imp = be.implementations("fma").remove(0);
        for dtype in [Precision::Fp32, Precision::Fp64] {
            for scalar in [false, true] {
                let mut case = suite::fma::ceiling_case(dtype, scalar);
                case.sizes = vec![("iters", 37)];
                for threads in [1, 3] {
                    let launch = Launch { threads: Some(threads), ..Launch::default() };
                    let r = run_case(
                        &mut be,
                        kernel,
                        &case,
                        &imp,
                        Some(launch),
                        &opts,
                        &AtomicBool::new(false),
                        &mut |_| {},
                    )
                    .unwrap();
                    assert!(r.check.passed, "{} {threads}: {:?}", case.label(), r.check);
                    assert_eq!(r.check.elements, suite::fma::ACCUMULATORS as u64);
                }
            }
        }
        assert!(kernel.work(&suite::fma::ceiling_case(Precision::Fp32, false)).is_ok());
    }
}
