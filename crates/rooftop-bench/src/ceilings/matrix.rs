//! Matrix-unit (tensor-core) probes: `gemm` through a backend's implementation at each
//! [`MatrixProbe`], checked normwise against the suite's reference, then timed; recorded
//! as compute ceilings of variant `matrix`.

use super::measure::Runner;
use super::options::{CeilingOptions, MatrixProbe};
use super::{Ceilings, ComputeCeiling};
use crate::backend::Backend;
use crate::case::Case;
use crate::error::BenchError;
use crate::harness::{self, TimingOptions};
use crate::suite::KernelId;
use rooftop_core::units::Precision;
use std::sync::atomic::AtomicBool;

/// Every probe of `opts.matrix`, until a stop request; failures become notes.
pub(crate) fn matrix_peaks(run: &mut Runner<'_, '_>, opts: &CeilingOptions, c: &mut Ceilings) {
    for probe in &opts.matrix {
        if run.stopped() {
            break;
        }
        let what = format!("{} [{}]", probe.label, probe.implementation);
        match matrix_point(&mut *run.backend, probe, &opts.timing, run.stop) {
            Ok(Ok(seconds)) => {
                let (m, n, k) = probe.shape;
                let gflops = 2.0 * m as f64 * n as f64 * k as f64 / seconds / 1e9;
                c.notes.push(format!("{} matrix: {what}, {gflops:.0} GFLOP/s", probe.precision));
                c.compute.push(ComputeCeiling {
                    precision: probe.precision,
                    variant: "matrix".to_string(),
                    gflops,
                    theoretical_gflops: probe.theoretical_gflops,
                    theoretical_formula: probe.theoretical_formula.clone(),
                });
            }
            Ok(Err(why)) | Err(BenchError::Backend(crate::error::BackendError::Other(why))) => {
                c.notes.push(format!("{} matrix not measured: {what}: {why}", probe.precision));
            }
            Err(e) => {
                c.notes.push(format!("{} matrix not measured: {what}: {e}", probe.precision));
            }
        }
    }
}

/// Normwise relative tolerance of a matrix probe: 4 unit roundoffs of the operand type
/// (the expected error of products of rounded operands with random signs is about
/// 0.8 u), plus fp32 accumulation. A transposed or wrong product is off by ~1.4.
pub fn matrix_tolerance(p: Precision) -> f64 {
    let u = match p {
        Precision::Fp64 => f64::EPSILON / 2.0,
        Precision::Fp32 => f64::from(f32::EPSILON) / 2.0,
        Precision::Tf32 | Precision::Fp16 => 2f64.powi(-11),
        Precision::Bf16 => 2f64.powi(-8),
        Precision::Fp8 => 2f64.powi(-4),
        _ => 0.5,
    };
    4.0 * u + 1e-5
}

/// `‖got - want‖ / ‖want‖` over the elements the reference computed (not NaN); NaN when
/// an output is not finite or nothing was compared.
pub fn normwise_error(got: &[f64], want: &[f64]) -> f64 {
    let (mut num, mut den, mut n) = (0.0, 0.0, 0usize);
    for (&g, &w) in got.iter().zip(want) {
        if w.is_nan() {
            continue;
        }
        if !g.is_finite() {
            return f64::NAN;
        }
        num += (g - w) * (g - w);
        den += w * w;
        n += 1;
    }
    if n == 0 || den == 0.0 || got.len() != want.len() {
        return f64::NAN;
    }
    (num / den).sqrt()
}

/// Median seconds of one matrix probe, or why it was not measured (failed check).
fn matrix_point(
    backend: &mut dyn Backend,
    probe: &MatrixProbe,
    timing: &TimingOptions,
    stop: &AtomicBool,
) -> Result<Result<f64, String>, BenchError> {
    use crate::backend::{HostBuf, KernelCall};
    let kernel = KernelId::Gemm.def();
    let (m, n, k) = probe.shape;
    let case = Case {
        kernel: KernelId::Gemm.into(),
        sizes: vec![("m", m), ("n", n), ("k", k)],
        dtype: probe.precision,
        weights: None,
        variant: None,
    };
    let specs = kernel.buffers(&case);
    let seed = timing.seed ^ (m << 32 ^ n << 16 ^ k);
    let host: Vec<HostBuf> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let init = if s.output {
                crate::rng::Init::Poison
            } else {
                crate::rng::Init::Uniform { lo: -1.0, hi: 1.0 }
            };
            crate::rng::fill(s.dtype, s.len, init, seed.wrapping_add(i as u64))
        })
        .collect();
    let mut ids = Vec::new();
    let result = (|| -> Result<Result<f64, String>, BenchError> {
        for (s, h) in specs.iter().zip(&host) {
            let id = backend.alloc(s.dtype, s.len)?;
            ids.push(id);
            backend.upload(id, h)?;
        }
        let launch = crate::backend::Launch::default();
        let call = KernelCall {
            case: &case,
            implementation: &probe.implementation,
            buffers: &ids,
            launch: &launch,
            scalars: &[],
        };
        backend.prepare(&call)?;
        let first = backend.run(&call, 1)?;
        if !(first.is_finite() && first > 0.0) {
            return Ok(Err(format!("the backend timer returned {first} s for one run")));
        }
        let Some(out) = ids.last() else { return Ok(Err("no output buffer".to_string())) };
        let got = backend.download(*out)?.to_f64_lossy();
        let want =
            kernel.reference(&case, &host).first().map(HostBuf::to_f64_lossy).unwrap_or_default();
        let err = normwise_error(&got, &want);
        let tol = matrix_tolerance(probe.precision);
        if err.is_nan() || err > tol {
            return Ok(Err(format!(
                "result check failed: normwise error {err:.3e} > {tol:.3e}; not timed"
            )));
        }
        // Warm-up, then samples: the harness's loop (no cache flush here), with a timer
        // whose time that is not finite and positive ends the probe with a note (an
        // infinite FLOP/s is no ceiling).
        let mut note = None;
        let timer = |phase, iters: u32| -> Result<f64, Option<BenchError>> {
            let t = backend.run(&call, iters).map_err(|e| Some(e.into()))?;
            if t.is_finite() && t > 0.0 {
                return Ok(t);
            }
            let runs = match phase {
                harness::Phase::WarmUp => "one run".to_string(),
                harness::Phase::Sample => format!("{iters} runs"),
            };
            note = Some(format!("the backend timer returned {t} s for {runs}"));
            Err(None)
        };
        let opts = TimingOptions { flush_cache: false, ..timing.clone() };
        let mut time = crate::workspace::CaseTime::default();
        let sampled = harness::warm_up_and_sample(timer, first, &opts, stop, |_, _| {}, &mut time);
        let times = match sampled {
            Ok(s) => s.times,
            Err(Some(e)) => return Err(e),
            Err(None) => return Ok(Err(note.unwrap_or_default())),
        };
        Ok(crate::stats::TimingStats::of(&times)
            .map(|s| s.median_s)
            .ok_or_else(|| "interrupted before any sample".to_string()))
    })();
    for id in ids {
        backend.free(id);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ceilings::measure;
    use crate::ceilings::measure::tests::fast;
    use crate::mock::{MockBackend, MockConfig};

    fn bf16_probe() -> MatrixProbe {
        MatrixProbe {
            implementation: "rooftop".into(),
            precision: Precision::Bf16,
            shape: (64, 48, 32),
            label: "test probe".into(),
            theoretical_gflops: Some(1000.0),
            theoretical_formula: Some("by hand".into()),
        }
    }

    #[test]
    fn matrix_probes_are_checked_timed_and_recorded() {
        let mut be = MockBackend::new(MockConfig::default());
        let mut opts = CeilingOptions::new(true, fast());
        opts.max_working_set = Some(1 << 20);
        opts.matrix = vec![bf16_probe()];
        let c = measure(&mut be, &opts, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let m = c.compute.iter().find(|c| c.variant == "matrix").expect("a matrix ceiling");
        assert_eq!(m.precision, Precision::Bf16);
        // The mock's time: 2*64*48*32 FLOPs at 1 TFLOP/s + 2 us launch.
        let case = Case {
            kernel: KernelId::Gemm.into(),
            sizes: vec![("m", 64), ("n", 48), ("k", 32)],
            dtype: Precision::Bf16,
            weights: None,
            variant: None,
        };
        let want = 2.0 * 64.0 * 48.0 * 32.0 / MockBackend::simulated_time(&case) / 1e9;
        assert!((m.gflops - want).abs() / want < 0.011, "{} vs {want}", m.gflops);
        assert_eq!(m.theoretical_gflops, Some(1000.0));
        assert!(c.notes.iter().any(|n| n.contains("test probe")), "{:?}", c.notes);
        // Matrix peaks never stand in for vector ones.
        assert_eq!(c.vector_gflops(Precision::Bf16), None);
        // A wrong product fails the normwise check: noted, not recorded.
        let mut be =
            MockBackend::new(MockConfig { wrong_results: vec!["gemm".into()], memory_bytes: None });
        let c = measure(&mut be, &opts, &AtomicBool::new(false), &mut |_| {}).unwrap();
        assert!(c.compute.iter().all(|c| c.variant != "matrix"));
        assert!(c.notes.iter().any(|n| n.contains("result check failed")), "{:?}", c.notes);
    }

    #[test]
    fn normwise_error_and_tolerances_by_hand() {
        // ‖(0.1, 0)‖ / ‖(3, 4)‖ = 0.02; NaN references are skipped.
        let e = normwise_error(&[3.1, 4.0, 9.0], &[3.0, 4.0, f64::NAN]);
        assert!((e - 0.02).abs() < 1e-12, "{e}");
        assert!(normwise_error(&[f64::INFINITY], &[1.0]).is_nan());
        assert!(normwise_error(&[1.0], &[f64::NAN]).is_nan());
        // 4 u + 1e-5: bf16 u = 2^-8, fp8 e4m3 u = 2^-4.
        assert!((matrix_tolerance(Precision::Bf16) - (4.0 / 256.0 + 1e-5)).abs() < 1e-15);
        assert!((matrix_tolerance(Precision::Fp8) - (0.25 + 1e-5)).abs() < 1e-15);
        assert!(matrix_tolerance(Precision::Fp8) < 1.0);
    }

    /// The mock, with a timer that reports 0 s for every run after the first (checked)
    /// one.
    #[derive(Debug)]
    struct ZeroTimer(MockBackend, u32);

    impl Backend for ZeroTimer {
        fn info(&self) -> &crate::backend::BackendInfo {
            self.0.info()
        }
        fn alloc(
            &mut self,
            d: crate::backend::DType,
            n: usize,
        ) -> Result<crate::backend::BufId, crate::error::BackendError> {
            self.0.alloc(d, n)
        }
        fn upload(
            &mut self,
            b: crate::backend::BufId,
            data: &crate::backend::HostBuf,
        ) -> Result<(), crate::error::BackendError> {
            self.0.upload(b, data)
        }
        fn download(
            &mut self,
            b: crate::backend::BufId,
        ) -> Result<crate::backend::HostBuf, crate::error::BackendError> {
            self.0.download(b)
        }
        fn free(&mut self, b: crate::backend::BufId) {
            self.0.free(b);
        }
        fn implementations(
            &self,
            k: crate::case::KernelRef,
        ) -> Vec<crate::backend::Implementation> {
            self.0.implementations(k)
        }
        fn prepare(
            &mut self,
            call: &crate::backend::KernelCall<'_>,
        ) -> Result<(), crate::error::BackendError> {
            self.0.prepare(call)
        }
        fn run(
            &mut self,
            call: &crate::backend::KernelCall<'_>,
            iters: u32,
        ) -> Result<f64, crate::error::BackendError> {
            let t = self.0.run(call, iters)?;
            self.1 += 1;
            Ok(if self.1 == 1 { t } else { 0.0 })
        }
        fn flush_cache(&mut self) -> Result<(), crate::error::BackendError> {
            self.0.flush_cache()
        }
        fn launch_space(
            &self,
            call: &crate::backend::KernelCall<'_>,
        ) -> Vec<crate::backend::Launch> {
            self.0.launch_space(call)
        }
        fn default_launch(&self, case: &Case) -> crate::backend::Launch {
            self.0.default_launch(case)
        }
        fn available_memory_bytes(&self) -> Option<u64> {
            self.0.available_memory_bytes()
        }
    }

    /// A timer that returns 0 s gives no matrix ceiling (not an infinite FLOP/s), and
    /// says why.
    #[test]
    fn a_zero_time_is_refused_not_turned_into_infinite_flops() {
        let mut be = ZeroTimer(MockBackend::new(MockConfig::default()), 0);
        let mut timing = fast();
        timing.warmup_runs = 2;
        let why = matrix_point(&mut be, &bf16_probe(), &timing, &AtomicBool::new(false))
            .unwrap()
            .unwrap_err();
        assert!(why.contains("the backend timer returned 0 s"), "{why}");
    }
}
