//! A whole `rooftop bench` run as a library call: plan the cases, measure the quick
//! ceilings, check and time every case in one [`Workspace`](crate::workspace::Workspace),
//! judge the results against the roofs, re-measure any roof a result beat, and keep the
//! export files up to date after every case.
//!
//! The steps:
//! 1. a [`BenchRequest`] says what to run in the terms of `rooftop bench`'s flags (plain
//!    typed data, [`Default`] = the flags' defaults, parsed from the flags' text by
//!    [`parse_kernels`], [`parse_sizes`] and [`parse_flag`]); [`BenchRequest::settings`]
//!    validates the timing and the sweep before any backend opens;
//! 2. [`BenchPlan::new`] turns it into cases for one backend ([`AnyBackend`](crate::any::AnyBackend)): the suite's
//!    kernels (or those of a spec file) at every size, with every implementation the
//!    backend has, built-in baselines included unless told otherwise;
//! 3. [`run`] runs the plan and hands back a [`BenchOutcome`]: the [`BenchReport`](crate::export::BenchReport) (the
//!    schema of `docs/bench-schema.md`), the `--compare` pairs, and the number of failed
//!    checks. It reports progress through a callback ([`JobEvent`]), stops at the next
//!    sample when `stop` is set (Ctrl-C), and rewrites every [`Exports`] file after each
//!    case (renderers are the caller's: this crate never formats a report).
//!
//! Libraries never print: the caller owns the terminal, the progress bars and the exit
//! code.
//!
//! ```
//! use rooftop_bench::any::AnyBackend;
//! use rooftop_bench::harness::TimingOptions;
//! use rooftop_bench::job::{self, BenchPlan, BenchRequest, Exports};
//! use rooftop_bench::mock::{MockBackend, MockConfig};
//! use rooftop_bench::suite::KernelId;
//! use std::sync::atomic::AtomicBool;
//!
//! // Triad at 64 Ki elements on the simulated backend, with a short timing budget.
//! let request = BenchRequest {
//!     kernels: vec![KernelId::Triad],
//!     sizes: Some(job::parse_sizes(&["64K".into()], "--sizes")?),
//!     no_ceilings: true,
//!     timing: TimingOptions { warmup_runs: 1, warmup_time_s: 0.0, min_runs: 3, min_time_s: 0.0, ..TimingOptions::default() },
//!     ..BenchRequest::default()
//! };
//! let mut backend = AnyBackend::Mock(MockBackend::new(MockConfig::default()));
//! let settings = request.settings()?;
//! let plan = BenchPlan::new(&request, settings, &mut backend)?;
//! assert_eq!(plan.cases().len(), 1);
//!
//! let mut events = 0;
//! let outcome = job::run(&plan, &mut backend, &Exports::default(), &AtomicBool::new(false),
//!     std::time::Instant::now(), &mut |_| events += 1)?;
//! assert_eq!(outcome.failed_checks, 0);
//! let result = &outcome.report.results[0];
//! assert_eq!((result.kernel.as_str(), result.config.label.as_str()), ("triad", "n=65536 fp32"));
//! assert!(result.achieved_gbs.is_some_and(|gbs| gbs > 0.0));
//! assert!(events > 0);
//! # Ok::<(), rooftop_bench::job::JobError>(())
//! ```

mod exports;
mod plan;
mod run;

pub use exports::{write_atomic, Exports, Renderer};
pub use plan::{
    parse_flag, parse_kernels, parse_size, parse_sizes, parse_sweep, BenchPlan, BenchRequest,
    BenchSettings, PlannedCase,
};
pub use run::{compare_results, run, BenchOutcome, JobEvent, Stage};

use crate::error::BenchError;
use std::path::PathBuf;

/// Why a job did not run or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The request cannot run as given: an unknown kernel, a bad size, an option that
    /// does not apply (the user's to fix; `rooftop` exits with 2).
    #[error("{0}")]
    Input(String),
    /// Running failed (a backend error, a result the export could not judge).
    #[error("{0}")]
    Runtime(String),
    /// An export file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl JobError {
    /// Whether the error is the input's (as opposed to the machine's).
    pub fn is_input(&self) -> bool {
        matches!(self, JobError::Input(_))
    }
}

impl From<BenchError> for JobError {
    /// A kernel's configuration or a size too large is the input's; the rest is the run's.
    fn from(e: BenchError) -> JobError {
        match e {
            BenchError::Suite(_) | BenchError::TooLarge { .. } => JobError::Input(e.to_string()),
            other => JobError::Runtime(other.to_string()),
        }
    }
}
