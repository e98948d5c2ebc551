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
use std::path::{Path, PathBuf};

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

/// [`device_for`] in the embedded catalog, reading only the device found when the
/// trace's name for it decides it ([`Catalog::builtin_named`]: a lookup by name that
/// succeeds succeeds before the trace's facts are compared), the whole catalog
/// otherwise.
pub fn device_for_builtin(model: &TraceModel) -> DeviceLookup<'static> {
    let Some(dev) = model.devices.first() else { return DeviceLookup::Unnamed };
    match Catalog::builtin_named(&dev.name) {
        Some(spec) => DeviceLookup::Found { spec, note: None },
        None => device_for(Catalog::builtin(), model),
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
    /// The ranks that could not be read, in input order.
    pub failures: Vec<RankFailure>,
}

/// A rank that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankFailure {
    /// The trace file or table folder, as it was given.
    pub path: PathBuf,
    /// The reader's sentence (which names the path).
    pub message: String,
}

impl RankFailure {
    /// The file name that labels the rank (`rank3.json.gz`).
    pub fn file(&self) -> String {
        file_name(&self.path)
    }

    /// The sentence without the path and without its byte position (`at byte N (line
    /// L, column C)`), to compare with another rank's.
    fn reason(&self) -> String {
        let why = self.message.replacen(&self.path.display().to_string(), "", 1);
        let Some(at) = why.find("at byte ") else { return why };
        let Some(end) = why[at..].find(')') else { return why };
        format!("{}{}", &why[..at], &why[at + end + 1..])
    }
}

impl RankRun {
    /// Sorts the ranks by `distributedInfo.rank` where the traces state it (ranks
    /// without one last), then by file name.
    pub fn sort_ranks(&mut self) {
        self.ranks.sort_by(|a, b| {
            (a.rank.is_none(), a.rank, &a.file).cmp(&(b.rank.is_none(), b.rank, &b.file))
        });
    }

    /// The error of the ranks that could not be read: the first failure's sentence,
    /// then how many more ranks failed and which (their files, at most
    /// [`FAILED_NAMES_SHOWN`] named): "the same way" when their sentences differ from
    /// the first's only in the file and the byte position. One line whatever the number
    /// of ranks; `None` when every rank was read.
    pub fn failure_message(&self) -> Option<String> {
        let (first, rest) = self.failures.split_first()?;
        if rest.is_empty() {
            return Some(first.message.clone());
        }
        let same = rest.iter().all(|f| f.reason() == first.reason());
        let mut names: Vec<String> =
            rest.iter().take(FAILED_NAMES_SHOWN).map(RankFailure::file).collect();
        if rest.len() > FAILED_NAMES_SHOWN {
            names.push(format!("{} more", rest.len() - FAILED_NAMES_SHOWN));
        }
        let n = rest.len();
        let ranks = if n == 1 { "rank" } else { "ranks" };
        let how = if same { "failed the same way" } else { "could not be read either" };
        Some(format!("{}; and {n} more {ranks} {how} ({})", first.message, names.join(", ")))
    }
}

/// How many failed ranks [`RankRun::failure_message`] names after the first.
pub const FAILED_NAMES_SHOWN: usize = 5;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceDevice;

    /// A run whose ranks failed with these sentences; each names its path as the
    /// readers do, `PATH: ...` or `cannot read PATH: ...`.
    fn run(failures: &[(&str, &str)]) -> RankRun {
        RankRun {
            failures: failures
                .iter()
                .map(|(path, message)| RankFailure {
                    path: PathBuf::from(path),
                    message: (*message).to_string(),
                })
                .collect(),
            ..RankRun::default()
        }
    }

    /// The embedded catalog's device for a trace is the same whether found by name alone
    /// or in the whole catalog: a name of one device, a name several share (told apart
    /// by the facts, or not), a vendor's name only, no name.
    #[test]
    fn the_embedded_device_for_a_trace_is_the_whole_catalogs() {
        let model = |name: &str, units: Option<u32>, clock_mhz: Option<f64>| TraceModel {
            devices: (!name.is_empty())
                .then(|| TraceDevice {
                    name: name.to_string(),
                    num_sms: units,
                    clock_mhz,
                    ..TraceDevice::default()
                })
                .into_iter()
                .collect(),
            ..TraceModel::default()
        };
        let cases = [
            model("AMD Instinct MI300X", Some(304), None),
            model("NVIDIA H100 80GB HBM3", Some(132), None),
            model("gfx950", Some(256), Some(2400.0)),
            model("gfx950", None, None),
            model("AMD Radeon Graphics", None, None),
            model("no such gpu", Some(1), None),
            model("", None, None),
        ];
        let mut kinds = std::collections::HashSet::new();
        for m in &cases {
            let want = device_for(Catalog::builtin(), m);
            kinds.insert(std::mem::discriminant(&want));
            assert_eq!(device_for_builtin(m), want, "{:?}", m.devices);
        }
        assert_eq!(kinds.len(), 3, "found, unknown and unnamed are all covered");
    }

    /// Many unreadable ranks give one line: the first sentence, then the others by name.
    #[test]
    fn many_failures_are_one_sentence_and_names() {
        assert_eq!(run(&[]).failure_message(), None);
        let one = "d/rank0.json: at byte 679 (line 8, column 3): more than 3 events";
        assert_eq!(run(&[("d/rank0.json", one)]).failure_message().as_deref(), Some(one));

        let same: Vec<(String, String)> = (0..9)
            .map(|r| {
                let path = format!("d/rank{r}.json");
                let message =
                    format!("{path}: at byte {} (line 8, column 3): more than 3 events", 600 + r);
                (path, message)
            })
            .collect();
        let refs: Vec<(&str, &str)> = same.iter().map(|(p, m)| (p.as_str(), m.as_str())).collect();
        let m = run(&refs).failure_message().unwrap();
        assert_eq!(
            m,
            "d/rank0.json: at byte 600 (line 8, column 3): more than 3 events; and 8 more ranks \
             failed the same way (rank1.json, rank2.json, rank3.json, rank4.json, rank5.json, \
             3 more)"
        );

        let mixed = run(&[
            (
                "d/rank0.json",
                "d/rank0.json: invalid trace JSON at byte 0 (line 1, column 1): expected `{`",
            ),
            ("d/rank1.json", "cannot read d/rank1.json: permission denied"),
        ]);
        assert_eq!(
            mixed.failure_message().unwrap(),
            "d/rank0.json: invalid trace JSON at byte 0 (line 1, column 1): expected `{`; and 1 \
             more rank could not be read either (rank1.json)"
        );
    }

    /// A folder whose name holds `: ` (as a run's name with a time in it may) still
    /// gives the files' names, and sentences that differ only in the file and the byte
    /// are still "the same way".
    #[test]
    fn failures_name_their_files_whatever_the_folder_is_called() {
        let dir = "runs/12: 30 b/";
        let failed: Vec<(String, String)> = ["rank1.json", "rank2.json", "rank3.json"]
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let path = format!("{dir}{f}");
                (path.clone(), format!("{path}: not JSON at byte {i} (line 1, column {i})"))
            })
            .collect();
        let refs: Vec<(&str, &str)> =
            failed.iter().map(|(p, m)| (p.as_str(), m.as_str())).collect();
        assert_eq!(
            run(&refs).failure_message().unwrap(),
            "runs/12: 30 b/rank1.json: not JSON at byte 0 (line 1, column 0); and 2 more ranks \
             failed the same way (rank2.json, rank3.json)"
        );
        let other = run(&[refs[0], (refs[1].0, "cannot read runs/12: 30 b/rank2.json: denied")]);
        assert_eq!(
            other.failure_message().unwrap(),
            "runs/12: 30 b/rank1.json: not JSON at byte 0 (line 1, column 0); and 1 more rank \
             could not be read either (rank2.json)"
        );
    }
}
