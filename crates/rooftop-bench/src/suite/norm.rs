//! Row normalisations: RMSNorm (Zhang & Sennrich 2019) and LayerNorm (Ba et al. 2016)
//! over the last dimension of a rows × cols input, eps = 1e-5, with a weight (RMSNorm)
//! or a weight and a bias (LayerNorm) of `cols` elements.
//!
//! Size parameters `rows`, `cols`; default 4096 × 4096 (64 MiB of fp32 in, 64 MiB out:
//! beyond a 32 MiB last-level cache). `--sizes S` means S elements in rows of 4096:
//! rows = S / 4096 (S must be a positive multiple of 4096). fp32 by default, fp64 with
//! `--dtype fp64`. Work comes from the core's `RmsNormSpec` / `LayerNormSpec` unchanged.
//!
//! Inputs: x uniform in [-1, 1), weight in [0.5, 1.5), bias in [-0.5, 0.5).

// m, n, k, x, y, w, q, s, z, g: the names of the formulas in the module docs.
#![allow(clippy::many_single_char_names)]

use super::fused::{Check, RowFn, Store};
use super::stream::{float_buffer, float_dtype, unit_roundoff};
use super::view::F64View;
use super::CheckResult;
use super::{bad, model_err, BufferSpec, Kernel, Tolerance};
use crate::backend::HostBuf;
use crate::case::{Case, KernelRef, Selection};
use crate::error::SuiteError;
use crate::rng::Init;
use crate::suite::KernelId;
use rooftop_core::ops::norm::{LayerNormSpec, RmsNormSpec};
use rooftop_core::ops::Work;

/// The epsilon added to the mean square (RMSNorm) or the variance (LayerNorm).
pub const EPS: f64 = 1e-5;

/// Default row length (a hidden size) and `--sizes` row length of the row kernels.
pub const DEFAULT_COLS: u64 = 4096;

/// Default rows of the row kernels.
pub const DEFAULT_ROWS: u64 = 4096;

/// Which normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormOp {
    /// `y = x / sqrt(mean(x^2) + eps) * w`.
    RmsNorm,
    /// `y = (x - mean) / sqrt(var + eps) * w + b` (biased variance, as PyTorch).
    LayerNorm,
}

/// A row normalisation kernel.
#[derive(Debug)]
pub struct Norm {
    pub op: NormOp,
}

pub(super) static RMSNORM: Norm = Norm { op: NormOp::RmsNorm };
pub(super) static LAYERNORM: Norm = Norm { op: NormOp::LayerNorm };

/// `(rows, cols)` pairs of a rows × cols kernel from `--single-config ROWS,COLS`, or
/// `--sizes` (elements, in rows of [`DEFAULT_COLS`]), or the default shape.
pub(super) fn rows_cols(kernel: &str, sel: &Selection) -> Result<Vec<(u64, u64)>, SuiteError> {
    let shapes = if let Some(c) = &sel.single_config {
        let [rows, cols] = c.as_slice() else {
            return Err(bad(
                kernel,
                format!("--single-config takes 2 values (rows,cols), got {}", c.len()),
            ));
        };
        vec![(*rows, *cols)]
    } else if let Some(sizes) = &sel.sizes {
        sizes
            .iter()
            .map(|&s| {
                if s == 0 || s % DEFAULT_COLS != 0 {
                    Err(bad(
                        kernel,
                        format!(
                            "--sizes gives elements in rows of {DEFAULT_COLS}, so each size must \
                             be a positive multiple of {DEFAULT_COLS}, got {s}"
                        ),
                    ))
                } else {
                    Ok((s / DEFAULT_COLS, DEFAULT_COLS))
                }
            })
            .collect::<Result<_, _>>()?
    } else {
        vec![(DEFAULT_ROWS, DEFAULT_COLS)]
    };
    if shapes.is_empty() {
        return Err(bad(kernel, "no sizes given"));
    }
    for &(rows, cols) in &shapes {
        if rows == 0 || cols == 0 {
            return Err(bad(
                kernel,
                format!("rows and cols must be at least 1, got {rows}x{cols}"),
            ));
        }
        if rows.checked_mul(cols).and_then(|e| usize::try_from(e).ok()).is_none() {
            return Err(bad(kernel, format!("{rows}x{cols} elements do not fit this machine")));
        }
    }
    Ok(shapes)
}

/// Rows × cols cases of a float row kernel.
pub(super) fn row_cases(kernel: KernelId, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
    let dtype = float_dtype(kernel.name(), sel)?;
    Ok(rows_cols(kernel.name(), sel)?
        .into_iter()
        .map(|(rows, cols)| Case {
            kernel: KernelRef::Suite(kernel),
            sizes: vec![("rows", rows), ("cols", cols)],
            dtype,
            weights: None,
            variant: None,
        })
        .collect())
}

impl Norm {
    fn kernel_id(&self) -> KernelId {
        match self.op {
            NormOp::RmsNorm => KernelId::RmsNorm,
            NormOp::LayerNorm => KernelId::LayerNorm,
        }
    }

    /// Runs `then` with the f64 expression of an output row (`row(r, out)` writes row
    /// `r`), `None` when the buffers do not have the case's shapes: what `reference`
    /// stores and `check_in_place` compares.
    fn with_rows<E: RowFn>(
        &self,
        rows: usize,
        cols: usize,
        buffers: &[HostBuf],
        then: E,
    ) -> Option<E::Output> {
        let x = F64View::of_len(buffers.first(), rows * cols)?;
        let w = F64View::of_len(buffers.get(1), cols)?;
        let b = match self.op {
            NormOp::LayerNorm => Some(F64View::of_len(buffers.get(2), cols)?),
            NormOp::RmsNorm => None,
        };
        let d = cols as f64;
        let op = self.op;
        Some(then.apply(|r, y: &mut [f64]| {
            let row = x.slice(r * cols, (r + 1) * cols);
            if let (NormOp::LayerNorm, Some(b)) = (op, b) {
                let mean = row.iter().sum::<f64>() / d;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / d;
                let rs = 1.0 / (var + EPS).sqrt();
                for (j, o) in y.iter_mut().enumerate() {
                    *o = (row.get(j) - mean) * rs * w.get(j) + b.get(j);
                }
            } else {
                let ms = row.iter().map(|v| v * v).sum::<f64>() / d;
                let rs = 1.0 / (ms + EPS).sqrt();
                for (j, o) in y.iter_mut().enumerate() {
                    *o = row.get(j) * rs * w.get(j);
                }
            }
        }))
    }
}

impl Kernel for Norm {
    fn id(&self) -> KernelRef {
        KernelRef::Suite(self.kernel_id())
    }

    fn summary(&self) -> &'static str {
        match self.op {
            NormOp::RmsNorm => "RMSNorm of rows x cols with a weight, eps 1e-5",
            NormOp::LayerNorm => "LayerNorm of rows x cols with a weight and a bias, eps 1e-5",
        }
    }

    fn size_params(&self) -> &'static [&'static str] {
        &["rows", "cols"]
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        row_cases(self.kernel_id(), sel)
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let (rows, cols) = (case.size_usize("rows"), case.size_usize("cols"));
        let t = float_buffer(case.dtype);
        let mut v = vec![
            BufferSpec::input("x", t, rows * cols, Init::Uniform { lo: -1.0, hi: 1.0 }),
            BufferSpec::input("weight", t, cols, Init::Uniform { lo: 0.5, hi: 1.5 }),
        ];
        if self.op == NormOp::LayerNorm {
            v.push(BufferSpec::input("bias", t, cols, Init::Uniform { lo: -0.5, hi: 0.5 }));
        }
        v.push(BufferSpec::output("y", t, rows * cols));
        v
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let (rows, cols) = (case.size_usize("rows"), case.size_usize("cols"));
        self.with_rows(rows, cols, buffers, Store { p: case.dtype, rows, cols })
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
        self.with_rows(
            rows,
            cols,
            inputs,
            Check { name: "y", got: out, p: case.dtype, rows, cols, tol },
        )?
    }

    fn tolerance(&self, case: &Case) -> Tolerance {
        // The row statistic is a sum of `cols` terms: relative error within
        // `sum_tolerance`-like bounds, `(4 sqrt(cols) + 16) u`; the rsqrt, the products
        // and the final rounding add a few u, taken into the 32u constant. The result
        // is relative per element for RMSNorm (a product of x with row constants). For
        // LayerNorm, x - mean loses the mean's absolute error (about the same relative
        // bound times |mean| <= 1) and the bias adds, so an absolute term of the same
        // size (|x| < 1, rstd ~ sqrt(3), |w| < 1.5) covers elements near zero.
        let u = unit_roundoff(case.dtype);
        let bound = (4.0 * (case.size("cols") as f64).sqrt() + 32.0) * u;
        match self.op {
            NormOp::RmsNorm => Tolerance::new(0.0, bound),
            NormOp::LayerNorm => Tolerance::new(4.0 * bound, bound),
        }
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let (rows, cols) = (case.size("rows"), case.size("cols"));
        let name = self.name();
        let mut w = match self.op {
            NormOp::RmsNorm => {
                RmsNormSpec { rows, cols, dtype: case.dtype, weight_dtype: None }.work()
            }
            NormOp::LayerNorm => {
                LayerNormSpec { rows, cols, dtype: case.dtype, affine: true }.work()
            }
        }
        .map_err(|e| model_err(name, e))?;
        w.assumptions.push(format!("eps = {EPS}"));
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
    fn rmsnorm_of_3_4() {
        // mean square of [3, 4] = (9 + 16)/2 = 12.5; y = [3, 4] / sqrt(12.5 + 1e-5).
        let out = KernelId::RmsNorm.def().reference(
            &case(KernelId::RmsNorm, 1, 2),
            &[HostBuf::F64(vec![3.0, 4.0]), HostBuf::F64(vec![1.0, 1.0])],
        );
        let HostBuf::F64(y) = &out[0] else { panic!() };
        let r = (12.5f64 + 1e-5).sqrt();
        assert!((y[0] - 3.0 / r).abs() < 1e-15 && (y[1] - 4.0 / r).abs() < 1e-15, "{y:?}");
        // ~ [3/sqrt(12.5), 4/sqrt(12.5)] = [0.8485, 1.1314]
        assert!((y[0] - 0.848_528).abs() < 1e-6);
    }

    #[test]
    fn layernorm_by_hand() {
        // x = [1, 2, 3]: mean 2, var (1 + 0 + 1)/3 = 2/3, rstd = 1/sqrt(2/3 + 1e-5);
        // weight [1, 2, 1], bias [0, 0.5, -1]: y = [-rstd, 0.5, rstd - 1].
        let out = KernelId::LayerNorm.def().reference(
            &case(KernelId::LayerNorm, 1, 3),
            &[
                HostBuf::F64(vec![1.0, 2.0, 3.0]),
                HostBuf::F64(vec![1.0, 2.0, 1.0]),
                HostBuf::F64(vec![0.0, 0.5, -1.0]),
            ],
        );
        let HostBuf::F64(y) = &out[0] else { panic!() };
        let rstd = 1.0 / (2.0f64 / 3.0 + 1e-5).sqrt();
        assert!((y[0] + rstd).abs() < 1e-14);
        assert!((y[1] - 0.5).abs() < 1e-14);
        assert!((y[2] - (rstd - 1.0)).abs() < 1e-14);
    }

    #[test]
    fn work_by_hand() {
        // RMSNorm 3 x 5 fp64: read (15 + 5)*8 = 160, write 15*8 = 120, FLOPs 4*15 + 2*3 = 66.
        let w = KernelId::RmsNorm.def().work(&case(KernelId::RmsNorm, 3, 5)).unwrap();
        assert_eq!((w.bytes_read, w.bytes_written, w.flops), (160.0, 120.0, 66.0));
        // LayerNorm 3 x 5 fp64: read (15 + 10)*8 = 200, write 120, FLOPs 7*15 + 4*3 = 117.
        let w = KernelId::LayerNorm.def().work(&case(KernelId::LayerNorm, 3, 5)).unwrap();
        assert_eq!((w.bytes_read, w.bytes_written, w.flops), (200.0, 120.0, 117.0));
    }

    #[test]
    fn cases_and_bad_selections() {
        let k = KernelId::RmsNorm.def();
        let c = k.cases(&Selection::default()).unwrap();
        assert_eq!(c[0].sizes, vec![("rows", 4096), ("cols", 4096)]);
        assert_eq!(c[0].dtype, Precision::Fp32);
        let c = k.cases(&Selection { sizes: Some(vec![8192]), ..Selection::default() }).unwrap();
        assert_eq!(c[0].sizes, vec![("rows", 2), ("cols", 4096)]);
        let c = k
            .cases(&Selection { single_config: Some(vec![3, 5]), ..Selection::default() })
            .unwrap();
        assert_eq!(c[0].sizes, vec![("rows", 3), ("cols", 5)]);
        for sel in [
            Selection { sizes: Some(vec![1000]), ..Selection::default() },
            Selection { single_config: Some(vec![3]), ..Selection::default() },
            Selection { single_config: Some(vec![0, 5]), ..Selection::default() },
            Selection { dtype: Some(Precision::Fp16), ..Selection::default() },
        ] {
            assert!(matches!(k.cases(&sel), Err(SuiteError::BadConfig { .. })), "{sel:?}");
        }
    }

    #[test]
    fn mock_backend_end_to_end() {
        let k = KernelId::LayerNorm.def();
        let c = Case { dtype: Precision::Fp32, ..case(KernelId::LayerNorm, 3, 37) };
        let mut mock = MockBackend::new(MockConfig::default());
        let imp =
            crate::backend::Backend::implementations(&mock, KernelId::LayerNorm.into()).remove(0);
        let opts = TimingOptions { min_time_s: 0.001, min_runs: 3, ..TimingOptions::default() };
        let r = run_case(&mut mock, k, &c, &imp, None, &opts, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert_eq!(r.check.elements, 3 * 37);
    }
}
