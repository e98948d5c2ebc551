//! The pieces of a `rooftop trace` run that every front end shares, whatever reads the
//! trace and wherever the output goes:
//!
//! - [`device_for`]: the catalog entry of the GPU a trace names (with the reason when
//!   the trace's facts chose between entries that share a name);
//! - [`RankSource`]: how a multi-rank run turns one rank's file into a model, picks its
//!   device and its analysis options. `rooftop-ingest` reads the files; the map/reduce
//!   loop that calls a `RankSource` is `rooftop_tables::run`, which also writes the
//!   ranks' Parquet tables;
//! - [`RankResult`] and [`RankRun`]: what such a run gives back (each rank's label and
//!   report, the cross-rank report, the ranks that could not be read), which the
//!   renderers of `rooftop-report` take as they are.
//!
//! Nothing here prints: notes and warnings are values for the caller to show.

use super::ranks::CrossRank;
use super::report::{TraceOptions, TraceReport};
use super::TraceModel;
use crate::device::{lookup_with_facts, Catalog, DeviceFacts, DeviceSpec};
use std::path::Path;

/// The catalog entry of the GPU a trace names, as [`device_for`] finds it.
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceLookup<'a> {
    /// The trace names no device (`deviceProperties` is empty or missing).
    Unnamed,
    /// The catalog knows the device; `note` says why this entry when the trace's facts
    /// (compute units, clock) chose between entries that share the name.
    Found { spec: &'a DeviceSpec, note: Option<String> },
    /// The catalog does not know the device: the lookup's one-sentence error.
    Unknown(String),
}

impl<'a> DeviceLookup<'a> {
    /// The entry found, if any.
    pub fn spec(&self) -> Option<&'a DeviceSpec> {
        match self {
            DeviceLookup::Found { spec, .. } => Some(spec),
            DeviceLookup::Unnamed | DeviceLookup::Unknown(_) => None,
        }
    }
}

/// The catalog entry of the first GPU `model` names (`deviceProperties[0]`), told apart
/// from entries of the same name by its compute units, clock and memory size.
pub fn device_for<'a>(catalog: &'a Catalog, model: &TraceModel) -> DeviceLookup<'a> {
    let Some(dev) = model.devices.first() else { return DeviceLookup::Unnamed };
    let facts = DeviceFacts {
        units: dev.num_sms,
        clock_mhz: dev.clock_mhz,
        memory_bytes: dev.total_memory_bytes,
    };
    match lookup_with_facts(catalog, &dev.name, facts) {
        Ok((spec, note)) => DeviceLookup::Found { spec, note },
        Err(e) => match by_facts_alone(catalog, &dev.name, facts) {
            Some((spec, note)) => DeviceLookup::Found { spec, note: Some(note) },
            None => DeviceLookup::Unknown(e.to_string()),
        },
    }
}

/// The one catalog device whose units, boost clock and memory size all fit what the
/// profile states, when its name is not in the catalog (a profile that names only a
/// vendor); `None` unless all three facts are stated and exactly one device fits.
fn by_facts_alone<'a>(
    catalog: &'a Catalog,
    name: &str,
    f: DeviceFacts,
) -> Option<(&'a DeviceSpec, String)> {
    let (units, clock, mem) = (f.units?, f.clock_mhz?, f.memory_bytes?);
    let fits: Vec<&DeviceSpec> = catalog
        .devices
        .iter()
        .filter(|d| {
            d.num_cu == units
                && d.boost_clock_mhz.is_some_and(|b| (clock - b).abs() <= 0.02 * b)
                && d.mem_gb.is_some_and(|g| crate::device::memory_fits(mem, g))
        })
        .collect();
    match fits.as_slice() {
        [one] => Some((
            one,
            format!(
                "the profile names `{name}`, which the catalog does not know; its {units} \
                 units, {clock:.0} MHz clock and {:.0} GiB of memory fit only {}",
                mem as f64 / f64::from(1u32 << 30),
                one.id
            ),
        )),
        _ => None,
    }
}

/// How a multi-rank run reads one rank and sets up its analysis. Called from several
/// threads at once, one rank per call.
pub trait RankSource: Sync {
    /// Reads the trace or profile at `path` into a model; `progress(done, total)` in
    /// bytes. The error is one sentence naming the file.
    ///
    /// # Errors
    /// The file cannot be read or is not a trace.
    fn read(
        &self,
        path: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<TraceModel, crate::InputError>;

    /// The device `model`'s roofline numbers use (`None`: no roofline numbers).
    fn device(&self, model: &TraceModel) -> Option<&DeviceSpec>;

    /// The analysis options for `model` (start from [`TraceOptions::for_model`]).
    fn options(&self, model: &TraceModel) -> TraceOptions;
}

/// One rank of a multi-rank run.
#[derive(Debug, Clone, PartialEq)]
pub struct RankResult {
    /// `distributedInfo.rank`, where the trace states it.
    pub rank: Option<i64>,
    /// The trace's file name (or, from tables, the name the map recorded).
    pub file: String,
    /// The rank's full report, where the run kept it (`None` from tables, for the map
    /// step, or when there are too many ranks to show).
    pub report: Option<TraceReport>,
}

impl RankResult {
    /// `rank 3 (rank3.json.gz)`, or the file name when the rank is unknown.
    pub fn label(&self) -> String {
        match self.rank {
            Some(n) => format!("rank {n} ({})", self.file),
            None => self.file.clone(),
        }
    }
}

/// What a multi-rank run gives back.
#[derive(Debug, Clone, Default)]
pub struct RankRun {
    /// The ranks read, by `distributedInfo.rank` where stated, then by file name.
    pub ranks: Vec<RankResult>,
    /// The cross-rank report (the reduce).
    pub cross: CrossRank,
    /// One sentence per rank that could not be read, in input order.
    pub failures: Vec<String>,
}

impl RankRun {
    /// Sorts the ranks by `distributedInfo.rank` where the traces state it (ranks
    /// without one last), then by file name.
    pub fn sort_ranks(&mut self) {
        self.ranks.sort_by(|a, b| {
            (a.rank.is_none(), a.rank, &a.file).cmp(&(b.rank.is_none(), b.rank, &b.file))
        });
    }

    /// The error of the ranks that could not be read: the one failure as it is, or
    /// `N ranks could not be read: ...`; `None` when every rank was read.
    pub fn failure_message(&self) -> Option<String> {
        match self.failures.as_slice() {
            [] => None,
            [one] => Some(one.clone()),
            all => Some(format!("{} ranks could not be read: {}", all.len(), all.join("; "))),
        }
    }
}

/// The file name of `path` (the whole path when it has none), which labels a rank.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// A trace file name without its format's extensions: `rank3.json.gz` → `rank3`,
/// `host0.xplane.pb` → `host0` (the name of the rank's table or CSV folder).
///
/// ```
/// assert_eq!(rooftop_core::trace::run::stem("rank3.json.gz"), "rank3");
/// assert_eq!(rooftop_core::trace::run::stem("host0.xplane.pb"), "host0");
/// ```
pub fn stem(file: &str) -> &str {
    if let Some(f) = file.strip_suffix(".xplane.pb") {
        return f;
    }
    let f = file.strip_suffix(".gz").or_else(|| file.strip_suffix(".GZ")).unwrap_or(file);
    f.strip_suffix(".json").or_else(|| f.strip_suffix(".JSON")).unwrap_or(f)
}

/// Refuses a model with nothing to analyse: no CPU op, runtime call, GPU event or
/// annotation (a JSON file that is not a trace, `[1, 2, 3]`, or an empty
/// `{"traceEvents": []}`). The error is one sentence naming `file`.
///
/// # Errors
/// When the model holds no event.
pub fn check_not_empty(model: &TraceModel, file: &str) -> Result<(), crate::InputError> {
    // A file whose events were all tolerated problems (a negative duration, an unknown
    // phase) is a trace with warnings, not an empty one; elements that are not events
    // at all (`bad_event`: `[1, 2, 3]`), and the reader's own notes on what is absent,
    // do not make it a trace.
    let empty = model.ops.is_empty()
        && model.gpu.is_empty()
        && model.runtime.is_empty()
        && model.annotations.is_empty()
        && model.memory.is_empty()
        && model.warnings.iter().all(|w| {
            matches!(w.kind.as_str(), "missing_device_properties" | "bad_event" | "no_gpu_events")
        });
    if empty {
        return Err(crate::InputError(format!(
            "{file} holds no trace events: expected a PyTorch profiler trace (Chrome-trace \
             JSON whose `traceEvents` hold `cpu_op`, `kernel` or `cuda_runtime` events) or a \
             JAX profile"
        )));
    }
    Ok(())
}

/// Up to `n` names of `names` closest to `target` (Jaro–Winkler, case-insensitive),
/// best first.
pub fn closest_names<'a>(
    target: &str,
    names: impl IntoIterator<Item = &'a str>,
    n: usize,
) -> Vec<String> {
    let t = target.trim_end_matches('*').to_ascii_lowercase();
    let mut scored: Vec<(f64, &str)> =
        names.into_iter().map(|s| (strsim::jaro_winkler(&t, &s.to_ascii_lowercase()), s)).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(n).map(|(_, s)| s.to_string()).collect()
}

/// Refuses `--what-if` requests that scaled nothing in the critical path's window,
/// naming the op names closest to each (the window's ops first, else the trace's).
///
/// # Errors
/// One sentence per request that matched nothing.
pub fn check_what_if(model: &TraceModel, report: &TraceReport) -> Result<(), crate::InputError> {
    let Some(cp) = &report.critical_path else {
        return Ok(());
    };
    let mut names: Vec<&str> = model.ops.iter().map(|o| o.name.as_ref()).collect();
    names.sort_unstable();
    names.dedup();
    let bad: Vec<String> = cp
        .what_if
        .iter()
        .filter(|w| w.matched_events == 0)
        .map(|w| {
            let near = closest_names(&w.target, names.iter().copied(), 3);
            format!(
                "--what-if '{}={}' matches no op, runtime call or kernel in the critical \
                 path's window ({}){}",
                w.target,
                w.factor,
                cp.window.annotation.as_deref().unwrap_or("the whole trace"),
                if near.is_empty() {
                    String::new()
                } else {
                    format!("; closest op names: {}", near.join(", "))
                }
            )
        })
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(crate::InputError(bad.join("; ")))
    }
}
