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
//! std, calls) Welch's t-test, at significance `alpha` (see [`stats`]). Rows without a
//! spread (one call, analyze) are judged on the minimum change alone. The test is on the
//! times; attainment and rates are the same work over the same time, so it applies to
//! them unchanged when the work model did not change.
//!
//! The numbers compared are the exports' own; this module computes only the change, the
//! p-value and the totals (sums of the matched rows' times, or the trace window).

pub mod render;
pub mod stats;

use serde::Serialize;
use serde_json::Value;
use stats::Summary;
use std::fmt::Write as _;

/// An export that cannot be compared, with where the problem is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiffError {
    #[error("{origin}: not JSON: {message} (line {line}, column {column})")]
    NotJson { origin: String, line: usize, column: usize, message: String },
    #[error(
        "{origin}: not a rooftop export: expected the JSON of `rooftop bench` \
         (--export-json or --format json), `rooftop trace --format json` or \
         `rooftop analyze --format json`"
    )]
    Unknown { origin: String },
    #[error("{origin}: `{path}` is missing or is not {expected}")]
    Field { origin: String, path: String, expected: &'static str },
    #[error("{base} is a {base_kind} export but {new} is a {new_kind} export: compare exports of one kind")]
    KindMismatch { base: String, base_kind: &'static str, new: String, new_kind: &'static str },
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
            Kind::TraceRanks => "trace (per-rank)",
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

    /// Formats a value of this metric (seconds, %, FLOP/s, B/s).
    pub fn show(self, v: f64) -> String {
        use rooftop_core::units::{pct, si};
        match self {
            Metric::Time => si(v, "s"),
            Metric::Attainment => pct(v),
            Metric::Flops => si(v, "FLOP/s"),
            Metric::Bandwidth => si(v, "B/s"),
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

/// The spread of a row's time, for the noise test.
#[derive(Debug, Clone, PartialEq)]
pub enum Spread {
    /// Raw samples, seconds.
    Samples(Vec<f64>),
    /// Mean, sample std, count (seconds).
    Summary(Summary),
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
    /// Seconds per run / call.
    pub time_s: Option<f64>,
    pub attainment_pct: Option<f64>,
    /// FLOP/s.
    pub flops: Option<f64>,
    /// B/s.
    pub bandwidth: Option<f64>,
    pub spread: Spread,
}

impl Item {
    fn value(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Time => self.time_s,
            Metric::Attainment => self.attainment_pct,
            Metric::Flops => self.flops,
            Metric::Bandwidth => self.bandwidth,
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
    /// The trace window (seconds): the end-to-end time of the trace (for ranks, the
    /// longest). Bench and analyze totals are sums over the matched rows instead.
    pub window_s: Option<f64>,
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowDiff {
    pub section: String,
    pub name: String,
    pub shape: String,
    /// `exact`, `normalised` (names matched without template arguments and digits), or
    /// empty for added and removed rows.
    pub matched_by: &'static str,
    /// The base row's name when matched by normalised name and it differs.
    pub base_name: Option<String>,
    pub base: Option<f64>,
    pub new: Option<f64>,
    pub change_pct: Option<f64>,
    pub test: Option<Test>,
    pub status: Status,
    /// A regression above `--fail-above`: fails the gate.
    pub fails_gate: bool,
}

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// Version of the `rooftop diff --format json` output.
pub const SCHEMA_VERSION: u32 = 1;

// ---------------------------------------------------------------------------------
// Loading.

fn num(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

fn field<'a>(
    v: &'a Value,
    key: &str,
    origin: &str,
    path: &str,
    expected: &'static str,
) -> Result<&'a Value, DiffError> {
    v.get(key).ok_or_else(|| DiffError::Field {
        origin: origin.to_string(),
        path: format!("{path}{key}"),
        expected,
    })
}

fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
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

/// `M=141 N=512 dtypes=[bf16,bf16]`: a trace row's parameters (JSON object) as text,
/// strides left out when `with_strides` is false.
fn params_text(params: &Value, with_strides: bool) -> String {
    let Some(map) = params.as_object() else { return String::new() };
    map.iter()
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

fn bench_items(v: &Value, origin: &str) -> Result<Vec<Item>, DiffError> {
    let results = field(v, "results", origin, "", "an array")?.as_array().ok_or_else(|| {
        DiffError::Field {
            origin: origin.to_string(),
            path: "results".into(),
            expected: "an array",
        }
    })?;
    let mut out = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        let path = format!("results[{i}].");
        let kernel = field(r, "kernel", origin, &path, "a string")?
            .as_str()
            .ok_or_else(|| DiffError::Field {
                origin: origin.into(),
                path: format!("{path}kernel"),
                expected: "a string",
            })?
            .to_string();
        let config = field(r, "config", origin, &path, "an object")?;
        let label = text(config, "label");
        let launch = text(config, "launch_label");
        let imp = r.get("implementation").map(|i| text(i, "id")).unwrap_or_default();
        let passed =
            r.get("check").and_then(|c| c.get("passed")).and_then(Value::as_bool).unwrap_or(true);
        let times: Vec<f64> = r
            .get("times_s")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(num).collect())
            .unwrap_or_default();
        let mut shape = label.clone();
        if !imp.is_empty() {
            let _ = write!(shape, " [{imp}]");
        }
        if !launch.is_empty() && launch != "default" {
            let _ = write!(shape, " {launch}");
        }
        let get = |k: &str| r.get(k).and_then(num);
        out.push(Item {
            section: "result".to_string(),
            key: format!("{kernel}|{label}|{imp}|{launch}"),
            norm_key: format!("{}|{label}|{imp}|{launch}", normalise(&kernel)),
            name: kernel,
            shape,
            time_s: if passed { get("median_s") } else { None },
            attainment_pct: get("attainment_pct"),
            flops: get("achieved_gflops").map(|g| g * 1e9),
            bandwidth: get("achieved_gbs").map(|g| g * 1e9),
            spread: if passed && times.len() >= 2 { Spread::Samples(times) } else { Spread::None },
        });
    }
    Ok(out)
}

fn trace_items(v: &Value, origin: &str, prefix: &str) -> Result<Vec<Item>, DiffError> {
    let mut out = Vec::new();
    let cats =
        field(v, "categories", origin, prefix, "an object")?.as_object().ok_or_else(|| {
            DiffError::Field {
                origin: origin.into(),
                path: format!("{prefix}categories"),
                expected: "an object",
            }
        })?;
    for (table, rows) in cats {
        let Some(rows) = rows.as_array() else { continue };
        for row in rows {
            let name = text(row, "name");
            let params = row.get("params").cloned().unwrap_or(Value::Null);
            let shape = params_text(&params, false);
            let full = params_text(&params, true);
            let kt = row.get("kernel_time_us").cloned().unwrap_or(Value::Null);
            let mean = kt.get("mean").and_then(num).map(|us| us * 1e-6);
            let std = kt.get("std").and_then(num).map(|us| us * 1e-6);
            let count = row.get("count").and_then(num).unwrap_or(0.0);
            let stat_mean = |k: &str| row.get(k).and_then(|s| s.get("mean")).and_then(num);
            out.push(Item {
                section: format!("{prefix}op {table}"),
                key: format!("{prefix}{table}|{name}|{full}"),
                norm_key: format!("{prefix}{table}|{}|{shape}", normalise(&name)),
                name,
                shape,
                time_s: mean,
                attainment_pct: row.get("roofline_attainment_pct").and_then(num),
                flops: stat_mean("achieved_tflops").map(|t| t * 1e12),
                bandwidth: stat_mean("achieved_tbs").map(|t| t * 1e12),
                spread: match (mean, std) {
                    (Some(m), Some(s)) if count >= 2.0 => {
                        Spread::Summary(Summary { mean: m, std: s, n: count })
                    }
                    _ => Spread::None,
                },
            });
        }
    }
    if let Some(kernels) = v.get("kernels").and_then(Value::as_array) {
        for k in kernels {
            let name = text(k, "name");
            let parent = text(k, "parent_op");
            let stream = text(k, "stream");
            let mean = k.get("mean_us").and_then(num).map(|us| us * 1e-6);
            let std = k.get("std_us").and_then(num).map(|us| us * 1e-6);
            let count = k.get("count").and_then(num).unwrap_or(0.0);
            out.push(Item {
                section: format!("{prefix}kernel"),
                key: format!("{prefix}kernel|{name}|{parent}|{stream}"),
                norm_key: format!("{prefix}kernel|{}|{parent}", normalise(&name)),
                name,
                shape: if parent.is_empty() {
                    format!("stream {stream}")
                } else {
                    format!("← {parent} (stream {stream})")
                },
                time_s: mean,
                attainment_pct: None,
                flops: None,
                bandwidth: None,
                spread: match (mean, std) {
                    (Some(m), Some(s)) if count >= 2.0 => {
                        Spread::Summary(Summary { mean: m, std: s, n: count })
                    }
                    _ => Spread::None,
                },
            });
        }
    }
    Ok(out)
}

fn analyze_item(r: &Value) -> Item {
    let op = text(r, "op");
    let shape = text(r, "shape");
    let kernel = text(r, "kernel_name");
    let device = text(r, "device_id");
    let name = if kernel.is_empty() { op.clone() } else { kernel.clone() };
    let get = |k: &str| r.get(k).and_then(num);
    Item {
        section: "analysis".to_string(),
        key: format!("{op}|{shape}|{kernel}|{device}"),
        norm_key: format!("{op}|{shape}|{}|{device}", normalise(&kernel)),
        name,
        shape: format!("{shape} on {device}"),
        time_s: get("time_us").map(|us| us * 1e-6),
        attainment_pct: get("roofline_attainment_pct"),
        flops: get("achieved_tflops").map(|t| t * 1e12),
        bandwidth: get("achieved_gbs").map(|g| g * 1e9),
        spread: Spread::None,
    }
}

/// Kernels of a counters report: the mean duration per dispatch, with every dispatch's
/// duration as the samples of the noise test.
fn counters_items(v: &Value, origin: &str) -> Result<Vec<Item>, DiffError> {
    let kernels = field(v, "kernels", origin, "", "an array")?.as_array().ok_or_else(|| {
        DiffError::Field {
            origin: origin.to_string(),
            path: "kernels".into(),
            expected: "an array",
        }
    })?;
    let mut samples: std::collections::HashMap<String, Vec<f64>> = std::collections::HashMap::new();
    for d in v.get("dispatches").and_then(Value::as_array).into_iter().flatten() {
        if let Some(t) = d.get("duration_ns").and_then(num) {
            samples.entry(text(d, "name")).or_default().push(t * 1e-9);
        }
    }
    let mut out = Vec::with_capacity(kernels.len());
    for k in kernels {
        let name = text(k, "name");
        let get = |key: &str| k.get(key).and_then(num);
        let count = k.get("count").and_then(Value::as_u64).unwrap_or(0);
        let times = samples.remove(&name).unwrap_or_default();
        out.push(Item {
            section: "kernel".to_string(),
            key: name.clone(),
            norm_key: normalise(&name),
            shape: format!("{count} dispatches"),
            name,
            time_s: get("duration_ns").map(|t| t * 1e-9),
            attainment_pct: get("pct_of_roof"),
            flops: get("achieved_tflops").map(|t| t * 1e12),
            bandwidth: get("achieved_gbs").map(|g| g * 1e9),
            // Dispatches of one name with different launch shapes do different work: their
            // durations are not samples of one distribution, and the change alone judges.
            spread: if times.len() >= 2 && k.get("grid").is_some_and(|g| !g.is_null()) {
                Spread::Samples(times)
            } else {
                Spread::None
            },
        });
    }
    Ok(out)
}

fn is_analysis(v: &Value) -> bool {
    v.get("flops_formula").is_some() && v.get("op").is_some() && v.get("bound").is_some()
}

/// Reads an export (the JSON text of a file named `origin`).
pub fn load(text_: &str, origin: &str) -> Result<Export, DiffError> {
    let v: Value = serde_json::from_str(text_).map_err(|e| DiffError::NotJson {
        origin: origin.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string().split(" at line").next().unwrap_or_default().to_string(),
    })?;
    let o = origin.to_string();
    if v.get("results").is_some() && v.get("backend").is_some() {
        return Ok(Export {
            kind: Kind::Bench,
            origin: o,
            items: bench_items(&v, origin)?,
            window_s: None,
        });
    }
    if v.get("categories").is_some() && v.get("timeline").is_some() {
        let window_s =
            v.get("window").and_then(|w| w.get("duration_ms")).and_then(num).map(|ms| ms * 1e-3);
        return Ok(Export {
            kind: Kind::Trace,
            origin: o,
            items: trace_items(&v, origin, "")?,
            window_s,
        });
    }
    if let (Some(ranks), true) =
        (v.get("ranks").and_then(Value::as_array), v.get("cross_rank").is_some())
    {
        let mut items = Vec::new();
        let mut window: Option<f64> = None;
        for (i, r) in ranks.iter().enumerate() {
            let label = match r.get("rank").and_then(Value::as_i64) {
                Some(n) => format!("rank {n}"),
                None => text(r, "name"),
            };
            let report = field(r, "report", origin, &format!("ranks[{i}]."), "an object")?;
            items.extend(trace_items(report, origin, &format!("{label} · "))?);
            if let Some(w) = report.get("window").and_then(|w| w.get("duration_ms")).and_then(num) {
                window = Some(window.map_or(w * 1e-3, |x: f64| x.max(w * 1e-3)));
            }
        }
        return Ok(Export { kind: Kind::TraceRanks, origin: o, items, window_s: window });
    }
    if v.get("source").and_then(|s| s.get("format_id")).is_some()
        && v.get("kernels").is_some()
        && v.get("dispatches").is_some()
    {
        return Ok(Export {
            kind: Kind::Counters,
            origin: o,
            items: counters_items(&v, origin)?,
            window_s: None,
        });
    }
    if is_analysis(&v) {
        return Ok(Export {
            kind: Kind::Analyze,
            origin: o,
            items: vec![analyze_item(&v)],
            window_s: None,
        });
    }
    if let Some(arr) = v.as_array() {
        if !arr.is_empty() && arr.iter().all(is_analysis) {
            return Ok(Export {
                kind: Kind::Analyze,
                origin: o,
                items: arr.iter().map(analyze_item).collect(),
                window_s: None,
            });
        }
    }
    Err(DiffError::Unknown { origin: o })
}

// ---------------------------------------------------------------------------------
// Comparing.

/// The noise test of two rows' spreads, when both have one.
fn noise_test(a: &Spread, b: &Spread) -> Option<Test> {
    let summary = |s: &Spread| match s {
        Spread::Samples(v) => Summary::of(v),
        Spread::Summary(s) => Some(*s),
        Spread::None => None,
    };
    match (a, b) {
        (Spread::Samples(x), Spread::Samples(y)) if x.len() >= 2 && y.len() >= 2 => {
            Some(Test { name: "mann-whitney-u", p_value: stats::mann_whitney(x, y) })
        }
        _ => {
            let (sa, sb) = (summary(a)?, summary(b)?);
            Some(Test { name: "welch-t", p_value: stats::welch(sa, sb).0 })
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
    let (mut sum_b, mut sum_n, mut any_pair) = (0.0, 0.0, false);
    for (j, it) in new.items.iter().enumerate() {
        match pair_of[j] {
            Some((i, how)) => {
                let b = &base.items[i];
                let (bv, nv) = (b.value(m), it.value(m));
                let test = noise_test(&b.spread, &it.spread);
                let (change, status, gate) = judge(bv, nv, test, o);
                if let (Some(x), Some(y)) = (b.time_s, it.time_s) {
                    sum_b += x;
                    sum_n += y;
                    any_pair = true;
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
        let (tb, tn, what) = match (base.window_s, new.window_s) {
            (Some(b), Some(n)) => {
                (Some(b), Some(n), "trace window (GPU timeline, first to last event)")
            }
            _ if any_pair => (Some(sum_b), Some(sum_n), "sum of the matched rows' times"),
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

/// Parses a percentage: `5%`, `5` (percent) or `0.5%`.
pub fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let body = t.strip_suffix('%').unwrap_or(t).trim();
    match body.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a percentage (expected e.g. 5% or 2.5)")),
    }
}

#[cfg(test)]
mod tests;
