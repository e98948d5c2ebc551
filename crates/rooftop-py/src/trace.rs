//! `rooftop.trace` and `rooftop.trace_ranks`: what `rooftop trace FILE` and
//! `rooftop trace DIR` do (`crates/rooftop-cli/src/commands/trace.rs`, `trace_ranks.rs`),
//! without progress bars: `rooftop_ingest::source::read_one`, the device the trace
//! names unless one is given, `rooftop_core::trace::report::analyze`; for a directory,
//! `rooftop_tables::run::map_traces` (or `reduce_tables` on a folder of rank tables).

use crate::{find_device, load_catalog, Content, Error, Report, Result, TextOptions};
use pyo3::prelude::*;
use rooftop_core::device::{Catalog, DeviceSpec};
use rooftop_core::trace::comm::reduce::ReduceOptions;
use rooftop_core::trace::gaps::critical_path::{CpOptions, WhatIfSpec};
use rooftop_core::trace::report::{analyze, TraceOptions, TraceReport};
use rooftop_core::trace::run::{device_for, DeviceLookup, RankRun, RankSource};
use rooftop_core::trace::TraceModel;
use rooftop_ingest::kineto::{ReadOptions, TraceError};
use rooftop_report::trace::{self as render, RenderOptions, Section};
use rooftop_report::Format;
use rooftop_tables::run::{map_traces, reduce_tables, workers, MapSettings};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The critical-path and reading options of `rooftop trace`.
#[derive(Debug)]
struct TraceFlags {
    cp_window: Option<String>,
    cp_instance: usize,
    what_if: Vec<WhatIfSpec>,
    threads: usize,
}

impl TraceFlags {
    fn new(
        cp_window: Option<String>,
        cp_instance: usize,
        what_if: &[String],
        threads: usize,
    ) -> Result<TraceFlags> {
        let what_if = what_if
            .iter()
            .map(|s| s.parse().map_err(|e| Error::input(format!("what_if `{s}`: {e}"))))
            .collect::<Result<_>>()?;
        Ok(TraceFlags { cp_window, cp_instance, what_if, threads })
    }
}

/// How a trace is read: the CLI's `Reader`, with its stderr notes kept in `notes`.
#[derive(Debug)]
struct Reader<'a> {
    catalog: &'a Catalog,
    device: Option<&'a DeviceSpec>,
    read: ReadOptions,
    flags: &'a TraceFlags,
    notes: Mutex<Vec<String>>,
}

impl Reader<'_> {
    fn note(&self, text: String) {
        if let Ok(mut n) = self.notes.lock() {
            n.push(text);
        }
    }

    fn take_notes(self) -> Vec<String> {
        self.notes.into_inner().unwrap_or_default()
    }
}

impl RankSource for Reader<'_> {
    fn read(
        &self,
        path: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> std::result::Result<TraceModel, rooftop_core::InputError> {
        Ok(rooftop_ingest::source::read_one(path, &self.read, progress)?)
    }

    fn device(&self, model: &TraceModel) -> Option<&DeviceSpec> {
        if self.device.is_some() {
            return self.device;
        }
        match device_for(self.catalog, model) {
            DeviceLookup::Unnamed => None,
            DeviceLookup::Found { spec, note } => {
                if let Some(why) = note {
                    self.note(format!("device {}: {why}.", spec.id));
                }
                Some(spec)
            }
            DeviceLookup::Unknown(e) => {
                self.note(format!("{e} The report has no roofline numbers; pass device=."));
                None
            }
        }
    }

    fn options(&self, model: &TraceModel) -> TraceOptions {
        let f = self.flags;
        let critical_path = CpOptions {
            annotation: f.cp_window.clone(),
            instance: f.cp_instance,
            what_if: f.what_if.clone(),
        };
        TraceOptions { critical_path, ..TraceOptions::for_model(model) }
    }
}

/// One trace's report (which carries the device its roofline numbers use).
#[derive(Debug)]
pub(crate) struct TraceContent {
    report: TraceReport,
}

fn section(o: &TextOptions) -> Result<Section> {
    o.section.as_deref().map_or(Ok(Section::Summary), |s| {
        s.parse().map_err(|e: String| Error::input(format!("section: {e}")))
    })
}

impl TraceContent {
    pub(crate) fn render(&self, fmt: Format, o: &TextOptions) -> Result<String> {
        let ro = RenderOptions { top: o.top.unwrap_or(10), section: section(o)? };
        Ok(match fmt {
            Format::Html => rooftop_report::html::trace(&self.report),
            Format::Markdown => render::markdown(&self.report, &ro),
            Format::Table => render::table(&self.report, &ro),
            _ => render::json(&self.report),
        })
    }
}

/// Reads and analyses one trace file: `rooftop trace FILE`.
#[pyfunction]
#[pyo3(signature = (path, device=None, *, cp_window=None, cp_instance=0, what_if=Vec::new(),
                    threads=0, device_files=Vec::new()))]
#[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
pub(crate) fn trace(
    py: Python<'_>,
    path: PathBuf,
    device: Option<String>,
    cp_window: Option<String>,
    cp_instance: usize,
    what_if: Vec<String>,
    threads: usize,
    device_files: Vec<PathBuf>,
) -> PyResult<Report> {
    let flags = TraceFlags::new(cp_window, cp_instance, &what_if, threads)?;
    Ok(py.detach(|| trace_file(&path, device.as_deref(), &flags, &device_files))?)
}

fn trace_file(
    path: &Path,
    device: Option<&str>,
    flags: &TraceFlags,
    device_files: &[PathBuf],
) -> Result<Report> {
    if path.is_dir() {
        return Err(Error::input(format!(
            "{} is a directory: rooftop.trace reads one trace file; \
             rooftop.trace_ranks reads a directory of per-rank traces",
            path.display()
        )));
    }
    let catalog = load_catalog(device_files)?;
    let device = device.map(|d| find_device(&catalog, d)).transpose()?;
    let reader = Reader {
        catalog: &catalog,
        device: device.as_ref(),
        read: ReadOptions { threads: flags.threads },
        flags,
        notes: Mutex::new(Vec::new()),
    };
    let model = reader.read(path, &mut |_, _| {}).map_err(|e| Error::Input(e.0))?;
    let options = reader.options(&model);
    if flags.cp_window.is_some() {
        rooftop_core::trace::gaps::critical_path::window(&model, &options.critical_path)
            .map_err(|e| Error::input(format!("cp_window: {e} in {}", path.display())))?;
    }
    let report = analyze(&model, reader.device(&model), &options);
    // A large trace's model is a million small allocations: free them on another thread
    // so that the call returns as soon as the report is ready (the CLI leaves them to
    // the OS at exit, which a long-lived Python process cannot do).
    std::thread::spawn(move || drop(model));
    let notes = reader.take_notes();
    Ok(Report::new(Content::Trace(Box::new(TraceContent { report })), notes))
}

/// A multi-rank run and what its renderers need.
#[derive(Debug)]
pub(crate) struct RanksContent {
    run: RankRun,
    /// Whether the run read traces (so per-rank reports exist), not rank tables.
    from_traces: bool,
}

impl RanksContent {
    pub(crate) fn render(&self, fmt: Format, o: &TextOptions) -> Result<String> {
        let ro = RenderOptions { top: o.top.unwrap_or(10), section: section(o)? };
        Ok(match fmt {
            Format::Html => {
                let named: Vec<(String, TraceReport)> = self
                    .run
                    .ranks
                    .iter()
                    .filter_map(|r| r.report.clone().map(|rep| (r.label(), rep)))
                    .collect();
                rooftop_report::html::trace_ranks(&named, &self.run.cross)
            }
            Format::Table | Format::Markdown => {
                render::ranks_text(&self.run, &ro, fmt == Format::Markdown, self.from_traces)
            }
            _ => render::ranks_json(&self.run),
        })
    }
}

/// The multi-rank flags of `rooftop trace DIR`.
#[derive(Debug)]
struct RankFlags {
    gpus_per_node: Option<u32>,
    intra_link: Option<String>,
    inter_link: Option<String>,
    jobs: Option<u32>,
}

/// Reads a directory of per-rank traces (or of rank-table folders): `rooftop trace DIR`.
#[pyfunction]
#[pyo3(signature = (path, device=None, *, gpus_per_node=None, intra_link=None, inter_link=None,
                    jobs=None, cp_window=None, cp_instance=0, what_if=Vec::new(),
                    device_files=Vec::new()))]
#[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
pub(crate) fn trace_ranks(
    py: Python<'_>,
    path: PathBuf,
    device: Option<String>,
    gpus_per_node: Option<u32>,
    intra_link: Option<String>,
    inter_link: Option<String>,
    jobs: Option<u32>,
    cp_window: Option<String>,
    cp_instance: usize,
    what_if: Vec<String>,
    device_files: Vec<PathBuf>,
) -> PyResult<Report> {
    if gpus_per_node == Some(0) || jobs == Some(0) {
        return Err(Error::input("gpus_per_node and jobs must be at least 1").into());
    }
    let flags = TraceFlags::new(cp_window, cp_instance, &what_if, 0)?;
    let ranks = RankFlags { gpus_per_node, intra_link, inter_link, jobs };
    Ok(py.detach(|| ranks_dir(&path, device.as_deref(), &flags, &ranks, &device_files))?)
}

fn ranks_dir(
    dir: &Path,
    device: Option<&str>,
    flags: &TraceFlags,
    r: &RankFlags,
    device_files: &[PathBuf],
) -> Result<Report> {
    if !dir.is_dir() {
        return Err(Error::input(format!(
            "{} is not a directory: rooftop.trace_ranks reads a directory of per-rank traces; \
             rooftop.trace reads one file",
            dir.display()
        )));
    }
    let catalog = load_catalog(device_files)?;
    let device = device.map(|d| find_device(&catalog, d)).transpose()?;
    let reduce = ReduceOptions::with_links(
        r.gpus_per_node,
        r.intra_link.as_deref(),
        r.inter_link.as_deref(),
    )
    .map_err(|e| Error::Input(e.into()))?;
    let traces = rooftop_ingest::source::list_dir(dir);
    let tables = rooftop_tables::list_rank_dirs(dir).map_err(|e| Error::input(e.to_string()))?;
    let (run, from_traces, notes) = match (traces, tables.is_empty()) {
        (Ok(files), true) => {
            let n = workers(r.jobs, files.len());
            let reader = Reader {
                catalog: &catalog,
                device: device.as_ref(),
                // One thread per file when the files are read in parallel.
                read: ReadOptions { threads: if n > 1 { 1 } else { flags.threads } },
                flags,
                notes: Mutex::new(Vec::new()),
            };
            let settings = MapSettings { workers: n, reduce, keep_reports: true, tables_out: None };
            let run = map_traces(&files, &reader, &settings, &|_| {});
            (run, true, reader.take_notes())
        }
        (Err(TraceError::NoTraces { .. }), false) => {
            let run = reduce_tables(&tables, workers(r.jobs, tables.len()), reduce, &|| {});
            (run, false, Vec::new())
        }
        (Ok(_), false) => {
            return Err(Error::input(format!(
                "{} holds both traces and rank-table folders: pass a directory with one kind",
                dir.display()
            )))
        }
        (Err(e), _) => {
            return Err(Error::input(format!(
                "{e} (nor JAX profiles: `*.xplane.pb`, directly or under plugins/profile/<run>/)"
            )))
        }
    };
    ranks_report(run, from_traces, notes)
}

/// The report of a run; the ranks that could not be read are an error when no rank was
/// read, else a note (the CLI prints the report, then fails).
fn ranks_report(run: RankRun, from_traces: bool, mut notes: Vec<String>) -> Result<Report> {
    if let Some(failure) = run.failure_message() {
        if run.ranks.is_empty() {
            return Err(Error::Input(failure));
        }
        notes.push(failure);
    }
    Ok(Report::new(Content::Ranks(Box::new(RanksContent { run, from_traces })), notes))
}
