//! CPU implementations of the one-dimensional kernels (`suite::stream`), and the buffer
//! and launch helpers the other CPU kernel modules of the suite share.
//!
//! Each array is cut into chunks of `launch.tile` elements (default: `n / threads`
//! rounded up to 64, kept within 4 Ki..256 Ki elements, so that every thread gets work
//! and a task's arrays stay within about 1 MiB); rayon runs the chunks on the pool's
//! threads and each chunk runs a loop compiled for the CPU's widest SIMD level
//! (`simd::run`). Stores are ordinary (allocating) stores, as in a C STREAM built with
//! GCC or Clang; `copy` is `memcpy` per chunk, which is also what GCC makes of STREAM's
//! copy loop. `read` sums each 4 Ki-element block in 64 f32/f64 lanes and the blocks in
//! f64, in a fixed order (deterministic for a given tile).

// `inline(always)` on kernel bodies and their helpers is how they get compiled for each
// SIMD level (see `cpu::simd`).
#![allow(clippy::inline_always)]

use super::{check_lens, mismatch, tile_or, CpuKernel};
use crate::backend::{HostBuf, Launch};
use crate::case::Case;
use crate::cpu::simd::{self, sum_lanes, Body, Fma, Level, Real};
use crate::error::BackendError;
use crate::suite::stream::{FILL_VALUE, GELU_CUBIC, GELU_SQRT_2_OVER_PI, SCALAR};
use crate::suite::KernelId;
use rayon::prelude::*;

/// `--autotune` tiles of the one-dimensional kernels (elements per task).
const TILES: &[u32] = &[4096, 16_384, 65_536, 262_144, 1_048_576];

/// The CPU implementations of this module.
pub const KERNELS: &[CpuKernel] = &[
    kernel(KernelId::Read, "rooftop: rayon chunks, 64-lane sums, AVX-512/AVX2/SSE2 dispatch", read),
    kernel(
        KernelId::Write,
        "rooftop: rayon chunks of vector stores, AVX-512/AVX2/SSE2 dispatch",
        write,
    ),
    kernel(KernelId::Copy, "rooftop: rayon chunks, memcpy per chunk", copy),
    kernel(KernelId::Scale, "rooftop: rayon chunks, AVX-512/AVX2/SSE2 dispatch", scale),
    kernel(KernelId::Add, "rooftop: rayon chunks, AVX-512/AVX2/SSE2 dispatch", add),
    kernel(KernelId::Triad, "rooftop: rayon chunks, FMA, AVX-512/AVX2/SSE2 dispatch", triad),
    kernel(KernelId::Silu, "rooftop: rayon chunks, vector exp, AVX-512/AVX2/SSE2 dispatch", silu),
    kernel(KernelId::Gelu, "rooftop: rayon chunks, vector exp, AVX-512/AVX2/SSE2 dispatch", gelu),
];

const fn kernel(id: KernelId, label: &'static str, run: super::CpuKernelFn) -> CpuKernel {
    CpuKernel { kernel: id, implementation: "rooftop", builtin: false, label, tiles: TILES, run }
}

/// Default chunk of a one-dimensional kernel: an equal share per thread, 64-aligned,
/// within 4 Ki..256 Ki elements.
fn default_chunk(n: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    n.div_ceil(threads).next_multiple_of(64).clamp(4096, 1 << 18)
}

// ---- kernels ----

fn read(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    read_at(Level::detect(), case, bufs, launch)
}

fn read_at(
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    fn go<T: Real>(
        level: Level,
        case: &Case,
        a: &[T],
        out: &mut [T],
        launch: &Launch,
    ) -> Result<(), BackendError> {
        let n = case.size_usize("n");
        check_lens(case, &[a.len(), out.len()], &[n, 1])?;
        let chunk = tile_or(launch, default_chunk(n))?;
        let partial: Vec<f64> = a.par_chunks(chunk).map(|a| simd::run(level, Sum(a))).collect();
        out[0] = T::from_f64(partial.iter().sum());
        Ok(())
    }
    match bufs {
        [HostBuf::F32(a), HostBuf::F32(out)] => go(level, case, a, out, launch),
        [HostBuf::F64(a), HostBuf::F64(out)] => go(level, case, a, out, launch),
        _ => Err(mismatch(case, bufs, "[a, sum] of one float type")),
    }
}

/// Sum of a chunk: 4 Ki-element blocks in lanes, the blocks in f64.
struct Sum<'a, T>(&'a [T]);

impl<T: Real> Body for Sum<'_, T> {
    type Output = f64;
    #[inline(always)]
    fn run<M: Fma>(self) -> f64 {
        let mut total = 0.0;
        for block in self.0.chunks(4096) {
            total += sum_lanes(block).to_f64();
        }
        total
    }
}

fn write(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    write_at(Level::detect(), case, bufs, launch)
}

fn write_at(
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    fn go<T: Real>(
        level: Level,
        case: &Case,
        out: &mut [T],
        launch: &Launch,
    ) -> Result<(), BackendError> {
        let n = case.size_usize("n");
        check_lens(case, &[out.len()], &[n])?;
        let chunk = tile_or(launch, default_chunk(n))?;
        let v = T::from_f64(FILL_VALUE);
        out.par_chunks_mut(chunk).for_each(|out| simd::run(level, Fill(out, v)));
        Ok(())
    }
    match bufs {
        [HostBuf::F32(out)] => go(level, case, out, launch),
        [HostBuf::F64(out)] => go(level, case, out, launch),
        _ => Err(mismatch(case, bufs, "[out] of one float type")),
    }
}

struct Fill<'a, T>(&'a mut [T], T);

impl<T: Real> Body for Fill<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run<M: Fma>(self) {
        for o in self.0 {
            *o = self.1;
        }
    }
}

fn copy(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    fn go<T: Real>(case: &Case, a: &[T], b: &mut [T], launch: &Launch) -> Result<(), BackendError> {
        let n = case.size_usize("n");
        check_lens(case, &[a.len(), b.len()], &[n, n])?;
        let chunk = tile_or(launch, default_chunk(n))?;
        b.par_chunks_mut(chunk).zip(a.par_chunks(chunk)).for_each(|(b, a)| b.copy_from_slice(a));
        Ok(())
    }
    match bufs {
        [HostBuf::F32(a), HostBuf::F32(b)] => go(case, a, b, launch),
        [HostBuf::F64(a), HostBuf::F64(b)] => go(case, a, b, launch),
        _ => Err(mismatch(case, bufs, "[a, b] of one float type")),
    }
}

/// An element-wise map of one input.
#[derive(Debug, Clone, Copy)]
enum Unary {
    Scale,
    Silu,
    Gelu,
}

struct Map1<'a, T> {
    op: Unary,
    x: &'a [T],
    y: &'a mut [T],
}

impl<T: Real> Body for Map1<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run<M: Fma>(self) {
        let Map1 { op, x, y } = self;
        match op {
            Unary::Scale => {
                let s = T::from_f64(SCALAR);
                for (y, &x) in y.iter_mut().zip(x) {
                    *y = s * x;
                }
            }
            Unary::Silu => {
                for (y, &x) in y.iter_mut().zip(x) {
                    *y = x / (T::ONE + (-x).exp());
                }
            }
            Unary::Gelu => {
                // 0.5 x (1 + tanh(z)) = x / (1 + e^(-2z)), z = sqrt(2/pi) (x + 0.044715 x^3).
                let a = T::from_f64(-2.0 * GELU_SQRT_2_OVER_PI);
                let b = T::from_f64(-2.0 * GELU_SQRT_2_OVER_PI * GELU_CUBIC);
                for (y, &x) in y.iter_mut().zip(x) {
                    let arg = (x * x).mul_add::<M>(b, a) * x;
                    *y = x / (T::ONE + arg.exp());
                }
            }
        }
    }
}

fn unary_at(
    op: Unary,
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    fn go<T: Real>(
        op: Unary,
        level: Level,
        case: &Case,
        x: &[T],
        y: &mut [T],
        launch: &Launch,
    ) -> Result<(), BackendError> {
        let n = case.size_usize("n");
        check_lens(case, &[x.len(), y.len()], &[n, n])?;
        let chunk = tile_or(launch, default_chunk(n))?;
        y.par_chunks_mut(chunk)
            .zip(x.par_chunks(chunk))
            .for_each(|(y, x)| simd::run(level, Map1 { op, x, y }));
        Ok(())
    }
    match bufs {
        [HostBuf::F32(x), HostBuf::F32(y)] => go(op, level, case, x, y, launch),
        [HostBuf::F64(x), HostBuf::F64(y)] => go(op, level, case, x, y, launch),
        _ => Err(mismatch(case, bufs, "[input, output] of one float type")),
    }
}

fn scale(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    unary_at(Unary::Scale, Level::detect(), case, bufs, launch)
}

fn silu(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    unary_at(Unary::Silu, Level::detect(), case, bufs, launch)
}

fn gelu(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    unary_at(Unary::Gelu, Level::detect(), case, bufs, launch)
}

/// An element-wise map of two inputs: `add` (`x + y`) or `triad` (`x + 3 y`).
struct Map2<'a, T> {
    triad: bool,
    x: &'a [T],
    y: &'a [T],
    out: &'a mut [T],
}

impl<T: Real> Body for Map2<'_, T> {
    type Output = ();
    #[inline(always)]
    fn run<M: Fma>(self) {
        let Map2 { triad, x, y, out } = self;
        if triad {
            let s = T::from_f64(SCALAR);
            for ((o, &x), &y) in out.iter_mut().zip(x).zip(y) {
                *o = y.mul_add::<M>(s, x);
            }
        } else {
            for ((o, &x), &y) in out.iter_mut().zip(x).zip(y) {
                *o = x + y;
            }
        }
    }
}

fn binary_at(
    triad: bool,
    level: Level,
    case: &Case,
    bufs: &mut [HostBuf],
    launch: &Launch,
) -> Result<(), BackendError> {
    fn go<T: Real>(
        triad: bool,
        level: Level,
        case: &Case,
        x: &[T],
        y: &[T],
        out: &mut [T],
        launch: &Launch,
    ) -> Result<(), BackendError> {
        let n = case.size_usize("n");
        check_lens(case, &[x.len(), y.len(), out.len()], &[n, n, n])?;
        let chunk = tile_or(launch, default_chunk(n))?;
        out.par_chunks_mut(chunk)
            .zip(x.par_chunks(chunk))
            .zip(y.par_chunks(chunk))
            .for_each(|((out, x), y)| simd::run(level, Map2 { triad, x, y, out }));
        Ok(())
    }
    match bufs {
        [HostBuf::F32(x), HostBuf::F32(y), HostBuf::F32(o)] => {
            go(triad, level, case, x, y, o, launch)
        }
        [HostBuf::F64(x), HostBuf::F64(y), HostBuf::F64(o)] => {
            go(triad, level, case, x, y, o, launch)
        }
        _ => Err(mismatch(case, bufs, "[input, input, output] of one float type")),
    }
}

fn add(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    binary_at(false, Level::detect(), case, bufs, launch)
}

/// STREAM triad `a = b + 3 c`; buffers `[b, c, a]`.
fn triad(case: &Case, bufs: &mut [HostBuf], launch: &Launch) -> Result<(), BackendError> {
    binary_at(true, Level::detect(), case, bufs, launch)
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

    type At = fn(Level, &Case, &mut [HostBuf], &Launch) -> Result<(), BackendError>;

    fn at(kernel: KernelId) -> At {
        match kernel {
            KernelId::Read => read_at,
            KernelId::Write => write_at,
            KernelId::Copy => |_, c, b, l| copy(c, b, l),
            KernelId::Scale => |lv, c, b, l| unary_at(Unary::Scale, lv, c, b, l),
            KernelId::Silu => |lv, c, b, l| unary_at(Unary::Silu, lv, c, b, l),
            KernelId::Gelu => |lv, c, b, l| unary_at(Unary::Gelu, lv, c, b, l),
            KernelId::Add => |lv, c, b, l| binary_at(false, lv, c, b, l),
            KernelId::Triad => |lv, c, b, l| binary_at(true, lv, c, b, l),
            other => panic!("{other} is not a 1-D kernel"),
        }
    }

    /// Runs `name` at every SIMD level with several tiles and compares with the suite's
    /// reference under the suite's tolerance.
    fn check(name: KernelId, n: u64, dtype: Precision) {
        let k = name.def();
        let case = Case {
            kernel: name.into(),
            sizes: vec![("n", n)],
            dtype,
            weights: None,
            variant: None,
        };
        let specs = k.buffers(&case);
        let host: Vec<HostBuf> = rng::fill_all(&specs, 11, 1);
        let want = k.reference(&case, &host);
        for level in Level::available() {
            for tile in [None, Some(7), Some(4096)] {
                let mut bufs = host.clone();
                let launch = Launch { tile, ..Launch::default() };
                at(name)(level, &case, &mut bufs, &launch).unwrap();
                let got: Vec<HostBuf> =
                    specs.iter().zip(bufs).filter(|(s, _)| s.output).map(|(_, b)| b).collect();
                let names: Vec<&str> = specs.iter().filter(|s| s.output).map(|s| s.name).collect();
                let r = compare(&names, &got, &want, &[false], k.tolerance(&case));
                assert!(r.passed, "{name} n={n} {dtype} {level:?} tile {tile:?}: {r:?}");
            }
        }
    }

    #[test]
    fn every_kernel_matches_the_reference_at_odd_sizes() {
        for k in KERNELS {
            for n in [1, 63, 1001, 10_007] {
                check(k.kernel, n, Precision::Fp32);
            }
            check(k.kernel, 4099, Precision::Fp64);
        }
    }

    #[test]
    fn hand_computed_values() {
        let case = |name: KernelId| Case {
            kernel: name.into(),
            sizes: vec![("n", 3)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        };
        for level in Level::available() {
            // triad: a = b + 3c with b = [1, 2, 3], c = [0.5, 0, -1] -> [2.5, 2, 0]
            let mut b = vec![
                HostBuf::F32(vec![1.0, 2.0, 3.0]),
                HostBuf::F32(vec![0.5, 0.0, -1.0]),
                HostBuf::F32(vec![f32::NAN; 3]),
            ];
            binary_at(true, level, &case(KernelId::Triad), &mut b, &Launch::default()).unwrap();
            assert_eq!(b[2], HostBuf::F32(vec![2.5, 2.0, 0.0]));
            // read: 1 + 2 + 4.5 = 7.5
            let mut b = vec![HostBuf::F32(vec![1.0, 2.0, 4.5]), HostBuf::F32(vec![f32::NAN])];
            read_at(level, &case(KernelId::Read), &mut b, &Launch::default()).unwrap();
            assert_eq!(b[1], HostBuf::F32(vec![7.5]));
            // silu(0) = 0, silu(-inf-ish) ~ 0, silu(ln 3) = 0.75 ln 3
            let l3 = 3f32.ln();
            let mut b = vec![HostBuf::F32(vec![0.0, -100.0, l3]), HostBuf::F32(vec![f32::NAN; 3])];
            unary_at(Unary::Silu, level, &case(KernelId::Silu), &mut b, &Launch::default())
                .unwrap();
            let y = b[1].as_f32().unwrap();
            assert_eq!(y[0], 0.0);
            assert!(y[1] <= 0.0 && y[1] > -1e-30);
            assert!((y[2] - 0.75 * l3).abs() < 1e-6);
        }
    }

    #[test]
    fn bad_buffers_and_tiles_are_errors() {
        let case = Case {
            kernel: KernelId::Triad.into(),
            sizes: vec![("n", 4)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        };
        let mut b = vec![HostBuf::F32(vec![0.0; 4]), HostBuf::F32(vec![0.0; 3])];
        assert!(triad(&case, &mut b, &Launch::default()).is_err());
        let mut b = vec![
            HostBuf::F32(vec![0.0; 4]),
            HostBuf::F64(vec![0.0; 4]),
            HostBuf::F32(vec![0.0; 4]),
        ];
        assert!(triad(&case, &mut b, &Launch::default()).is_err());
        let mut b = vec![HostBuf::F32(vec![0.0; 4]); 3];
        let zero = Launch { tile: Some(0), ..Launch::default() };
        assert!(matches!(triad(&case, &mut b, &zero), Err(BackendError::BadLaunch(_))));
    }

    #[test]
    fn cpu_backend_end_to_end() {
        let k = KernelId::Triad.def();
        let case = Case {
            kernel: KernelId::Triad.into(),
            sizes: vec![("n", 100_003)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        };
        let mut cpu = CpuBackend::new();
        let imp = cpu.implementations(KernelId::Triad.into()).remove(0);
        assert_eq!(imp.id, "rooftop");
        let opts = TimingOptions {
            warmup_runs: 1,
            warmup_time_s: 0.0,
            min_runs: 2,
            min_time_s: 0.001,
            ..TimingOptions::default()
        };
        let launch = Some(Launch { threads: Some(2), tile: Some(4096), ..Launch::default() });
        let r =
            run_case(&mut cpu, k, &case, &imp, launch, &opts, &AtomicBool::new(false), &mut |_| {})
                .unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert_eq!(r.check.elements, 100_003);
        assert!(r.timing.is_some());
        assert_eq!(r.buffer_bytes, 3 * 100_003 * 4);
    }
}
