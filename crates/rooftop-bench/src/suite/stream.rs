//! One-dimensional bandwidth kernels: STREAM's four (McCalpin, "Memory Bandwidth and
//! Machine Balance", 1995: copy, scale, add, triad), a read-only sum, a write-only fill,
//! and two activation functions (SiLU, GELU) that are memory-bound maps with real
//! arithmetic.
//!
//! Every kernel has one size parameter, `n`: the elements of each array. The default,
//! n = 2^25 (128 MiB per fp32 array), follows STREAM's rule that each array be at least
//! four times the last-level cache for caches up to 32 MiB. Data are fp32 by default,
//! fp64 with `--dtype fp64`; other precisions are refused. `--sizes` lists values of `n`.
//!
//! Inputs are uniform in [0.5, 1.5) (positive, so sums have no cancellation and relative
//! error bounds apply) except for the activations, whose inputs are uniform in [-5, 5).
//! References are computed in f64 from the same inputs and rounded to the data type.
//! Tolerances are relative and stated in units of the data type's unit roundoff `u`
//! (2^-24 for fp32, 2^-53 for fp64) next to each kernel.

use super::fused::{Check, ElementFn, Store};
use super::view::F64View;
use super::CheckResult;
use super::{bad, model_err, sizes_1d, BufferSpec, Kernel, Tolerance};
use crate::backend::{DType, HostBuf};
use crate::case::{Case, KernelRef, Selection};
use crate::error::SuiteError;
use crate::rng::Init;
use crate::suite::KernelId;
use rooftop_core::ops::copy::CopySpec;
use rooftop_core::ops::elementwise::ElementwiseSpec;
use rooftop_core::ops::reduction::ReductionSpec;
use rooftop_core::ops::Work;
use rooftop_core::units::Precision;

/// Default elements per array: 2^25 (128 MiB of fp32).
pub const DEFAULT_N: u64 = 1 << 25;

/// STREAM's scalar `q` of scale and triad.
pub const SCALAR: f64 = 3.0;

/// The constant `write` stores.
pub const FILL_VALUE: f64 = 2.5;

/// `sqrt(2/pi)`, the constant of GELU's tanh approximation.
pub const GELU_SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

/// The cubic coefficient of GELU's tanh approximation.
pub const GELU_CUBIC: f64 = 0.044_715;

/// Which one-dimensional kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamOp {
    /// `sum = a[0] + ... + a[n-1]`: read-only bandwidth.
    Read,
    /// `out[i] = 2.5`: write-only bandwidth.
    Write,
    /// `b[i] = a[i]`.
    Copy,
    /// `b[i] = 3 * a[i]`.
    Scale,
    /// `c[i] = a[i] + b[i]`.
    Add,
    /// `a[i] = b[i] + 3 * c[i]`.
    Triad,
    /// `y[i] = x[i] / (1 + exp(-x[i]))`.
    Silu,
    /// `y[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, PyTorch's
    /// `gelu(approximate='tanh')`.
    Gelu,
}

/// A one-dimensional kernel of the suite.
#[derive(Debug)]
pub struct Stream {
    pub op: StreamOp,
}

pub(super) static READ: Stream = Stream { op: StreamOp::Read };
pub(super) static WRITE: Stream = Stream { op: StreamOp::Write };
pub(super) static COPY: Stream = Stream { op: StreamOp::Copy };
pub(super) static SCALE: Stream = Stream { op: StreamOp::Scale };
pub(super) static ADD: Stream = Stream { op: StreamOp::Add };
pub(super) static TRIAD: Stream = Stream { op: StreamOp::Triad };
pub(super) static SILU: Stream = Stream { op: StreamOp::Silu };
pub(super) static GELU: Stream = Stream { op: StreamOp::Gelu };

/// The data precision of a float kernel: fp32 unless `--dtype` says fp64; anything else
/// is refused.
pub(super) fn float_dtype(kernel: &str, sel: &Selection) -> Result<Precision, SuiteError> {
    match sel.dtype {
        None | Some(Precision::Fp32) => Ok(Precision::Fp32),
        Some(Precision::Fp64) => Ok(Precision::Fp64),
        Some(p) => Err(bad(kernel, format!("supports fp32 and fp64 data, not {p}"))),
    }
}

/// The buffer type of a float kernel's data.
pub(super) fn float_buffer(p: Precision) -> DType {
    if p == Precision::Fp64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// Unit roundoff of a float kernel's data: 2^-24 for fp32, 2^-53 for fp64.
pub(super) fn unit_roundoff(p: Precision) -> f64 {
    if p == Precision::Fp64 {
        f64::EPSILON / 2.0
    } else {
        f64::from(f32::EPSILON) / 2.0
    }
}

/// f64 values stored in the buffer type of `p` (rounded once for fp32).
pub(super) fn store(p: Precision, v: Vec<f64>) -> HostBuf {
    if p == Precision::Fp64 {
        HostBuf::F64(v)
    } else {
        HostBuf::F32(v.into_iter().map(|x| x as f32).collect())
    }
}

impl Stream {
    /// Runs `then` with the f64 expression of output element `i` of this kernel
    /// (`None` when the inputs are not `n`-element float buffers). What `reference`
    /// stores and `check_in_place` compares; `Read` (a sum) has none.
    fn with_expected<E: ElementFn>(
        &self,
        n: usize,
        buffers: &[HostBuf],
        then: E,
    ) -> Option<E::Output> {
        let input = |i: usize| F64View::of_len(buffers.get(i), n);
        Some(match self.op {
            StreamOp::Read => return None,
            StreamOp::Write => then.apply(|_| FILL_VALUE),
            StreamOp::Copy => {
                let a = input(0)?;
                then.apply(|i| a.get(i))
            }
            StreamOp::Scale => {
                let a = input(0)?;
                then.apply(|i| SCALAR * a.get(i))
            }
            StreamOp::Add => {
                let (a, b) = (input(0)?, input(1)?);
                then.apply(|i| a.get(i) + b.get(i))
            }
            StreamOp::Triad => {
                let (b, c) = (input(0)?, input(1)?);
                then.apply(|i| b.get(i) + SCALAR * c.get(i))
            }
            StreamOp::Silu => {
                let x = input(0)?;
                then.apply(|i| {
                    let x = x.get(i);
                    x / (1.0 + (-x).exp())
                })
            }
            StreamOp::Gelu => {
                let x = input(0)?;
                then.apply(|i| gelu(x.get(i)))
            }
        })
    }
}

/// GELU (tanh form) in f64: `x (1 + tanh z) / 2 = x sigmoid(2z)`, one exp, evaluated
/// on the side where it does not overflow (`1 + tanh z` itself cancels for z << 0: 1e-9
/// relative error at z = -8; the sigmoid form does not).
fn gelu(x: f64) -> f64 {
    let z = GELU_SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x);
    if z >= 0.0 {
        x / (1.0 + (-2.0 * z).exp())
    } else {
        let e = (2.0 * z).exp();
        x * e / (1.0 + e)
    }
}

/// Relative tolerance of a sum of `terms` same-sign values in any order: a sequential
/// sum's rounding errors are unbiased and add like a random walk, about
/// `sqrt(terms/3) * u` of the total; `4 sqrt(terms) + 16` units is well above that and
/// above blocked or pairwise orders (`(terms/lanes + log2(lanes)) u`), yet a lost block
/// of a few elements in a thousand exceeds it.
pub(super) fn sum_tolerance(terms: u64, u: f64) -> f64 {
    (4.0 * (terms as f64).sqrt() + 16.0) * u
}

impl Stream {
    fn input_init(&self) -> Init {
        match self.op {
            StreamOp::Silu | StreamOp::Gelu => Init::Uniform { lo: -5.0, hi: 5.0 },
            _ => Init::Uniform { lo: 0.5, hi: 1.5 },
        }
    }
}

impl Kernel for Stream {
    fn id(&self) -> KernelRef {
        KernelRef::Suite(match self.op {
            StreamOp::Read => KernelId::Read,
            StreamOp::Write => KernelId::Write,
            StreamOp::Copy => KernelId::Copy,
            StreamOp::Scale => KernelId::Scale,
            StreamOp::Add => KernelId::Add,
            StreamOp::Triad => KernelId::Triad,
            StreamOp::Silu => KernelId::Silu,
            StreamOp::Gelu => KernelId::Gelu,
        })
    }

    fn summary(&self) -> &'static str {
        match self.op {
            StreamOp::Read => "sum of n elements into one (read-only bandwidth)",
            StreamOp::Write => "fill n elements with a constant (write-only bandwidth)",
            StreamOp::Copy => "STREAM copy b = a over n elements",
            StreamOp::Scale => "STREAM scale b = 3a over n elements",
            StreamOp::Add => "STREAM add c = a + b over n elements",
            StreamOp::Triad => "STREAM triad a = b + 3c over n elements",
            StreamOp::Silu => "SiLU y = x / (1 + e^-x) over n elements",
            StreamOp::Gelu => {
                "GELU, tanh approximation (PyTorch approximate='tanh'), over n elements"
            }
        }
    }

    fn size_params(&self) -> &'static [&'static str] {
        &["n"]
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        let name = self.name();
        let dtype = float_dtype(name, sel)?;
        let ns = sizes_1d(name, sel, &[DEFAULT_N])?;
        if ns.is_empty() {
            return Err(bad(name, "no sizes given"));
        }
        ns.into_iter()
            .map(|n| {
                if n == 0 {
                    return Err(bad(name, "n (elements per array) must be at least 1, got 0"));
                }
                if usize::try_from(n).is_err() {
                    return Err(bad(name, format!("n = {n} does not fit this machine's memory")));
                }
                Ok(Case {
                    kernel: self.id(),
                    sizes: vec![("n", n)],
                    dtype,
                    weights: None,
                    variant: None,
                })
            })
            .collect()
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let n = case.size_usize("n");
        let t = float_buffer(case.dtype);
        let input = |name| BufferSpec::input(name, t, n, self.input_init());
        match self.op {
            StreamOp::Read => vec![input("a"), BufferSpec::output("sum", t, 1)],
            StreamOp::Write => vec![BufferSpec::output("out", t, n)],
            StreamOp::Copy | StreamOp::Scale => vec![input("a"), BufferSpec::output("b", t, n)],
            StreamOp::Add => vec![input("a"), input("b"), BufferSpec::output("c", t, n)],
            StreamOp::Triad => vec![input("b"), input("c"), BufferSpec::output("a", t, n)],
            StreamOp::Silu | StreamOp::Gelu => vec![input("x"), BufferSpec::output("y", t, n)],
        }
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let n = case.size_usize("n");
        let p = case.dtype;
        if self.op == StreamOp::Read {
            let Some(a) = F64View::of_len(buffers.first(), n) else { return Vec::new() };
            return vec![store(p, vec![a.iter().sum()])];
        }
        self.with_expected(n, buffers, Store { p, rows: n, cols: 1 })
            .map(|o| vec![o])
            .unwrap_or_default()
    }

    fn check_in_place(
        &self,
        case: &Case,
        inputs: &[HostBuf],
        outputs: &[&HostBuf],
        tol: Tolerance,
    ) -> Option<CheckResult> {
        let ([out], false) = (outputs, self.op == StreamOp::Read) else { return None };
        let n = case.size_usize("n");
        let name = self.buffers(case).into_iter().find(|b| b.output).map_or("out", |b| b.name);
        let check = Check { name, got: out, p: case.dtype, rows: n, cols: 1, tol };
        self.with_expected(n, inputs, check)?
    }

    fn tolerance(&self, case: &Case) -> Tolerance {
        let u = unit_roundoff(case.dtype);
        match self.op {
            // Sum of n positive terms in any order (see `sum_tolerance`).
            StreamOp::Read => Tolerance::new(0.0, sum_tolerance(case.size("n"), u)),
            // Stores of input values or a constant: bit-exact.
            StreamOp::Write | StreamOp::Copy => Tolerance::EXACT,
            // One correctly rounded operation; the f64 reference is exact before its own
            // rounding, which can differ by one ulp (2u) in a double-rounding tie.
            StreamOp::Scale | StreamOp::Add => Tolerance::new(0.0, 2.0 * u),
            // Two roundings without FMA (one with) on positive operands, plus the
            // reference's rounding.
            StreamOp::Triad => Tolerance::new(0.0, 4.0 * u),
            // exp approximations within a few ulp; for GELU the rounding of the exp
            // argument (|arg| <= 17 for |x| <= 5) adds up to 17u relative; divisions and
            // products a few more. 64u bounds them with room.
            StreamOp::Silu | StreamOp::Gelu => Tolerance::new(0.0, 64.0 * u),
        }
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let name = self.name();
        let n = case.size("n");
        let dtype = case.dtype;
        let err = |e| model_err(name, e);
        let mut w = match self.op {
            StreamOp::Read => {
                ReductionSpec { rows: 1, cols: n, dtype, out_dtype: None }.work().map_err(err)?
            }
            StreamOp::Write => {
                ElementwiseSpec { inputs: 0, ..ElementwiseSpec::unary(n, dtype, 0.0) }
                    .work()
                    .map_err(err)?
            }
            StreamOp::Copy => CopySpec { elements: n, dtype }.work().map_err(err)?,
            StreamOp::Scale => ElementwiseSpec::unary(n, dtype, 1.0).work().map_err(err)?,
            StreamOp::Add => ElementwiseSpec::binary(n, dtype, 1.0).work().map_err(err)?,
            StreamOp::Triad => ElementwiseSpec::binary(n, dtype, 2.0).work().map_err(err)?,
            StreamOp::Silu => ElementwiseSpec::unary(n, dtype, 4.0).work().map_err(err)?,
            StreamOp::Gelu => ElementwiseSpec::unary(n, dtype, 9.0).work().map_err(err)?,
        };
        let note = match self.op {
            StreamOp::Read => {
                "read-only bandwidth kernel: one row of n elements summed to one value"
            }
            StreamOp::Write => {
                "write-only bandwidth kernel: a fill reads nothing; stores that \
                               allocate lines (no non-temporal hint) may also read them, which \
                               is not counted"
            }
            StreamOp::Copy => "STREAM copy: 1 read + 1 write per element",
            StreamOp::Scale => "STREAM scale: 1 read + 1 write, 1 multiply per element",
            StreamOp::Add => "STREAM add: 2 reads + 1 write, 1 add per element",
            StreamOp::Triad => "STREAM triad: 2 reads + 1 write, a multiply and an add per element",
            StreamOp::Silu => {
                "SiLU FLOPs: negate, exp, add 1, divide = 4 per element (exp \
                               counted as one operation)"
            }
            StreamOp::Gelu => {
                "GELU FLOPs: x*x, *x, *0.044715, +x, *sqrt(2/pi), tanh, +1, *x, *0.5 \
                               = 9 per element (tanh counted as one operation)"
            }
        };
        w.assumptions.push(note.to_string());
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{run_case, TimingOptions};
    use crate::mock::{MockBackend, MockConfig};
    use std::sync::atomic::AtomicBool;

    fn case(name: KernelId, n: u64, dtype: Precision) -> Case {
        Case { kernel: name.into(), sizes: vec![("n", n)], dtype, weights: None, variant: None }
    }

    #[test]
    fn triad_work_by_hand() {
        // n = 1000 fp32: read 2*1000*4 = 8,000 B, write 1000*4 = 4,000 B, 2*1000 FLOPs.
        let w = KernelId::Triad.def().work(&case(KernelId::Triad, 1000, Precision::Fp32)).unwrap();
        assert_eq!(w.bytes_read, 8000.0);
        assert_eq!(w.bytes_written, 4000.0);
        assert_eq!(w.bytes(), 12_000.0);
        assert_eq!(w.flops, 2000.0);
        assert!(w.assumptions.iter().any(|a| a.contains("STREAM triad")));
        // fp64: 3*1000*8 = 24,000 B.
        let w = KernelId::Triad.def().work(&case(KernelId::Triad, 1000, Precision::Fp64)).unwrap();
        assert_eq!(w.bytes(), 24_000.0);
        assert_eq!(w.precision, Precision::Fp64);
    }

    #[test]
    fn every_kernels_work_by_hand() {
        // n = 10 fp32; (bytes read, bytes written, FLOPs).
        let want = [
            (KernelId::Read, 40.0, 4.0, 10.0),
            (KernelId::Write, 0.0, 40.0, 0.0),
            (KernelId::Copy, 40.0, 40.0, 0.0),
            (KernelId::Scale, 40.0, 40.0, 10.0),
            (KernelId::Add, 80.0, 40.0, 10.0),
            (KernelId::Triad, 80.0, 40.0, 20.0),
            (KernelId::Silu, 40.0, 40.0, 40.0),
            (KernelId::Gelu, 40.0, 40.0, 90.0),
        ];
        for (name, r, wr, f) in want {
            let w = name.def().work(&case(name, 10, Precision::Fp32)).unwrap();
            assert_eq!((w.bytes_read, w.bytes_written, w.flops), (r, wr, f), "{name}");
        }
    }

    #[test]
    fn references_by_hand() {
        let k = KernelId::Triad.def();
        let c = case(KernelId::Triad, 2, Precision::Fp32);
        let out = k.reference(&c, &[HostBuf::F32(vec![1.0, 2.0]), HostBuf::F32(vec![0.5, 4.0])]);
        // 1 + 3*0.5 = 2.5, 2 + 3*4 = 14
        assert_eq!(out, vec![HostBuf::F32(vec![2.5, 14.0])]);
        let out = KernelId::Read.def().reference(
            &case(KernelId::Read, 3, Precision::Fp64),
            &[HostBuf::F64(vec![1.0, 2.0, 4.5])],
        );
        assert_eq!(out, vec![HostBuf::F64(vec![7.5])]);
        // silu(0) = 0, silu(ln 3) = ln 3 / (1 + 1/3) = 0.75 ln 3
        let out = KernelId::Silu.def().reference(
            &case(KernelId::Silu, 2, Precision::Fp64),
            &[HostBuf::F64(vec![0.0, 3f64.ln()])],
        );
        let HostBuf::F64(y) = &out[0] else { panic!() };
        assert_eq!(y[0], 0.0);
        assert!((y[1] - 0.75 * 3f64.ln()).abs() < 1e-15);
        // gelu(1) = 0.5 (1 + tanh(0.7978845608 * 1.044715)) = 0.5 (1 + tanh(0.8335632)) = 0.8411919906...
        let out = KernelId::Gelu
            .def()
            .reference(&case(KernelId::Gelu, 1, Precision::Fp64), &[HostBuf::F64(vec![1.0])]);
        let HostBuf::F64(y) = &out[0] else { panic!() };
        assert!((y[0] - 0.841_191_990_608_276_8).abs() < 1e-15, "{}", y[0]);
        // Wrong buffers give no outputs (the check then fails) instead of a panic.
        assert!(k.reference(&c, &[HostBuf::F32(vec![1.0])]).is_empty());
    }

    #[test]
    fn cases_follow_the_selection() {
        let k = KernelId::Triad.def();
        let cs = k.cases(&Selection::default()).unwrap();
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].sizes, vec![("n", DEFAULT_N)]);
        assert_eq!(cs[0].dtype, Precision::Fp32);
        let sel = Selection {
            single_config: Some(vec![1000]),
            dtype: Some(Precision::Fp64),
            ..Selection::default()
        };
        let cs = k.cases(&sel).unwrap();
        assert_eq!(cs[0].sizes, vec![("n", 1000)]);
        assert_eq!(cs[0].dtype, Precision::Fp64);
        let sel = Selection { sizes: Some(vec![10, 20]), ..Selection::default() };
        assert_eq!(k.cases(&sel).unwrap().len(), 2);
        for sel in [
            Selection { single_config: Some(vec![0]), ..Selection::default() },
            Selection { single_config: Some(vec![1, 2]), ..Selection::default() },
            Selection { dtype: Some(Precision::Bf16), ..Selection::default() },
            Selection { sizes: Some(vec![]), ..Selection::default() },
        ] {
            assert!(matches!(k.cases(&sel), Err(SuiteError::BadConfig { .. })), "{sel:?}");
        }
    }

    #[test]
    fn buffers_are_inputs_then_outputs() {
        for id in [
            KernelId::Read,
            KernelId::Write,
            KernelId::Copy,
            KernelId::Scale,
            KernelId::Add,
            KernelId::Triad,
            KernelId::Silu,
            KernelId::Gelu,
        ] {
            let k = id.def();
            let c = case(id, 7, Precision::Fp32);
            let b = k.buffers(&c);
            let first_out = b.iter().position(|s| s.output).unwrap();
            assert!(b[first_out..].iter().all(|s| s.output), "{}", k.name());
        }
    }

    #[test]
    fn mock_backend_end_to_end() {
        let k = KernelId::Add.def();
        let c = case(KernelId::Add, 1001, Precision::Fp32);
        let mut mock = MockBackend::new(MockConfig::default());
        let imp = crate::backend::Backend::implementations(&mock, KernelId::Add.into()).remove(0);
        let opts = TimingOptions { min_time_s: 0.001, min_runs: 3, ..TimingOptions::default() };
        let r = run_case(&mut mock, k, &c, &imp, None, &opts, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert_eq!(r.check.elements, 1001);
        assert!(r.timing.is_some());
        // A wrong kernel fails its check and is not timed.
        let mut mock =
            MockBackend::new(MockConfig { wrong_results: vec!["add".into()], memory_bytes: None });
        let r = run_case(&mut mock, k, &c, &imp, None, &opts, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        assert!(!r.check.passed);
        assert!(r.timing.is_none());
    }
}
