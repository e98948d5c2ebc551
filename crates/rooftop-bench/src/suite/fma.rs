//! Suite kernel `fma`: peak FLOP/s of the fused multiply-add units (a ceilings probe, not
//! in the default suite).
//!
//! Each of [`ACCUMULATORS`] accumulators runs the recurrence `x <- x * a + b` `iters`
//! times, starting from its own `x0`; `a` and `b` are one scalar each for the whole case,
//! so a backend can keep them in registers and give every register an independent chain
//! (the CPU runs blocks of 12 vector chains, enough to cover FMA latency x throughput).
//! Variants: `vector` (widest SIMD) and `scalar` (one lane per instruction).
//!
//! Inputs: `x0` in [0.5, 1.5); `a` in [1 - 2/n, 1 - 1/n) and `b` in [0.5/n, 1.5/n) for
//! n = `iters`, so that `a^n` stays in about [e^-2, e^-1]: every output still depends on
//! its own `x0` and on the iteration count (n/2 iterations would fail the check).
//!
//! Reference (closed form of the linear recurrence, in f64):
//! `x_n = x0 a^n + b (1 - a^n) / (1 - a)` (`x0 + n b` when `a` rounds to 1).
//!
//! Tolerance: the fixed point `p = b / (1 - a)` lies in [0.25, 1.5), every iterate lies
//! between `x0` and `p`, so `|a x| <= 1.5` and `|a x + b| <= 1.5`. One step's rounding error
//! is then at most `u (|a x| + |a x + b|) <= 3u` (fused or as a multiply and an add), and
//! errors are damped by `|a| < 1` afterwards, so `|x_n - fl(x_n)| <= 3 n u`. The check
//! allows `4 n u + 32 u_64` (the last term for the reference's own rounding).
//!
//! Work: 2 FLOPs per FMA, `2 * accumulators * iters`; bytes: `x0` read and the
//! accumulators written once.

use super::{bad, BufferSpec, Kernel, Tolerance};
use crate::backend::{DType, HostBuf};
use crate::case::{Case, KernelRef, Selection, Variant};
use crate::error::SuiteError;
use crate::rng::Init;
use crate::suite::KernelId;
use rooftop_core::ops::{OpClass, Work};
use rooftop_core::units::{ExecUnit, Precision};

/// Accumulators of every case: 3840 blocks of 96 (12 chains x 8 fp32 lanes), and a
/// multiple of every block size of the CPU kernels (12, 48, 96, 192) and of the CUDA
/// kernel's 4 chains per thread, so that the work splits evenly over 1, 2, 3, 4, 5, 6, 8,
/// 10, 12, 15, 16, ... threads. A GPU needs this many independent chains: on an H200 a
/// thread's dependent FMA issued every ~8.6 cycles (Nsight Compute, 2026-11-27), and
/// 92,160 chains (5.5 warps per scheduler) kept the schedulers idle half the time.
pub const ACCUMULATORS: usize = 368_640;
/// Default iterations of the vector variant (a few ms per run on a 2-core AVX2 machine).
pub const DEFAULT_ITERS_VECTOR: u64 = 1024;
/// Default iterations of the scalar variant (one lane per instruction: 8x fewer).
pub const DEFAULT_ITERS_SCALAR: u64 = 128;
/// Largest `iters` (beyond it, `a` is 1 in fp32 and the check's bound grows useless).
pub const MAX_ITERS: u64 = 1 << 24;

/// `fma`.
#[derive(Debug)]
pub struct Fma;

pub(super) static FMA: Fma = Fma;

fn dtype_of(case: &Case) -> DType {
    if case.dtype == Precision::Fp64 {
        DType::F64
    } else {
        DType::F32
    }
}

impl Kernel for Fma {
    fn id(&self) -> KernelRef {
        KernelRef::Suite(KernelId::Fma)
    }

    fn summary(&self) -> &'static str {
        "FMA throughput probe: independent x = x*a + b chains (--variant vector|scalar, \
         fp32/fp64); size iters = FMAs per chain (default 1024 vector, 128 scalar)"
    }

    fn size_params(&self) -> &'static [&'static str] {
        &["iters"]
    }

    fn in_default_suite(&self) -> bool {
        false
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        let dtype = match sel.dtype {
            None | Some(Precision::Fp32) => Precision::Fp32,
            Some(Precision::Fp64) => Precision::Fp64,
            Some(p) => {
                return Err(bad(
                    KernelId::Fma.name(),
                    format!("dtype {p} is not supported (fp32 or fp64)"),
                ))
            }
        };
        let variant = match sel.variant {
            None | Some(Variant::Vector) => Variant::Vector.name(),
            Some(Variant::Scalar) => Variant::Scalar.name(),
            Some(v) => {
                return Err(bad(
                    KernelId::Fma.name(),
                    format!("variant `{v}` is not one of fma's (expected vector or scalar)"),
                ))
            }
        };
        let default = if variant == "scalar" { DEFAULT_ITERS_SCALAR } else { DEFAULT_ITERS_VECTOR };
        // `--sizes` are problem sizes in elements, which the probe has none of: only
        // `--single-config` sets its iteration count (16 Mi iterations per chain would
        // take seconds a sample).
        let iters = if sel.single_config.is_some() {
            super::sizes_1d(KernelId::Fma.name(), sel, &[default])?
        } else {
            vec![default]
        };
        iters.into_iter().map(|n| case(n, dtype, variant)).collect()
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let n = case.size("iters").max(1) as f64;
        let dt = dtype_of(case);
        vec![
            BufferSpec::input("x0", dt, ACCUMULATORS, Init::Uniform { lo: 0.5, hi: 1.5 }),
            BufferSpec::input("a", dt, 1, Init::Uniform { lo: 1.0 - 2.0 / n, hi: 1.0 - 1.0 / n }),
            BufferSpec::input("b", dt, 1, Init::Uniform { lo: 0.5 / n, hi: 1.5 / n }),
            BufferSpec::output("acc", dt, ACCUMULATORS),
        ]
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let [x0, a, b, ..] = buffers else { return Vec::new() };
        let (x0, a, b) = (x0.to_f64_lossy(), a.to_f64_lossy(), b.to_f64_lossy());
        let (Some(&a), Some(&b)) = (a.first(), b.first()) else { return Vec::new() };
        let n = case.size("iters");
        let out: Vec<f64> = x0.iter().map(|&x| closed_form(x, a, b, n)).collect();
        vec![match dtype_of(case) {
            DType::F64 => HostBuf::F64(out),
            _ => HostBuf::F32(out.iter().map(|&x| x as f32).collect()),
        }]
    }

    fn tolerance(&self, case: &Case) -> Tolerance {
        let u = if case.dtype == Precision::Fp64 {
            f64::EPSILON / 2.0
        } else {
            f64::from(f32::EPSILON) / 2.0
        };
        Tolerance::new(4.0 * case.size("iters") as f64 * u + 32.0 * f64::EPSILON / 2.0, 0.0)
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let n = case.size("iters");
        if !(1..=MAX_ITERS).contains(&n) {
            return Err(bad(
                KernelId::Fma.name(),
                format!("iters must be in 1..={MAX_ITERS}, got {n}"),
            ));
        }
        let size = dtype_of(case).size_bytes();
        let acc = ACCUMULATORS;
        let variant = case.variant.unwrap_or("vector");
        Ok(Work {
            class: OpClass::Elementwise,
            shape: format!("fma {variant} {} iters={n} x {acc} accumulators", case.dtype),
            flops: 2.0 * acc as f64 * n as f64,
            precision: case.dtype,
            unit: ExecUnit::Vector,
            bytes_read: (acc * size + 2 * size) as f64,
            bytes_written: (acc * size) as f64,
            flops_formula: format!("2*accumulators*iters = 2*{acc}*{n}"),
            bytes_formula: format!("read x0 + a + b = ({acc}+2)*{size}; write acc = {acc}*{size}"),
            assumptions: vec![
                "one FMA = 2 FLOPs; the accumulators stay in registers between iterations"
                    .to_string(),
            ],
        })
    }
}

fn case(n: u64, dtype: Precision, variant: &'static str) -> Result<Case, SuiteError> {
    if !(1..=MAX_ITERS).contains(&n) {
        return Err(bad(
            KernelId::Fma.name(),
            format!("iters must be in 1..={MAX_ITERS}, got {n}"),
        ));
    }
    Ok(Case {
        kernel: KernelRef::Suite(KernelId::Fma),
        sizes: vec![("iters", n)],
        dtype,
        weights: None,
        variant: Some(variant),
    })
}

/// The case the ceilings measure for a precision and variant, at the default iterations.
pub fn ceiling_case(dtype: Precision, scalar: bool) -> Case {
    let (n, v) =
        if scalar { (DEFAULT_ITERS_SCALAR, "scalar") } else { (DEFAULT_ITERS_VECTOR, "vector") };
    Case {
        kernel: KernelRef::Suite(KernelId::Fma),
        sizes: vec![("iters", n)],
        dtype,
        weights: None,
        variant: Some(v),
    }
}

/// `x0 a^n + b (1 - a^n) / (1 - a)`, or `x0 + n b` for `a = 1`.
fn closed_form(x0: f64, a: f64, b: f64, n: u64) -> f64 {
    let n_f = n as f64;
    if a == 1.0 {
        return x0 + n_f * b;
    }
    let an = a.powf(n_f);
    x0 * an + b * (1.0 - an) / (1.0 - a)
}

#[cfg(test)]
mod tests {
    use crate::Selection;

    /// `--sizes 1M,16M` sizes the suite's arrays; it must not make each FMA chain 16 Mi
    /// iterations long (seconds a sample): the probe keeps its default. Only
    /// `--single-config` sets its iteration count.
    #[test]
    fn sizes_do_not_set_the_iteration_count() {
        use super::super::Kernel as _;
        let sel = Selection { sizes: Some(vec![1 << 20, 16 << 20]), ..Selection::default() };
        let cases = super::Fma.cases(&sel).unwrap();
        let iters: Vec<u64> = cases.iter().map(|c| c.size("iters")).collect();
        assert_eq!(iters, vec![1024]);
        let sel = Selection { single_config: Some(vec![512]), ..Selection::default() };
        let cases = super::Fma.cases(&sel).unwrap();
        assert_eq!(cases[0].size("iters"), 512);
    }

    use super::*;
    use crate::suite::compare;

    /// The f64 recurrence, step by step (an independent oracle for the closed form).
    fn iterate(x0: f64, a: f64, b: f64, n: u64) -> f64 {
        (0..n).fold(x0, |x, _| x * a + b)
    }

    #[test]
    fn closed_form_matches_the_recurrence_and_hand_values() {
        assert_eq!(closed_form(2.0, 1.0, 0.5, 10), 7.0);
        assert_eq!(closed_form(1.0, 0.5, 1.0, 2), 1.75); // 1 -> 1.5 -> 1.75
        for &(x0, a, b, n) in
            &[(0.7, 0.99, 0.004, 100u64), (1.2, -0.5, 0.8, 1), (0.9, 0.9995, 0.00051, 4096)]
        {
            let (c, r) = (closed_form(x0, a, b, n), iterate(x0, a, b, n));
            assert!((c - r).abs() < 1e-12, "{c} vs {r}");
        }
    }

    /// An fp32 FMA recurrence (the kernel's arithmetic, done here one step at a time
    /// with f32::mul_add) is within the stated tolerance of the closed form, for random
    /// inputs from the suite's own distributions.
    #[test]
    fn f32_recurrence_is_within_tolerance_and_half_the_iterations_is_not() {
        for n in [1u64, 7, 4096] {
            let c = case(n, Precision::Fp32, "vector").unwrap();
            let bufs: Vec<HostBuf> = Fma
                .buffers(&c)
                .iter()
                .map(|s| crate::rng::fill(s.dtype, s.len.min(64), s.init, n))
                .collect();
            let (HostBuf::F32(x0), HostBuf::F32(a), HostBuf::F32(b)) =
                (&bufs[0], &bufs[1], &bufs[2])
            else {
                panic!()
            };
            let run = |iters: u64| -> Vec<f32> {
                x0.iter().map(|&x| (0..iters).fold(x, |x, _| x.mul_add(a[0], b[0]))).collect()
            };
            let want: Vec<f64> = x0
                .iter()
                .map(|&x| closed_form(f64::from(x), f64::from(a[0]), f64::from(b[0]), n))
                .collect();
            let want = HostBuf::F32(want.iter().map(|&x| x as f32).collect());
            let tol = Fma.tolerance(&c);
            let ok = compare(
                &["acc"],
                &[HostBuf::F32(run(n))],
                std::slice::from_ref(&want),
                &[false],
                tol,
            );
            assert!(ok.passed, "n={n}: {ok:?}");
            if n > 1 {
                let half = compare(&["acc"], &[HostBuf::F32(run(n / 2))], &[want], &[false], tol);
                assert!(!half.passed, "n={n}: half the iterations passed");
            }
        }
    }

    #[test]
    fn work_counts_two_flops_per_fma() {
        let w = Fma.work(&ceiling_case(Precision::Fp64, false)).unwrap();
        assert_eq!(w.flops, 2.0 * 368_640.0 * 1024.0);
        assert_eq!(w.bytes_written, 368_640.0 * 8.0);
        assert_eq!(w.precision, Precision::Fp64);
    }

    #[test]
    fn cases_reject_bad_input() {
        assert!(!Fma.in_default_suite());
        let d = Fma.cases(&Selection::default()).unwrap();
        assert_eq!(d[0].sizes, vec![("iters", DEFAULT_ITERS_VECTOR)]);
        let s = Fma
            .cases(&Selection { variant: Some(Variant::Scalar), ..Selection::default() })
            .unwrap();
        assert_eq!(s[0].variant, Some("scalar"));
        for sel in [
            Selection { variant: Some(Variant::Zp), ..Selection::default() },
            Selection { dtype: Some(Precision::Bf16), ..Selection::default() },
            Selection { single_config: Some(vec![0]), ..Selection::default() },
            Selection { single_config: Some(vec![MAX_ITERS + 1]), ..Selection::default() },
        ] {
            assert!(Fma.cases(&sel).is_err(), "{sel:?}");
        }
    }
}
