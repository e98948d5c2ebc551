//! Row softmax over the last dimension of a rows × cols input, two algorithms:
//!
//! - `softmax`: three passes over each row — its maximum, the sum of `exp(x - max)`, then
//!   `exp(x - max) / sum` (the exponentials are recomputed, not stored);
//! - `softmax-online`: one pass that keeps a running maximum and a running sum rescaled
//!   whenever the maximum grows (Milakov & Gimelshein, "Online normalizer calculation
//!   for softmax", 2018), then the normalising pass.
//!
//! Size parameters `rows`, `cols`, default 4096 × 4096; `--sizes S` means rows = S / 4096
//! (as `suite::norm`). fp32 by default, fp64 with `--dtype fp64`. Inputs uniform in
//! [-5, 5).
//!
//! Work: both read each row from memory once and write it once — the minimum of
//! docs/reference/formulas.md#work-models, the core's `SoftmaxPasses::One` bytes. The
//! three-pass kernel keeps a row in cache between its passes (a row of 4096 fp32 is 16
//! KiB), so the core's `Three` traffic (the input read three times from DRAM) does not
//! apply; its FLOPs are the `Three` count, 7 per element, because it recomputes
//! `exp(x - max)`.

use super::fused::{Check, RowFn, Store};
use super::norm::row_cases;
use super::stream::{float_buffer, unit_roundoff};
use super::view::F64View;
use super::CheckResult;
use super::{model_err, BufferSpec, Kernel, Tolerance};
use crate::backend::HostBuf;
use crate::case::{Case, KernelRef, Selection};
use crate::error::SuiteError;
use crate::rng::Init;
use crate::suite::KernelId;
use rooftop_core::ops::softmax::{SoftmaxPasses, SoftmaxSpec};
use rooftop_core::ops::Work;

/// Elements per block of the online kernel's running statistics: the maximum is updated
/// (and the running sums rescaled) once per block.
pub const ONLINE_BLOCK: usize = 512;

/// A softmax kernel.
#[derive(Debug)]
pub struct Softmax {
    /// True for the online (one statistics pass) algorithm.
    pub online: bool,
}

pub(super) static SOFTMAX: Softmax = Softmax { online: false };
pub(super) static SOFTMAX_ONLINE: Softmax = Softmax { online: true };

impl Softmax {
    fn kernel_id(&self) -> KernelId {
        if self.online {
            KernelId::SoftmaxOnline
        } else {
            KernelId::Softmax
        }
    }
}

/// Runs `then` with the f64 expression of an output row (`row(r, out)`), `None` when
/// the input is not `rows` × `cols`: what `reference` stores and `check_in_place`
/// compares.
fn with_rows<E: RowFn>(
    rows: usize,
    cols: usize,
    buffers: &[HostBuf],
    then: E,
) -> Option<E::Output> {
    let x = F64View::of_len(buffers.first(), rows * cols)?;
    Some(then.apply(|r, y: &mut [f64]| {
        let row = x.slice(r * cols, (r + 1) * cols);
        let m = row.iter().fold(f64::NEG_INFINITY, f64::max);
        // exp(x - max) once per element, then divided by the row's sum.
        let mut s = 0.0;
        for (o, v) in y.iter_mut().zip(row.iter()) {
            *o = (v - m).exp();
            s += *o;
        }
        for o in y.iter_mut() {
            *o /= s;
        }
    }))
}

impl Kernel for Softmax {
    fn id(&self) -> KernelRef {
        KernelRef::Suite(self.kernel_id())
    }

    fn summary(&self) -> &'static str {
        if self.online {
            "row softmax of rows x cols, online max and sum in one pass + normalise pass"
        } else {
            "row softmax of rows x cols in three passes: max, sum of exp, normalise"
        }
    }

    fn size_params(&self) -> &'static [&'static str] {
        &["rows", "cols"]
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        row_cases(self.kernel_id(), sel)
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let e = case.size_usize("rows") * case.size_usize("cols");
        let t = float_buffer(case.dtype);
        vec![
            BufferSpec::input("x", t, e, Init::Uniform { lo: -5.0, hi: 5.0 }),
            BufferSpec::output("y", t, e),
        ]
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let (rows, cols) = (case.size_usize("rows"), case.size_usize("cols"));
        with_rows(rows, cols, buffers, Store { p: case.dtype, rows, cols })
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
        let [out] = outputs else { return None };
        let (rows, cols) = (case.size_usize("rows"), case.size_usize("cols"));
        with_rows(
            rows,
            cols,
            inputs,
            Check { name: "y", got: out, p: case.dtype, rows, cols, tol },
        )?
    }

    fn tolerance(&self, case: &Case) -> Tolerance {
        // y = exp(x - max) / sum. The sum of `cols` positive terms is within
        // (4 sqrt(cols) + 16) u in any order; x - max (|x - max| < 10) is rounded by up
        // to 8u absolute, which is relative error in exp; the exp approximation, the
        // online rescaling (one exp per lane per block) and the division add a few u
        // each. 64u covers everything but the sum.
        let u = unit_roundoff(case.dtype);
        Tolerance::new(0.0, (4.0 * (case.size("cols") as f64).sqrt() + 64.0) * u)
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let (rows, cols) = (case.size("rows"), case.size("cols"));
        let name = self.name();
        let spec = |passes| SoftmaxSpec { rows, cols, dtype: case.dtype, passes };
        let mut w = spec(SoftmaxPasses::One).work().map_err(|e| model_err(name, e))?;
        if self.online {
            w.assumptions.push(format!(
                "online statistics (Milakov & Gimelshein 2018): the running sums are rescaled \
                 once per {ONLINE_BLOCK}-element block, an extra exp per block and lane not \
                 counted"
            ));
        } else {
            let three = spec(SoftmaxPasses::Three).work().map_err(|e| model_err(name, e))?;
            w.flops = three.flops;
            w.flops_formula = three.flops_formula;
            w.shape = format!("{} 3-pass", w.shape);
            w.assumptions.retain(|a| !a.starts_with("FLOPs"));
            w.assumptions.push(
                "3-pass algorithm (max, sum of exp, normalise): FLOPs 7 per element (exp(x - \
                 max) recomputed in the last pass) + 1 per row, the core's passes=three count"
                    .to_string(),
            );
            w.assumptions.push(format!(
                "bytes are the one-pass minimum, not the core's 3-pass traffic: a row of {cols} \
                 elements stays in cache between the passes"
            ));
        }
        Ok(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{run_case, TimingOptions};
    use crate::mock::{MockBackend, MockConfig};
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    fn case(name: KernelId, rows: u64, cols: u64) -> Case {
        Case {
            kernel: name.into(),
            sizes: vec![("rows", rows), ("cols", cols)],
            dtype: Precision::Fp64,
            weights: None,
            variant: None,
        }
    }

    #[test]
    fn softmax_of_0_ln2() {
        // e^0 = 1, e^ln2 = 2: [1/3, 2/3].
        let out = KernelId::Softmax
            .def()
            .reference(&case(KernelId::Softmax, 1, 2), &[HostBuf::F64(vec![0.0, 2f64.ln()])]);
        let HostBuf::F64(y) = &out[0] else { panic!() };
        assert!((y[0] - 1.0 / 3.0).abs() < 1e-15 && (y[1] - 2.0 / 3.0).abs() < 1e-15, "{y:?}");
    }

    #[test]
    fn work_by_hand() {
        // 3 x 5 fp64: read 15*8 = 120, write 120 for both kernels.
        // 3-pass FLOPs 7*15 + 3 = 108; online 5*15 + 3 = 78.
        let w = KernelId::Softmax.def().work(&case(KernelId::Softmax, 3, 5)).unwrap();
        assert_eq!((w.bytes_read, w.bytes_written, w.flops), (120.0, 120.0, 108.0));
        assert!(w.flops_formula.contains("7*3*5"), "{}", w.flops_formula);
        assert!(w.assumptions.iter().any(|a| a.contains("stays in cache")));
        let w = KernelId::SoftmaxOnline.def().work(&case(KernelId::SoftmaxOnline, 3, 5)).unwrap();
        assert_eq!((w.bytes_read, w.bytes_written, w.flops), (120.0, 120.0, 78.0));
    }

    #[test]
    fn mock_backend_end_to_end() {
        let k = KernelId::SoftmaxOnline.def();
        let c = Case { dtype: Precision::Fp32, ..case(KernelId::SoftmaxOnline, 2, 1000) };
        let mut mock = MockBackend::new(MockConfig::default());
        let imp = crate::backend::Backend::implementations(&mock, KernelId::SoftmaxOnline.into())
            .remove(0);
        let opts = TimingOptions { min_time_s: 0.001, min_runs: 3, ..TimingOptions::default() };
        let r = run_case(&mut mock, k, &c, &imp, None, &opts, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert_eq!(r.check.elements, 2000);
    }
}
