//! Checking and timing one case, hyperfine-style, on any backend.
//!
//! For each case the harness
//! 1. takes the suite's buffers from a [`Workspace`] (kept from earlier cases with the
//!    same shapes, else allocated and filled: inputs with seeded random values, outputs
//!    with a poison pattern), refusing sizes the backend cannot hold;
//! 2. runs the kernel once and compares its outputs with the reference implementation
//!    (a failed check means no timing is reported);
//! 3. warms up (`warmup_runs` runs, and at least `warmup_time_s` seconds, counted on the
//!    wall clock or in the backend's reported kernel time, whichever reaches it first: a
//!    tiny kernel whose call costs more than its run warms up for that long, not for
//!    10⁵ calls);
//! 4. takes samples until it has at least `min_runs` and `min_time_s` of kernel time
//!    (at most `max_runs`). A sample runs the kernel `iters` times back to back and
//!    records the mean per-run time; `iters` is chosen so that a sample lasts at least
//!    `min_sample_s` (the timer's resolution and the call overhead then cost < 1%), and
//!    is 1 with `--flush-cache`, which evicts the caches before every sample;
//! 5. reports mean ± σ, median, min…max and hyperfine's warnings, and where the case's
//!    wall time went ([`CaseTime`]: setup, check, warm-up, sampling).

use crate::backend::{Backend, DType, Implementation, KernelCall, Launch};
use crate::case::Case;
use crate::error::{BenchError, SuiteError};
use crate::stats::{self, TimingStats};
use crate::suite::{compare_refs, CheckResult, Kernel};
pub use crate::workspace::{CaseTime, Workspace};
pub use rooftop_core::schema::bench::CacheState;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// How to time a case. Defaults are stated in `rooftop bench --help`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimingOptions {
    /// Runs before sampling (default 3).
    pub warmup_runs: u32,
    /// Minimum seconds of warm-up, wall clock or reported kernel time, whichever is
    /// reached first (default 0.05).
    pub warmup_time_s: f64,
    /// Minimum samples (default 10).
    pub min_runs: u32,
    /// Maximum samples (default 10 000).
    pub max_runs: u32,
    /// Minimum seconds of sampled kernel time (default 0.25).
    pub min_time_s: f64,
    /// Minimum duration of one sample; short kernels are repeated within a sample to
    /// reach it (default 0.5 ms).
    pub min_sample_s: f64,
    /// Evict caches before every sample (one run per sample).
    pub flush_cache: bool,
    /// Seed of the random inputs (varied per case).
    pub seed: u64,
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions {
            warmup_runs: 3,
            warmup_time_s: 0.05,
            min_runs: 10,
            max_runs: 10_000,
            min_time_s: 0.25,
            min_sample_s: 5e-4,
            flush_cache: false,
            seed: 0x5EED_2026,
        }
    }
}

/// Timing of a case that passed its check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    /// Per-run seconds, one per sample (each the mean of `iters_per_sample` runs).
    pub times_s: Vec<f64>,
    pub iters_per_sample: u32,
    pub warmup_runs: u32,
    pub cache: CacheState,
    pub stats: TimingStats,
}

/// Everything the harness learnt about one case with one implementation and launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseResult {
    pub case: Case,
    pub implementation: Implementation,
    pub launch: Launch,
    /// Bytes of all buffers of the case.
    pub buffer_bytes: u64,
    pub check: CheckResult,
    /// `None` when the check failed or the run was interrupted before any sample.
    pub timing: Option<Timing>,
    pub warnings: Vec<String>,
    /// Ctrl-C arrived while this case ran (its samples so far are kept).
    pub interrupted: bool,
    /// Resources and theoretical occupancy of the call's launches, when the backend
    /// knows them (CUDA).
    pub launches: Vec<crate::backend::LaunchInfo>,
    /// Where the case's wall time went.
    pub time: CaseTime,
}

/// What the harness tells a progress display.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Progress<'a> {
    /// A case is being set up and checked.
    Checking { label: &'a str },
    /// Sampling: `done_s` of `target_s` seconds of kernel time, `runs` samples so far.
    Sampling { label: &'a str, done_s: f64, target_s: f64, runs: u32 },
}

/// Checks and times `case` with `implementation` on `backend`, with buffers of its own
/// (freed at the end). A run of many cases keeps a [`Workspace`] and calls
/// [`run_case_in`].
///
/// `launch` defaults to the backend's. `stop` is polled between samples (Ctrl-C).
// Every argument is a distinct input of one case; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn run_case(
    backend: &mut dyn Backend,
    kernel: &dyn Kernel,
    case: &Case,
    implementation: &Implementation,
    launch: Option<Launch>,
    opts: &TimingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<CaseResult, BenchError> {
    let mut ws = Workspace::with_keep_bytes(0);
    let r =
        run_case_in(&mut ws, backend, kernel, case, implementation, launch, opts, stop, progress);
    ws.release(backend);
    r
}

/// [`run_case`] with the buffers of `ws`, reused from earlier cases where they match.
#[allow(clippy::too_many_arguments)]
pub fn run_case_in(
    ws: &mut Workspace,
    backend: &mut dyn Backend,
    kernel: &dyn Kernel,
    case: &Case,
    implementation: &Implementation,
    launch: Option<Launch>,
    opts: &TimingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<CaseResult, BenchError> {
    let start = Instant::now();
    let label = format!("{} {} [{}]", case.kernel, case.label(), implementation.id);
    progress(Progress::Checking { label: &label });
    let launch = launch.unwrap_or_else(|| backend.default_launch(case));
    if let Some(mut r) = ws.recall(case, &implementation.id, &launch, opts) {
        r.warnings.push(
            "measured with the quick ceilings (the same case, launch and timing): shown, not \
             run again"
                .to_string(),
        );
        return Ok(r);
    }
    let specs = kernel.buffers(case);
    let buffer_bytes: u64 = specs.iter().map(crate::suite::BufferSpec::bytes).sum();
    // The harness keeps a host copy of every buffer for the reference, the backend its
    // own: twice the buffers must fit (on the CPU they share the same memory).
    if let Some(avail) = backend.available_memory_bytes() {
        let need = buffer_bytes.saturating_mul(2);
        if need > avail {
            return Err(BenchError::TooLarge {
                kernel: format!("{} {}", case.kernel, case.label()),
                backend: backend.info().backend.clone(),
                need_bytes: need,
                have_bytes: avail,
            });
        }
    }

    let mut lease = ws.lease(backend, kernel, case, &specs, opts.seed)?;
    let mut time = CaseTime { setup_s: start.elapsed().as_secs_f64(), ..CaseTime::default() };
    let call = Call { kernel, case, implementation, launch: &launch, specs: &specs };
    // A kernel that may write its inputs (a user's) gets no shared reference.
    let mut own_memo = crate::workspace::ReferenceMemo::default();
    let memo = if kernel.writes_only_outputs() { &mut ws.reference } else { &mut own_memo };
    let result =
        check_and_time(backend, &call, &mut lease, opts, stop, &label, progress, &mut time, memo);
    let launches = backend.launch_info(&KernelCall {
        case,
        implementation: &implementation.id,
        buffers: &lease.ids,
        launch: &launch,
        scalars: &[],
    });
    ws.give_back_after(lease, kernel.writes_only_outputs());
    time.total_s = start.elapsed().as_secs_f64();
    ws.total.add(&time);
    let (check, timing, warnings, interrupted) = result?;
    let r = CaseResult {
        launches,
        case: case.clone(),
        implementation: implementation.clone(),
        launch,
        buffer_bytes,
        check,
        timing,
        warnings,
        interrupted,
        time,
    };
    ws.keep(opts, &r);
    Ok(r)
}

/// What is run, for [`check_and_time`].
struct Call<'a> {
    kernel: &'a dyn Kernel,
    case: &'a Case,
    implementation: &'a Implementation,
    launch: &'a Launch,
    specs: &'a [crate::suite::BufferSpec],
}

type Checked = (CheckResult, Option<Timing>, Vec<String>, bool);

#[allow(clippy::too_many_arguments)]
fn check_and_time(
    backend: &mut dyn Backend,
    c: &Call<'_>,
    lease: &mut crate::workspace::Lease,
    opts: &TimingOptions,
    stop: &AtomicBool,
    label: &str,
    progress: &mut dyn FnMut(Progress<'_>),
    time: &mut CaseTime,
    memo: &mut crate::workspace::ReferenceMemo,
) -> Result<Checked, BenchError> {
    let ids = lease.ids.clone();
    let call = KernelCall {
        case: c.case,
        implementation: &c.implementation.id,
        buffers: &ids,
        launch: c.launch,
        scalars: &[],
    };
    let t = Instant::now();
    backend.prepare(&call)?;
    time.setup_s += t.elapsed().as_secs_f64();

    // 1. Check.
    let t = Instant::now();
    let first = backend.run(&call, 1)?;
    time.warmup_s += t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut names = Vec::new();
    let mut bf16 = Vec::new();
    let mut out_ids = Vec::new();
    for (s, id) in c.specs.iter().zip(&ids) {
        if s.output {
            out_ids.push(*id);
            names.push(s.name);
            bf16.push(s.dtype == DType::Bf16);
        }
    }
    // Outputs in place where the backend's buffers are host memory, else downloaded
    // into the workspace's scratch buffers.
    let in_place = out_ids.iter().all(|id| backend.host_buffer(*id).is_some());
    if !in_place {
        for (id, got) in out_ids.iter().zip(lease.scratch.iter_mut()) {
            backend.download_into(*id, got)?;
        }
    }
    let tol = c.kernel.tolerance(c.case);
    // Inputs that live only in the backend come back for the reference, between runs.
    lease.borrow_inputs(backend)?;
    let got: Vec<&crate::backend::HostBuf> = if in_place {
        out_ids.iter().filter_map(|id| backend.host_buffer(*id)).collect()
    } else {
        lease.scratch.iter().collect()
    };
    // Element by element where the kernel can (no reference buffer), else reference
    // then compare.
    let check = c.kernel.check_in_place(c.case, &lease.host, &got, tol).unwrap_or_else(|| {
        let want = memo.get(c.case, opts.seed, || c.kernel.reference(c.case, &lease.host));
        compare_refs(&names, &got, want, &bf16, tol)
    });
    drop(got);
    lease.return_inputs(backend);
    time.check_s += t.elapsed().as_secs_f64();
    let mut warnings = Vec::new();
    if !check.passed {
        warnings.push(format!(
            "result check failed ({}): not timed",
            check.first_failure.as_deref().unwrap_or("outputs differ from the reference")
        ));
        return Ok((check, None, warnings, false));
    }

    // 2 and 3. Warm-up, then samples.
    let on_sample = |done_s: f64, runs: usize| {
        let runs = runs as u32;
        progress(Progress::Sampling { label, done_s, target_s: opts.min_time_s, runs });
    };
    let timer = backend_timer(backend, &call, opts.flush_cache);
    let s = warm_up_and_sample(timer, first, opts, stop, on_sample, time)?;
    let Some(stats) = TimingStats::of(&s.times) else {
        return Ok((check, None, warnings, s.interrupted));
    };
    warnings.extend(stats::warnings(&s.times, &stats));
    if s.iters == 1 && !opts.flush_cache && s.per_run_s < 20.0 * 1e-6 {
        warnings.push(format!(
            "one run takes {}: close to the timer overhead",
            rooftop_core::units::si(s.per_run_s, "s")
        ));
    }
    let timing = Timing {
        times_s: s.times,
        iters_per_sample: s.iters,
        warmup_runs: s.warm_runs,
        cache: if opts.flush_cache { CacheState::Flushed } else { CacheState::Warm },
        stats,
    };
    Ok((check, Some(timing), warnings, s.interrupted))
}

/// The samples of a call, from [`warm_up_and_sample`].
pub(crate) struct Samples {
    /// Per-run seconds, one per sample.
    pub(crate) times: Vec<f64>,
    /// Runs per sample.
    pub(crate) iters: u32,
    /// Warm-up runs, the first (checked) run included.
    pub(crate) warm_runs: u32,
    /// Mean seconds of a warm-up run.
    pub(crate) per_run_s: f64,
    /// A stop request ended the warm-up or the sampling.
    pub(crate) interrupted: bool,
}

/// Which part of [`warm_up_and_sample`] asks the timer for a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// One warm-up run.
    WarmUp,
    /// One sample of `iters` runs.
    Sample,
}

/// Steps 3 and 4 of the module doc after a first (checked) run that took `first_s`:
/// warm-up (`warmup_runs` runs, at least `warmup_time_s` of wall or kernel time), then
/// samples until `min_runs` and `min_time_s` (at most `max_runs`), each of enough runs
/// to last `min_sample_s` (one with `flush_cache`). `timer(phase, iters)` runs the call
/// `iters` times and returns the seconds they took: the backend-specific part (the
/// harness's evicts the caches before a sample and refuses a time that is not finite
/// and positive; the matrix probes' turn such a time into a note). `stop` is polled
/// before every run; `on_sample(total_s, samples)` follows every sample.
/// The one timing loop of the crate (the harness's cases and the ceilings' matrix probes).
pub(crate) fn warm_up_and_sample<E>(
    mut timer: impl FnMut(Phase, u32) -> Result<f64, E>,
    first_s: f64,
    opts: &TimingOptions,
    stop: &AtomicBool,
    mut on_sample: impl FnMut(f64, usize),
    time: &mut CaseTime,
) -> Result<Samples, E> {
    let mut warm_runs = 1u32; // the checked run
    let mut warm_s = first_s;
    let t = Instant::now();
    // The warm-up lasts `warmup_time_s` by the wall clock (a 4 KiB copy reports ~0.5 µs a
    // run but costs ~20 µs a call: by its own time alone it took 10⁵ calls and seconds of
    // wall time) or by the kernel time the timer reports (a mock's are not spent).
    let warm_enough =
        |warm_s: f64| warm_s.max(first_s + t.elapsed().as_secs_f64()) >= opts.warmup_time_s;
    while warm_runs < opts.warmup_runs.max(1) || !warm_enough(warm_s) {
        if stop.load(Ordering::Relaxed) {
            time.warmup_s += t.elapsed().as_secs_f64();
            let per_run_s = warm_s / f64::from(warm_runs);
            return Ok(Samples {
                times: Vec::new(),
                iters: 1,
                warm_runs,
                per_run_s,
                interrupted: true,
            });
        }
        warm_s += timer(Phase::WarmUp, 1)?;
        warm_runs += 1;
    }
    time.warmup_s += t.elapsed().as_secs_f64();
    let per_run_s = (warm_s / f64::from(warm_runs)).max(1e-9);
    let iters = if opts.flush_cache {
        1
    } else {
        (opts.min_sample_s / per_run_s).ceil().clamp(1.0, 1e6) as u32
    };
    let mut times = Vec::new();
    let mut total = 0.0;
    let mut interrupted = false;
    let t_sampling = Instant::now();
    while (times.len() < opts.min_runs as usize || total < opts.min_time_s)
        && times.len() < opts.max_runs.max(1) as usize
    {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let t = timer(Phase::Sample, iters)?;
        total += t;
        times.push(t / f64::from(iters));
        on_sample(total, times.len());
    }
    time.sampling_s += t_sampling.elapsed().as_secs_f64();
    Ok(Samples { times, iters, warm_runs, per_run_s, interrupted })
}

/// The harness's timer for [`warm_up_and_sample`]: the backend's own timer; before a
/// sample the caches are evicted (`flush_cache`), and a sample whose time is not finite
/// and positive is an error (a rate from it would be infinite).
fn backend_timer<'a>(
    backend: &'a mut dyn Backend,
    call: &'a KernelCall<'_>,
    flush_cache: bool,
) -> impl FnMut(Phase, u32) -> Result<f64, BenchError> + 'a {
    move |phase, iters| {
        if phase == Phase::WarmUp {
            return Ok(backend.run(call, 1)?);
        }
        if flush_cache {
            backend.flush_cache()?;
        }
        let t = backend.run(call, iters)?;
        if !(t.is_finite() && t > 0.0) {
            return Err(BenchError::Suite(SuiteError::BadConfig {
                kernel: call.case.kernel.to_string(),
                message: format!("the backend timer returned {t} s for {iters} runs"),
            }));
        }
        Ok(t)
    }
}

/// Autotune: runs `case` once per launch of the backend's launch space and returns every
/// result, the best (lowest median) first.
#[allow(clippy::too_many_arguments)]
pub fn autotune(
    backend: &mut dyn Backend,
    kernel: &dyn Kernel,
    case: &Case,
    implementation: &Implementation,
    launches: &[Launch],
    opts: &TimingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<CaseResult>, BenchError> {
    let mut ws = Workspace::new();
    let r =
        autotune_in(&mut ws, backend, kernel, case, implementation, launches, opts, stop, progress);
    ws.release(backend);
    r
}

/// [`autotune`] with the buffers of `ws` (one set for every launch).
#[allow(clippy::too_many_arguments)]
pub fn autotune_in(
    ws: &mut Workspace,
    backend: &mut dyn Backend,
    kernel: &dyn Kernel,
    case: &Case,
    implementation: &Implementation,
    launches: &[Launch],
    opts: &TimingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Vec<CaseResult>, BenchError> {
    sweep(launches, stop, |l| {
        run_case_in(ws, backend, kernel, case, implementation, Some(l), opts, stop, progress)
    })
}

/// Runs `run` at each launch until `stop`, and returns the results best (lowest median)
/// first: the loop of every autotune (suite kernels here, spec kernels in `spec::run`).
pub(crate) fn sweep(
    launches: &[Launch],
    stop: &AtomicBool,
    mut run: impl FnMut(Launch) -> Result<CaseResult, BenchError>,
) -> Result<Vec<CaseResult>, BenchError> {
    let mut out = Vec::new();
    for l in launches {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        out.push(run(*l)?);
    }
    out.sort_by(|a, b| median_of(a).total_cmp(&median_of(b)));
    Ok(out)
}

fn median_of(r: &CaseResult) -> f64 {
    r.timing.as_ref().map_or(f64::INFINITY, |t| t.stats.median_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(warmup_time_s: f64) -> TimingOptions {
        TimingOptions {
            warmup_runs: 3,
            warmup_time_s,
            min_runs: 2,
            min_time_s: 0.0,
            ..TimingOptions::default()
        }
    }

    /// A call that costs 2 ms of wall time but reports 1 µs of kernel time: 20 ms of
    /// warm-up is at most 11 calls by the wall clock (it was 20,000 by the kernel time).
    #[test]
    fn a_cheap_kernel_with_a_costly_call_warms_up_by_the_wall_clock() {
        let mut calls = 0u32;
        let timer = |phase: Phase, _iters: u32| -> Result<f64, ()> {
            if phase == Phase::WarmUp {
                calls += 1;
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Ok(1e-6)
        };
        let stop = AtomicBool::new(false);
        let mut time = CaseTime::default();
        let s = warm_up_and_sample(timer, 1e-6, &opts(0.02), &stop, |_, _| {}, &mut time).unwrap();
        assert!((3..=11).contains(&s.warm_runs), "{} warm-up runs", s.warm_runs);
        // The checked run counts as the first.
        assert_eq!(calls + 1, s.warm_runs);
        assert!(time.warmup_s >= 0.02 - 2e-3, "{} s of warm-up", time.warmup_s);
    }

    /// A timer that reports more kernel time than it spends (a mock's): the reported
    /// time ends the warm-up, 10 ms a run for 50 ms.
    #[test]
    fn reported_kernel_time_ends_the_warm_up_when_it_comes_first() {
        let timer = |_: Phase, _: u32| -> Result<f64, ()> { Ok(0.01) };
        let stop = AtomicBool::new(false);
        let mut time = CaseTime::default();
        let s = warm_up_and_sample(timer, 0.01, &opts(0.05), &stop, |_, _| {}, &mut time).unwrap();
        assert_eq!(s.warm_runs, 5);
    }
}
