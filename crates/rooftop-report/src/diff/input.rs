//! The exports `rooftop diff` reads, as typed records.
//!
//! Bench and analyze exports are read whole into their schema records
//! (`rooftop_core::schema::bench::BenchReport`, `rooftop_core::schema::analysis::AnalysisRecord`):
//! every field the schema writes must be there with its type. Trace and counters reports
//! cannot be read back whole (their records hold the engine's `&'static str` ids and
//! parameter names), so this module declares the part of them a comparison uses, with
//! the same names and types as the records that write them; the rest is ignored.
//!
//! As in the schema records, a field that is always written but may be `null` is read
//! with [`nullable`]: `null` is `None`, absence is an error naming the field.

use rooftop_core::schema::nullable;
use rooftop_core::stats::Stats;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// `rooftop trace --format json` (`rooftop_core::trace::report::TraceReport`): the
/// window and the two tables a comparison matches rows of.
#[derive(Debug, Clone, Deserialize)]
pub struct TraceExport {
    pub window: TraceWindow,
    /// Per-category roofline tables: table name → rows.
    pub categories: BTreeMap<String, Vec<OpRowIn>>,
    /// The kernel summary.
    pub kernels: Vec<KernelRowIn>,
}

/// The trace window.
#[derive(Debug, Clone, Deserialize)]
pub struct TraceWindow {
    #[serde(deserialize_with = "nullable")]
    pub duration_ms: Option<f64>,
}

/// One row of a roofline table (`rooftop_core::trace::tables::OpRow`).
#[derive(Debug, Clone, Deserialize)]
pub struct OpRowIn {
    pub name: String,
    /// The op's model parameters by name (numbers, shapes, dtype lists).
    pub params: BTreeMap<String, Value>,
    pub count: u64,
    pub kernel_time_us: KernelTimeIn,
    #[serde(deserialize_with = "nullable")]
    pub roofline_attainment_pct: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub achieved_tflops: Option<Stats>,
    #[serde(deserialize_with = "nullable")]
    pub achieved_tbs: Option<Stats>,
}

/// Kernel time per call of a row, µs (`rooftop_core::trace::tables::TimeStats`).
#[derive(Debug, Clone, Deserialize)]
pub struct KernelTimeIn {
    pub mean: f64,
    /// Sample standard deviation; `null` for one call.
    #[serde(deserialize_with = "nullable")]
    pub std: Option<f64>,
}

/// One row of the kernel summary (`rooftop_core::trace::summary::KernelRow`).
#[derive(Debug, Clone, Deserialize)]
pub struct KernelRowIn {
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub parent_op: Option<String>,
    pub stream: i64,
    pub count: u64,
    pub mean_us: f64,
    pub std_us: f64,
}

/// `rooftop trace DIR --format json`: each rank's report and the cross-rank table.
#[derive(Debug, Clone, Deserialize)]
pub struct RanksExport {
    pub ranks: Vec<RankIn>,
    pub cross_rank: IgnoredAny,
}

/// One rank of a multi-rank export.
#[derive(Debug, Clone, Deserialize)]
pub struct RankIn {
    /// The trace file.
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub rank: Option<i64>,
    pub report: TraceExport,
}

/// `rooftop counters --format json`: kernels (aggregated by name) and every dispatch.
#[derive(Debug, Clone, Deserialize)]
pub struct CountersExport {
    pub source: CountersSource,
    pub kernels: Vec<CounterKernelIn>,
    pub dispatches: Vec<CounterDispatchIn>,
}

/// Where a counters report came from.
#[derive(Debug, Clone, Deserialize)]
pub struct CountersSource {
    pub format_id: IgnoredAny,
}

/// A kernel of a counters report: the mean per dispatch of its name.
#[derive(Debug, Clone, Deserialize)]
pub struct CounterKernelIn {
    pub name: String,
    pub count: u64,
    #[serde(deserialize_with = "nullable")]
    pub duration_ns: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub achieved_gbs: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub achieved_tflops: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub pct_of_roof: Option<f64>,
    /// One launch shape for all its dispatches; `null` when they differ or are unknown.
    #[serde(deserialize_with = "nullable")]
    pub grid: Option<[u64; 3]>,
}

/// One dispatch of a counters report.
#[derive(Debug, Clone, Deserialize)]
pub struct CounterDispatchIn {
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub duration_ns: Option<f64>,
}
