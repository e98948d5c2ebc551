//! CPU implementation of `fma`: the accumulators, split into blocks of 12 independent
//! chains (one vector register each, or one scalar each for the `scalar` variant), run
//! `x <- x * a + b` `iters` times; rayon spreads the blocks over the threads.
//!
//! Twelve chains per thread cover FMA latency x FMA pipes on current x86 cores (4 cycles x
//! 2 pipes = 8 in flight on Zen 2-4 and Intel Skylake to Raptor Lake) with room to spare,
//! and with `a`, `b` and 12 accumulators use 14 of the 16 ymm registers.
//!
//! The vector variant runs at the widest SIMD level the suite's vectorised kernels use
//! (`simd::Level`: AVX-512 where the CPU has it, as `qgemm`'s micro-kernel does): a
//! roof measured with narrower vectors than a kernel of the suite uses is one that
//! kernel can beat. Each block is 12 vectors of the level's width, a fixed-size array
//! that LLVM keeps in registers.

// `inline(always)` on the body is how it gets compiled for each SIMD level (`cpu::simd`).
#![allow(clippy::inline_always)]

use super::gemm::microkernel::{self, Isa, FMA_CHAINS};
use super::CpuKernel;
use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::cpu::simd::{self, Body, Fma, Level, Real};
use crate::error::BackendError;
use crate::suite::KernelId;
use rayon::prelude::*;

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[CpuKernel {
    kernel: KernelId::Fma,
    implementation: "rooftop",
    builtin: false,
    label: "rooftop FMA chains: blocks of 12 independent accumulators (vfmadd on the widest \
            vectors of the CPU, AVX-512 or AVX2, or scalar vfmadd for the scalar variant), \
            rayon over blocks",
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
            if scalar {
                acc.par_chunks_mut(FMA_CHAINS).for_each(|x| {
                    microkernel::fma_scalar_f32(isa, x, a, b, iters);
                });
            } else {
                vector_chains(acc, a, b, iters);
            }
            Ok(())
        }
        [HostBuf::F64(x0), HostBuf::F64(a), HostBuf::F64(b), HostBuf::F64(acc)] => {
            let (a, b) = scalars(a, b)?;
            same_len(x0.len(), acc.len())?;
            acc.copy_from_slice(x0);
            if scalar {
                acc.par_chunks_mut(FMA_CHAINS).for_each(|x| {
                    microkernel::fma_scalar_f64(isa, x, a, b, iters);
                });
            } else {
                vector_chains(acc, a, b, iters);
            }
            Ok(())
        }
        _ => Err(BackendError::Other(
            "fma takes 4 buffers (x0, a, b, acc), all f32 or all f64".to_string(),
        )),
    }
}

/// `x <- x * a + b`, `iters` times, on every element of `acc`, in blocks of
/// `FMA_CHAINS` vectors of the widest SIMD level (rayon over blocks).
fn vector_chains<T: Real>(acc: &mut [T], a: T, b: T, iters: u64) {
    let level = Level::detect();
    let bytes = std::mem::size_of::<T>();
    // Lanes of one vector register of the level: 64, 32 or 16 bytes.
    let lanes = match level {
        Level::Avx512 => 64 / bytes,
        Level::Avx2 => 32 / bytes,
        Level::Base => 16 / bytes,
    };
    match (lanes, bytes) {
        (16, 4) => run_blocks::<T, { FMA_CHAINS * 16 }>(level, acc, a, b, iters),
        (8, _) => run_blocks::<T, { FMA_CHAINS * 8 }>(level, acc, a, b, iters),
        (4, _) => run_blocks::<T, { FMA_CHAINS * 4 }>(level, acc, a, b, iters),
        _ => run_blocks::<T, { FMA_CHAINS * 2 }>(level, acc, a, b, iters),
    }
}

fn run_blocks<T: Real, const N: usize>(level: Level, acc: &mut [T], a: T, b: T, iters: u64) {
    acc.par_chunks_mut(N).for_each(|x| {
        if let Ok(block) = <&mut [T; N]>::try_from(&mut *x) {
            simd::run(level, Chains { x: block, a, b, iters });
        } else {
            // A tail shorter than a block (ACCUMULATORS is a multiple of every block).
            for v in x {
                for _ in 0..iters {
                    *v = v.mul_add::<simd::Unfused>(a, b);
                }
            }
        }
    });
}

/// One block of chains, compiled per SIMD level.
struct Chains<'a, T, const N: usize> {
    x: &'a mut [T; N],
    a: T,
    b: T,
    iters: u64,
}

impl<T: Real, const N: usize> Body for Chains<'_, T, N> {
    type Output = ();
    #[inline(always)]
    fn run<M: Fma>(self) {
        let mut acc = *self.x;
        for _ in 0..self.iters {
            for v in &mut acc {
                *v = v.mul_add::<M>(self.a, self.b);
            }
        }
        *self.x = acc;
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
    use crate::suite::{self, KernelId};
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    /// x <- x*1 + 0.5 is exact: after n steps x0 + n/2, at every block size (the tail
    /// path included).
    #[test]
    fn vector_chains_count_iterations() {
        for len in [192, 96, 48, 24, 7, 192 * 3 + 5] {
            let mut x: Vec<f32> = (0..len).map(|i| i as f32).collect();
            super::vector_chains(&mut x, 1.0, 0.5, 10);
            assert!(x.iter().enumerate().all(|(i, &v)| v == i as f32 + 5.0), "{len}");
            let mut x = vec![3.0f64; len];
            super::vector_chains(&mut x, -1.0, 0.0, 3);
            assert!(x.iter().all(|&v| v == -3.0));
        }
    }

    /// Every variant on 1 and 3 threads passes the suite's closed-form check.
    #[test]
    fn passes_the_closed_form_check_on_any_thread_count() {
        let mut be = CpuBackend::new();
        let kernel = KernelId::Fma.def();
        let opts = TimingOptions {
            min_runs: 1,
            min_time_s: 0.0,
            warmup_runs: 1,
            warmup_time_s: 0.0,
            ..TimingOptions::default()
        };
        let imp = be.implementations(KernelId::Fma.into()).remove(0);
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
