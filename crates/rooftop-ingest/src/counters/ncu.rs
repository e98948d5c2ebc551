//! Nsight Compute CSV → [`CounterSet`]: the raw page (`--page raw`, one row per launch,
//! one column per metric id, a units row under the header) and the details page or
//! `--metrics` long format (one row per (launch, metric), pivoted here per launch).
//!
//! Layouts and traps (docs/reference/input-formats.md: the traps common to several formats
//! and the "Nsight Compute CSV" section):
//! - `==PROF==` / `==WARNING==` / `==ERROR==` lines and the profiled program's own output
//!   come before and between the CSV blocks: every line before a header, and every
//!   unquoted line whose field count is not the header's, is skipped and counted;
//! - several runs may be concatenated, each with its own header, and launch IDs restart
//!   in each: the launches stay separate dispatches, in file order, and a note says so;
//! - values may carry digit grouping (`"4,096"`), and the details page auto-scales units
//!   per row (`us` in one row, `ms` in the next): every value is converted to base units
//!   (bytes, ns, per second, counts, percent) by its own unit, decimal prefixes as ncu
//!   uses them (`Kbyte` = 1000 bytes); a unit not in the table keeps its value and adds a
//!   note, it is never scaled by a guess;
//! - details-page metric names are display labels ("Duration", "L2 Hit Rate"): [`LABELS`]
//!   maps them to the metric ids the ncu section files show under them, the
//!   Speed-of-Light labels of every version included ("DRAM Throughput", "SOL DRAM");
//!   a label rooftop's formulas do not use is kept under its display name (with its
//!   value converted by its unit), never dropped;
//! - "Block Size" / "Grid Size" columns are tuples `(1024, 1, 1)`, the grid in blocks;
//! - since Nsight Compute 2023.2 the details page has 20 columns, the last five for the
//!   rules (`Rule Name`, `Rule Type`, `Rule Description`, `Estimated Speedup Type`,
//!   `Estimated Speedup`): metric rows stop after `Metric Value` with a trailing comma
//!   (16 fields), rule rows leave the metric columns empty and fill all 20. Both are
//!   read; each rule row becomes a [`ToolRule`] of its launch, the tool's own finding.
//!
//! The reader only normalises; the formulas are in `rooftop_core::counters::nvidia`.

use super::csvline::{parse_number, parse_u64, split_csv_line, trim};
pub use super::ncu_units::unit_factor;
use super::ncu_units::{is_per_second, non_negative_kind};
use super::text::read_text;
use super::CounterError;
use rayon::prelude::*;
use rooftop_core::counters::nvidia::{
    duration_from_metrics, plausible_pct, HIT_RATE_METRICS, SPEED_OF_LIGHT_METRICS,
};
use rooftop_core::counters::CounterName;
use rooftop_core::counters::{
    CounterFormat, CounterSet, CounterSource, DeviceInfo, Dim3, Dispatch, ToolRule,
};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::Path;

/// A hash map with a fast, keyed hash (`foldhash`): metric names and launch IDs are
/// looked up once per value read.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Details-page display labels → the metric id ncu shows under that label, from the
/// `SpeedOfLight`, `MemoryWorkloadAnalysis`, `LaunchStatistics` and `Occupancy` section
/// files (`Label:` / `Name:` pairs). Compared case-insensitively. "Memory Throughput" is
/// two metrics and is resolved by its unit in [`metric_for_label`].
pub const LABELS: &[(&str, &str)] = &[
    ("Duration", "gpu__time_duration.sum"),
    ("DRAM Throughput", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("Compute (SM) Throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("Compute (SM) [%]", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("SM [%]", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("Memory [%]", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("Elapsed Cycles", "gpc__cycles_elapsed.max"),
    ("SM Active Cycles", "sm__cycles_active.avg"),
    ("SM Frequency", "gpc__cycles_elapsed.avg.per_second"),
    ("DRAM Frequency", "dram__cycles_elapsed.avg.per_second"),
    ("L1/TEX Cache Throughput", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
    ("L2 Cache Throughput", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("L1/TEX Hit Rate", "l1tex__t_sector_hit_rate.pct"),
    ("L2 Hit Rate", "lts__t_sector_hit_rate.pct"),
    ("Mem Busy", "gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("Max Bandwidth", "gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("Mem Pipes Busy", "sm__memory_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("Achieved Occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("Theoretical Occupancy", "sm__maximum_warps_per_active_cycle_pct"),
    ("Achieved Active Warps Per SM", "sm__warps_active.avg.per_cycle_active"),
    ("Theoretical Active Warps per SM", "sm__maximum_warps_avg_per_active_cycle"),
    ("Block Limit Registers", "launch__occupancy_limit_registers"),
    ("Block Limit Shared Mem", "launch__occupancy_limit_shared_mem"),
    ("Block Limit Warps", "launch__occupancy_limit_warps"),
    ("Block Limit SM", "launch__occupancy_limit_blocks"),
    ("Block Limit Barriers", "launch__occupancy_limit_barriers"),
    ("Registers Per Thread", "launch__registers_per_thread"),
    ("Block Size", "launch__block_size"),
    ("Grid Size", "launch__grid_size"),
    ("Threads", "launch__thread_count"),
    ("Waves Per SM", "launch__waves_per_multiprocessor"),
    ("Dynamic Shared Memory Per Block", "launch__shared_mem_per_block_dynamic"),
    ("Static Shared Memory Per Block", "launch__shared_mem_per_block_static"),
    ("Driver Shared Memory Per Block", "launch__shared_mem_per_block_driver"),
    ("Shared Memory Configuration Size", "launch__shared_mem_config_size"),
    ("# SMs", "launch__sm_count"),
    ("Stack Size", "launch__stack_size"),
    // Speed of Light before Nsight Compute 2021 ("SOL" labels; "SOL DRAM" is
    // dram__throughput, renamed gpu__dram_throughput later).
    ("SOL SM", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("SOL Memory", "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
    ("SOL DRAM", "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("SOL L1/TEX Cache", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
    ("SOL L2 Cache", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    // ComputeWorkloadAnalysis and InstructionStats.
    ("Executed Ipc Active", "sm__inst_executed.avg.per_cycle_active"),
    ("Executed Ipc Elapsed", "sm__inst_executed.avg.per_cycle_elapsed"),
    ("Issued Ipc Active", "sm__inst_issued.avg.per_cycle_active"),
    ("Executed Instructions", "smsp__inst_executed.sum"),
    ("Issued Instructions", "smsp__inst_issued.sum"),
];

/// Reads an Nsight Compute CSV file (raw page, details page or `--metrics` output).
pub fn read(path: &Path) -> Result<CounterSet, CounterError> {
    let text = read_text(path)?;
    parse(path, &text)
}

/// Reads Nsight Compute CSV text; `name` stands for the file in errors and notes.
pub fn read_str(name: &str, text: &str) -> Result<CounterSet, CounterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    parse(Path::new(name), text)
}

/// The metric id a details-page label stands for; `unit` resolves "Memory Throughput"
/// (percent in "GPU Speed Of Light", bytes per second in "Memory Workload Analysis").
pub fn metric_for_label(label: &str, unit: &str) -> Option<&'static str> {
    let l = label.trim();
    if l.eq_ignore_ascii_case("Memory Throughput") {
        let u = unit.trim();
        if u == "%" {
            return Some("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
        }
        if u.contains("byte/") || u.ends_with("B/s") {
            return Some("dram__bytes.sum.per_second");
        }
        return None;
    }
    LABELS.iter().find(|(k, _)| k.eq_ignore_ascii_case(l)).map(|(_, id)| *id)
}

/// Values that mean "not collected" rather than a number.
fn is_not_available(s: &str) -> bool {
    let t = s.trim();
    // Nsight Compute 2025's raw page writes `no data` for a metric it could not
    // collect on that launch (`sass__inst_executed_register_spilling_mem_local`).
    ["n/a", "na", "-", "nan", "-nan", "inf", "-inf", "(!) n/a", "no data"]
        .iter()
        .any(|n| t.eq_ignore_ascii_case(n))
}

// ---------------------------------------------------------------------------------------
// Parsing.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Raw,
    Long,
}

/// Column positions of one CSV block's header.
#[derive(Debug)]
struct Columns {
    layout: Layout,
    header_line: u64,
    n: usize,
    id: usize,
    kernel: usize,
    stream: Option<usize>,
    device: Option<usize>,
    cc: Option<usize>,
    block_size: Option<usize>,
    grid_size: Option<usize>,
    metric_name: usize,
    metric_unit: usize,
    metric_value: usize,
    /// Details page since 2023.2: the rule columns (`Rule Name` ... `Estimated Speedup`).
    rules: Option<RuleColumns>,
    section: Option<usize>,
    /// Raw page: (column, metric id), every column that is not a launch attribute.
    metrics: Vec<(usize, String)>,
    /// Raw page: (column, name) of the launch attributes (`ID`, `Kernel Name`, NVTX).
    launch: Vec<(usize, String)>,
    /// Raw page: the units row, once read.
    units: Option<Vec<String>>,
    /// Raw page, once its units are read: each metric column as its values are read.
    plan: Vec<Planned>,
    /// Indices into `plan` in the order of the metric names (equal names in column
    /// order), the order a launch's counters are kept in.
    by_name: Vec<usize>,
}

/// A raw-page metric column, prepared once for every row below it.
#[derive(Debug)]
struct Planned {
    col: usize,
    id: String,
    key: CounterName,
    unit: String,
    factor: Option<f64>,
    /// Its unit is one of a quantity that cannot be negative ([`non_negative_kind`]).
    non_negative: bool,
    /// A hit rate or a Speed-of-Light percentage: a value outside 0..100 is noted.
    percent: bool,
    /// A device attribute, whose unit is kept.
    attribute: bool,
}

impl Planned {
    /// Whether `add_metric` would keep `value` (a number read in this column, in base
    /// units) and do nothing else: no unknown unit to note, nothing to refuse or note,
    /// no unit to keep.
    fn quiet(&self, value: f64) -> bool {
        self.factor.is_some()
            && !self.attribute
            && !(value < 0.0 && self.non_negative)
            && (!self.percent || plausible_pct(value))
    }
}

/// A raw-page row's metric values: the launch's counters (every cell that is a number,
/// by name) and the cells `add_metric` must still read (indices into the block's `plan`,
/// in column order): those that are not numbers, or are numbers with something to note
/// or refuse.
type RowValues = (BTreeMap<CounterName, f64>, Vec<usize>);

/// Raw-page lines prepared at once on the thread pool, ahead of their turn.
const READ_AHEAD: usize = 256;

/// A raw-page line prepared ahead of its turn: its fields, whether they are a header,
/// and, when they are as many as the header's, its metric values.
struct Ahead<'t> {
    fields: Option<Vec<Cow<'t, str>>>,
    header: bool,
    values: Option<RowValues>,
}

/// `line` prepared under the raw-page block `b` (the work that depends on nothing read
/// before it).
fn read_ahead<'t>(b: &Columns, line: &'t str) -> Ahead<'t> {
    let line = line.strip_prefix('\u{feff}').unwrap_or(line);
    let fields = split_csv_line(line);
    let header = fields.as_deref().is_some_and(looks_like_header);
    let values = match &fields {
        Some(f) if !header && f.len() == b.n => Some(b.row_values(f)),
        _ => None,
    };
    Ahead { fields, header, values }
}

/// The metric a value is read under: its id, its unit as written and that unit's factor
/// to base units ([`unit_factor`]).
struct Metric<'m> {
    id: &'m str,
    unit: &'m str,
    factor: Option<f64>,
}

/// Positions of the rule columns of a details-page header.
#[derive(Debug, Clone, Copy)]
struct RuleColumns {
    name: usize,
    kind: Option<usize>,
    description: Option<usize>,
    speedup_type: Option<usize>,
    speedup: Option<usize>,
}

/// The raw page's launch-attribute columns, whose cell in the units row is empty. Every
/// other column is a metric, whether its id has a unit prefix (`gpu__time_duration.sum`)
/// or not (`inst_executed`, `thread_inst_executed`, `memory_l1_wavefronts_shared`, which
/// Nsight Compute 2025 writes with the units `inst` and `sectors`).
const LAUNCH_COLUMNS: &[&str] = &[
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];

/// Whether a raw-page column is a launch attribute: one of [`LAUNCH_COLUMNS`], or any
/// name a metric id cannot have (blanks or colons: the NVTX columns
/// `thread Domain:Push/Pop_Range:…` and `Id:Domain:Start/Stop_Range:…`).
fn is_launch_column(name: &str) -> bool {
    LAUNCH_COLUMNS.contains(&name) || name.is_empty() || name.contains([' ', ':'])
}

fn col(fields: &[Cow<str>], name: &str) -> Option<usize> {
    fields.iter().position(|f| trim(f) == name)
}

/// Whether a parsed line is an ncu CSV header (complete or not). Asked of every line:
/// a data row's hundreds of fields are passed over once.
fn looks_like_header(fields: &[Cow<str>]) -> bool {
    let has = |n: &[&str]| fields.iter().any(|f| n.contains(&trim(f)));
    has(&["ID", "Kernel Name"])
        && (has(&["Metric Name", "Process ID"]) || fields.iter().any(|f| f.contains("__")))
}

impl Columns {
    fn new(path: &Path, line: u64, fields: &[Cow<str>]) -> Result<Columns, CounterError> {
        let need = |name: &str, what: &str| {
            col(fields, name).ok_or_else(|| {
                CounterError::at_field(
                    path,
                    line,
                    name,
                    format!("the Nsight Compute CSV header has no `{name}` column ({what})"),
                )
            })
        };
        let id = need("ID", "every ncu CSV layout numbers its launches in it")?;
        let kernel = need("Kernel Name", "every ncu CSV layout names the kernel in it")?;
        let mut b = Columns {
            layout: Layout::Raw,
            header_line: line,
            n: fields.len(),
            id,
            kernel,
            stream: col(fields, "Stream"),
            device: col(fields, "Device"),
            cc: col(fields, "CC"),
            block_size: col(fields, "Block Size"),
            grid_size: col(fields, "Grid Size"),
            metric_name: 0,
            metric_unit: 0,
            metric_value: 0,
            rules: col(fields, "Rule Name").map(|name| RuleColumns {
                name,
                kind: col(fields, "Rule Type"),
                description: col(fields, "Rule Description"),
                speedup_type: col(fields, "Estimated Speedup Type"),
                speedup: col(fields, "Estimated Speedup"),
            }),
            section: col(fields, "Section Name"),
            metrics: Vec::new(),
            launch: Vec::new(),
            units: None,
            plan: Vec::new(),
            by_name: Vec::new(),
        };
        if let Some(mn) = col(fields, "Metric Name") {
            b.layout = Layout::Long;
            b.metric_name = mn;
            b.metric_unit = need("Metric Unit", "the details layout states each value's unit")?;
            b.metric_value = need("Metric Value", "the details layout has one value per row")?;
        } else {
            for (i, f) in fields.iter().enumerate() {
                let name = f.trim().to_string();
                if is_launch_column(&name) {
                    b.launch.push((i, name));
                } else {
                    b.metrics.push((i, name));
                }
            }
            if !b.metrics.iter().any(|(_, m)| m.contains("__")) {
                return Err(CounterError::at_line(
                    path,
                    line,
                    "the Nsight Compute CSV header has neither `Metric Name` (details layout) \
                     nor metric-id columns such as `gpu__time_duration.sum` (raw layout)",
                ));
            }
        }
        Ok(b)
    }

    /// Prepares the raw page's metric columns from its units row `f`: each one's name
    /// shared, its unit trimmed and that unit's factor, and their order by name.
    fn plan_metrics(&mut self, f: &[Cow<str>], names: &mut FastMap<String, CounterName>) {
        self.plan = self
            .metrics
            .iter()
            .map(|(col, id)| {
                let unit = f.get(*col).map_or("", |u| u.trim()).to_string();
                Planned {
                    col: *col,
                    key: intern(names, id),
                    id: id.clone(),
                    factor: unit_factor(&unit),
                    non_negative: non_negative_kind(&unit).is_some(),
                    percent: HIT_RATE_METRICS.contains(&id.as_str())
                        || SPEED_OF_LIGHT_METRICS.iter().any(|(m, _)| m == id),
                    attribute: id.starts_with("device__attribute_"),
                    unit,
                }
            })
            .collect();
        let mut by_name: Vec<usize> = (0..self.plan.len()).collect();
        // Stable: of two columns with one name the later one's value is kept, as when
        // they were inserted in column order.
        by_name.sort_by(|a, b| self.plan[*a].key.cmp(&self.plan[*b].key));
        self.by_name = by_name;
    }

    /// The metric values of a raw-page row `f` (as many fields as the header).
    fn row_values(&self, f: &[Cow<str>]) -> RowValues {
        let mut slots = vec![None; self.plan.len()];
        let mut loud = Vec::new();
        for (i, (p, slot)) in self.plan.iter().zip(slots.iter_mut()).enumerate() {
            let v = f.get(p.col).map_or("", |c| trim(c));
            if v.is_empty() {
                continue;
            }
            match parse_number(v) {
                Some(x) => {
                    // The value `add_metric` keeps: a unit it does not know is noted,
                    // and the number kept as written.
                    let value = x * p.factor.unwrap_or(1.0);
                    *slot = Some(value);
                    if !p.quiet(value) {
                        loud.push(i);
                    }
                }
                None => loud.push(i),
            }
        }
        let counters = self
            .by_name
            .iter()
            .filter_map(|&i| Some((self.plan.get(i)?.key.clone(), (*slots.get(i)?)?)))
            .collect();
        (counters, loud)
    }

    /// Whether a row of `len` fields is a details-page metric row that stops after
    /// `Metric Value` (Nsight Compute 2023.2+ writes metric rows with a trailing comma
    /// and without the rule columns: 16 fields under a 20-column header).
    fn accepts_short(&self, len: usize) -> bool {
        self.layout == Layout::Long
            && self.rules.is_some()
            && len > self.metric_value
            && len < self.n
    }
}

/// One launch being assembled.
#[derive(Debug, Default)]
struct Launch {
    d: Dispatch,
    /// The unit each metric was written in.
    units: BTreeMap<String, String>,
    /// Non-numeric values (`device__attribute_display_name`, cache configuration).
    strings: BTreeMap<String, String>,
    cc: Option<String>,
    /// Details page: counters read but not yet in `d.counters`, in file order (added
    /// when a row of another launch comes, and at the end: a map built from many values
    /// at once costs less than as many inserts).
    pending: Vec<(CounterName, f64)>,
}

#[derive(Debug, Default)]
struct State {
    launches: Vec<Launch>,
    /// Metric names, interned: one allocation per name, shared by every launch.
    names: FastMap<String, CounterName>,
    /// Launch ID → index in `launches`, for the current run.
    run_index: FastMap<u64, usize>,
    /// The launch whose `pending` counters are not yet in its map.
    open: Option<usize>,
    runs: usize,
    implicit_runs: usize,
    skipped_lines: usize,
    tool_errors: Vec<String>,
    not_available: usize,
    unknown_units: BTreeSet<(String, String)>,
    /// Hit rates and Speed-of-Light figures outside 0–100%, one sentence each.
    impossible: Vec<String>,
    unmapped_labels: BTreeSet<String>,
    layouts: BTreeSet<&'static str>,
    /// Rule rows whose estimated speedup is not a number (first three).
    bad_speedups: Vec<String>,
}

impl State {
    /// Moves the open launch's pending counters into its map.
    fn flush(&mut self) {
        if let Some(l) = self.open.take().and_then(|k| self.launches.get_mut(k)) {
            // `from_iter` sorts them stably: of one name, the later value is kept.
            add_counters(&mut l.d.counters, std::mem::take(&mut l.pending).into_iter().collect());
        }
    }
}

/// Adds `row` (counters read together: a raw-page row, a details-page launch's rows) to
/// a launch's `counters`; a value of a name already there replaces it, as `insert` does.
fn add_counters(counters: &mut BTreeMap<CounterName, f64>, row: BTreeMap<CounterName, f64>) {
    if counters.is_empty() {
        *counters = row;
    } else {
        counters.extend(row);
    }
}

/// The shared name of metric `id`, made once.
fn intern(names: &mut FastMap<String, CounterName>, id: &str) -> CounterName {
    if let Some(k) = names.get(id) {
        return k.clone();
    }
    let k: CounterName = id.into();
    names.insert(id.to_string(), k.clone());
    k
}

fn parse(path: &Path, text: &str) -> Result<CounterSet, CounterError> {
    if text.trim().is_empty() {
        return Err(CounterError::new(path, "the file is empty (expected Nsight Compute CSV)"));
    }
    let mut st = State::default();
    let mut block: Option<Columns> = None;
    let mut first_layout = None;
    let mut lines = text.lines().enumerate();
    // Raw-page lines prepared on the pool (under the block they were prepared for: a
    // header drops what was prepared after it), and those still to be read.
    let mut ahead: VecDeque<(usize, &str, Option<Ahead<'_>>)> = VecDeque::new();
    loop {
        if ahead.is_empty() {
            if let Some(b) = block.as_ref().filter(|b| b.layout == Layout::Raw && b.units.is_some())
            {
                let batch: Vec<(usize, &str)> = lines.by_ref().take(READ_AHEAD).collect();
                let prepared: Vec<Ahead<'_>> =
                    batch.par_iter().map(|(_, line)| read_ahead(b, line)).collect();
                ahead.extend(batch.into_iter().zip(prepared).map(|((i, l), a)| (i, l, Some(a))));
            }
        }
        let (i, line, pre) = match ahead.pop_front() {
            Some(next) => next,
            None => match lines.next() {
                Some((i, line)) => (i, line, None),
                None => break,
            },
        };
        let ln = i as u64 + 1;
        // Files concatenated with `cat` keep each one's BOM.
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if is_tool_message(t) {
            if t.starts_with("==ERROR==") && st.tool_errors.len() < 3 {
                st.tool_errors.push(t.to_string());
            }
            st.skipped_lines += 1;
            continue;
        }
        let quoted = t.starts_with('"');
        let Ahead { fields, header, values } = pre.unwrap_or_else(|| {
            let fields = split_csv_line(line);
            let header = fields.as_deref().is_some_and(looks_like_header);
            Ahead { fields, header, values: None }
        });
        if let Some(f) = &fields {
            if header {
                // What was prepared after it was prepared under the block before it.
                for a in &mut ahead {
                    a.2 = None;
                }
                let b = Columns::new(path, ln, f)?;
                first_layout.get_or_insert(b.layout);
                st.layouts.insert(match b.layout {
                    Layout::Raw => "raw page",
                    Layout::Long => "details / --metrics",
                });
                st.runs += 1;
                st.run_index.clear();
                block = Some(b);
                continue;
            }
        }
        let Some(b) = block.as_mut() else {
            st.skipped_lines += 1;
            continue;
        };
        let fields = match fields {
            Some(f) if f.len() == b.n => f,
            Some(mut f) if b.accepts_short(f.len()) => {
                f.resize(b.n, Cow::Borrowed(""));
                f
            }
            Some(f) if quoted => {
                return Err(CounterError::at_line(
                    path,
                    ln,
                    format!(
                        "expected {} comma-separated fields as in the header on line {}, found {}",
                        b.n,
                        b.header_line,
                        f.len()
                    ),
                ))
            }
            None if quoted => {
                return Err(CounterError::at_line(path, ln, "a quoted field is not closed"));
            }
            // Program output between the CSV lines.
            _ => {
                st.skipped_lines += 1;
                continue;
            }
        };
        if b.layout == Layout::Raw && b.units.is_none() {
            check_units_row(path, ln, b, &fields)?;
            b.plan_metrics(&fields, &mut st.names);
            b.units = Some(fields.into_iter().map(Cow::into_owned).collect());
            continue;
        }
        row(path, ln, b, &fields, values, &mut st)?;
    }
    let Some(layout) = first_layout else {
        return Err(CounterError::new(
            path,
            "no Nsight Compute CSV header found (expected a line with the columns `ID` and \
             `Kernel Name`, as `ncu --csv` writes)",
        ));
    };
    if let Some(b) = &block {
        if b.layout == Layout::Raw && b.units.is_none() {
            return Err(CounterError::at_line(
                path,
                b.header_line + 1,
                "expected the raw page's units row after the header, found the end of the file",
            ));
        }
    }
    st.flush();
    Ok(finish(path, layout, st))
}

/// `==PROF==`, `==WARNING==`, `==ERROR==` and similar tool messages.
fn is_tool_message(t: &str) -> bool {
    t.strip_prefix("==").is_some_and(|r| {
        r.find("==").is_some_and(|k| k > 0 && r[..k].bytes().all(|b| b.is_ascii_alphabetic()))
    })
}

/// The line after a raw-page header must be its units row: empty under every launch
/// attribute (a data row always has its launch `ID` there). Under a metric the formulas
/// read ([`read_by_formulas`]), no unit or one [`unit_factor`] knows: a unit it does not
/// know (`furlong`) is an error, since its values could not be converted to bytes, ns or
/// counts and would be read as if they were.
fn check_units_row(path: &Path, ln: u64, b: &Columns, f: &[Cow<str>]) -> Result<(), CounterError> {
    for (i, name) in &b.launch {
        let v = f.get(*i).map_or("", |v| v.trim());
        if !v.is_empty() {
            return Err(CounterError::at_line(
                path,
                ln,
                format!(
                    "expected the raw page's units row after the header on line {} (empty \
                     under `ID`, `Kernel Name` and the other launch columns, a unit or nothing \
                     under each metric), found `{v}` in column {} (`{name}`)",
                    b.header_line,
                    i + 1
                ),
            ));
        }
    }
    // As on the details page: an error under a figure the formulas read; any other
    // metric's unknown unit is noted when its values are read.
    for (i, metric) in &b.metrics {
        let unit = f.get(*i).map_or("", |u| u.trim());
        if read_by_formulas(metric) && unit_factor(unit).is_none() {
            return Err(unknown_unit(path, ln, metric, metric, unit));
        }
    }
    Ok(())
}

/// A unit rooftop cannot convert, under a metric whose value it reads.
fn unknown_unit(path: &Path, ln: u64, column: &str, metric: &str, unit: &str) -> CounterError {
    CounterError::at_field(
        path,
        ln,
        column,
        format!(
            "unit `{unit}` of `{metric}` is not one Nsight Compute writes (byte, Kbyte, \
             nsecond, usecond, cycle, sector, %, their rates …): its values cannot be \
             converted to base units"
        ),
    )
}

/// Whether a figure (details page or raw page) is one rooftop's formulas read: a label [`LABELS`]
/// maps, or a metric id of the families they use. Its unit must then be known; the unit
/// of any other figure only adds a note when unknown.
fn read_by_formulas(id: &str) -> bool {
    const FAMILIES: &[&str] =
        &["dram__", "gpu__", "lts__", "l1tex__", "sm__", "smsp__", "gpc__", "launch__"];
    LABELS.iter().any(|(_, m)| *m == id)
        || id == "dram__bytes.sum.per_second"
        || FAMILIES.iter().any(|f| id.starts_with(f))
}

/// Parses `(1024, 1, 1)` (or a bare count, read as `[n, 1, 1]`).
fn parse_dim3(s: &str) -> Option<Dim3> {
    let t = s.trim();
    if let Some(inner) = t.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
        if parts.len() != 3 {
            return None;
        }
        let mut out = [0u64; 3];
        for (o, p) in out.iter_mut().zip(&parts) {
            *o = p.parse().ok()?;
        }
        return Some(out);
    }
    parse_u64(t).map(|n| [n, 1, 1])
}

/// Reads a data row `f` of block `b` (on the raw page, with its metric values when they
/// were read ahead).
fn row(
    path: &Path,
    ln: u64,
    b: &Columns,
    f: &[Cow<str>],
    values: Option<RowValues>,
    st: &mut State,
) -> Result<(), CounterError> {
    let id_text = f[b.id].trim();
    let id = parse_u64(id_text).ok_or_else(|| {
        CounterError::at_field(
            path,
            ln,
            "ID",
            format!("expected a launch ID (a non-negative integer), found `{id_text}`"),
        )
    })?;
    let name = f[b.kernel].trim();
    let idx = match st.run_index.get(&id) {
        // The same ID with another kernel, or a raw-page ID twice: a new run whose header
        // was lost in concatenation.
        Some(&k) if b.layout == Layout::Long && &*st.launches[k].d.name == name => k,
        found => {
            if found.is_some() {
                st.implicit_runs += 1;
                st.run_index.clear();
            }
            let dim = |c: Option<usize>, label: &str| -> Result<Option<Dim3>, CounterError> {
                let Some(c) = c else { return Ok(None) };
                let v = f[c].trim();
                if v.is_empty() || is_not_available(v) {
                    return Ok(None);
                }
                parse_dim3(v).map(Some).ok_or_else(|| {
                    CounterError::at_field(
                        path,
                        ln,
                        label,
                        format!("expected a tuple like `(256, 1, 1)`, found `{v}`"),
                    )
                })
            };
            let opt =
                |c: Option<usize>| c.map(|c| f[c].trim().to_string()).filter(|s| !s.is_empty());
            let launch = Launch {
                d: Dispatch {
                    id,
                    name: name.into(),
                    gpu: opt(b.device).map(Into::into),
                    stream: opt(b.stream).map(Into::into),
                    grid: dim(b.grid_size, "Grid Size")?,
                    block: dim(b.block_size, "Block Size")?,
                    ..Dispatch::default()
                },
                cc: opt(b.cc),
                ..Launch::default()
            };
            st.launches.push(launch);
            let k = st.launches.len() - 1;
            st.run_index.insert(id, k);
            k
        }
    };
    match b.layout {
        Layout::Raw => {
            st.flush();
            let (counters, loud) = values.unwrap_or_else(|| b.row_values(f));
            // The cells with something to note or refuse, in column order (the values
            // they give are among `counters` already).
            for p in loud.iter().filter_map(|&i| b.plan.get(i)) {
                let m = Metric { id: &p.id, unit: &p.unit, factor: p.factor };
                add_metric(path, ln, &p.id, &m, &f[p.col], idx, st)?;
            }
            if let Some(l) = st.launches.get_mut(idx) {
                add_counters(&mut l.d.counters, counters);
            }
        }
        Layout::Long => {
            let label = f[b.metric_name].trim();
            if label.is_empty() {
                // Rule rows (2023.2+) carry no metric: the rule's own result.
                if let Some(rule) = b.rules.and_then(|rc| rule_row(path, ln, b, rc, f, st)) {
                    if let Some(l) = st.launches.get_mut(idx) {
                        l.d.tool_rules.push(rule);
                    }
                }
                return Ok(());
            }
            let unit = f[b.metric_unit].trim();
            let id = if label.contains("__") {
                label.to_string()
            } else if let Some(m) = metric_for_label(label, unit) {
                m.to_string()
            } else {
                // Kept under its label (which has blanks, so never collides with an id).
                st.unmapped_labels.insert(label.to_string());
                label.to_string()
            };
            let factor = unit_factor(unit);
            if read_by_formulas(&id) && factor.is_none() {
                return Err(unknown_unit(path, ln, "Metric Unit", label, unit));
            }
            let key = intern(&mut st.names, &id);
            let m = Metric { id: &id, unit, factor };
            if let Some(v) = add_metric(path, ln, "Metric Value", &m, &f[b.metric_value], idx, st)?
            {
                if st.open != Some(idx) {
                    st.flush();
                    st.open = Some(idx);
                }
                if let Some(l) = st.launches.get_mut(idx) {
                    l.pending.push((key, v));
                }
            }
        }
    }
    Ok(())
}

/// A rule row's result; `None` when the row names no rule.
fn rule_row(
    path: &Path,
    ln: u64,
    b: &Columns,
    rc: RuleColumns,
    f: &[Cow<str>],
    st: &mut State,
) -> Option<ToolRule> {
    let get = |c: Option<usize>| {
        c.and_then(|c| f.get(c)).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
    };
    let rule = get(Some(rc.name))?;
    let speedup_text = get(rc.speedup);
    let estimated_speedup_pct = speedup_text.as_deref().and_then(parse_number);
    if let (Some(t), None) = (&speedup_text, estimated_speedup_pct) {
        if st.bad_speedups.len() < 3 {
            st.bad_speedups.push(format!(
                "{}, line {ln}: `Estimated Speedup` of rule {rule} is `{t}`, not a number; \
                 the rule is kept without it",
                path.display()
            ));
        }
    }
    Some(ToolRule {
        tool: "Nsight Compute".to_string(),
        section: get(b.section),
        rule,
        rule_type: get(rc.kind).unwrap_or_default(),
        description: get(rc.description).unwrap_or_default(),
        speedup_type: get(rc.speedup_type),
        estimated_speedup_pct,
    })
}

/// Metrics whose value may be text when they carry no unit (and details-page labels
/// kept under their display name: "Function Cache Configuration", "Enabled TPC IDs").
fn may_be_text(metric: &str) -> bool {
    !metric.contains("__")
        || ["device__attribute_", "launch__", "profiler__", "nvlink__", "numa__"]
            .iter()
            .any(|p| metric.starts_with(p))
}

/// A value `value` of metric `m` in `column` of line `ln`, checked and converted to base
/// units: the number to keep among the launch's counters, or `None` (an empty cell, `n/a`,
/// a text value kept among the launch's strings).
fn add_metric(
    path: &Path,
    ln: u64,
    column: &str,
    m: &Metric,
    value: &str,
    idx: usize,
    st: &mut State,
) -> Result<Option<f64>, CounterError> {
    let v = value.trim();
    if v.is_empty() || idx >= st.launches.len() {
        return Ok(None);
    }
    // `n/a` and its kin are never numbers, so they are looked for only when a value is
    // not one.
    let Some(x) = parse_number(v) else {
        if is_not_available(v) {
            st.not_available += 1;
            return Ok(None);
        }
        if m.unit.is_empty() && may_be_text(m.id) {
            if let Some(launch) = st.launches.get_mut(idx) {
                launch.strings.insert(m.id.to_string(), v.to_string());
            }
            return Ok(None);
        }
        let unit_text =
            if m.unit.is_empty() { String::new() } else { format!(" in unit `{}`", m.unit) };
        return Err(CounterError::at_field(
            path,
            ln,
            column,
            format!("expected a number{unit_text} for `{}`, found `{v}`", m.id),
        ));
    };
    let factor = m.factor.unwrap_or_else(|| {
        st.unknown_units.insert((m.unit.to_string(), m.id.to_string()));
        1.0
    });
    check_plausible(path, ln, column, m.id, m.unit, v, x * factor, idx, st)?;
    // Only the device attributes' units are read back (clocks in kHz or Hz).
    if m.id.starts_with("device__attribute_") {
        if let Some(launch) = st.launches.get_mut(idx) {
            launch.units.insert(m.id.to_string(), m.unit.to_string());
        }
    }
    Ok(Some(x * factor))
}

/// Refuses what no measurement can give: a negative byte count, duration or event count
/// (the counters count up from zero). A hit rate the formulas read, or a Speed-of-Light
/// throughput, outside 0–100% beyond the noise of ncu's sampled counters
/// ([`plausible_pct`]; real exports hold 100.09%) is ncu's own computed figure, not a
/// count in the file: it is kept as read and noted, and the formulas draw nothing from it
/// (`rooftop_core::counters::nvidia`).
#[allow(clippy::too_many_arguments)]
fn check_plausible(
    path: &Path,
    ln: u64,
    column: &str,
    metric: &str,
    unit: &str,
    written: &str,
    value: f64,
    idx: usize,
    st: &mut State,
) -> Result<(), CounterError> {
    if value < 0.0 {
        if let Some(kind) = non_negative_kind(unit) {
            return Err(CounterError::at_field(
                path,
                ln,
                column,
                format!(
                    "`{metric}` is {written} {unit}: a {kind} cannot be negative (is the file \
                     edited or corrupt?)"
                ),
            ));
        }
    }
    if plausible_pct(value) {
        return Ok(());
    }
    if HIT_RATE_METRICS.contains(&metric) {
        st.impossible.push(format!(
            "line {ln}, column `{column}`: `{metric}` of launch {} is {written}%, which is \
             impossible for a hit rate (hits over accesses): kept as read, but not shown and \
             nothing drawn from it",
            st.launches.get(idx).map_or(0, |l| l.d.id)
        ));
    }
    if let Some((_, label)) = SPEED_OF_LIGHT_METRICS.iter().find(|(id, _)| *id == metric) {
        st.impossible.push(format!(
            "line {ln}, column `{column}`: \"{label}\" of launch {} is {written}% of its peak, \
             which is impossible: kept as read, but no bound and no busiest unit are drawn from \
             that launch's Speed of Light",
            st.launches.get(idx).map_or(0, |l| l.d.id)
        ));
    }
    Ok(())
}

fn finish(path: &Path, layout: Layout, st: State) -> CounterSet {
    let mut notes = Vec::new();
    let file = path
        .file_name()
        .map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned());
    for n in &st.impossible {
        notes.push(format!("warning: {file}, {n}"));
    }
    if st.runs > 1 || st.implicit_runs > 0 {
        notes.push(format!(
            "{} runs concatenated (the CSV header appears {} times{}); launch IDs restart in \
             each run, and every launch is kept as its own dispatch, in file order",
            st.runs + st.implicit_runs,
            st.runs,
            if st.implicit_runs > 0 {
                format!(", and {} more runs start where a launch ID repeats", st.implicit_runs)
            } else {
                String::new()
            }
        ));
    }
    if st.layouts.len() > 1 {
        notes.push("the file mixes raw-page and details-page blocks".to_string());
    }
    if st.skipped_lines > 0 {
        notes.push(format!(
            "skipped {} lines that are not Nsight Compute CSV (==PROF== messages, program \
             output)",
            st.skipped_lines
        ));
    }
    for e in &st.tool_errors {
        notes.push(format!("Nsight Compute reported: {e}"));
    }
    notes.extend(st.bad_speedups.iter().cloned());
    let rules: usize = st.launches.iter().map(|l| l.d.tool_rules.len()).sum();
    if rules > 0 {
        notes.push(format!(
            "{rules} Nsight Compute rule results read (its own findings, shown as Nsight \
             Compute's beside rooftop's)"
        ));
    }
    if st.not_available > 0 {
        notes.push(format!(
            "{} values were `n/a` or `no data` (not collected) and are left out",
            st.not_available
        ));
    }
    for (unit, metric) in &st.unknown_units {
        notes.push(format!(
            "unit `{unit}` of `{metric}` is not known to rooftop: the value is kept as written, \
             not converted"
        ));
    }
    if !st.unmapped_labels.is_empty() {
        let list: Vec<&str> = st.unmapped_labels.iter().map(String::as_str).take(6).collect();
        notes.push(format!(
            "{} details-page figures rooftop's formulas do not use are kept under their \
             display names: {}{}",
            st.unmapped_labels.len(),
            list.join(", "),
            if st.unmapped_labels.len() > list.len() { ", …" } else { "" }
        ));
    }

    let rollup = st
        .launches
        .iter()
        .filter(|l| {
            l.d.counter("gpu__time_duration.sum").is_none()
                && duration_from_metrics(&l.d.counters).is_some()
        })
        .count();
    if rollup > 0 {
        notes.push(format!(
            "the duration of {rollup} launches is gpu__time_duration.avg/.max/.min (gpu__ has one \
             instance per launch, so these equal .sum)"
        ));
    }
    let device = device_info(&st.launches, &mut notes);
    let dispatches = st.launches.into_iter().map(|l| normalise(l.d)).collect();
    CounterSet {
        source: CounterSource {
            format: match layout {
                Layout::Raw => CounterFormat::NcuRaw,
                Layout::Long => CounterFormat::NcuDetails,
            },
            files: vec![path.display().to_string()],
            tool_version: None,
            notes,
        },
        device,
        measured_roofs: Vec::new(),
        dispatches,
        aggregates: Vec::new(),
        activity: None,
    }
}

/// Fills the dispatch's launch fields from its `launch__*` metrics.
fn normalise(mut d: Dispatch) -> Dispatch {
    if d.duration_ns.is_none() {
        d.duration_ns = duration_from_metrics(&d.counters).map(|(v, _)| v);
    }
    let int = |d: &Dispatch, k: &str| {
        d.counter(k).filter(|v| *v >= 0.0 && v.fract() == 0.0 && *v < 1.8e19).map(|v| v as u64)
    };
    if d.grid.is_none() {
        d.grid = int(&d, "launch__grid_size").map(|n| [n, 1, 1]);
    }
    if d.block.is_none() {
        d.block = int(&d, "launch__block_size").map(|n| [n, 1, 1]);
    }
    if d.vgprs.is_none() {
        d.vgprs = int(&d, "launch__registers_per_thread").and_then(|v| u32::try_from(v).ok());
    }
    if d.shared_bytes.is_none() {
        if let (Some(s), Some(y)) = (
            int(&d, "launch__shared_mem_per_block_static"),
            int(&d, "launch__shared_mem_per_block_dynamic"),
        ) {
            d.shared_bytes = s.checked_add(y);
        }
    }
    d
}

fn device_info(launches: &[Launch], notes: &mut Vec<String>) -> DeviceInfo {
    let mut dev = DeviceInfo::default();
    let Some(l) = launches
        .iter()
        .find(|l| l.cc.is_some() || l.d.counters.keys().any(|k| k.starts_with("device__")))
        .or_else(|| launches.first())
    else {
        return dev;
    };
    let c = |k: &str| l.d.counter(k);
    let u32_of = |k: &str| c(k).filter(|v| *v >= 0.0 && *v < 4.3e9).map(|v| v as u32);
    dev.name = l.strings.get("device__attribute_display_name").cloned();
    dev.arch = l.cc.clone().or_else(|| {
        let (ma, mi) = (
            c("device__attribute_compute_capability_major")?,
            c("device__attribute_compute_capability_minor")?,
        );
        Some(format!("{ma}.{mi}"))
    });
    dev.compute_units =
        u32_of("device__attribute_multiprocessor_count").or_else(|| u32_of("launch__sm_count"));
    dev.wave_size = u32_of("device__attribute_warp_size");
    dev.max_waves_per_cu = u32_of("device__attribute_max_warps_per_multiprocessor");
    dev.l2_bytes = c("device__attribute_l2_cache_size").map(|v| v as u64);
    // CUDA reports clocks in kHz; a unit of `hz` family was already converted to Hz.
    let mhz = |k: &str| {
        let v = c(k)?;
        let unit = l.units.get(k).map_or("", String::as_str);
        Some(if is_per_second(unit) { v / 1e6 } else { v / 1e3 })
    };
    dev.max_sclk_mhz = mhz("device__attribute_max_gpu_frequency_khz")
        .or_else(|| mhz("device__attribute_clock_rate"));
    dev.mclk_mhz = mhz("device__attribute_max_mem_frequency_khz")
        .or_else(|| mhz("device__attribute_memory_clock_rate"));
    for (k, v) in &l.strings {
        if k.starts_with("device__attribute_") {
            dev.extra.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in &l.d.counters {
        if k.starts_with("device__attribute_") {
            dev.extra.insert(k.to_string(), v.to_string());
        }
    }
    if let Some(g) = &l.d.gpu {
        dev.extra.insert("Device".to_string(), g.to_string());
    }
    let names: BTreeSet<&str> = launches
        .iter()
        .filter_map(|l| l.strings.get("device__attribute_display_name").map(String::as_str))
        .collect();
    let ccs: BTreeSet<&str> = launches.iter().filter_map(|l| l.cc.as_deref()).collect();
    if names.len() > 1 || ccs.len() > 1 {
        notes.push(format!(
            "launches ran on different devices ({}); the device information is the first \
             launch's",
            names.iter().chain(ccs.iter()).copied().collect::<Vec<_>>().join(", ")
        ));
    }
    dev
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    /// A launch's counters are kept by name: of a metric written twice, the later value
    /// (the later raw-page column, the later details row), as one insert after another
    /// would keep; a details-page launch whose rows come back after another launch's
    /// keeps all of them.
    #[test]
    fn counters_kept_by_name_the_later_value_winning() {
        let raw = "\"ID\",\"Kernel Name\",\"lts__t_bytes.sum\",\"dram__bytes_read.sum\",\"lts__t_bytes.sum\"\n\
                   \"\",\"\",\"byte\",\"Kbyte\",\"byte\"\n\
                   \"0\",\"k\",\"1\",\"2\",\"3\"\n";
        let set = read_str("raw.csv", raw).unwrap();
        let d = &set.dispatches[0];
        assert_eq!(d.counter("lts__t_bytes.sum"), Some(3.0));
        assert_eq!(d.counter("dram__bytes_read.sum"), Some(2000.0));
        assert_eq!(d.counters.len(), 2);

        let head = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
        let rows = [
            ("0", "a", "lts__t_bytes.sum", "byte", "1"),
            ("0", "a", "dram__bytes_read.sum", "byte", "5"),
            ("1", "b", "lts__t_bytes.sum", "byte", "7"),
            ("0", "a", "lts__t_bytes.sum", "Kbyte", "2"),
            ("0", "a", "dram__bytes_write.sum", "byte", "6"),
        ];
        let lines: Vec<String> = rows
            .iter()
            .map(|(i, k, m, u, v)| format!("\"{i}\",\"{k}\",\"{m}\",\"{u}\",\"{v}\"\n"))
            .collect();
        let set = read_str("details.csv", &format!("{head}{}", lines.concat())).unwrap();
        let a = &set.dispatches[0];
        assert_eq!((&*a.name, a.counters.len()), ("a", 3));
        assert_eq!(a.counter("lts__t_bytes.sum"), Some(2000.0));
        assert_eq!(a.counter("dram__bytes_read.sum"), Some(5.0));
        assert_eq!(a.counter("dram__bytes_write.sum"), Some(6.0));
        let b = &set.dispatches[1];
        assert_eq!((&*b.name, b.counter("lts__t_bytes.sum")), ("b", Some(7.0)));
    }

    /// Raw-page lines are prepared on the pool [`READ_AHEAD`] at a time, under the block
    /// read so far. A second header inside a prepared batch (columns swapped, other
    /// units) drops what was prepared after it: those rows are read under their own
    /// header. Cells with something to note (`n/a`, an impossible hit rate, a unit rooftop
    /// does not know, a device attribute) are noted once each, in a batch or not.
    #[test]
    fn a_header_inside_a_prepared_batch_starts_its_own_block() {
        let hit = "lts__t_sector_hit_rate.pct";
        let mut text = format!(
            "\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"{hit}\",\"x__odd.sum\",\
             \"device__attribute_clock_rate\"\n\"\",\"\",\"Kbyte\",\"%\",\"furlong\",\"kHz\"\n"
        );
        for i in 0..300 {
            let h = match i {
                5 => "n/a",
                290 => "150",
                _ => "40",
            };
            writeln!(text, "\"{i}\",\"a\",\"{i}\",\"{h}\",\"2\",\"1755000\"").unwrap();
        }
        // As many columns as the first block: the prepared rows would fit it.
        writeln!(
            text,
            "\"ID\",\"Kernel Name\",\"{hit}\",\"dram__bytes_read.sum\",\"lts__t_bytes.sum\",\
             \"sm__cycles_elapsed.avg\"\n\"\",\"\",\"%\",\"byte\",\"byte\",\"cycle\""
        )
        .unwrap();
        for i in 0..300 {
            writeln!(text, "\"{i}\",\"b\",\"50\",\"{}\",\"3\",\"9\"", i + 7).unwrap();
        }
        let set = read_str("two.csv", &text).unwrap();
        assert_eq!(set.dispatches.len(), 600);
        let dram = "dram__bytes_read.sum";
        for (i, d) in set.dispatches.iter().enumerate() {
            if i < 300 {
                assert_eq!((&*d.name, d.id), ("a", i as u64));
                assert_eq!(d.counter(dram), Some(i as f64 * 1000.0), "launch {i}");
                let want = match i {
                    5 => None,
                    290 => Some(150.0),
                    _ => Some(40.0),
                };
                assert_eq!(d.counter(hit), want, "launch {i}");
                assert_eq!(d.counter("x__odd.sum"), Some(2.0));
                assert_eq!(d.counters.len(), if i == 5 { 3 } else { 4 });
            } else {
                assert_eq!((&*d.name, d.id), ("b", i as u64 - 300));
                assert_eq!(d.counter(dram), Some((i - 300 + 7) as f64), "launch {i}");
                assert_eq!(d.counter(hit), Some(50.0));
                assert_eq!(d.counter("lts__t_bytes.sum"), Some(3.0));
                assert_eq!(d.counter("sm__cycles_elapsed.avg"), Some(9.0));
                assert_eq!(d.counters.len(), 4);
            }
        }
        let notes = &set.source.notes;
        let has = |s: &str| notes.iter().filter(|n| n.contains(s)).count();
        assert_eq!(has("line 293, column `lts__t_sector_hit_rate.pct`"), 1, "{notes:#?}");
        assert_eq!(has("is 150%, which is impossible"), 1, "{notes:#?}");
        assert_eq!(has("1 values were `n/a`"), 1, "{notes:#?}");
        assert_eq!(has("unit `furlong` of `x__odd.sum`"), 1, "{notes:#?}");
        assert_eq!(has("2 runs concatenated"), 1, "{notes:#?}");
    }

    #[test]
    fn tuples() {
        assert_eq!(parse_dim3("(1024, 1, 1)"), Some([1024, 1, 1]));
        assert_eq!(parse_dim3("(8,4,2)"), Some([8, 4, 2]));
        assert_eq!(parse_dim3("64"), Some([64, 1, 1]));
        assert_eq!(parse_dim3("(1, 2)"), None);
        assert_eq!(parse_dim3("(a, 1, 1)"), None);
    }

    #[test]
    fn labels() {
        assert_eq!(metric_for_label("Duration", "usecond"), Some("gpu__time_duration.sum"));
        assert_eq!(
            metric_for_label("Memory Throughput", "%"),
            Some("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
        );
        assert_eq!(
            metric_for_label("Memory Throughput", "Gbyte/second"),
            Some("dram__bytes.sum.per_second")
        );
        assert_eq!(
            metric_for_label("theoretical active warps per sm", ""),
            Some("sm__maximum_warps_avg_per_active_cycle")
        );
        assert_eq!(metric_for_label("Function Cache Configuration", ""), None);
    }

    /// An excerpt of a real Nsight Compute 2025 `--page raw` export (H200, CC 9.0; the
    /// first launch of a PyTorch run), its columns cut to the launch attributes (NVTX
    /// columns included) and seven metrics: `inst_executed`, column 332 of the real file,
    /// has no `__` in its id and `inst` in the units row, which a reader that took only
    /// `__` ids for metrics refused as "not a units row". Expected values are the file's,
    /// converted by hand (`us` × 1000, `Mbyte` × 1e6, `%/Kbyte` ÷ 1000).
    #[test]
    fn raw_page_2025_metrics_without_unit_prefix() {
        let text = concat!(
            "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",",
            "\"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg\",",
            "\"Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg\",",
            "\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\",\"Grid Size\",\"Device\",\"CC\",",
            "\"derived__pct_occupancy_per_shared_mem_size\",\"device__attribute_display_name\",",
            "\"dram__bytes_read.sum\",\"gpu__time_duration.sum\",\"idc__requests.sum\",",
            "\"inst_executed\",\"memory_l1_wavefronts_shared\",",
            "\"sass__inst_executed_register_spilling_mem_local\"\n",
            "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",",
            "\"%/Kbyte\",\"\",\"Mbyte\",\"us\",\"\",\"inst\",\"sectors\",\"inst\"\n",
            "\"0\",\"1712\",\"python3.12\",\"127.0.0.1\",",
            "\"1712  \"\"<default domain>:profile:none:none:none:none:none:none\"\" \",\"\",",
            "\"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT\",\"1\",\"7\",\"(384, 1, 1)\",",
            "\"(2, 66, 1)\",\"0\",\"9.0\",",
            "\"8.190000\",\"NVIDIA H200\",\"148.268800\",\"175.936000\",\"26,226\",",
            "\"17198493\",\"25723450\",\"no data\"\n",
        );
        let set = read_str("torch_raw.csv", text).expect("a 2025 raw page reads");
        assert_eq!(set.dispatches.len(), 1);
        let d = &set.dispatches[0];
        assert_eq!(&*d.name, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
        assert_eq!(d.grid, Some([2, 66, 1]));
        assert_eq!(d.block, Some([384, 1, 1]));
        let c = |m: &str| d.counter(m);
        assert_eq!(c("inst_executed"), Some(17_198_493.0));
        assert_eq!(c("memory_l1_wavefronts_shared"), Some(25_723_450.0));
        assert_eq!(c("idc__requests.sum"), Some(26_226.0));
        assert!((c("gpu__time_duration.sum").unwrap() - 175_936.0).abs() < 1e-6);
        assert!((c("dram__bytes_read.sum").unwrap() - 148_268_800.0).abs() < 1e-3);
        let per_byte = c("derived__pct_occupancy_per_shared_mem_size").unwrap();
        assert!((per_byte - 0.00819).abs() < 1e-12, "{per_byte}");
        // `no data`: not collected, so absent (never 0).
        assert_eq!(c("sass__inst_executed_register_spilling_mem_local"), None);
        assert!(set.source.notes.iter().any(|n| n.contains("`no data`")), "{:?}", set.source.notes);
        assert!(
            !set.source.notes.iter().any(|n| n.contains("not known")),
            "{:?}",
            set.source.notes
        );
        // The NVTX columns are launch attributes, not metrics.
        assert!(d.counters.keys().all(|k| !k.contains("Domain")));

        // The same header followed directly by the data row: still one clear sentence.
        let mut lines = text.lines();
        let header = lines.next().unwrap();
        lines.next();
        let data = lines.next().unwrap();
        let e = read_str("torch_raw.csv", &format!("{header}\n{data}\n")).unwrap_err();
        assert_eq!(e.place.line, Some(2));
        assert!(e.message.contains("units row"), "{e}");
        assert!(e.message.contains("found `0` in column 1 (`ID`)"), "{e}");
    }

    #[test]
    fn tool_messages() {
        assert!(is_tool_message("==PROF== Connected to process 1"));
        assert!(is_tool_message("==WARNING== Found outstanding GPU clock reset"));
        assert!(is_tool_message("==ERROR== Failed"));
        assert!(!is_tool_message("==== separator"));
        assert!(!is_tool_message("\"ID\",\"x\""));
    }
}
