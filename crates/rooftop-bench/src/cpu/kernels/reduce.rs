//! CPU implementation of `rowsum` (`suite::reduce`): rows in rayon tasks of `launch.tile`
//! rows (as the norms), each row summed in 64 lanes of the data type
//! (`simd::sum_lanes`) compiled per SIMD level.

// `inline(always)` on kernel bodies and their helpers is how they get compiled for each
// SIMD level (see `cpu::simd`).
#![allow(clippy::inline_always)]

use super::norm::{default_rows, ROW_TILES};
use super::CpuKernel;
use super::{check_lens, mismatch, tile_or};
use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::cpu::simd::{self, sum_lanes, Body, Fma, Level, Real};
use crate::error::BackendError;
use crate::suite::KernelId;
use rayon::prelude::*;

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[CpuKernel {
    kernel: KernelId::RowSum,
    implementation: "rooftop",
    builtin: false,
    label: "rooftop: rows in rayon tasks, 64-lane sums, AVX-512/AVX2/SSE2 dispatch",
    tiles: ROW_TILES,
    run: rowsum,
}];

fn rowsum(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    rowsum_at(Level::detect(), case, bufs, launch)
}

struct Rows<'a, T> {
    cols: usize,
    x: &'a [T],
    y: &'a mut [T],
}

impl<T: Real> Body for Rows<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run<M: Fma>(self) {
        for (y, x) in self.y.iter_mut().zip(self.x.chunks_exact(self.cols)) {
            *y = sum_lanes(x);
        }
    }
}

fn rowsum_at(
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    fn go<T: Real>(
        level: Level,
        case: &Case,
        x: &[T],
        y: &mut [T],
        launch: &Launch,
    ) -> Result<(), BackendError> {
        let (rows, cols) = (case.size_usize("rows"), case.size_usize("cols"));
        check_lens(case, &[x.len(), y.len()], &[rows * cols, rows])?;
        let task = tile_or(launch, default_rows(rows, cols))?;
        y.par_chunks_mut(task)
            .zip(x.par_chunks(task.saturating_mul(cols)))
            .for_each(|(y, x)| simd::run(level, Rows { cols, x, y }));
        Ok(())
    }
    match bufs {
        [HostBuf::F32(x), HostBuf::F32(y)] => go(level, case, x, y, launch),
        [HostBuf::F64(x), HostBuf::F64(y)] => go(level, case, x, y, launch),
        _ => Err(mismatch(case, bufs, "[x, y] of one float type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::cpu::CpuBackend;
    use crate::harness::{run_case, TimingOptions};
    use crate::rng;
    use crate::suite::compare;
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    fn case(rows: u64, cols: u64, dtype: Precision) -> Case {
        Case {
            kernel: KernelId::RowSum.into(),
            sizes: vec![("rows", rows), ("cols", cols)],
            dtype,
            weights: None,
            variant: None,
        }
    }

    #[test]
    fn matches_the_reference_at_odd_sizes() {
        let k = KernelId::RowSum.def();
        for (rows, cols, dtype) in [
            (1, 1, Precision::Fp32),
            (13, 67, Precision::Fp32),
            (5, 10_007, Precision::Fp32),
            (3, 129, Precision::Fp64),
        ] {
            let c = case(rows, cols, dtype);
            let s = &k.buffers(&c)[0];
            let host =
                vec![rng::fill(s.dtype, s.len, s.init, 9), HostBuf::zeros(s.dtype, rows as usize)];
            let want = k.reference(&c, &host);
            for level in Level::available() {
                for tile in [None, Some(1), Some(4)] {
                    let mut bufs = host.clone();
                    rowsum_at(level, &c, &mut bufs, &Launch { tile, ..Launch::default() }).unwrap();
                    let got = vec![bufs.pop().unwrap()];
                    let r = compare(&["y"], &got, &want, &[false], k.tolerance(&c));
                    assert!(r.passed, "{rows}x{cols} {level:?} {tile:?}: {r:?}");
                }
            }
        }
    }

    #[test]
    fn hand_values() {
        // [[1, 2, 3], [0.5, 0.25, 4]] -> [6, 4.75] on every level.
        for level in Level::available() {
            let mut b = vec![
                HostBuf::F64(vec![1.0, 2.0, 3.0, 0.5, 0.25, 4.0]),
                HostBuf::F64(vec![f64::NAN; 2]),
            ];
            rowsum_at(level, &case(2, 3, Precision::Fp64), &mut b, &Launch::default()).unwrap();
            assert_eq!(b[1], HostBuf::F64(vec![6.0, 4.75]));
        }
    }

    #[test]
    fn cpu_backend_end_to_end() {
        let k = KernelId::RowSum.def();
        let c = case(31, 1025, Precision::Fp32);
        let mut cpu = CpuBackend::new();
        let imp = cpu.implementations(KernelId::RowSum.into()).remove(0);
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
    }
}
