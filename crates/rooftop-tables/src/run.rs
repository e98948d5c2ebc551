//! Multi-rank runs on this machine: the map of many rank traces (each to its report
//! and, optionally, its Parquet tables) and the reduce of them, or of rank-table folders
//! a map wrote elsewhere, into the cross-rank report. What reads a trace is the
//! caller's [`RankSource`] (`rooftop-ingest` reads every format; the CLI adds its
//! device choice and analysis flags), so this crate stays on `rooftop-core` alone.
//!
//! Memory is bounded: `workers` threads each hold one rank's trace at a time and drop
//! it after its map; what stays is each rank's report where asked for
//! ([`MapSettings::keep_reports`]) and its collectives in the reducer's compact form.
//! The result does not depend on the number of workers: ranks come back in input order
//! and the reduce is order-independent ([`rooftop_core::trace::ranks`]).

use crate::{read_rank, write_rank, RankInput, TableError, Written};
use rooftop_core::trace::comm::collectives;
use rooftop_core::trace::comm::reduce::ReduceOptions;
use rooftop_core::trace::ranks::{MultiRank, RankMeta};
use rooftop_core::trace::report::analyze;
use rooftop_core::trace::run::{file_name, stem, RankFailure, RankResult, RankRun, RankSource};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// How [`map_traces`] runs.
#[derive(Debug, Clone, Default)]
pub struct MapSettings<'a> {
    /// Threads, each reading one rank at a time (at least 1; see [`workers`]).
    pub workers: usize,
    /// Settings of the cross-rank reduce.
    pub reduce: ReduceOptions,
    /// Keep each rank's full report in [`RankResult::report`] (the analysis is skipped
    /// otherwise: the map needs only the timeline and the collectives).
    pub keep_reports: bool,
    /// Write each rank's tables into `DIR/<stem>` (`rank3.json.gz` → `DIR/rank3`).
    pub tables_out: Option<&'a Path>,
}

/// Worker threads for `n` ranks: `jobs`, default one per core, at most `n`, at least 1.
pub fn workers(jobs: Option<u32>, n: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    jobs.map_or(cores, |j| j as usize).min(n).max(1)
}

/// The map step of one rank's tables: the tables of `model` (read from `path`) into
/// `out`, with the device and options `source` picks.
///
/// # Errors
/// A table cannot be written.
pub fn write_one(
    path: &Path,
    model: &rooftop_core::trace::TraceModel,
    source: &dyn RankSource,
    out: &Path,
) -> Result<Written, TableError> {
    let device = source.device(model);
    let include_unlinked = source.options(model).include_unlinked;
    let meta =
        RankMeta::of(&file_name(path), model, device.map(|d| d.id.as_str()), include_unlinked);
    let records = collectives(model);
    let input = RankInput {
        meta: &meta,
        model,
        collectives: &records,
        source_bytes: std::fs::metadata(path).ok().map(|m| m.len()),
        include_unlinked,
    };
    write_rank(out, &input)
}

/// Runs `step(i)` for `0..n` on `workers` threads; the outcomes in index order.
fn parallel<T: Send>(
    n: usize,
    workers: usize,
    step: &(dyn Fn(usize) -> Result<T, String> + Sync),
) -> Vec<Result<T, String>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Result<T, String>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let outcome = step(i);
                if let Ok(mut r) = results.lock() {
                    r.push((i, outcome));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_default();
    results.sort_by_key(|r| r.0);
    results.into_iter().map(|(_, r)| r).collect()
}

/// Splits outcomes (in the order of `paths`) into the run's ranks and failures, with
/// the reduce's report.
fn collect(
    outcomes: Vec<Result<RankResult, String>>,
    paths: &[PathBuf],
    multi: Mutex<MultiRank>,
) -> RankRun {
    let mut run = RankRun::default();
    for (r, path) in outcomes.into_iter().zip(paths) {
        match r {
            Ok(x) => run.ranks.push(x),
            Err(message) => run.failures.push(RankFailure { path: path.clone(), message }),
        }
    }
    run.sort_ranks();
    run.cross = multi.into_inner().map(MultiRank::finish).unwrap_or_default();
    run
}

/// Maps every trace of `files` (read by `source`) and reduces them: each rank's report
/// where [`MapSettings::keep_reports`], its tables where [`MapSettings::tables_out`],
/// and the cross-rank report. `progress(bytes)` is called with the bytes read since
/// its last call, from the worker threads.
///
/// A rank that cannot be read (or whose tables cannot be written) is a failure of the
/// run, not an error: the others are still reduced.
pub fn map_traces(
    files: &[PathBuf],
    source: &dyn RankSource,
    settings: &MapSettings<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> RankRun {
    let multi = Mutex::new(MultiRank::new(settings.reduce.clone()));
    let outcomes = parallel(files.len(), settings.workers, &|i| {
        let path = &files[i];
        let mut seen = 0;
        let m = source.read(path, &mut |done, _| {
            progress(done.saturating_sub(seen));
            seen = seen.max(done);
        })?;
        let device = source.device(&m);
        let topts = source.options(&m);
        // The full report only where it is shown.
        let report = settings.keep_reports.then(|| analyze(&m, device, &topts));
        let file = file_name(path);
        let catalog_id = device.map(|d| d.id.as_str());
        let meta = match &report {
            Some(r) => RankMeta::with_timeline(&file, &m, catalog_id, &r.timeline),
            None => RankMeta::of(&file, &m, catalog_id, topts.include_unlinked),
        };
        let records = collectives(&m);
        let written = settings.tables_out.map_or(Ok(()), |dir| {
            let input = RankInput {
                meta: &meta,
                model: &m,
                collectives: &records,
                source_bytes: std::fs::metadata(path).ok().map(|x| x.len()),
                include_unlinked: topts.include_unlinked,
            };
            write_rank(&dir.join(stem(&file)), &input).map(|_| ()).map_err(|e| e.to_string())
        });
        let rank = m.rank;
        drop(m);
        if let Ok(mut mr) = multi.lock() {
            mr.add(meta, &records);
        }
        written.map(|()| RankResult { rank, file, report })
    });
    collect(outcomes, files, multi)
}

/// The reduce of rank-table folders (what [`map_traces`] or `rooftop trace --format
/// parquet` wrote): the cross-rank report, with ranks that have no per-rank report.
/// `progress()` is called once per folder read, from the worker threads.
pub fn reduce_tables(
    dirs: &[PathBuf],
    workers: usize,
    reduce: ReduceOptions,
    progress: &(dyn Fn() + Sync),
) -> RankRun {
    let multi = Mutex::new(MultiRank::new(reduce));
    let outcomes = parallel(dirs.len(), workers, &|i| {
        let outcome = match read_rank(&dirs[i]) {
            Ok((meta, records)) => {
                let out = RankResult { rank: meta.rank, file: meta.name.clone(), report: None };
                if let Ok(mut mr) = multi.lock() {
                    mr.add(meta, &records);
                }
                Ok(out)
            }
            Err(e) => Err(e.to_string()),
        };
        progress();
        outcome
    });
    collect(outcomes, dirs, multi)
}
