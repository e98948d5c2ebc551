//! Checking and timing one case, hyperfine-style, on any backend.
//!
//! For each case the harness
//! 1. allocates the suite's buffers and fills the inputs with fresh seeded random values
//!    (outputs with a poison pattern), refusing sizes the backend cannot hold;
//! 2. runs the kernel once and compares its outputs with the reference implementation
//!    (a failed check means no timing is reported);
//! 3. warms up (`warmup_runs` runs, and at least `warmup_time_s` seconds);
//! 4. takes samples until it has at least `min_runs` and `min_time_s` of kernel time
//!    (at most `max_runs`). A sample runs the kernel `iters` times back to back and
//!    records the mean per-run time; `iters` is chosen so that a sample lasts at least
//!    `min_sample_s` (the timer's resolution and the call overhead then cost < 1%), and
//!    is 1 with `--flush-cache`, which evicts the caches before every sample;
//! 5. reports mean ± σ, median, min…max and hyperfine's warnings.

use crate::backend::{Backend, BufId, DType, Implementation, KernelCall, Launch};
use crate::case::Case;
use crate::error::{BenchError, SuiteError};
use crate::rng;
use crate::stats::{self, Stats};
use crate::suite::{compare, CheckResult, Kernel};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};

/// How to time a case. Defaults are stated in `rooftop bench --help`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimingOptions {
    /// Runs before sampling (default 3).
    pub warmup_runs: u32,
    /// Minimum seconds of warm-up (default 0.05).
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

/// Cache state during sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheState {
    /// Buffers stay in whatever caches they fit (repeated runs).
    Warm,
    /// Caches evicted before every sample (`--flush-cache`).
    Flushed,
}

/// Timing of a case that passed its check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timing {
    /// Per-run seconds, one per sample (each the mean of `iters_per_sample` runs).
    pub times_s: Vec<f64>,
    pub iters_per_sample: u32,
    pub warmup_runs: u32,
    pub cache: CacheState,
    pub stats: Stats,
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
}

/// What the harness tells a progress display.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Progress<'a> {
    /// A case is being set up and checked.
    Checking { label: &'a str },
    /// Sampling: `done_s` of `target_s` seconds of kernel time, `runs` samples so far.
    Sampling { label: &'a str, done_s: f64, target_s: f64, runs: u32 },
}

/// Buffers of a case on a backend, freed on drop of the guard's owner.
struct Buffers {
    ids: Vec<BufId>,
}

impl Buffers {
    fn free(self, backend: &mut dyn Backend) {
        for id in self.ids {
            backend.free(id);
        }
    }
}

/// Checks and times `case` with `implementation` on `backend`.
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
    let label = format!("{} {} [{}]", case.kernel, case.label(), implementation.id);
    progress(Progress::Checking { label: &label });
    let launch = launch.unwrap_or_else(|| backend.default_launch(case));
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

    // Fresh random inputs, varied per case and implementation.
    let seed = opts.seed ^ hash(&label);
    let host = rng::fill_all(&specs, seed, 0x9E37);
    let mut bufs = Buffers { ids: Vec::with_capacity(specs.len()) };
    let setup = (|| {
        for (s, h) in specs.iter().zip(&host) {
            let id = backend.alloc(s.dtype, s.len)?;
            bufs.ids.push(id);
            backend.upload(id, h)?;
        }
        Ok::<(), BenchError>(())
    })();
    if let Err(e) = setup {
        bufs.free(backend);
        return Err(e);
    }
    let result = check_and_time(
        backend,
        kernel,
        case,
        implementation,
        &launch,
        &specs,
        &host,
        &bufs.ids,
        opts,
        stop,
        &label,
        progress,
    );
    let launches = backend.launch_info(&KernelCall {
        case,
        implementation: &implementation.id,
        buffers: &bufs.ids,
        launch: &launch,
        scalars: &[],
    });
    bufs.free(backend);
    let (check, timing, warnings, interrupted) = result?;
    Ok(CaseResult {
        launches,
        case: case.clone(),
        implementation: implementation.clone(),
        launch,
        buffer_bytes,
        check,
        timing,
        warnings,
        interrupted,
    })
}

type Checked = (CheckResult, Option<Timing>, Vec<String>, bool);

#[allow(clippy::too_many_arguments)]
fn check_and_time(
    backend: &mut dyn Backend,
    kernel: &dyn Kernel,
    case: &Case,
    implementation: &Implementation,
    launch: &Launch,
    specs: &[crate::suite::BufferSpec],
    host: &[crate::backend::HostBuf],
    ids: &[BufId],
    opts: &TimingOptions,
    stop: &AtomicBool,
    label: &str,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Checked, BenchError> {
    let call =
        KernelCall { case, implementation: &implementation.id, buffers: ids, launch, scalars: &[] };
    backend.prepare(&call)?;

    // 1. Check.
    let first = backend.run(&call, 1)?;
    let mut got = Vec::new();
    let mut names = Vec::new();
    let mut bf16 = Vec::new();
    for (s, id) in specs.iter().zip(ids) {
        if s.output {
            got.push(backend.download(*id)?);
            names.push(s.name);
            bf16.push(s.dtype == DType::Bf16);
        }
    }
    let want = kernel.reference(case, host);
    let check = compare(&names, &got, &want, &bf16, kernel.tolerance(case));
    drop(got);
    let mut warnings = Vec::new();
    if !check.passed {
        warnings.push(format!(
            "result check failed ({}): not timed",
            check.first_failure.as_deref().unwrap_or("outputs differ from the reference")
        ));
        return Ok((check, None, warnings, false));
    }

    // 2. Warm-up.
    let mut warm_runs = 1u32; // the checked run
    let mut warm_s = first;
    while warm_runs < opts.warmup_runs.max(1) || warm_s < opts.warmup_time_s {
        if stop.load(Ordering::Relaxed) {
            return Ok((check, None, warnings, true));
        }
        warm_s += backend.run(&call, 1)?;
        warm_runs += 1;
    }
    let per_run = (warm_s / f64::from(warm_runs)).max(1e-9);

    // 3. Samples.
    let iters = if opts.flush_cache {
        1
    } else {
        (opts.min_sample_s / per_run).ceil().clamp(1.0, 1e6) as u32
    };
    let mut times = Vec::new();
    let mut total = 0.0;
    let mut interrupted = false;
    while (times.len() < opts.min_runs as usize || total < opts.min_time_s)
        && times.len() < opts.max_runs.max(1) as usize
    {
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        if opts.flush_cache {
            backend.flush_cache()?;
        }
        let t = backend.run(&call, iters)?;
        if !(t.is_finite() && t > 0.0) {
            return Err(BenchError::Suite(SuiteError::BadConfig {
                kernel: case.kernel.to_string(),
                message: format!("the backend timer returned {t} s for {iters} runs"),
            }));
        }
        total += t;
        times.push(t / f64::from(iters));
        progress(Progress::Sampling {
            label,
            done_s: total,
            target_s: opts.min_time_s,
            runs: times.len() as u32,
        });
    }
    let Some(stats) = Stats::of(&times) else {
        return Ok((check, None, warnings, interrupted));
    };
    warnings.extend(stats::warnings(&times, &stats));
    if iters == 1 && !opts.flush_cache && per_run < 20.0 * 1e-6 {
        warnings.push(format!(
            "one run takes {}: close to the timer overhead",
            rooftop_core::units::si(per_run, "s")
        ));
    }
    let timing = Timing {
        times_s: times,
        iters_per_sample: iters,
        warmup_runs: warm_runs,
        cache: if opts.flush_cache { CacheState::Flushed } else { CacheState::Warm },
        stats,
    };
    Ok((check, Some(timing), warnings, interrupted))
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
    sweep(launches, stop, |l| {
        run_case(backend, kernel, case, implementation, Some(l), opts, stop, progress)
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

/// FNV-1a, to vary seeds per case deterministically.
fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}
