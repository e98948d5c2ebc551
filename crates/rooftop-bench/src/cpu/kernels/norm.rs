//! CPU implementations of RMSNorm and LayerNorm (`suite::norm`).
//!
//! Rows are split into tasks of `launch.tile` rows (default: an equal share per thread
//! in four, at most 64 Ki elements per task); each row is read from memory once and
//! stays in the L1/L2 cache for the passes over it: RMSNorm sums squares, then scales;
//! LayerNorm sums for the mean, sums squared deviations from it (the two-pass variance,
//! which does not cancel like E[x²] − mean²), then normalises. Statistics accumulate in
//! 64 lanes of the data type (`simd::sum_lanes`), loops compile per SIMD level.

// `inline(always)` on kernel bodies and their helpers is how they get compiled for each
// SIMD level (see `cpu::simd`).
#![allow(clippy::inline_always)]

use super::CpuKernel;
use super::{check_lens, mismatch, tile_or};
use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::cpu::simd::{self, sum_lanes, sum_sq_dev_lanes, Body, Fma, Level, Real};
use crate::error::BackendError;
use crate::suite::norm::EPS;
use crate::suite::KernelId;
use rayon::prelude::*;

/// `--autotune` tiles of the row kernels (rows per task).
pub(super) const ROW_TILES: &[u32] = &[1, 4, 16, 64];

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[
    CpuKernel {
        kernel: KernelId::RmsNorm,
        implementation: "rooftop",
        builtin: false,
        label: "rooftop: rows in rayon tasks, 64-lane sums, AVX-512/AVX2/SSE2 dispatch",
        tiles: ROW_TILES,
        run: rmsnorm,
    },
    CpuKernel {
        kernel: KernelId::LayerNorm,
        implementation: "rooftop",
        builtin: false,
        label: "rooftop: rows in rayon tasks, two-pass variance, AVX-512/AVX2/SSE2 dispatch",
        tiles: ROW_TILES,
        run: layernorm,
    },
];

/// Default rows per task of a row kernel: an equal share per thread split in four, at
/// most 64 Ki elements, at least one row.
pub(super) fn default_rows(rows: usize, cols: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    rows.div_ceil(4 * threads).min((1 << 16) / cols.max(1)).max(1)
}

fn rmsnorm(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    norm_at(false, Level::detect(), case, bufs, launch)
}

fn layernorm(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    norm_at(true, Level::detect(), case, bufs, launch)
}

struct Rows<'a, T> {
    layer: bool,
    cols: usize,
    x: &'a [T],
    w: &'a [T],
    b: &'a [T],
    y: &'a mut [T],
}

impl<T: Real> Body for Rows<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run<M: Fma>(self) {
        let Rows { layer, cols, x, w, b, y } = self;
        let inv_d = T::ONE / T::from_f64(cols as f64);
        let eps = T::from_f64(EPS);
        for (x, y) in x.chunks_exact(cols).zip(y.chunks_exact_mut(cols)) {
            if layer {
                let mean = sum_lanes(x) * inv_d;
                let var = sum_sq_dev_lanes::<M, T>(x, mean) * inv_d;
                let r = T::ONE / (var + eps).sqrt();
                for (((y, &x), &w), &b) in y.iter_mut().zip(x).zip(w).zip(b) {
                    *y = ((x - mean) * r).mul_add::<M>(w, b);
                }
            } else {
                let ms = sum_sq_dev_lanes::<M, T>(x, T::ZERO) * inv_d;
                let r = T::ONE / (ms + eps).sqrt();
                for ((y, &x), &w) in y.iter_mut().zip(x).zip(w) {
                    *y = x * r * w;
                }
            }
        }
    }
}

fn norm_at(
    layer: bool,
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    fn go<T: Real>(
        layer: bool,
        level: Level,
        case: &Case,
        (x, w, b, y): (&[T], &[T], &[T], &mut [T]),
        launch: &Launch,
    ) -> Result<(), BackendError> {
        let (rows, cols) = (case.size_usize("rows"), case.size_usize("cols"));
        check_lens(
            case,
            &[x.len(), w.len(), b.len(), y.len()],
            &[rows * cols, cols, cols, rows * cols],
        )?;
        let task = tile_or(launch, default_rows(rows, cols))?.saturating_mul(cols);
        y.par_chunks_mut(task)
            .zip(x.par_chunks(task))
            .for_each(|(y, x)| simd::run(level, Rows { layer, cols, x, w, b, y }));
        Ok(())
    }
    match (layer, bufs) {
        (false, [HostBuf::F32(x), HostBuf::F32(w), HostBuf::F32(y)]) => {
            go(false, level, case, (x, w, w, y.as_mut_slice()), launch)
        }
        (false, [HostBuf::F64(x), HostBuf::F64(w), HostBuf::F64(y)]) => {
            go(false, level, case, (x, w, w, y.as_mut_slice()), launch)
        }
        (true, [HostBuf::F32(x), HostBuf::F32(w), HostBuf::F32(b), HostBuf::F32(y)]) => {
            go(true, level, case, (x, w, b, y.as_mut_slice()), launch)
        }
        (true, [HostBuf::F64(x), HostBuf::F64(w), HostBuf::F64(b), HostBuf::F64(y)]) => {
            go(true, level, case, (x, w, b, y.as_mut_slice()), launch)
        }
        (_, bufs) => Err(mismatch(case, bufs, "[x, weight, (bias,) y] of one float type")),
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

    fn case(name: KernelId, rows: u64, cols: u64, dtype: Precision) -> Case {
        Case {
            kernel: name.into(),
            sizes: vec![("rows", rows), ("cols", cols)],
            dtype,
            weights: None,
            variant: None,
        }
    }

    #[test]
    fn matches_the_reference_at_odd_sizes() {
        for (name, layer) in [(KernelId::RmsNorm, false), (KernelId::LayerNorm, true)] {
            let k = name.def();
            for (rows, cols, dtype) in [
                (1, 1, Precision::Fp32),
                (3, 67, Precision::Fp32),
                (17, 1000, Precision::Fp32),
                (5, 4099, Precision::Fp64),
            ] {
                let c = case(name, rows, cols, dtype);
                let specs = k.buffers(&c);
                let host: Vec<HostBuf> = rng::fill_all(&specs, 3, 1);
                let want = k.reference(&c, &host);
                for level in Level::available() {
                    for tile in [None, Some(1), Some(4)] {
                        let mut bufs = host.clone();
                        norm_at(layer, level, &c, &mut bufs, &Launch { tile, ..Launch::default() })
                            .unwrap();
                        let got = vec![bufs.pop().unwrap()];
                        let r = compare(&["y"], &got, &want, &[false], k.tolerance(&c));
                        assert!(r.passed, "{name} {rows}x{cols} {level:?} {tile:?}: {r:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn rmsnorm_of_3_4_on_every_level() {
        let c = case(KernelId::RmsNorm, 1, 2, Precision::Fp32);
        for level in Level::available() {
            let mut b = vec![
                HostBuf::F32(vec![3.0, 4.0]),
                HostBuf::F32(vec![1.0, 1.0]),
                HostBuf::F32(vec![f32::NAN; 2]),
            ];
            norm_at(false, level, &c, &mut b, &Launch::default()).unwrap();
            // [3, 4] / sqrt(12.5 + 1e-5)
            let r = (12.5f64 + 1e-5).sqrt();
            let y = b[2].as_f32().unwrap();
            assert!((f64::from(y[0]) - 3.0 / r).abs() < 1e-6, "{y:?}");
            assert!((f64::from(y[1]) - 4.0 / r).abs() < 1e-6, "{y:?}");
        }
    }

    #[test]
    fn wrong_buffers_are_errors() {
        let c = case(KernelId::LayerNorm, 2, 3, Precision::Fp32);
        let mut b = vec![
            HostBuf::F32(vec![0.0; 6]),
            HostBuf::F32(vec![0.0; 3]),
            HostBuf::F32(vec![0.0; 6]),
        ];
        assert!(layernorm(&c, &mut b, &Launch::default()).is_err());
        let mut b = vec![
            HostBuf::F32(vec![0.0; 6]),
            HostBuf::F32(vec![0.0; 2]),
            HostBuf::F32(vec![0.0; 3]),
            HostBuf::F32(vec![0.0; 6]),
        ];
        assert!(layernorm(&c, &mut b, &Launch::default()).is_err());
    }

    #[test]
    fn cpu_backend_end_to_end() {
        let k = KernelId::RmsNorm.def();
        let c = case(KernelId::RmsNorm, 33, 513, Precision::Fp32);
        let mut cpu = CpuBackend::new();
        let imp = cpu.implementations(KernelId::RmsNorm.into()).remove(0);
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
