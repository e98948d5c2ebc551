//! Row reduction: `rowsum` sums each row of a rows × cols input into one value.
//!
//! Size parameters `rows`, `cols`, default 4096 × 4096 (64 MiB of fp32 read, 16 KiB
//! written); `--sizes S` means rows = S / 4096 (as `suite::norm`). fp32 by default, fp64
//! with `--dtype fp64`. Inputs uniform in [0.5, 1.5): positive, so the relative error
//! bound of a sum applies to every row. Work is the core's `ReductionSpec` unchanged.

use super::fused::compare_with;
use super::norm::row_cases;
use super::stream::{float_buffer, sum_tolerance, unit_roundoff};
use super::view::{par_store, F64View};
use super::CheckResult;
use super::{model_err, BufferSpec, Kernel, Tolerance};
use crate::backend::HostBuf;
use crate::case::{Case, KernelRef, Selection};
use crate::error::SuiteError;
use crate::rng::Init;
use crate::suite::KernelId;
use rooftop_core::ops::reduction::ReductionSpec;
use rooftop_core::ops::Work;

/// `rowsum`: `y[r] = sum_c x[r][c]`.
#[derive(Debug)]
pub struct RowSum;

pub(super) static ROWSUM: RowSum = RowSum;

impl Kernel for RowSum {
    fn id(&self) -> KernelRef {
        KernelRef::Suite(KernelId::RowSum)
    }

    fn summary(&self) -> &'static str {
        "sum of each row of rows x cols into rows values"
    }

    fn size_params(&self) -> &'static [&'static str] {
        &["rows", "cols"]
    }

    fn cases(&self, sel: &Selection) -> Result<Vec<Case>, SuiteError> {
        row_cases(KernelId::RowSum, sel)
    }

    fn buffers(&self, case: &Case) -> Vec<BufferSpec> {
        let (rows, cols) = (case.size_usize("rows"), case.size_usize("cols"));
        let t = float_buffer(case.dtype);
        vec![
            BufferSpec::input("x", t, rows * cols, Init::Uniform { lo: 0.5, hi: 1.5 }),
            BufferSpec::output("y", t, rows),
        ]
    }

    fn reference(&self, case: &Case, buffers: &[HostBuf]) -> Vec<HostBuf> {
        let (rows, cols) = (case.size_usize("rows"), case.size_usize("cols"));
        let Some(x) = F64View::of_len(buffers.first(), rows * cols) else { return Vec::new() };
        vec![par_store(case.dtype, rows, |r| x.slice(r * cols, (r + 1) * cols).iter().sum())]
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
        let x = F64View::of_len(inputs.first(), rows * cols)?;
        compare_with("y", out, rows, case.dtype, tol, |r| {
            x.slice(r * cols, (r + 1) * cols).iter().sum()
        })
    }

    fn tolerance(&self, case: &Case) -> Tolerance {
        // A sum of `cols` positive terms in any order (see `stream::sum_tolerance`).
        Tolerance::new(0.0, sum_tolerance(case.size("cols"), unit_roundoff(case.dtype)))
    }

    fn work(&self, case: &Case) -> Result<Work, SuiteError> {
        let (rows, cols) = (case.size("rows"), case.size("cols"));
        ReductionSpec { rows, cols, dtype: case.dtype, out_dtype: None }
            .work()
            .map_err(|e| model_err(self.name(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{run_case, TimingOptions};
    use crate::mock::{MockBackend, MockConfig};
    use rooftop_core::units::Precision;
    use std::sync::atomic::AtomicBool;

    fn case(rows: u64, cols: u64) -> Case {
        Case {
            kernel: KernelId::RowSum.into(),
            sizes: vec![("rows", rows), ("cols", cols)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        }
    }

    #[test]
    fn reference_and_work_by_hand() {
        // [[1, 2, 3], [0.5, 0.25, 4]] -> [6, 4.75]
        let out =
            RowSum.reference(&case(2, 3), &[HostBuf::F32(vec![1.0, 2.0, 3.0, 0.5, 0.25, 4.0])]);
        assert_eq!(out, vec![HostBuf::F32(vec![6.0, 4.75])]);
        // 4096 x 4096 fp32: read 4096*4096*4 = 67,108,864 B, write 4096*4 = 16,384 B,
        // 16,777,216 FLOPs.
        let w = RowSum.work(&case(4096, 4096)).unwrap();
        assert_eq!(
            (w.bytes_read, w.bytes_written, w.flops),
            (67_108_864.0, 16_384.0, 16_777_216.0)
        );
        assert_eq!(RowSum.cases(&Selection::default()).unwrap()[0], case(4096, 4096));
    }

    #[test]
    fn mock_backend_end_to_end() {
        let k = KernelId::RowSum.def();
        let mut mock = MockBackend::new(MockConfig::default());
        let imp =
            crate::backend::Backend::implementations(&mock, KernelId::RowSum.into()).remove(0);
        let opts = TimingOptions { min_time_s: 0.001, min_runs: 3, ..TimingOptions::default() };
        let r = run_case(
            &mut mock,
            k,
            &case(5, 99),
            &imp,
            None,
            &opts,
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert_eq!(r.check.elements, 5);
    }
}
