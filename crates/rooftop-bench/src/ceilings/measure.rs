//! Measuring ceilings with the suite's own kernels through the harness, on any backend,
//! and writing them as a device file.
//!
//! **Bandwidth.** The 1-D kernels `read`, `write`, `copy` and `triad` (size `n`, fp32)
//! run at working sets (all arrays of a case together) from 16 KiB up to
//! [`CeilingOptions::max_working_set`] in steps of 2x (full mode), each point checked and
//! timed by the harness like any benchmark case; GB/s = the work model's bytes / median
//! time. Levels are then assigned from the cache capacities the backend's device has
//! for the kernels as they run ([`CeilingOptions::cache_levels`], on a CPU the per-core
//! L1d and L2 times the cores, and the L3): a level's points are those whose working set
//! fits comfortably in it (at most half its capacity) and not in the level below
//! (more than that level's capacity), each bound with 1% slack; DRAM's are those of at least 4x the last cache
//! (STREAM's rule). A level's ceiling per pattern is the median of its points (the lower
//! median for an even count, so that it is one measured point with its working set).
//!
//! Every point is the **best** of its samples (the fastest sample's rate): a roof is what
//! the machine can do, and noise (another process, a timer interrupt) only ever slows a
//! sample down; kernels are then judged by their median against it.
//!
//! Quick mode (what `rooftop bench` runs first) times `triad`, `copy`, `read` and
//! `write` (the access patterns of the suite's memory-bound kernels: two reads and a
//! write, one and one, read-only, write-only) at the suite's own 1-D size (32 Mi elements) or at 4x the last cache
//! if that is larger (256 MiB when no cache is known, 16 MiB on a simulated backend),
//! capped by `max_working_set`; and, when the last-level cache is known, `read` at half
//! its capacity for the cache's own roof (the roof of kernels whose buffers fit in it;
//! none when that is more than `max_working_set`).
//!
//! **Compute.** The `fma` kernel in fp32 and fp64, `vector` (and `scalar` in full mode);
//! GFLOP/s = 2 x FMAs / median time, beside the theoretical figures the options carry
//! (from `CpuInfo::theoretical_peak` on a CPU).
//!
//! The probes live one per module: [`bandwidth`](super::bandwidth) (quick mode's DRAM and
//! last-level-cache roofs, the full working-set sweep and its level assignment),
//! [`compute`](super::compute) (FMA peaks), [`matrix`](super::matrix) (tensor-core GEMM
//! peaks); this module runs them in order through one [`Runner`].

use super::bandwidth::{self, kernel_of, stream_case};
use super::options::CeilingOptions;
use super::{compute, matrix, Ceilings, Pattern, SweepPoint};
use crate::backend::Backend;
use crate::case::Case;
use crate::error::{BenchError, SuiteError};
use crate::harness::{self, Progress, TimingOptions, Workspace};
use crate::suite::{self, KernelId};
use std::sync::atomic::{AtomicBool, Ordering};

/// Measures the ceilings of `backend`'s device.
pub fn measure(
    backend: &mut dyn Backend,
    opts: &CeilingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Ceilings, BenchError> {
    let mut ws = Workspace::new();
    let r = measure_in(&mut ws, backend, opts, stop, progress);
    ws.release(backend);
    r
}

/// [`measure`] with the buffers of `ws` (kept for the cases that follow, e.g. the suite
/// of `rooftop bench`, whose 1-D kernels use the same buffers).
pub fn measure_in(
    ws: &mut Workspace,
    backend: &mut dyn Backend,
    opts: &CeilingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Ceilings, BenchError> {
    let info = backend.info().clone();
    let mut c = Ceilings {
        backend: info.backend.clone(),
        device_name: info.device_name.clone(),
        method: if opts.quick { "quick" } else { "full" }.to_string(),
        parallelism: info.parallelism,
        bandwidth: Vec::new(),
        sweep: Vec::new(),
        compute: Vec::new(),
        notes: opts.notes.clone(),
        caches: opts
            .cache_levels
            .iter()
            .map(|&(level, bytes)| super::CacheCapacity { level, bytes })
            .collect(),
        adjustments: Vec::new(),
    };
    let mut run = Runner { ws, backend, opts: &opts.timing, stop, progress };

    if opts.quick {
        bandwidth::quick(&mut run, opts, info.simulated, &mut c)?;
    } else {
        bandwidth::sweep(&mut run, opts, info.simulated, &mut c)?;
    }
    bandwidth::monotone(&mut run, opts, &mut c)?;
    compute::fma_peaks(&mut run, opts, &mut c)?;
    matrix::matrix_peaks(&mut run, opts, &mut c);
    if run.stopped() {
        c.notes.push("interrupted: the ceilings are incomplete".to_string());
    }
    Ok(c)
}

/// Runs cases through the harness.
pub(crate) struct Runner<'a, 'p> {
    pub(crate) ws: &'a mut Workspace,
    pub(crate) backend: &'a mut dyn Backend,
    pub(crate) opts: &'a TimingOptions,
    pub(crate) stop: &'a AtomicBool,
    pub(crate) progress: &'a mut (dyn FnMut(Progress<'_>) + 'p),
}

impl Runner<'_, '_> {
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The suite kernel of `case` (the ceilings run only suite kernels).
    fn kernel_of(case: &Case) -> Result<&'static dyn crate::suite::Kernel, BenchError> {
        case.kernel.suite().map(KernelId::def).ok_or_else(|| {
            BenchError::Suite(SuiteError::BadConfig {
                kernel: case.kernel.to_string(),
                message: "the ceilings measure suite kernels only".to_string(),
            })
        })
    }

    /// Whether the backend has our implementation of `kernel`; notes it when not.
    pub(crate) fn has(&self, kernel: KernelId, notes: &mut Vec<String>) -> bool {
        let ok = self.backend.implementations(kernel.into()).iter().any(|i| !i.builtin);
        if !ok {
            notes.push(format!(
                "{kernel}: not measured, the {} backend has no implementation of it",
                self.backend.info().backend
            ));
        }
        ok
    }

    /// Seconds of the fastest sample of `case` with our implementation (a roof is the
    /// best the machine does); `None` (and a note) when it failed its check or was
    /// interrupted.
    pub(crate) fn best(
        &mut self,
        case: &Case,
        notes: &mut Vec<String>,
    ) -> Result<Option<f64>, BenchError> {
        let kernel = Self::kernel_of(case)?;
        let Some(imp) = self.backend.implementations(case.kernel).into_iter().find(|i| !i.builtin)
        else {
            return Err(BenchError::Suite(SuiteError::BadConfig {
                kernel: case.kernel.to_string(),
                message: format!(
                    "the {} backend has no implementation of it",
                    self.backend.info().backend
                ),
            }));
        };
        let r = harness::run_case_in(
            self.ws,
            self.backend,
            kernel,
            case,
            &imp,
            None,
            self.opts,
            self.stop,
            &mut *self.progress,
        )?;
        match r.timing {
            Some(t) if !r.interrupted => Ok(Some(t.stats.min_s)),
            _ if !r.check.passed => {
                notes.push(format!(
                    "{} {}: result check failed ({}), not used",
                    case.kernel,
                    case.label(),
                    r.check.first_failure.as_deref().unwrap_or("outputs differ")
                ));
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// One sweep point: `pattern` at (about) `ws` bytes of arrays.
    pub(crate) fn point(
        &mut self,
        pattern: Pattern,
        ws: u64,
        notes: &mut Vec<String>,
    ) -> Result<Option<SweepPoint>, BenchError> {
        let case = stream_case(kernel_of(pattern).def(), ws);
        self.point_at(pattern, &case, notes)
    }

    /// One point: `pattern` at `case`.
    pub(crate) fn point_at(
        &mut self,
        pattern: Pattern,
        case: &Case,
        notes: &mut Vec<String>,
    ) -> Result<Option<SweepPoint>, BenchError> {
        let kernel = kernel_of(pattern).def();
        let working_set_bytes: u64 =
            kernel.buffers(case).iter().map(suite::BufferSpec::bytes).sum();
        let Some(seconds) = self.best(case, notes)? else { return Ok(None) };
        let bytes = kernel.work(case)?.bytes();
        Ok(Some(SweepPoint { pattern, working_set_bytes, gbs: bytes / seconds / 1e9 }))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::mock::{MockBackend, MockConfig};

    /// Short timing for the mock: one warm-up run, five samples.
    pub(crate) fn fast() -> TimingOptions {
        TimingOptions {
            warmup_runs: 1,
            warmup_time_s: 0.0,
            min_runs: 5,
            min_time_s: 0.0,
            ..TimingOptions::default()
        }
    }

    #[test]
    fn a_stop_request_ends_early_with_a_note() {
        let mut be = MockBackend::new(MockConfig::default());
        let opts = CeilingOptions::new(false, fast());
        let c = measure(&mut be, &opts, &AtomicBool::new(true), &mut |_| {}).unwrap();
        assert!(c.sweep.is_empty() && c.compute.is_empty());
        assert!(c.notes.iter().any(|n| n.starts_with("interrupted")), "{:?}", c.notes);
    }
}
