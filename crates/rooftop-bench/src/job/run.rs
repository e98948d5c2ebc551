//! The run loop: quick ceilings, then every case in one workspace, then the roofs a
//! result beat re-measured and every result judged again.

use super::{BenchPlan, BenchRequest, Exports, JobError};
use crate::any::AnyBackend;
use crate::ceilings::{self, Ceilings, Residency};
use crate::export::{self, BenchReport, Roofs, RunTime};
use crate::harness::{self, CaseResult, Progress, Workspace};
use crate::spec;
use crate::suite::Kernel;
use rooftop_core::device::DeviceSpec;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A stage of a run, each with its own progress bar in the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The quick ceilings, before the cases.
    Ceilings,
    /// The cases.
    Cases,
    /// Roofs that results beat, re-measured after the cases.
    Remeasure,
}

impl Stage {
    /// The stage's name on a progress bar: `ceilings` or `bench`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Ceilings | Stage::Remeasure => "ceilings",
            Stage::Cases => "bench",
        }
    }
}

/// What a run reports as it goes, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub enum JobEvent<'a> {
    /// A stage starts, with its number of steps (one for the ceilings stages).
    Started {
        /// The stage.
        stage: Stage,
        /// Its steps.
        steps: u64,
    },
    /// A kernel of `stage` is being checked or sampled.
    Progress {
        /// The stage.
        stage: Stage,
        /// The harness's progress.
        progress: Progress<'a>,
    },
    /// A step (a case) is done; its results are in the exports.
    Step,
    /// The stage is done (or the run was stopped, or the ceilings failed: the report
    /// says so in a warning).
    Finished,
}

impl JobEvent<'_> {
    /// The line to show for a [`JobEvent::Progress`] (`triad n=33554432: 12 samples`).
    pub fn message(&self) -> Option<String> {
        let JobEvent::Progress { stage, progress } = *self else { return None };
        Some(match (stage, progress) {
            (Stage::Ceilings, Progress::Checking { label } | Progress::Sampling { label, .. }) => {
                label.to_string()
            }
            (Stage::Remeasure, Progress::Checking { label } | Progress::Sampling { label, .. }) => {
                format!("re-measuring: {label}")
            }
            (Stage::Cases, Progress::Checking { label }) => format!("{label}: checking"),
            (Stage::Cases, Progress::Sampling { label, runs, .. }) => {
                format!("{label}: {runs} samples")
            }
        })
    }
}

/// What a run hands back.
#[derive(Debug, Clone)]
pub struct BenchOutcome {
    /// The report (`interrupted` set when `stop` ended it early).
    pub report: BenchReport,
    /// With `compare`: the two kernels' results paired case by case.
    pub comparisons: Option<Vec<spec::compare::Comparison>>,
    /// Results that failed their check against the reference (and were not timed).
    pub failed_checks: usize,
    /// Whether the run wrote export files.
    pub exported: bool,
}

impl BenchOutcome {
    /// The run's failure, if any, in one sentence: stopped early (Ctrl-C in the CLI), or
    /// results that failed their check. The report is complete either way.
    pub fn failure(&self) -> Option<JobError> {
        let failed = self.failed_checks;
        if self.report.interrupted {
            Some(JobError::Runtime(format!(
                "interrupted by Ctrl-C: {} kept{}",
                rooftop_core::diagnose::count(
                    self.report.results.len() as u64,
                    "result",
                    "results"
                ),
                if self.exported { " in the export files" } else { "" }
            )))
        } else if failed > 0 {
            Some(JobError::Runtime(format!(
                "{} failed {} check against the reference (not timed)",
                rooftop_core::diagnose::count(failed as u64, "result", "results"),
                if failed == 1 { "its" } else { "their" }
            )))
        } else {
            None
        }
    }
}

/// Runs `plan` on `backend` (module doc of [`job`](super)). `started` is when the
/// command started, for the report's `time_spent`; `stop` is polled between samples.
///
/// # Errors
/// A backend error, an export that cannot be written, a device spec the backend cannot
/// give (with `no_ceilings` on a CPU without a known bandwidth).
pub fn run(
    plan: &BenchPlan,
    any: &mut AnyBackend,
    exports: &Exports,
    stop: &AtomicBool,
    started: Instant,
    on_event: &mut dyn FnMut(JobEvent<'_>),
) -> Result<BenchOutcome, JobError> {
    let request = &plan.request;
    let timing = &plan.settings.timing;
    let mut notes = plan.notes.clone();
    // Buffers are kept from case to case (the suite's cases share a few shapes), and so
    // are results: the quick ceilings measure the suite's own triad, copy, read and write cases
    // with the suite's timing, and the suite shows those results rather than measuring
    // the same cases twice.
    let mut ws = Workspace::new();
    ws.remember_results();
    // A device file's calibrated roofs win: they are what the user measured to make
    // later runs fast and comparable, so they are neither measured again nor dropped
    // with `--no-ceilings`.
    let file_ceilings = request.device.as_ref().and_then(ceilings::ceilings_from_spec);
    let from_file = file_ceilings.is_some();
    let ceilings = if let Some(c) = file_ceilings {
        Some(c)
    } else if request.no_ceilings {
        None
    } else {
        on_event(JobEvent::Started { stage: Stage::Ceilings, steps: 1 });
        let opts = any.ceiling_options(true, timing.clone());
        let r = ceilings::measure_in(&mut ws, any.as_dyn(), &opts, stop, &mut |p| {
            on_event(JobEvent::Progress { stage: Stage::Ceilings, progress: p });
        });
        on_event(JobEvent::Finished);
        match r {
            Ok(c) => Some(c),
            Err(e) => {
                notes.push(format!("quick ceilings not measured: {e}"));
                None
            }
        }
    };
    let theoretical = match theoretical_spec(request, any, ceilings.as_ref(), plan) {
        Ok(t) => t,
        // Ctrl-C during the ceilings left no roof to judge against: the exports still
        // say that the run was interrupted, with no results.
        Err(e) if stop.load(Ordering::Relaxed) => {
            return Ok(interrupted_early(any, exports, timing, notes, started, &e));
        }
        Err(e) => return Err(e),
    };
    let analysis_spec = ceilings
        .as_ref()
        .map_or_else(|| theoretical.clone(), |c| ceilings::calibrated_spec(&theoretical, c));

    let ceilings_s = ws.total.total_s;
    let info = any.as_dyn().info().clone();
    let mut report = BenchReport {
        schema_version: export::SCHEMA_VERSION,
        tool: format!("rooftop {}", env!("CARGO_PKG_VERSION")),
        backend: info.clone(),
        device: export::device_record(&analysis_spec),
        ceilings: ceilings.clone(),
        timing: export::timing_record(timing, &info.timer),
        results: Vec::new(),
        warnings: notes,
        interrupted: false,
        time_spent: RunTime::of(started.elapsed().as_secs_f64(), ws.total, ceilings_s),
    };
    let roofs =
        Roofs { theoretical: &theoretical, analysis: &analysis_spec, ceilings: ceilings.as_ref() };

    // An export file exists (with no results yet) as soon as the cases start.
    exports.write(&report)?;
    on_event(JobEvent::Started { stage: Stage::Cases, steps: plan.cases.len() as u64 });
    let mut failed_checks = 0usize;
    // The best result of each job, for `compare`.
    let mut bests: Vec<CaseResult> = Vec::new();
    // Every result with its kernel, to judge them again if a ceiling changes.
    let mut all: Vec<(&'static dyn Kernel, CaseResult)> = Vec::new();
    for job in &plan.cases {
        if stop.load(Ordering::Relaxed) {
            report.interrupted = true;
            break;
        }
        let backend = any.as_dyn();
        let launches = plan.launches(job, backend)?;
        let mut on_progress =
            |p: Progress<'_>| on_event(JobEvent::Progress { stage: Stage::Cases, progress: p });
        let results = if let (Some(k), Some(set)) = (job.spec, &plan.set) {
            spec::run::autotune_in(
                &mut ws,
                backend,
                set,
                k,
                &job.case,
                &job.implementation,
                &launches,
                timing,
                stop,
                &mut on_progress,
            )
        } else if launches.len() > 1 {
            harness::autotune_in(
                &mut ws,
                backend,
                job.kernel,
                &job.case,
                &job.implementation,
                &launches,
                timing,
                stop,
                &mut on_progress,
            )
        } else {
            harness::run_case_in(
                &mut ws,
                backend,
                job.kernel,
                &job.case,
                &job.implementation,
                launches.first().copied(),
                timing,
                stop,
                &mut on_progress,
            )
            .map(|r| vec![r])
        }?;
        if let Some(best) = results.first() {
            bests.push(best.clone());
        }
        for r in &results {
            if !r.check.passed {
                failed_checks += 1;
            }
            if r.interrupted {
                report.interrupted = true;
            }
            report.results.push(export::evaluate(job.kernel, r, roofs)?);
            all.push((job.kernel, r.clone()));
        }
        export::link_builtins(&mut report.results);
        report.time_spent = RunTime::of(started.elapsed().as_secs_f64(), ws.total, ceilings_s);
        exports.write(&report)?;
        on_event(JobEvent::Step);
    }
    on_event(JobEvent::Finished);
    let mut ceilings = ceilings;
    // The file's roofs are the user's calibration: never re-measured nor raised here (a
    // result above one shows as more than 100%).
    if let (Some(c), false) = (ceilings.as_mut(), stop.load(Ordering::Relaxed) || from_file) {
        let remeasured = remeasure(any, &mut ws, timing, c, &report, stop, on_event)?;
        if remeasured {
            let analysis = ceilings::calibrated_spec(&theoretical, c);
            let roofs = Roofs { theoretical: &theoretical, analysis: &analysis, ceilings: Some(c) };
            report.results = all
                .iter()
                .map(|(k, r)| export::evaluate(*k, r, roofs))
                .collect::<Result<_, _>>()?;
            report.device = export::device_record(&analysis);
            report.ceilings = Some(c.clone());
        }
    }
    ws.release(any.as_dyn());
    if stop.load(Ordering::Relaxed) {
        report.interrupted = true;
    }
    export::link_builtins(&mut report.results);
    report.time_spent = RunTime::of(started.elapsed().as_secs_f64(), ws.total, ceilings_s);
    exports.write(&report)?;
    let comparisons = request.compare.as_ref().map(|names| compare_results(names, &bests));
    Ok(BenchOutcome { report, comparisons, failed_checks, exported: !exports.is_empty() })
}

/// The outcome of a run Ctrl-C stopped before any roof was known: no results, the
/// backend's device without roofs, `interrupted`, written to every export (a failed
/// write is already moot: the run is over and says so).
fn interrupted_early(
    any: &mut AnyBackend,
    exports: &Exports,
    timing: &harness::TimingOptions,
    mut notes: Vec<String>,
    started: Instant,
    why: &JobError,
) -> BenchOutcome {
    let info = any.as_dyn().info().clone();
    notes.push(format!("interrupted before the first case; no roofs: {why}"));
    let report = BenchReport {
        schema_version: export::SCHEMA_VERSION,
        tool: format!("rooftop {}", env!("CARGO_PKG_VERSION")),
        backend: info.clone(),
        device: export::DeviceRecord {
            id: info.device_name.clone(),
            name: info.device_name.clone(),
            roofs: Vec::new(),
        },
        ceilings: None,
        timing: export::timing_record(timing, &info.timer),
        results: Vec::new(),
        warnings: notes,
        interrupted: true,
        time_spent: RunTime::of(
            started.elapsed().as_secs_f64(),
            rooftop_core::schema::bench::CaseTime::default(),
            0.0,
        ),
    };
    let _ = exports.write(&report);
    BenchOutcome { report, comparisons: None, failed_checks: 0, exported: !exports.is_empty() }
}

/// The theoretical figures results are judged against for "% of peak". A calibrated
/// device file replaced its peaks by measurements, so its theoretical figures come from
/// the built-in catalog entry of the same id or from the backend's own device when it is
/// that device; otherwise the device named, or the backend's own. Without any DRAM
/// bandwidth (a CPU with `--no-ceilings`), a plan of compute-side cases only (gemm, fma)
/// is judged against the backend's compute peaks and no memory roof.
fn theoretical_spec(
    request: &BenchRequest,
    any: &AnyBackend,
    ceilings: Option<&Ceilings>,
    plan: &BenchPlan,
) -> Result<DeviceSpec, JobError> {
    let own = || {
        any.device_spec(ceilings).map_err(|e| {
            if request.no_ceilings {
                JobError::Input(format!(
                    "{e}; with --no-ceilings only the compute-bound kernels (gemm, fma) run \
                     without one"
                ))
            } else {
                e
            }
        })
    };
    match &request.device {
        Some(d) if ceilings::ceilings_from_spec(d).is_some() => {
            if let Some(base) = rooftop_core::device::Catalog::builtin().get(&d.id) {
                return Ok(base.clone());
            }
            Ok(any.device_spec(ceilings).ok().filter(|o| o.id == d.id).unwrap_or_else(|| d.clone()))
        }
        Some(d) => Ok(d.clone()),
        None if ceilings.is_none() && plan.compute_only() => match any.compute_only_spec() {
            Some(d) => Ok(d),
            // A CPU's own spec fails on its bandwidth first; the run needs a peak only.
            None if matches!(any, AnyBackend::Cpu(_)) => Err(JobError::Input(
                "--no-ceilings: this CPU's compute peak is unknown (its clock or FMA units \
                 are not reported); measure it with `rooftop ceilings` or drop --no-ceilings"
                    .to_string(),
            )),
            None => own(),
        },
        None => own(),
    }
}

/// Roofs a result beat: re-measured, then raised ([`ceilings::adjust`]). Whether any
/// ceiling changed (every result must then be judged again).
fn remeasure(
    any: &mut AnyBackend,
    ws: &mut Workspace,
    timing: &harness::TimingOptions,
    c: &mut Ceilings,
    report: &BenchReport,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(JobEvent<'_>),
) -> Result<bool, JobError> {
    let rows: Vec<_> = report
        .results
        .iter()
        .filter_map(|rec| {
            let achieved =
                if rec.residency.is_some() { rec.achieved_gbs } else { rec.achieved_gflops };
            let label =
                export::result_label(&rec.kernel, &rec.config.label, &rec.implementation.id);
            Some((rec.roof?, rec.residency.unwrap_or(Residency::Dram), achieved?, label))
        })
        .collect();
    let beaten = ceilings::adjust::beaten(c, &rows);
    if beaten.is_empty() {
        return Ok(false);
    }
    on_event(JobEvent::Started { stage: Stage::Remeasure, steps: 1 });
    let opts = any.ceiling_options(true, timing.clone());
    let changed =
        ceilings::adjust::remeasure_beaten(ws, any.as_dyn(), &opts, c, &beaten, stop, &mut |p| {
            on_event(JobEvent::Progress { stage: Stage::Remeasure, progress: p });
        })?;
    on_event(JobEvent::Finished);
    Ok(changed)
}

/// Pairs the results of the two kernels `names` case by case (same sizes).
pub fn compare_results(names: &[String], bests: &[CaseResult]) -> Vec<spec::compare::Comparison> {
    let (Some(x), Some(y)) = (names.first(), names.get(1)) else { return Vec::new() };
    bests
        .iter()
        .filter(|r| r.case.kernel.name() == x)
        .filter_map(|ra| {
            bests
                .iter()
                .find(|rb| rb.case.kernel.name() == y && rb.case.sizes == ra.case.sizes)
                .map(|rb| spec::compare::compare(ra, rb))
        })
        .collect()
}
