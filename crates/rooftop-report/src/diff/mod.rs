//! `rooftop diff`: compare two exports of the same kind — bench (`docs/bench-schema.md`),
//! trace (one trace or a directory of ranks, `docs/json-schema.md`) or analyze JSON —
//! row by row, and say what regressed, what improved, what was added or removed, and
//! the total.
//!
//! Rows are matched by their key (bench: kernel, configuration, implementation and
//! launch; trace: table, op name and model parameters, or kernel name, launching op and
//! stream; analyze: op, shape, kernel and device); rows left over on both sides are then
//! matched by a normalised key, where the names lose their template arguments, their
//! parameter lists and the digits in them (`gemm_64x64<float>` and `gemm_128x64<half>`
//! match), when that pairs exactly one row with one row.
//!
//! Noise: a change is a regression (or improvement) only when it is larger than the
//! minimum change *and* the samples say it is real: on raw samples (bench `times_s`)
//! the two-sided Mann-Whitney U test, on summary statistics (trace rows: mean, sample
//! std, calls) Welch's t-test, at significance `alpha` (`rooftop_core::stats`). Rows without a
//! spread (one call, analyze) are judged on the minimum change alone. The test is on the
//! times; attainment and rates are the same work over the same time, so it applies to
//! them unchanged when the work model did not change.
//!
//! The numbers compared are the exports' own, in one unit per metric whatever the
//! export's (µs, %, TFLOP/s, GB/s: [`Metric::unit_suffix`]), converted by moving the
//! decimal point and totalled on the decimal digits ([`decimal`]), so that a value that
//! was read is written back as it was read; this module computes only the change, the
//! p-value and the totals (sums of the matched rows' times, or the trace window).
//!
//! Exports are read as typed records ([`input`]; bench and analyze exports whole, as
//! `rooftop_core::schema` defines them): a field that is missing or of the wrong type
//! is an error naming the file and the field, never a 0 or a passed check.

pub mod decimal;
pub mod input;
pub mod render;

use input::{CountersExport, RanksExport, TraceExport};
use rooftop_core::schema::analysis::AnalysisRecord;
use rooftop_core::schema::bench::BenchReport;
use rooftop_core::stats::{self, Moments};
use serde::de::DeserializeOwned;
use serde::{Deserialize as _, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// An export that cannot be compared, with where the problem is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiffError {
    #[error("{origin}: not JSON: {message} (line {line}, column {column})")]
    NotJson { origin: String, line: usize, column: usize, message: String },
    #[error(
        "{origin}: not a rooftop export, nor a trace: expected the JSON of `rooftop bench` \
         (--export-json or --format json), `rooftop trace --format json`, \
         `rooftop analyze --format json` or `rooftop counters --format json`, or a trace \
         `rooftop trace` reads (a PyTorch profiler JSON with `traceEvents`, plain or gzip; \
         a JAX `*.xplane.pb`)"
    )]
    Unknown { origin: String },
    /// A field of the export is missing or has the wrong type.
    #[error("{origin}: field `{path}` {problem}")]
    Field { origin: String, path: String, problem: String },
    #[error(
        "{base} is {} {base_kind} export but {new} is {} {new_kind} export: compare exports \
         of one kind",
        rooftop_core::diagnose::article(base_kind),
        rooftop_core::diagnose::article(new_kind)
    )]
    KindMismatch { base: String, base_kind: &'static str, new: String, new_kind: &'static str },
    /// A trace (a `traceEvents` array) where an export was expected: analyse it first
    /// (`rooftop diff` does, for a trace it recognises by its first bytes).
    #[error(
        "{origin}: a trace, not an export: analyse it with `rooftop trace {origin} --format \
         json` and compare that"
    )]
    Trace { origin: String },
}

/// What kind of export a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Bench,
    Trace,
    TraceRanks,
    Analyze,
    /// `rooftop counters --format json`.
    Counters,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Bench => "bench",
            Kind::Trace => "trace",
            Kind::TraceRanks => "per-rank trace",
            Kind::Analyze => "analyze",
            Kind::Counters => "counters",
        }
    }
}

/// The quantity compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Time per run or call (bench: median; trace: mean per call): lower is better.
    Time,
    /// Roofline attainment, %: higher is better.
    Attainment,
    /// Achieved FLOP/s: higher is better.
    Flops,
    /// Achieved bytes/s: higher is better.
    Bandwidth,
}

impl Metric {
    pub const NAMES: [&'static str; 4] = ["time", "attainment", "flops", "bandwidth"];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Time => "time",
            Metric::Attainment => "attainment",
            Metric::Flops => "flops",
            Metric::Bandwidth => "bandwidth",
        }
    }

    pub fn higher_is_better(self) -> bool {
        !matches!(self, Metric::Time)
    }

    /// The unit of this metric's values, as the suffix of the keys that hold them
    /// (`base_us`, `new_us`): `us` (µs), `pct` (percent), `tflops` (1e12 FLOP/s), `gbs`
    /// (1e9 B/s), the suffixes of `docs/json-schema.md`.
    pub fn unit_suffix(self) -> &'static str {
        match self {
            Metric::Time => "us",
            Metric::Attainment => "pct",
            Metric::Flops => "tflops",
            Metric::Bandwidth => "gbs",
        }
    }

    /// Formats a value of this metric (µs, %, TFLOP/s, GB/s) with an SI prefix.
    pub fn show(self, v: f64) -> String {
        use rooftop_core::units::{pct, si, us};
        match self {
            Metric::Time => us(v),
            Metric::Attainment => pct(v),
            Metric::Flops => si(v * 1e12, "FLOP/s"),
            Metric::Bandwidth => si(v * 1e9, "B/s"),
        }
    }
}

impl std::str::FromStr for Metric {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "time" => Ok(Metric::Time),
            "attainment" => Ok(Metric::Attainment),
            "flops" | "tflops" | "gflops" => Ok(Metric::Flops),
            "bandwidth" | "gbs" | "tbs" => Ok(Metric::Bandwidth),
            _ => Err(format!("unknown metric `{s}`: expected one of {}", Metric::NAMES.join(", "))),
        }
    }
}

/// The spread of a row's time, for the noise test (which is the same in any unit).
#[derive(Debug, Clone, PartialEq)]
pub enum Spread {
    /// Raw samples, µs.
    Samples(Vec<f64>),
    /// Mean, sample std (µs), count.
    Summary(Moments),
    None,
}

/// One comparable row of an export.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// `result`, `op GEMM`, `kernel`, `analysis` (prefixed by the rank for ranks).
    pub section: String,
    pub name: String,
    pub shape: String,
    pub key: String,
    pub norm_key: String,
    /// µs per run / call.
    pub time_us: Option<f64>,
    pub attainment_pct: Option<f64>,
    /// TFLOP/s (1e12 FLOP/s).
    pub achieved_tflops: Option<f64>,
    /// GB/s (1e9 B/s).
    pub achieved_gbs: Option<f64>,
    pub spread: Spread,
}

impl Item {
    fn value(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Time => self.time_us,
            Metric::Attainment => self.attainment_pct,
            Metric::Flops => self.achieved_tflops,
            Metric::Bandwidth => self.achieved_gbs,
        }
        .filter(|v| v.is_finite())
    }
}

/// A loaded export.
#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    pub kind: Kind,
    pub origin: String,
    pub items: Vec<Item>,
    /// The trace window (µs): the end-to-end time of the trace (for ranks, the
    /// longest). Bench and analyze totals are sums over the matched rows instead.
    pub window_us: Option<f64>,
}

/// How `rooftop diff` judges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub metric: Metric,
    /// Significance level of the noise test.
    pub alpha: f64,
    /// Changes smaller than this (percent) are unchanged whatever the test says.
    pub min_change_pct: f64,
    /// The CI gate: regressions larger than this (percent) fail.
    pub fail_above_pct: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Options { metric: Metric::Time, alpha: 0.05, min_change_pct: 1.0, fail_above_pct: None }
    }
}

/// What happened to a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Regression,
    Improvement,
    /// Below the minimum change, or not significant.
    Unchanged,
    Added,
    Removed,
    /// The metric is missing on a side (no roofline numbers, a failed check).
    NotComparable,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Regression => "regression",
            Status::Improvement => "improvement",
            Status::Unchanged => "unchanged",
            Status::Added => "added",
            Status::Removed => "removed",
            Status::NotComparable => "not comparable",
        }
    }
}

/// The noise test applied to a row.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Test {
    /// `mann-whitney-u` or `welch-t`.
    pub name: &'static str,
    pub p_value: f64,
}

/// One row of the comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct RowDiff {
    pub section: String,
    pub name: String,
    pub shape: String,
    /// `exact`, `normalised` (names matched without template arguments and digits), or
    /// empty for added and removed rows.
    pub matched_by: &'static str,
    /// The base row's name when matched by normalised name and it differs.
    pub base_name: Option<String>,
    /// The metric's value in the base export, in the metric's unit
    /// ([`Metric::unit_suffix`]); JSON and CSV name it `base_<unit>`.
    pub base: Option<f64>,
    /// The metric's value in the new export (`new_<unit>`).
    pub new: Option<f64>,
    pub change_pct: Option<f64>,
    pub test: Option<Test>,
    pub status: Status,
    /// A regression above `--fail-above`: fails the gate.
    pub fails_gate: bool,
}

/// The comparison. Its JSON (`render::json`) names the rows' values after the metric's
/// unit, so it is written by the renderer, not derived here.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub schema_version: u32,
    pub kind: Kind,
    pub base: String,
    pub new: String,
    pub metric: Metric,
    pub alpha: f64,
    pub min_change_pct: f64,
    pub fail_above_pct: Option<f64>,
    /// Sentence stating the noise test used.
    pub test: String,
    pub rows: Vec<RowDiff>,
    /// Total time (metric `time` only): the trace window, or the sum over matched rows.
    pub total: Option<RowDiff>,
}

impl Diff {
    /// Rows (and the total) that fail the `--fail-above` gate.
    pub fn failing(&self) -> Vec<&RowDiff> {
        self.rows.iter().chain(self.total.iter()).filter(|r| r.fails_gate).collect()
    }

    pub fn count(&self, s: Status) -> usize {
        self.rows.iter().filter(|r| r.status == s).count()
    }
}

/// Version of the `rooftop diff --format json` output: 2 since the rows' `base` and
/// `new` became `base_<unit>` and `new_<unit>` (µs for times, which were seconds).
pub const SCHEMA_VERSION: u32 = 2;

// ---------------------------------------------------------------------------------
// Loading.

/// Reads `text` as a `T`; a missing or mistyped field is a [`DiffError::Field`] naming
/// it (`results[3].check.passed`), the first in the file's order.
fn typed<T: DeserializeOwned>(text: &str, origin: &str) -> Result<T, DiffError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let mut path = e.path().to_string();
        let inner = e.into_inner();
        let at = format!(" (line {}, column {})", inner.line(), inner.column());
        let message = inner.to_string();
        let message = message.split(" at line").next().unwrap_or_default();
        // serde says "missing field `x`" at the record holding it: name the field itself.
        let problem =
            match message.strip_prefix("missing field `").and_then(|r| r.strip_suffix('`')) {
                Some(name) => {
                    path = if path == "." { name.to_string() } else { format!("{path}.{name}") };
                    format!("is missing{at}")
                }
                None => format!("is not valid: {message}{at}"),
            };
        DiffError::Field { origin: origin.to_string(), path, problem }
    })
}

/// Which keys a JSON object has, for telling the kinds of export apart without reading
/// them (values are skipped, not kept).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct Probe {
    #[serde(deserialize_with = "present")]
    results: bool,
    #[serde(deserialize_with = "present")]
    backend: bool,
    #[serde(deserialize_with = "present")]
    categories: bool,
    #[serde(deserialize_with = "present")]
    timeline: bool,
    #[serde(deserialize_with = "present")]
    ranks: bool,
    #[serde(deserialize_with = "present")]
    cross_rank: bool,
    source: Option<Value>,
    #[serde(deserialize_with = "present")]
    kernels: bool,
    #[serde(deserialize_with = "present")]
    dispatches: bool,
    #[serde(deserialize_with = "present")]
    flops_formula: bool,
    #[serde(deserialize_with = "present")]
    op: bool,
    #[serde(deserialize_with = "present")]
    bound: bool,
    /// A Kineto trace's events: the file is a trace, not an export.
    #[serde(rename = "traceEvents", deserialize_with = "present")]
    trace_events: bool,
}

/// A key that is there, whatever its value.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

impl Probe {
    fn is_analysis(&self) -> bool {
        self.flops_formula && self.op && self.bound
    }
}

/// A name without template arguments, parameter lists, a `void ` prefix or digits, for
/// matching kernels whose template instantiation changed.
pub fn normalise(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let (mut angle, mut paren) = (0usize, 0usize);
    for c in name.chars() {
        match c {
            '<' => angle += 1,
            '>' if angle > 0 => angle -= 1,
            '(' if angle == 0 => paren += 1,
            ')' if paren > 0 => paren -= 1,
            _ if angle == 0 && paren == 0 => out.push(c),
            _ => {}
        }
    }
    let trimmed = out.trim();
    let trimmed = trimmed.strip_prefix("void ").unwrap_or(trimmed);
    let mut norm = String::with_capacity(trimmed.len());
    let mut in_digits = false;
    for c in trimmed.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                norm.push('#');
            }
            in_digits = true;
        } else {
            in_digits = false;
            norm.push(c);
        }
    }
    norm
}

/// `M=141 N=512 dtypes=[bf16,bf16]`: a trace row's parameters as text, in name order,
/// strides left out when `with_strides` is false.
fn params_text(params: &BTreeMap<String, Value>, with_strides: bool) -> String {
    params
        .iter()
        .filter(|(k, v)| (with_strides || !k.starts_with("stride")) && !v.is_null())
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => s.replace("c10::", ""),
                other => other.to_string().replace("c10::", "").replace('"', ""),
            };
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn bench_items(report: &BenchReport) -> Vec<Item> {
    let mut out = Vec::with_capacity(report.results.len());
    for r in &report.results {
        let (kernel, label) = (&r.kernel, &r.config.label);
        let (imp, launch) = (&r.implementation.id, &r.config.launch_label);
        let passed = r.check.passed;
        let mut shape = label.clone();
        if !imp.is_empty() {
            let _ = write!(shape, " [{imp}]");
        }
        if !launch.is_empty() && launch != "default" {
            let _ = write!(shape, " {launch}");
        }
        out.push(Item {
            section: "result".to_string(),
            key: format!("{kernel}|{label}|{imp}|{launch}"),
            norm_key: format!("{}|{label}|{imp}|{launch}", normalise(kernel)),
            name: kernel.clone(),
            shape,
            time_us: if passed { r.median_s.map(|s| decimal::shift(s, 6)) } else { None },
            attainment_pct: r.attainment_pct,
            achieved_tflops: r.achieved_gflops.map(|g| decimal::shift(g, -3)),
            achieved_gbs: r.achieved_gbs,
            // Samples only feed the noise test, which no unit changes.
            spread: if passed && r.times_s.len() >= 2 {
                Spread::Samples(r.times_s.iter().map(|s| s * 1e6).collect())
            } else {
                Spread::None
            },
        });
    }
    out
}

/// The spread of a row with per-call mean and sample std (µs) over `count` calls.
fn summary_spread(mean: Option<f64>, std: Option<f64>, count: u64) -> Spread {
    match (mean, std) {
        (Some(m), Some(s)) if count >= 2 => {
            Spread::Summary(Moments { mean: m, std: s, n: count as f64 })
        }
        _ => Spread::None,
    }
}

fn trace_items(t: &TraceExport, prefix: &str) -> Vec<Item> {
    let mut out = Vec::new();
    for (table, rows) in &t.categories {
        for row in rows {
            let shape = params_text(&row.params, false);
            let full = params_text(&row.params, true);
            let mean = Some(row.kernel_time_us.mean);
            let std = row.kernel_time_us.std;
            out.push(Item {
                section: format!("{prefix}op {table}"),
                key: format!("{prefix}{table}|{}|{full}", row.name),
                norm_key: format!("{prefix}{table}|{}|{shape}", normalise(&row.name)),
                name: row.name.clone(),
                shape,
                time_us: mean,
                attainment_pct: row.roofline_attainment_pct,
                achieved_tflops: row.achieved_tflops.as_ref().map(|s| s.mean),
                achieved_gbs: row.achieved_tbs.as_ref().map(|s| decimal::shift(s.mean, 3)),
                spread: summary_spread(mean, std, row.count),
            });
        }
    }
    for k in &t.kernels {
        let parent = k.parent_op.as_deref().unwrap_or_default();
        let stream = k.stream;
        let mean = Some(k.mean_us);
        out.push(Item {
            section: format!("{prefix}kernel"),
            key: format!("{prefix}kernel|{}|{parent}|{stream}", k.name),
            norm_key: format!("{prefix}kernel|{}|{parent}", normalise(&k.name)),
            name: k.name.clone(),
            shape: if parent.is_empty() {
                format!("stream {stream}")
            } else {
                format!("← {parent} (stream {stream})")
            },
            time_us: mean,
            attainment_pct: None,
            achieved_tflops: None,
            achieved_gbs: None,
            spread: summary_spread(mean, Some(k.std_us), k.count),
        });
    }
    out
}

fn analyze_item(r: &AnalysisRecord) -> Item {
    let kernel = r.kernel_name.clone().unwrap_or_default();
    let (op, shape, device) = (&r.op, &r.shape, &r.device_id);
    let name = if kernel.is_empty() { op.clone() } else { kernel.clone() };
    Item {
        section: "analysis".to_string(),
        key: format!("{op}|{shape}|{kernel}|{device}"),
        norm_key: format!("{op}|{shape}|{}|{device}", normalise(&kernel)),
        name,
        shape: format!("{shape} on {device}"),
        time_us: r.time_us,
        attainment_pct: r.roofline_attainment_pct,
        achieved_tflops: r.achieved_tflops,
        achieved_gbs: r.achieved_gbs,
        spread: Spread::None,
    }
}

/// Kernels of a counters report: the mean duration per dispatch, with every dispatch's
/// duration as the samples of the noise test.
fn counters_items(c: &CountersExport) -> Vec<Item> {
    let mut samples: std::collections::HashMap<&str, Vec<f64>> = std::collections::HashMap::new();
    for d in &c.dispatches {
        if let Some(t) = d.duration_ns.filter(|t| t.is_finite()) {
            // Samples only feed the noise test, which no unit changes.
            samples.entry(d.name.as_str()).or_default().push(t * 1e-3);
        }
    }
    let mut out = Vec::with_capacity(c.kernels.len());
    for k in &c.kernels {
        let times = samples.remove(k.name.as_str()).unwrap_or_default();
        out.push(Item {
            section: "kernel".to_string(),
            key: k.name.clone(),
            norm_key: normalise(&k.name),
            shape: format!("{} dispatches", k.count),
            name: k.name.clone(),
            time_us: k.duration_ns.map(|t| decimal::shift(t, -3)),
            attainment_pct: k.pct_of_roof,
            achieved_tflops: k.achieved_tflops,
            achieved_gbs: k.achieved_gbs,
            // Dispatches of one name with different launch shapes do different work: their
            // durations are not samples of one distribution, and the change alone judges.
            spread: if times.len() >= 2 && k.grid.is_some() {
                Spread::Samples(times)
            } else {
                Spread::None
            },
        });
    }
    out
}

/// Reads an export (the JSON text of a file named `origin`).
pub fn load(text: &str, origin: &str) -> Result<Export, DiffError> {
    let not_json = |e: serde_json::Error| DiffError::NotJson {
        origin: origin.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string().split(" at line").next().unwrap_or_default().to_string(),
    };
    let o = origin.to_string();
    let unknown = || DiffError::Unknown { origin: o.clone() };
    let export = |kind, items, window_us| Export { kind, origin: o.clone(), items, window_us };
    // A list of analyses, or one object of any kind.
    if text.trim_start().starts_with('[') {
        let probes: Vec<Probe> = match serde_json::from_str(text) {
            Ok(p) => p,
            Err(e) if e.is_data() => return Err(unknown()),
            Err(e) => return Err(not_json(e)),
        };
        if probes.is_empty() || !probes.iter().all(Probe::is_analysis) {
            return Err(unknown());
        }
        let list: Vec<AnalysisRecord> = typed(text, origin)?;
        return Ok(export(Kind::Analyze, list.iter().map(analyze_item).collect(), None));
    }
    let p: Probe = match serde_json::from_str(text) {
        Ok(p) => p,
        Err(e) if e.is_data() => return Err(unknown()),
        Err(e) => return Err(not_json(e)),
    };
    if p.trace_events {
        return Err(DiffError::Trace { origin: o.clone() });
    }
    if p.results && p.backend {
        let report: BenchReport = typed(text, origin)?;
        return Ok(export(Kind::Bench, bench_items(&report), None));
    }
    if p.categories && p.timeline {
        let t: TraceExport = typed(text, origin)?;
        let window_us =
            t.window.duration_ms.filter(|w| w.is_finite()).map(|ms| decimal::shift(ms, 3));
        return Ok(export(Kind::Trace, trace_items(&t, ""), window_us));
    }
    if p.ranks && p.cross_rank {
        let r: RanksExport = typed(text, origin)?;
        let mut items = Vec::new();
        let mut window: Option<f64> = None;
        for rank in &r.ranks {
            let label = match rank.rank {
                Some(n) => format!("rank {n}"),
                None => rank.name.clone(),
            };
            items.extend(trace_items(&rank.report, &format!("{label} · ")));
            if let Some(w) = rank.report.window.duration_ms.filter(|w| w.is_finite()) {
                let w = decimal::shift(w, 3);
                window = Some(window.map_or(w, |x: f64| x.max(w)));
            }
        }
        return Ok(export(Kind::TraceRanks, items, window));
    }
    if p.source.as_ref().is_some_and(|s| s.get("format_id").is_some()) && p.kernels && p.dispatches
    {
        let c: CountersExport = typed(text, origin)?;
        return Ok(export(Kind::Counters, counters_items(&c), None));
    }
    if p.is_analysis() {
        let a: AnalysisRecord = typed(text, origin)?;
        return Ok(export(Kind::Analyze, vec![analyze_item(&a)], None));
    }
    Err(unknown())
}

// ---------------------------------------------------------------------------------
// Comparing.

/// The noise test of two rows' spreads, when both have one.
fn noise_test(a: &Spread, b: &Spread) -> Option<Test> {
    let summary = |s: &Spread| match s {
        Spread::Samples(v) => Moments::of(v),
        Spread::Summary(s) => Some(*s),
        Spread::None => None,
    };
    match (a, b) {
        (Spread::Samples(x), Spread::Samples(y)) if x.len() >= 2 && y.len() >= 2 => {
            Some(Test { name: "mann-whitney-u", p_value: stats::mann_whitney_u(x, y) })
        }
        _ => {
            let (sa, sb) = (summary(a)?, summary(b)?);
            Some(Test { name: "welch-t", p_value: stats::welch_t(sa, sb).p_value })
        }
    }
}

fn judge(
    base: Option<f64>,
    new: Option<f64>,
    test: Option<Test>,
    o: &Options,
) -> (Option<f64>, Status, bool) {
    let (Some(b), Some(n)) = (base, new) else { return (None, Status::NotComparable, false) };
    if b <= 0.0 {
        return (None, Status::NotComparable, false);
    }
    let change = (n - b) / b * 100.0;
    let worse = if o.metric.higher_is_better() { change < 0.0 } else { change > 0.0 };
    let significant = test.is_none_or(|t| t.p_value < o.alpha);
    let status = if change.abs() < o.min_change_pct || !significant {
        Status::Unchanged
    } else if worse {
        Status::Regression
    } else {
        Status::Improvement
    };
    let gate = status == Status::Regression && o.fail_above_pct.is_some_and(|t| change.abs() > t);
    (Some(change), status, gate)
}

/// Compares `new` with `base`.
pub fn compare(base: &Export, new: &Export, o: &Options) -> Result<Diff, DiffError> {
    if base.kind != new.kind {
        return Err(DiffError::KindMismatch {
            base: base.origin.clone(),
            base_kind: base.kind.as_str(),
            new: new.origin.clone(),
            new_kind: new.kind.as_str(),
        });
    }
    let m = o.metric;
    let mut used_base = vec![false; base.items.len()];
    let mut pair_of: Vec<Option<(usize, &'static str)>> = vec![None; new.items.len()];
    // 1. Exact keys, in order of appearance.
    let mut by_key: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (i, it) in base.items.iter().enumerate() {
        by_key.entry(it.key.as_str()).or_default().push(i);
    }
    for (j, it) in new.items.iter().enumerate() {
        if let Some(list) = by_key.get_mut(it.key.as_str()) {
            if !list.is_empty() {
                let i = list.remove(0);
                used_base[i] = true;
                pair_of[j] = Some((i, "exact"));
            }
        }
    }
    // 2. Normalised keys, only where one row is left on each side.
    let mut base_norm: std::collections::HashMap<&str, Vec<usize>> =
        std::collections::HashMap::new();
    for (i, it) in base.items.iter().enumerate().filter(|(i, _)| !used_base[*i]) {
        base_norm.entry(it.norm_key.as_str()).or_default().push(i);
    }
    let mut new_norm: std::collections::HashMap<&str, Vec<usize>> =
        std::collections::HashMap::new();
    for (j, it) in new.items.iter().enumerate().filter(|(j, _)| pair_of[*j].is_none()) {
        new_norm.entry(it.norm_key.as_str()).or_default().push(j);
    }
    for (k, js) in &new_norm {
        if let (Some(is), [j]) = (base_norm.get(k), js.as_slice()) {
            if let [i] = is.as_slice() {
                used_base[*i] = true;
                pair_of[*j] = Some((*i, "normalised"));
            }
        }
    }

    let mut rows = Vec::new();
    // The matched rows' times, for the total.
    let (mut times_b, mut times_n) = (Vec::new(), Vec::new());
    for (j, it) in new.items.iter().enumerate() {
        match pair_of[j] {
            Some((i, how)) => {
                let b = &base.items[i];
                let (bv, nv) = (b.value(m), it.value(m));
                let test = noise_test(&b.spread, &it.spread);
                let (change, status, gate) = judge(bv, nv, test, o);
                if let (Some(x), Some(y)) = (b.time_us, it.time_us) {
                    times_b.push(x);
                    times_n.push(y);
                }
                rows.push(RowDiff {
                    section: it.section.clone(),
                    name: it.name.clone(),
                    shape: it.shape.clone(),
                    matched_by: how,
                    base_name: (b.name != it.name).then(|| b.name.clone()),
                    base: bv,
                    new: nv,
                    change_pct: change,
                    test,
                    status,
                    fails_gate: gate,
                });
            }
            None => rows.push(RowDiff {
                section: it.section.clone(),
                name: it.name.clone(),
                shape: it.shape.clone(),
                matched_by: "",
                base_name: None,
                base: None,
                new: it.value(m),
                change_pct: None,
                test: None,
                status: Status::Added,
                fails_gate: false,
            }),
        }
    }
    for (i, it) in base.items.iter().enumerate().filter(|(i, _)| !used_base[*i]) {
        let _ = i;
        rows.push(RowDiff {
            section: it.section.clone(),
            name: it.name.clone(),
            shape: it.shape.clone(),
            matched_by: "",
            base_name: None,
            base: it.value(m),
            new: None,
            change_pct: None,
            test: None,
            status: Status::Removed,
            fails_gate: false,
        });
    }
    // Worst first within each status.
    let sign = if m.higher_is_better() { -1.0 } else { 1.0 };
    rows.sort_by(|a, b| {
        let key = |r: &RowDiff| r.change_pct.map_or(f64::NEG_INFINITY, |c| c * sign);
        key(b).total_cmp(&key(a))
    });

    let total = if m == Metric::Time {
        let (tb, tn, what) = match (base.window_us, new.window_us) {
            (Some(b), Some(n)) => {
                (Some(b), Some(n), "trace window (GPU timeline, first to last event)")
            }
            _ if !times_b.is_empty() => (
                Some(decimal::sum(&times_b)),
                Some(decimal::sum(&times_n)),
                "sum of the matched rows' times",
            ),
            _ => (None, None, ""),
        };
        tb.map(|_| {
            let (change, status, gate) = judge(tb, tn, None, o);
            RowDiff {
                section: "total".to_string(),
                name: "total".to_string(),
                shape: what.to_string(),
                matched_by: "",
                base_name: None,
                base: tb,
                new: tn,
                change_pct: change,
                test: None,
                status,
                fails_gate: gate,
            }
        })
    } else {
        None
    };
    let test = match base.kind {
        Kind::Bench => format!(
            "Mann-Whitney U on the raw samples (times_s), two-sided, α = {}; a change is reported when it is \
             at least {}% and significant",
            o.alpha, o.min_change_pct
        ),
        Kind::Trace | Kind::TraceRanks => format!(
            "Welch's t-test on each row's per-call time (mean, sample std, calls), two-sided, α = {}; rows \
             with one call are judged on the change alone (at least {}%)",
            o.alpha, o.min_change_pct
        ),
        Kind::Analyze => format!(
            "none: analyze exports carry one time each; a change of at least {}% is reported",
            o.min_change_pct
        ),
        Kind::Counters => format!(
            "Mann-Whitney U on the dispatches' durations, two-sided, α = {}; kernels with one \
             dispatch, or dispatches of different launch shapes, are judged on the change alone \
             (at least {}%)",
            o.alpha, o.min_change_pct
        ),
    };
    Ok(Diff {
        schema_version: SCHEMA_VERSION,
        kind: base.kind,
        base: base.origin.clone(),
        new: new.origin.clone(),
        metric: m,
        alpha: o.alpha,
        min_change_pct: o.min_change_pct,
        fail_above_pct: o.fail_above_pct,
        test,
        rows,
        total,
    })
}

/// A threshold that is not a percentage.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a percentage (expected e.g. 5% or 2.5)")]
pub struct BadPercent(pub String);

/// Parses a percentage: `5%`, `5` (percent) or `0.5%`.
///
/// # Errors
/// A text that is not a non-negative number, with or without `%`.
pub fn parse_pct(s: &str) -> Result<f64, BadPercent> {
    let t = s.trim();
    let body = t.strip_suffix('%').unwrap_or(t).trim();
    match body.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(BadPercent(s.to_string())),
    }
}

#[cfg(test)]
mod tests;
