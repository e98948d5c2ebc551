//! CPU implementations of the row softmaxes (`suite::softmax`).
//!
//! Rows are split into rayon tasks of `launch.tile` rows (as the norms); within a row:
//!
//! - three-pass: the maximum (64 lanes), the sum of `exp(x - max)` (64 lanes, the
//!   exponentials not stored), then `y = exp(x - max) * (1 / sum)`;
//! - online: per lane a running maximum `m` and sum `d`; for each block of
//!   `ONLINE_BLOCK` elements the lane maxima are updated first and the sums rescaled by
//!   `exp(m_old - m_new)` once, then the block's `exp(x - m)` are added (one read of the
//!   block from L1 for the maxima and one for the sums; the row is read from memory
//!   once). The lanes are combined as `sum_l d_l exp(m_l - max)`, then the same
//!   normalising pass.
//!
//! `exp` is `simd::Real::exp` (vectorised, a few ulp).

// `inline(always)` on kernel bodies and their helpers is how they get compiled for each
// SIMD level (see `cpu::simd`).
#![allow(clippy::inline_always)]

use super::norm::{default_rows, ROW_TILES};
use super::CpuKernel;
use super::{check_lens, mismatch, tile_or};
use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::cpu::simd::{
    self, max_lanes, max_of_lanes, reduce_lanes, Body, Fma, Level, Real, LANES,
};
use crate::error::BackendError;
use crate::suite::softmax::ONLINE_BLOCK;
use crate::suite::KernelId;
use rayon::prelude::*;

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[
    CpuKernel {
        kernel: KernelId::Softmax,
        implementation: "rooftop",
        builtin: false,
        label: "rooftop: 3 passes per row in cache, vector exp, AVX-512/AVX2/SSE2 dispatch",
        tiles: ROW_TILES,
        run: softmax,
    },
    CpuKernel {
        kernel: KernelId::SoftmaxOnline,
        implementation: "rooftop",
        builtin: false,
        label: "rooftop: online max/sum per 512-element block, AVX-512/AVX2/SSE2 dispatch",
        tiles: ROW_TILES,
        run: softmax_online,
    },
];

fn softmax(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    softmax_at(false, Level::detect(), case, bufs, launch)
}

fn softmax_online(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    softmax_at(true, Level::detect(), case, bufs, launch)
}

/// `(max, sum of exp(x - max))` in three-pass style: the maximum first.
#[inline(always)]
fn stats_two_pass<T: Real>(x: &[T]) -> (T, T) {
    let Some(m) = max_of_lanes(x) else { return (T::ZERO, T::ZERO) };
    let mut acc = [T::ZERO; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for ch in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(ch) {
            *a += (v - m).exp();
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a += (v - m).exp();
    }
    (m, reduce_lanes(acc))
}

/// `(max, sum of exp(x - max))` with running per-lane statistics, rescaled per block.
#[inline(always)]
fn stats_online<T: Real>(x: &[T]) -> (T, T) {
    // Lanes start at the first element (a real value: no infinities, so no inf - inf).
    let Some(&first) = x.first() else { return (T::ZERO, T::ZERO) };
    let mut m = [first; LANES];
    let mut d = [T::ZERO; LANES];
    for block in x.chunks(ONLINE_BLOCK) {
        let mut mn = m;
        let mut chunks = block.chunks_exact(LANES);
        for ch in &mut chunks {
            for (a, &v) in mn.iter_mut().zip(ch) {
                *a = a.max_of(v);
            }
        }
        for (a, &v) in mn.iter_mut().zip(chunks.remainder()) {
            *a = a.max_of(v);
        }
        for ((d, m), &mn) in d.iter_mut().zip(m.iter_mut()).zip(&mn) {
            *d = *d * (*m - mn).exp();
            *m = mn;
        }
        let mut chunks = block.chunks_exact(LANES);
        for ch in &mut chunks {
            for ((d, &m), &v) in d.iter_mut().zip(&m).zip(ch) {
                *d += (v - m).exp();
            }
        }
        for ((d, &m), &v) in d.iter_mut().zip(&m).zip(chunks.remainder()) {
            *d += (v - m).exp();
        }
    }
    let mx = max_lanes(m);
    let mut s = [T::ZERO; LANES];
    for ((s, &d), &m) in s.iter_mut().zip(&d).zip(&m) {
        *s = d * (m - mx).exp();
    }
    (mx, reduce_lanes(s))
}

struct Rows<'a, T> {
    online: bool,
    cols: usize,
    x: &'a [T],
    y: &'a mut [T],
}

impl<T: Real> Body for Rows<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run<M: Fma>(self) {
        let Rows { online, cols, x, y } = self;
        for (x, y) in x.chunks_exact(cols).zip(y.chunks_exact_mut(cols)) {
            let (m, s) = if online { stats_online(x) } else { stats_two_pass(x) };
            let inv = T::ONE / s;
            for (y, &x) in y.iter_mut().zip(x) {
                *y = (x - m).exp() * inv;
            }
        }
    }
}

fn softmax_at(
    online: bool,
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    fn go<T: Real>(
        online: bool,
        level: Level,
        case: &Case,
        x: &[T],
        y: &mut [T],
        launch: &Launch,
    ) -> Result<(), BackendError> {
        let (rows, cols) = (case.size_usize("rows"), case.size_usize("cols"));
        check_lens(case, &[x.len(), y.len()], &[rows * cols, rows * cols])?;
        let task = tile_or(launch, default_rows(rows, cols))?.saturating_mul(cols);
        y.par_chunks_mut(task)
            .zip(x.par_chunks(task))
            .for_each(|(y, x)| simd::run(level, Rows { online, cols, x, y }));
        Ok(())
    }
    match bufs {
        [HostBuf::F32(x), HostBuf::F32(y)] => go(online, level, case, x, y, launch),
        [HostBuf::F64(x), HostBuf::F64(y)] => go(online, level, case, x, y, launch),
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
        for (name, online) in [(KernelId::Softmax, false), (KernelId::SoftmaxOnline, true)] {
            let k = name.def();
            for (rows, cols, dtype) in [
                (1, 1, Precision::Fp32),
                (3, 67, Precision::Fp32),
                (7, 1537, Precision::Fp32),
                (2, 4099, Precision::Fp64),
            ] {
                let c = case(name, rows, cols, dtype);
                let specs = k.buffers(&c);
                let host: Vec<HostBuf> = rng::fill_all(&specs, 5, 1);
                let want = k.reference(&c, &host);
                for level in Level::available() {
                    for tile in [None, Some(1), Some(3)] {
                        let mut bufs = host.clone();
                        let launch = Launch { tile, ..Launch::default() };
                        softmax_at(online, level, &c, &mut bufs, &launch).unwrap();
                        let got = vec![bufs.pop().unwrap()];
                        let r = compare(&["y"], &got, &want, &[false], k.tolerance(&c));
                        assert!(r.passed, "{name} {rows}x{cols} {level:?} {tile:?}: {r:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn hand_values_and_a_growing_maximum() {
        // softmax([0, ln 2]) = [1/3, 2/3]. The increasing row makes the online maximum
        // grow in every block: softmax([0, 1, ..., 999]) has y[999] = 1 / sum_{j>=0} e^-j
        // ~ 1 - 1/e and y[998] = y[999] / e.
        let ramp: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        let top = 1.0 - (-1.0f64).exp();
        for online in [false, true] {
            for level in Level::available() {
                let c = case(KernelId::Softmax, 1, 2, Precision::Fp32);
                let mut b =
                    vec![HostBuf::F32(vec![0.0, 2f32.ln()]), HostBuf::F32(vec![f32::NAN; 2])];
                softmax_at(online, level, &c, &mut b, &Launch::default()).unwrap();
                let y = b[1].as_f32().unwrap();
                assert!((y[0] - 1.0 / 3.0).abs() < 1e-6 && (y[1] - 2.0 / 3.0).abs() < 1e-6);

                let c = case(KernelId::Softmax, 1, 1000, Precision::Fp32);
                let mut b = vec![HostBuf::F32(ramp.clone()), HostBuf::F32(vec![f32::NAN; 1000])];
                softmax_at(online, level, &c, &mut b, &Launch::default()).unwrap();
                let y = b[1].as_f32().unwrap();
                assert!((f64::from(y[999]) - top).abs() < 1e-6, "{online} {level:?} {}", y[999]);
                assert!((f64::from(y[998]) - top / 1f64.exp()).abs() < 1e-6);
                assert!(y[0] >= 0.0 && y[0] < 1e-30);
            }
        }
    }

    #[test]
    fn cpu_backend_end_to_end() {
        let k = KernelId::Softmax.def();
        let c = case(KernelId::Softmax, 9, 777, Precision::Fp32);
        let mut cpu = CpuBackend::new();
        let imp = cpu.implementations(KernelId::Softmax.into()).remove(0);
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
