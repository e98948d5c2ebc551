//! `rooftop._rooftop`: the native half of the `rooftop` Python package (PyO3).
//!
//! Role: call the library API the `rooftop` CLI calls (`rooftop_ingest::source`,
//! `rooftop_core::trace::report`, `rooftop_core::counters`, `rooftop_core::analysis`,
//! `rooftop_core::model`, `rooftop_bench::job`) and hand Python a [`Report`] that renders
//! itself with `rooftop_report`'s renderers, the CLI's `--format json|html|table|md`.
//!
//! Invariants:
//! - Python reads every number from the JSON the CLI's `--format json` writes (the same
//!   renderer on the same report), so a DataFrame holds exactly the CLI's numbers; the
//!   DataFrames are built on the Python side (`python/rooftop/_frames.py`).
//! - Reading, analysing and rendering run with the GIL released (`Python::detach`), so
//!   other Python threads go on while a large trace is parsed.
//! - Errors are the CLI's sentences: bad input raises `rooftop.InputError` (the CLI's
//!   exit code 2), anything else `rooftop.RooftopError` (exit code 1). Where the CLI's
//!   message names a flag (`--cp-window`), the Python one names the keyword argument.
//! - What the CLI prints on stderr as a note or warning (the device a trace names is
//!   unknown, ...) is kept in the report's `notes`; Python turns them into warnings.

mod analyze;
mod tools;
mod trace;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use rooftop_core::device::{Catalog, DeviceSpec};
use std::path::PathBuf;

create_exception!(
    _rooftop,
    RooftopError,
    PyException,
    "An error of rooftop: the sentence the `rooftop` command prints after `rooftop: error:`."
);
create_exception!(
    _rooftop,
    InputError,
    RooftopError,
    "Bad input (an unreadable or malformed file, an unknown device, an invalid shape): \
     the errors for which the `rooftop` command exits with 2."
);

/// An error that ends a call: bad input (the CLI's exit code 2) or anything else (1).
#[derive(Debug)]
pub(crate) enum Error {
    Input(String),
    Runtime(String),
}

impl Error {
    pub(crate) fn input(msg: impl Into<String>) -> Error {
        Error::Input(msg.into())
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            Error::Input(m) => InputError::new_err(m),
            Error::Runtime(m) => RooftopError::new_err(m),
        }
    }
}

impl From<rooftop_report::RenderError> for Error {
    fn from(e: rooftop_report::RenderError) -> Error {
        Error::Runtime(e.to_string())
    }
}

pub(crate) type Result<T> = std::result::Result<T, Error>;

/// The embedded catalog plus the user's device files, in order (the CLI's
/// `--device-file`).
pub(crate) fn load_catalog(device_files: &[PathBuf]) -> Result<Catalog> {
    let mut catalog = Catalog::builtin().clone();
    for path in device_files {
        let text = rooftop_ingest::compressed::read_text(path)
            .map_err(|e| Error::input(format!("cannot read device file {e}")))?;
        catalog
            .merge_file(&text, &path.display().to_string())
            .map_err(|e| Error::input(e.to_string()))?;
    }
    Ok(catalog)
}

/// Looks a device up, turning a miss into one sentence with suggestions.
pub(crate) fn find_device(catalog: &Catalog, name: &str) -> Result<DeviceSpec> {
    catalog.lookup(name).cloned().map_err(|e| Error::input(e.to_string()))
}

/// What a call produced, kept in Rust so that it can render itself in any format.
#[derive(Debug)]
pub(crate) enum Content {
    Trace(Box<trace::TraceContent>),
    Ranks(Box<trace::RanksContent>),
    Counters(Box<tools::CountersContent>),
    Analysis(Box<tools::AnalysisContent>),
    Model(Box<tools::ModelContent>),
    Bench(Box<tools::BenchContent>),
    Devices(tools::DevicesContent),
}

/// One analysis result: renders itself as the CLI's `--format json|html|table|md`.
#[pyclass(frozen, module = "rooftop._rooftop")]
#[derive(Debug)]
pub struct Report {
    content: Content,
    notes: Vec<String>,
}

impl Report {
    pub(crate) fn new(content: Content, notes: Vec<String>) -> Report {
        Report { content, notes }
    }
}

/// Options of the text renderers, as the CLI's flags give them.
#[derive(Debug, Clone)]
pub(crate) struct TextOptions {
    /// Rows per table (`--top`); `None`: the command's default.
    pub top: Option<usize>,
    /// `rooftop trace --section`; `None`: the summary.
    pub section: Option<String>,
    /// `rooftop counters --dispatches`.
    pub dispatches: bool,
}

#[pymethods]
impl Report {
    /// The report as the CLI writes it with `format` (`json`, `html`, `table` or `md`);
    /// `top`, `section` and `dispatches` are the CLI's flags of the same names.
    #[pyo3(signature = (format, top=None, section=None, dispatches=false))]
    fn render(
        &self,
        py: Python<'_>,
        format: &str,
        top: Option<usize>,
        section: Option<String>,
        dispatches: bool,
    ) -> PyResult<String> {
        let fmt = match format {
            "json" => rooftop_report::Format::Json,
            "html" => rooftop_report::Format::Html,
            "table" => rooftop_report::Format::Table,
            "md" => rooftop_report::Format::Markdown,
            other => {
                return Err(Error::input(format!(
                    "unknown format `{other}`: expected json, html, table or md"
                ))
                .into())
            }
        };
        let opts = TextOptions { top, section, dispatches };
        Ok(py.detach(|| self.render_as(fmt, &opts))?)
    }

    /// What the CLI prints on stderr as a note or a warning, in order.
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    /// Which call made this report: trace, trace_ranks, counters, analyze, model, bench
    /// or devices.
    #[getter]
    fn kind(&self) -> &'static str {
        match &self.content {
            Content::Trace(_) => "trace",
            Content::Ranks(_) => "trace_ranks",
            Content::Counters(_) => "counters",
            Content::Analysis(_) => "analyze",
            Content::Model(_) => "model",
            Content::Bench(_) => "bench",
            Content::Devices(_) => "devices",
        }
    }

    fn __repr__(&self) -> String {
        format!("<rooftop._rooftop.Report kind={}>", self.kind())
    }
}

impl Report {
    fn render_as(&self, fmt: rooftop_report::Format, o: &TextOptions) -> Result<String> {
        match &self.content {
            Content::Trace(c) => c.render(fmt, o),
            Content::Ranks(c) => c.render(fmt, o),
            Content::Counters(c) => Ok(c.render(fmt, o)),
            Content::Analysis(c) => c.render(fmt),
            Content::Model(c) => c.render(fmt),
            Content::Bench(c) => Ok(c.render(fmt)),
            Content::Devices(c) => c.render(fmt),
        }
    }
}

/// The native module; the Python package `rooftop` wraps it.
#[pymodule]
fn _rooftop(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RooftopError", py.get_type::<RooftopError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Report>()?;
    m.add_function(wrap_pyfunction!(trace::trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(tools::counters, m)?)?;
    m.add_function(wrap_pyfunction!(analyze::analyze, m)?)?;
    m.add_function(wrap_pyfunction!(tools::model, m)?)?;
    m.add_function(wrap_pyfunction!(tools::devices, m)?)?;
    m.add_function(wrap_pyfunction!(tools::bench, m)?)?;
    Ok(())
}
