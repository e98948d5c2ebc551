//! Suite kernel `gemm`: row-major `C[m x n] = A[m x k] . B[k x n]` in fp32 (default) or
//! fp64, the shape of a dense layer.
//!
//! Inputs are uniform in [0, 1): with no negative terms there is no cancellation, so the
//! classical dot-product error bound holds relative to the result itself. For any
//! summation order, fused or not, `|fl(c) - c| <= gamma_k * sum |a_ip b_pj| = gamma_k * c`
//! with `gamma_k = k u / (1 - k u)` and `u` the unit roundoff (Higham, *Accuracy and
//! Stability of Numerical Algorithms*, 2nd ed., §3.1, eq. 3.4-3.5). The check uses
//! `rel = gamma_k + 2u` (the extra `2u` covers rounding the reference to the output
//! type); the reference is a compensated dot product in f64 (Ogita, Rump and Oishi,
//! "Accurate sum and dot product", SIAM J. Sci. Comput. 26(6), 2005, Dot2), accurate to
//! about one f64 ulp, so it adds nothing measurable even for the fp64 case.
//!
//! Small problems (m·n·k <= 2^24) are checked in full; larger ones at a fixed seeded
//! sample of [`SAMPLES`] outputs that includes the four corners (edge tiles), with the
//! others NaN ("not checked", see `check.rs`).
//!
//! What the bound can see: a result of about k/4 off by one term (about 1/4) is a
//! relative error of 1/k, outside `k u` while k < u^(-1/2) (4096 for fp32); larger
//! mistakes (a wrong index, a skipped depth block, a transposed operand: relative errors
//! of order k^(-1/2) or more) are caught at every size.
//!
//! Work: `rooftop_core::ops::gemm::GemmSpec` with `unit = vector` (CPUs have no matrix
//! unit; the spec's default for fp64 would be the matrix unit).

// m, n, k, a, b, c are the GEMM literature's names.
#![allow(clippy::many_single_char_names)]

use super::{bad, model_err, BufferSpec, Kernel, Tolerance};
use crate::backend::{DType, HostBuf};
use crate::case::{Case, KernelRef, Selection};
use crate::error::SuiteError;
use crate::rng::Init;
use crate::suite::KernelId;
use rooftop_core::ops::gemm::GemmSpec;
use rooftop_core::ops::Work;
use rooftop_core::units::{ExecUnit, Precision};

/// Outputs checked in a sampled (large) case.
pub const SAMPLES: usize = 1024;
/// Largest m·n·k checked in full.
const FULL_CHECK_MAX_MNK: u128 = 1 << 24;
/// Largest dimension accepted (the buffers must fit in memory anyway).
const MAX_DIM: u64 = 1 << 20;

/// Default shapes (m, n, k): square GEMMs from cache-resident to DRAM-sized, and a
/// 128-token batch through a 4096 x 4096 layer (an LLM projection).
pub const DEFAULT_SHAPES: &[(u64, u64, u64)] =
    &[(256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048), (128, 4096, 4096)];

/// `gemm`.
#[derive(Debug)]
pub struct Gemm;

fn dtype_of(case: &Case) -> DType {
    if case.dtype == Precision::Fp64 {
        DType::F64
    } else {
        DType::F32
    }
}

fn mnk(case: &Case) -> (usize, usize, usize) {
    (case.size_usize("m"), case.size_usize("n"), case.size_usize("k"))
}

impl Kernel for Gemm {
    fn id(&self) -> KernelRef {
        KernelRef::Suite(KernelId::Gemm)
    }

    fn summary(&self) -> &'static str {
        "dense row-major C = A.B (fp32/fp64); --single-config M,N,K; --sizes S runs square \
         GEMMs of S elements per matrix (m = n = k = sqrt S)"
    }

    fn size_params(&self) -> &'static [&'static str] {
        &["m", "n", "k"]
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        let dtype = match sel.dtype {
            None | Some(Precision::Fp32) => Precision::Fp32,
            Some(Precision::Fp64) => Precision::Fp64,
            Some(p) => {
                return Err(bad(
                    KernelId::Gemm.name(),
                    format!("dtype {p} is not supported (fp32 or fp64)"),
                ))
            }
        };
        if let Some(v) = &sel.variant {
            return Err(bad(
                KernelId::Gemm.name(),
                format!("{} has no variants, got `{v}`", KernelId::Gemm),
            ));
        }
        shape_cases(KernelId::Gemm, sel, DEFAULT_SHAPES, dtype)
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let (m, n, k) = mnk(case);
        let dt = dtype_of(case);
        let init = Init::Uniform { lo: 0.0, hi: 1.0 };
        vec![
            BufferSpec::input("a", dt, m.saturating_mul(k), init),
            BufferSpec::input("b", dt, k.saturating_mul(n), init),
            BufferSpec::output("c", dt, m.saturating_mul(n)),
        ]
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let (m, n, k) = mnk(case);
        let (Some(a), Some(b)) = (buffers.first(), buffers.get(1)) else {
            return Vec::new();
        };
        let (a, b) = (a.to_f64_lossy(), b.to_f64_lossy());
        let Some(c) = reference_products(m, n, k, &a, &b) else { return Vec::new() };
        vec![match dtype_of(case) {
            DType::F64 => HostBuf::F64(c),
            _ => HostBuf::F32(c.iter().map(|&x| x as f32).collect()),
        }]
    }

    fn tolerance(&self, case: &Case) -> Tolerance {
        let u = unit_roundoff(case.dtype);
        let ku = case.size("k") as f64 * u;
        let gamma = if ku < 0.5 { ku / (1.0 - ku) } else { 1.0 };
        Tolerance::new(0.0, gamma + 2.0 * u)
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let mut spec = GemmSpec::new(case.size("m"), case.size("n"), case.size("k"), case.dtype);
        spec.unit = Some(ExecUnit::Vector);
        spec.work().map_err(|e| model_err(KernelId::Gemm.name(), e))
    }
}

/// Cases of a GEMM kernel: `--single-config M,N,K`, `--sizes S` (square, m = n = k =
/// sqrt S), else `defaults`; every dimension in 1..=MAX_DIM.
fn shape_cases(
    id: KernelId,
    sel: &Selection,
    defaults: &[(u64, u64, u64)],
    dtype: Precision,
) -> Result<Vec<Case>, SuiteError> {
    let kernel = id.name();
    let shapes: Vec<(u64, u64, u64)> = if let Some(c) = &sel.single_config {
        let [m, n, k] = c[..] else {
            return Err(bad(
                kernel,
                format!("--single-config takes 3 values (m,n,k), got {}", c.len()),
            ));
        };
        vec![(m, n, k)]
    } else if let Some(sizes) = &sel.sizes {
        sizes
            .iter()
            .map(|&s| {
                let side = (s as f64).sqrt().round() as u64;
                (side, side, side)
            })
            .collect()
    } else {
        defaults.to_vec()
    };
    shapes
        .into_iter()
        .map(|(m, n, k)| {
            for (name, v) in [("m", m), ("n", n), ("k", k)] {
                if !(1..=MAX_DIM).contains(&v) {
                    return Err(bad(kernel, format!("{name} must be in 1..={MAX_DIM}, got {v}")));
                }
            }
            Ok(Case {
                kernel: KernelRef::Suite(id),
                sizes: vec![("m", m), ("n", n), ("k", k)],
                dtype,
                weights: None,
                variant: None,
            })
        })
        .collect()
}

/// Reference products of `a` (m x k) and `b` (k x n): every output for small problems,
/// else the [`sample`] positions, the others NaN (not checked).
fn reference_products(m: usize, n: usize, k: usize, a: &[f64], b: &[f64]) -> Option<Vec<f64>> {
    if a.len() != m * k || b.len() != k * n {
        return None;
    }
    let mut c = vec![f64::NAN; m * n];
    let dot = |i: usize, j: usize| dot2((0..k).map(|p| (a[i * k + p], b[p * n + j])));
    let small = (m as u128) * (n as u128) * (k as u128) <= FULL_CHECK_MAX_MNK;
    if small || m * n <= SAMPLES {
        // Rows in parallel; each output is the same compensated dot product.
        use rayon::prelude::*;
        c.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, row)| {
            for (j, v) in row.iter_mut().enumerate() {
                *v = dot(i, j);
            }
        });
    } else {
        for (i, j) in sample(m, n) {
            c[i * n + j] = dot(i, j);
        }
    }
    Some(c)
}

/// Default shapes of `hgemm`.
pub const HGEMM_SHAPES: &[(u64, u64, u64)] =
    &[(256, 256, 256), (1024, 1024, 1024), (128, 4096, 4096)];

/// `hgemm`: row-major `C = A.B` with IEEE fp16 inputs and output and fp32 accumulation
/// (the mixed precision of GPU half-precision GEMMs). Only GPU backends with fp16
/// arithmetic implement it (wgpu with `shader-f16`); not in the default suite.
///
/// The inputs are fp16 values in [0, 1), exact in f64, so the reference is the exact
/// product sum (Dot2) rounded once to fp16. A kernel that accumulates in fp32 differs from
/// it by at most `gamma_k` of fp32 (Higham §3.1, as for `gemm`) plus one fp16 rounding of
/// its own result and one of the reference: `rel = gamma_k(2^-24) + 2 * 2^-11`. With
/// inputs in [0, 1) the outputs stay below k, inside fp16's range up to k = 65504.
#[derive(Debug)]
pub struct Hgemm;

impl Kernel for Hgemm {
    fn id(&self) -> KernelRef {
        KernelRef::Suite(KernelId::Hgemm)
    }

    fn summary(&self) -> &'static str {
        "fp16 C = A.B with fp32 accumulation (GPU backends with fp16 arithmetic); \
         --single-config M,N,K"
    }

    fn size_params(&self) -> &'static [&'static str] {
        &["m", "n", "k"]
    }

    fn in_default_suite(&self) -> bool {
        false
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        match sel.dtype {
            None | Some(Precision::Fp16) => {}
            Some(p) => {
                return Err(bad(
                    KernelId::Hgemm.name(),
                    format!("{} is fp16 only, got dtype {p}", KernelId::Hgemm),
                ))
            }
        }
        if let Some(v) = &sel.variant {
            return Err(bad(
                KernelId::Hgemm.name(),
                format!("{} has no variants, got `{v}`", KernelId::Hgemm),
            ));
        }
        shape_cases(KernelId::Hgemm, sel, HGEMM_SHAPES, Precision::Fp16)
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let (m, n, k) = mnk(case);
        let init = Init::Uniform { lo: 0.0, hi: 1.0 };
        vec![
            BufferSpec::input("a", DType::F16, m.saturating_mul(k), init),
            BufferSpec::input("b", DType::F16, k.saturating_mul(n), init),
            BufferSpec::output("c", DType::F16, m.saturating_mul(n)),
        ]
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let (m, n, k) = mnk(case);
        let decode = |b: Option<&HostBuf>| -> Option<Vec<f64>> {
            Some(b?.as_u16()?.iter().map(|&x| half::f16::from_bits(x).to_f64()).collect())
        };
        let (Some(a), Some(b)) = (decode(buffers.first()), decode(buffers.get(1))) else {
            return Vec::new();
        };
        let Some(c) = reference_products(m, n, k, &a, &b) else { return Vec::new() };
        // NaN (not checked) stays NaN in fp16.
        vec![HostBuf::U16(c.iter().map(|&x| half::f16::from_f64(x).to_bits()).collect())]
    }

    fn tolerance(&self, case: &Case) -> Tolerance {
        let u32_ = f64::from(f32::EPSILON) / 2.0;
        let u16_ = 2f64.powi(-11);
        let ku = case.size("k") as f64 * u32_;
        let gamma = if ku < 0.5 { ku / (1.0 - ku) } else { 1.0 };
        Tolerance::new(0.0, gamma + 2.0 * u16_)
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let mut spec =
            GemmSpec::new(case.size("m"), case.size("n"), case.size("k"), Precision::Fp16);
        spec.unit = Some(ExecUnit::Vector);
        spec.work().map_err(|e| model_err(KernelId::Hgemm.name(), e))
    }
}

/// Unit roundoff of a precision: 2^-24 (fp32), 2^-53 (fp64).
fn unit_roundoff(p: Precision) -> f64 {
    if p == Precision::Fp64 {
        f64::EPSILON / 2.0
    } else {
        f64::from(f32::EPSILON) / 2.0
    }
}

/// The outputs a sampled check computes: the four corners, then seeded random positions
/// (seeded by the shape, so a case always checks the same outputs).
fn sample(m: usize, n: usize) -> Vec<(usize, usize)> {
    let mut rng = fastrand::Rng::with_seed((m as u64) << 40 ^ (n as u64) << 20 ^ 0x6E33);
    let mut v = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
    while v.len() < SAMPLES {
        v.push((rng.usize(..m), rng.usize(..n)));
    }
    v
}

/// Compensated dot product (Dot2 of Ogita, Rump and Oishi 2005): the products' and the
/// sums' rounding errors are accumulated separately with error-free transformations
/// (TwoProduct by FMA, TwoSum of Knuth), so the result is as accurate as if computed in
/// twice the working precision.
fn dot2(terms: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for (x, y) in terms {
        let p = x * y;
        let ep = x.mul_add(y, -p);
        let t = s + p;
        let z = t - s;
        let es = (s - (t - z)) + (p - z);
        s = t;
        c += ep + es;
    }
    s + c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Variant;
    use crate::suite::compare;

    fn case(m: u64, n: u64, k: u64, dtype: Precision) -> Case {
        Case {
            kernel: KernelId::Gemm.into(),
            sizes: vec![("m", m), ("n", n), ("k", k)],
            dtype,
            weights: None,
            variant: None,
        }
    }

    #[test]
    fn reference_matches_hand_arithmetic() {
        // [1 2 3; 4 5 6] . [7 8; 9 10; 11 12] = [58 64; 139 154]
        let c = case(2, 2, 3, Precision::Fp32);
        let a = HostBuf::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b = HostBuf::F32(vec![7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
        let out = Gemm.reference(&c, &[a, b, HostBuf::zeros(DType::F32, 4)]);
        assert_eq!(out, vec![HostBuf::F32(vec![58.0, 64.0, 139.0, 154.0])]);
    }

    #[test]
    fn dot2_is_exact_where_plain_summation_is_not() {
        // 1e16 + 1 - 1e16 = 1, which plain f64 summation loses.
        let terms = [(1e16, 1.0), (1.0, 1.0), (-1e16, 1.0)];
        assert_eq!(terms.iter().map(|(x, y)| x * y).sum::<f64>(), 0.0);
        assert_eq!(dot2(terms.into_iter()), 1.0);
    }

    #[test]
    fn large_cases_sample_with_corners_and_nan_elsewhere() {
        let c = case(300, 200, 400, Precision::Fp64); // 2.4e7 > 2^24
        let bufs: Vec<HostBuf> =
            Gemm.buffers(&c).iter().map(|s| crate::rng::fill(s.dtype, s.len, s.init, 1)).collect();
        let out = Gemm.reference(&c, &bufs);
        let HostBuf::F64(v) = &out[0] else { panic!() };
        let checked = v.iter().filter(|x| !x.is_nan()).count();
        assert!((256..=SAMPLES).contains(&checked), "{checked}");
        for idx in [0, 199, 299 * 200, 300 * 200 - 1] {
            assert!(!v[idx].is_nan(), "corner {idx} not checked");
        }
        // A sampled value equals the hand-written dot product.
        let (a, b) = (bufs[0].to_f64_lossy(), bufs[1].to_f64_lossy());
        let want: f64 = (0..400).map(|p| a[p] * b[p * 200]).sum();
        assert!((v[0] - want).abs() <= 1e-12 * want);
    }

    #[test]
    fn tolerance_follows_gamma_k_and_catches_one_wrong_term() {
        let c = case(1, 1, 1024, Precision::Fp32);
        let t = Gemm.tolerance(&c);
        let u = 2f64.powi(-24);
        assert!((t.rel - (1024.0 * u / (1.0 - 1024.0 * u) + 2.0 * u)).abs() < 1e-15);
        // A dropped term (about 1/4, of a result of about k/4) is 16x outside it (the
        // worst-case bound k u reaches 1/k at k = 2^12 for fp32: beyond, only larger
        // mistakes are caught).
        let want = 256.0;
        let got = 256.0 - 0.25;
        let r =
            compare(&["c"], &[HostBuf::F32(vec![got])], &[HostBuf::F32(vec![want])], &[false], t);
        assert!(!r.passed);
    }

    #[test]
    fn cases_defaults_and_bad_input() {
        let cs = Gemm.cases(&Selection::default()).unwrap();
        assert_eq!(cs.len(), DEFAULT_SHAPES.len());
        assert!(cs.iter().all(|c| c.dtype == Precision::Fp32));
        let sel = Selection { sizes: Some(vec![1 << 20]), ..Selection::default() };
        assert_eq!(Gemm.cases(&sel).unwrap()[0].sizes, vec![("m", 1024), ("n", 1024), ("k", 1024)]);
        for sel in [
            Selection { single_config: Some(vec![1, 2]), ..Selection::default() },
            Selection { single_config: Some(vec![0, 2, 3]), ..Selection::default() },
            Selection { dtype: Some(Precision::Fp16), ..Selection::default() },
            Selection { variant: Some(Variant::Scalar), ..Selection::default() },
        ] {
            assert!(Gemm.cases(&sel).is_err(), "{sel:?}");
        }
    }

    #[test]
    fn work_is_2mnk_on_the_vector_unit() {
        let w = Gemm.work(&case(128, 4096, 4096, Precision::Fp64)).unwrap();
        assert_eq!(w.flops, 2.0 * 128.0 * 4096.0 * 4096.0);
        assert_eq!(w.unit, ExecUnit::Vector);
        assert_eq!(w.bytes(), 8.0 * (128.0 * 4096.0 * 2.0 + 4096.0 * 4096.0));
    }
}
