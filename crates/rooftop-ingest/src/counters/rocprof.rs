//! rocprof v1 / rocprofv2 (file plugin) CSVs: `results.csv` or the `-o out.csv` counter
//! CSV (one row per dispatch), `results.stats.csv` (one row per kernel name), and
//! `input.txt` (`pmc:` lines, one per pass) when it sits beside them.
//!
//! A directory holding several per-dispatch CSVs is one multi-pass run: the passes are
//! joined by dispatch index, and the kernel names must agree index by index.
//!
//! The wide-table helpers here (`Table`, `wide_dispatches`) are shared with the
//! rocprof-compute reader, whose `pmc_perf.csv` descends from the rocprofv2 layout.

use super::csvline::split_csv_line;
use super::text::read_text;
use super::CounterError;
use rooftop_core::counters::{
    clean_kernel_name, CounterFormat, CounterSet, CounterSource, DeviceInfo, Dispatch,
    ToolAggregate,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A CSV file read into memory: header and rows with their 1-based line numbers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    pub header: Vec<String>,
    /// (line, fields): one allocation per row, not per field (long-format counter files
    /// have millions of rows).
    pub rows: Vec<(u64, csv::StringRecord)>,
}

impl Table {
    /// Index of the first column whose name equals one of `names` (ASCII case-insensitive).
    pub fn col(&self, names: &[&str]) -> Option<usize> {
        names.iter().find_map(|n| self.header.iter().position(|h| h.eq_ignore_ascii_case(n)))
    }

    pub fn has(&self, name: &str) -> bool {
        self.col(&[name]).is_some()
    }
}

/// 1-based line numbers of byte offsets of a text, for offsets that only grow.
struct LineCounter<'a> {
    text: &'a str,
    byte: usize,
    line: u64,
}

impl LineCounter<'_> {
    fn at(&mut self, byte: usize) -> u64 {
        let byte = byte.min(self.text.len());
        if byte > self.byte {
            let skipped = self.text.as_bytes().get(self.byte..byte).unwrap_or_default();
            self.line += memchr::memchr_iter(b'\n', skipped).count() as u64;
            self.byte = byte;
        }
        self.line
    }
}

/// A CSV text read row by row, with [`parse_table`]'s checks and errors: RFC 4180
/// quoting, blank lines skipped, the header's fields trimmed, every row the header's
/// length, a quote the end of the file leaves open reported after the last row.
///
/// Rows come **untrimmed** into one reused record (read them with [`cell`],
/// [`int_cell`], [`num_cell`]): nothing per row is kept or allocated, so a
/// million-row long-format file streams through.
pub(crate) struct CsvRows<'a> {
    path: &'a Path,
    text: &'a str,
    rdr: csv::Reader<&'a [u8]>,
    lines: LineCounter<'a>,
    /// The header (trimmed); no rows.
    pub head: Table,
    /// The last data row's line and byte offset.
    last_row: Option<(u64, usize)>,
    done: bool,
}

impl<'a> CsvRows<'a> {
    /// Reads up to the header (the first non-blank record).
    pub fn new(path: &'a Path, text: &'a str) -> Result<CsvRows<'a>, CounterError> {
        let rdr = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        let mut rows = CsvRows {
            path,
            text,
            rdr,
            lines: LineCounter { text, byte: 0, line: 1 },
            head: Table::default(),
            last_row: None,
            done: false,
        };
        let mut rec = csv::StringRecord::new();
        if rows.next_record(&mut rec)?.is_none() {
            return Err(CounterError::new(path, "empty file: no CSV header"));
        }
        rows.head.header = rec.iter().map(|f| f.trim().to_string()).collect();
        Ok(rows)
    }

    /// The next non-blank record (fields untrimmed), its line and byte offset.
    fn next_record(
        &mut self,
        rec: &mut csv::StringRecord,
    ) -> Result<Option<(u64, usize)>, CounterError> {
        loop {
            let more = self.rdr.read_record(rec).map_err(|e| {
                let line = e.position().map_or(0, csv::Position::line);
                CounterError::at_line(self.path, line, format!("malformed CSV: {e}"))
            })?;
            if !more {
                return Ok(None);
            }
            // The line from the byte offset, past the line end the csv reader puts a
            // record's start on after a CRLF (its own line count then runs one behind;
            // rocprofv3 writes CRLF).
            let byte = rec.position().map_or(0, |p| usize::try_from(p.byte()).unwrap_or(0));
            let byte = byte
                + self
                    .text
                    .as_bytes()
                    .get(byte..)
                    .unwrap_or_default()
                    .iter()
                    .take_while(|b| matches!(b, b'\r' | b'\n'))
                    .count();
            let line = self.lines.at(byte);
            if rec.iter().all(|f| f.trim().is_empty()) {
                continue;
            }
            return Ok(Some((line, byte)));
        }
    }

    /// The next data row into `rec` (fields untrimmed) and its line; `None` after the
    /// last, once the end of the file is checked.
    ///
    /// Every row must have the header's number of fields: a longer one is an unquoted
    /// comma, a shorter one a cut row (a truncated file's last line); both are errors
    /// at their line, as is a quote the end of the file leaves open.
    pub fn next_row(&mut self, rec: &mut csv::StringRecord) -> Result<Option<u64>, CounterError> {
        if self.done {
            return Ok(None);
        }
        let Some((line, byte)) = self.next_record(rec)? else {
            self.done = true;
            self.check_end()?;
            return Ok(None);
        };
        let (path, text, width) = (self.path, self.text, self.head.header.len());
        if rec.len() > width {
            return Err(CounterError::at_line(
                path,
                line,
                format!(
                    "{} fields but the header has {width} (an unquoted comma in a kernel name?)",
                    rec.len()
                ),
            ));
        }
        // The tools write every field of every row: a short row is a cut one (a
        // truncated file's last line), whose cells would otherwise be read as
        // absent and its cut kernel name taken for a kernel.
        if rec.len() < width {
            let last = !text.get(byte..).unwrap_or_default().trim_end().contains('\n');
            return Err(CounterError::at_line(
                path,
                line,
                format!(
                    "{} fields but the header has {width}{}",
                    rec.len(),
                    if last { " (the last line ends early: is the file truncated?)" } else { "" }
                ),
            ));
        }
        self.last_row = Some((line, byte));
        Ok(Some(line))
    }

    /// Reads the remaining rows for their checks only.
    pub fn finish(&mut self) -> Result<(), CounterError> {
        let mut rec = csv::StringRecord::new();
        while self.next_row(&mut rec)?.is_some() {}
        Ok(())
    }

    /// A quote left open at the end of the file: the csv reader takes the rest of the
    /// file as the field, so the last row can look whole.
    fn check_end(&self) -> Result<(), CounterError> {
        let text = self.text;
        if let Some((line, byte)) = self.last_row.filter(|_| !text.ends_with('\n')) {
            if split_csv_line(text.get(byte..).unwrap_or_default()).is_none() {
                return Err(CounterError::at_line(
                    self.path,
                    line,
                    "a quoted field is not closed (the file ends inside it: is it truncated?)",
                ));
            }
        }
        Ok(())
    }
}

/// Parses CSV text (RFC 4180 quoting; blank lines skipped; header fields trimmed).
///
/// Every row must have the header's number of fields: a longer one is an unquoted comma,
/// a shorter one a cut row (a truncated file's last line); both are errors at their
/// line, as is a quote the end of the file leaves open.
pub(crate) fn parse_table(path: &Path, text: &str) -> Result<Table, CounterError> {
    let mut rows = CsvRows::new(path, text)?;
    let mut table = Table { header: rows.head.header.clone(), rows: Vec::new() };
    loop {
        let mut rec = csv::StringRecord::new();
        let Some(line) = rows.next_row(&mut rec)? else { break };
        rec.trim();
        table.rows.push((line, rec));
    }
    Ok(table)
}

/// Parses a finite number; `None` for anything else.
pub(crate) fn parse_f64(s: &str) -> Option<f64> {
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    if t.is_empty() || !t.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Parses a non-negative integer, exactly when written as one; values written in
/// exponent notation or with a fraction are rounded (the flag says so).
pub(crate) fn parse_u64(s: &str) -> Option<(u64, bool)> {
    let t = s.trim();
    if let Ok(v) = t.parse::<u64>() {
        return Some((v, false));
    }
    let f = parse_f64(t)?;
    if !(0.0..=1.8e19).contains(&f) {
        return None;
    }
    let exact = f.fract() == 0.0 && !t.contains(['e', 'E']);
    Some((f.round() as u64, !exact))
}

/// A cell of `row`, trimmed (the rows of [`CsvRows`] are not; those of a [`Table`] are
/// already); `None` when empty or past the row.
pub(crate) fn cell(row: &csv::StringRecord, i: Option<usize>) -> Option<&str> {
    i.and_then(|i| row.get(i)).map(str::trim).filter(|s| !s.is_empty())
}

/// An optional numeric cell: absent/empty → `None`, non-numeric → error at line+column.
pub(crate) fn num_cell(
    path: &Path,
    t: &Table,
    line: u64,
    row: &csv::StringRecord,
    i: Option<usize>,
) -> Result<Option<f64>, CounterError> {
    match cell(row, i) {
        None => Ok(None),
        Some(s) => match parse_f64(s) {
            Some(v) => Ok(Some(v)),
            None => Err(non_numeric(path, t, line, i, s)),
        },
    }
}

/// An optional integer cell (see [`parse_u64`]).
pub(crate) fn int_cell(
    path: &Path,
    t: &Table,
    line: u64,
    row: &csv::StringRecord,
    i: Option<usize>,
) -> Result<Option<(u64, bool)>, CounterError> {
    match cell(row, i) {
        None => Ok(None),
        Some(s) => match parse_u64(s) {
            Some(v) => Ok(Some(v)),
            None => Err(non_numeric(path, t, line, i, s)),
        },
    }
}

fn non_numeric(path: &Path, t: &Table, line: u64, i: Option<usize>, s: &str) -> CounterError {
    let field = i.and_then(|i| t.header.get(i)).cloned().unwrap_or_default();
    let shown: String = s.chars().take(40).collect();
    CounterError::at_field(path, line, field, format!("expected a number, found `{shown}`"))
}

/// Column roles of the wide per-dispatch layouts (rocprof v1, rocprofv2 file plugin,
/// rocprof-compute `pmc_perf.csv`, `timestamps.csv`, `SQ_*_LEVEL.csv`).
const ID: &[&str] = &["Index", "Dispatch_ID"];
const NAME: &[&str] = &["KernelName", "Kernel_Name"];
const GPU: &[&str] = &["gpu-id", "GPU_ID"];
const QUEUE: &[&str] = &["queue-id", "Queue_ID"];
const GRID: &[&str] = &["grd", "Grid_Size"];
const WG: &[&str] = &["wgr", "Workgroup_Size"];
const LDS: &[&str] = &["lds", "LDS_Per_Workgroup"];
const SCRATCH: &[&str] = &["scr", "Scratch_Per_Workitem"];
const VGPR: &[&str] = &["arch_vgpr", "vgpr", "Arch_VGPR"];
const AGPR: &[&str] = &["accum_vgpr", "Accum_VGPR"];
const SGPR: &[&str] = &["sgpr", "SGPR"];
const WAVE: &[&str] = &["wave_size", "Wave_Size"];
const BEGIN: &[&str] = &["BeginNs", "Start_Timestamp"];
const END: &[&str] = &["EndNs", "End_Timestamp"];
const DURATION: &[&str] = &["DurationNs"];
/// Metadata columns that are neither roles nor counters.
const OTHER_META: &[&str] = &[
    "queue-index",
    "pid",
    "tid",
    "PID",
    "TID",
    "sig",
    "obj",
    "fbar",
    "DispatchNs",
    "CompleteNs",
    "Correlation_ID",
    "Kernel_ID",
    "XCC_Index",
    "Node_Id",
];

fn is_meta(name: &str) -> bool {
    let all = [ID, NAME, GPU, QUEUE, GRID, WG, LDS, SCRATCH, VGPR, AGPR, SGPR, WAVE, BEGIN, END]
        .into_iter()
        .flatten()
        .chain(DURATION)
        .chain(OTHER_META);
    let mut all = all;
    all.any(|m| m.eq_ignore_ascii_case(name))
}

/// A pass-join duplicate of a metadata column (`wave_size_1`, `Correlation_ID_12`).
fn is_meta_duplicate(name: &str) -> bool {
    match name.rsplit_once('_') {
        Some((base, n)) => !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && is_meta(base),
        None => false,
    }
}

/// What [`wide_dispatches`] had to decide, for the source notes.
#[derive(Debug, Default)]
pub(crate) struct WideNotes {
    pub skipped_duplicates: usize,
    pub bad_durations: usize,
    pub imprecise_timestamps: usize,
    pub synthesized_sums: BTreeSet<String>,
}

impl WideNotes {
    pub fn into_notes(self, file: &str, notes: &mut Vec<String>) {
        let file = Path::new(file).file_name().and_then(|f| f.to_str()).unwrap_or(file);
        if self.skipped_duplicates > 0 {
            notes.push(format!(
                "{file}: {} pass-join duplicate metadata columns (NAME_1, NAME_2 …) ignored",
                self.skipped_duplicates
            ));
        }
        if self.imprecise_timestamps > 0 {
            notes.push(format!(
                "{file}: {} timestamps written in exponent notation (precision lost, e.g. \
                 after a spreadsheet re-save)",
                self.imprecise_timestamps
            ));
        }
        if self.bad_durations > 0 {
            notes.push(format!(
                "{file}: {} dispatches with end <= start: duration unknown",
                self.bad_durations
            ));
        }
        if !self.synthesized_sums.is_empty() {
            let names: Vec<&str> = self.synthesized_sums.iter().map(String::as_str).collect();
            notes.push(format!(
                "{file}: per-instance counters summed into NAME_sum: {}",
                names.join(", ")
            ));
        }
    }
}

/// Reads every row of a wide per-dispatch table into dispatches. Requires a kernel-name
/// column; the dispatch id is the id column or the row order.
pub(crate) fn wide_dispatches(
    path: &Path,
    t: &Table,
    notes: &mut WideNotes,
) -> Result<Vec<Dispatch>, CounterError> {
    let name_i = t.col(NAME).ok_or_else(|| {
        CounterError::at_line(
            path,
            1,
            "missing column: expected `KernelName` (rocprof) or `Kernel_Name` (rocprofv2, \
             rocprof-compute)",
        )
    })?;
    let id_i = t.col(ID);
    let (gpu_i, queue_i) = (t.col(GPU), t.col(QUEUE));
    let (grid_i, wg_i) = (t.col(GRID), t.col(WG));
    let (lds_i, scr_i) = (t.col(LDS), t.col(SCRATCH));
    let (vgpr_i, agpr_i, sgpr_i, wave_i) = (t.col(VGPR), t.col(AGPR), t.col(SGPR), t.col(WAVE));
    let (begin_i, end_i, dur_i) = (t.col(BEGIN), t.col(END), t.col(DURATION));

    // Counter columns, and per-instance groups `NAME[i]` lacking an aggregate column.
    let mut counter_cols: Vec<usize> = Vec::new();
    for (i, h) in t.header.iter().enumerate() {
        if is_meta(h) {
            continue;
        }
        if is_meta_duplicate(h) {
            notes.skipped_duplicates += 1;
            continue;
        }
        if !h.is_empty() {
            counter_cols.push(i);
        }
    }
    let mut instance_groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &i in &counter_cols {
        let h = t.header.get(i).map_or("", String::as_str);
        if let Some((base, rest)) = h.split_once('[') {
            if rest.ends_with(']') {
                instance_groups.entry(base.to_string()).or_default().push(i);
            }
        }
    }
    instance_groups.retain(|base, _| !t.has(&format!("{base}_sum")) && !t.has(base));

    let mut out = Vec::with_capacity(t.rows.len());
    for (row_no, (line, row)) in t.rows.iter().enumerate() {
        let line = *line;
        let mut d = Dispatch {
            name: clean_kernel_name(cell(row, Some(name_i)).unwrap_or("")).into(),
            ..Dispatch::default()
        };
        d.id = match int_cell(path, t, line, row, id_i)? {
            Some((v, _)) => v,
            None => row_no as u64,
        };
        d.gpu = cell(row, gpu_i).map(Into::into);
        d.stream = cell(row, queue_i).map(Into::into);
        let grd = int_cell(path, t, line, row, grid_i)?.map(|v| v.0);
        let wgr = int_cell(path, t, line, row, wg_i)?.map(|v| v.0);
        if let (Some(g), Some(w)) = (grd, wgr) {
            if w > 0 {
                d.grid = Some([g.div_ceil(w), 1, 1]);
                d.block = Some([w, 1, 1]);
            }
        } else if let Some(w) = wgr {
            d.block = Some([w, 1, 1]);
        }
        d.shared_bytes = int_cell(path, t, line, row, lds_i)?.map(|v| v.0);
        d.scratch_bytes = int_cell(path, t, line, row, scr_i)?.map(|v| v.0);
        d.vgprs = int_cell(path, t, line, row, vgpr_i)?.map(|v| v.0 as u32);
        d.agprs = int_cell(path, t, line, row, agpr_i)?.map(|v| v.0 as u32);
        d.sgprs = int_cell(path, t, line, row, sgpr_i)?.map(|v| v.0 as u32);
        d.wave_size = int_cell(path, t, line, row, wave_i)?.map(|v| v.0 as u32);
        let begin = int_cell(path, t, line, row, begin_i)?;
        let end = int_cell(path, t, line, row, end_i)?;
        for (_, imprecise) in [begin, end].into_iter().flatten() {
            if imprecise {
                notes.imprecise_timestamps += 1;
            }
        }
        d.start_ns = begin.map(|v| v.0);
        d.end_ns = end.map(|v| v.0);
        let exact = begin.is_some_and(|v| !v.1) && end.is_some_and(|v| !v.1);
        d.duration_ns = match (num_cell(path, t, line, row, dur_i)?, begin, end) {
            (Some(dur), _, _) if dur > 0.0 => Some(dur),
            (_, Some((b, _)), Some((e, _))) if e > b && exact => Some((e - b) as f64),
            (_, Some(_), Some(_)) => {
                notes.bad_durations += 1;
                None
            }
            _ => None,
        };
        for &i in &counter_cols {
            if let Some(v) = num_cell(path, t, line, row, Some(i))? {
                // A hardware counter counts events: a negative value is no measurement
                // (an edited or corrupt file), and would subtract from every sum it enters.
                if v < 0.0 {
                    let field = t.header.get(i).cloned().unwrap_or_default();
                    return Err(CounterError::at_field(
                        path,
                        line,
                        field,
                        format!(
                            "a counter cannot be negative, found `{}` (is the file edited or \
                             corrupt?)",
                            cell(row, Some(i)).unwrap_or_default()
                        ),
                    ));
                }
                if let Some(h) = t.header.get(i) {
                    d.counters.insert(h.as_str().into(), v);
                }
            }
        }
        for (base, cols) in &instance_groups {
            let vals: Vec<f64> =
                cols.iter().filter_map(|&i| cell(row, Some(i)).and_then(parse_f64)).collect();
            if !vals.is_empty() {
                d.counters.insert(format!("{base}_sum").into(), vals.iter().sum());
                notes.synthesized_sums.insert(base.clone());
            }
        }
        out.push(d);
    }
    Ok(out)
}

/// Reads `results.stats.csv`: `"Name","Calls","TotalDurationNs","AverageNs","Percentage"`.
pub(crate) fn stats_aggregates(path: &Path, t: &Table) -> Result<Vec<ToolAggregate>, CounterError> {
    let need = |names: &[&str], what: &str| {
        t.col(names).ok_or_else(|| {
            CounterError::at_line(path, 1, format!("missing column `{what}` (results.stats.csv)"))
        })
    };
    let name_i = need(&["Name", "KernelName"], "Name")?;
    let calls_i = need(&["Calls"], "Calls")?;
    let total_i = need(&["TotalDurationNs"], "TotalDurationNs")?;
    let avg_i = t.col(&["AverageNs"]);
    let mut out = Vec::new();
    for (line, row) in &t.rows {
        let count = int_cell(path, t, *line, row, Some(calls_i))?.map_or(0, |v| v.0);
        let total_ns = num_cell(path, t, *line, row, Some(total_i))?.unwrap_or(0.0);
        out.push(ToolAggregate {
            name: clean_kernel_name(cell(row, Some(name_i)).unwrap_or("")).to_string(),
            count,
            total_ns,
            mean_ns: num_cell(path, t, *line, row, avg_i)?,
            median_ns: None,
            min_ns: None,
            max_ns: None,
            stddev_ns: None,
        });
    }
    Ok(out)
}

fn is_stats_table(t: &Table) -> bool {
    t.has("Calls") && t.has("TotalDurationNs")
}

fn empty_set(format: CounterFormat, files: Vec<String>) -> CounterSet {
    CounterSet {
        source: CounterSource { format, files, tool_version: None, notes: Vec::new() },
        device: DeviceInfo::default(),
        measured_roofs: Vec::new(),
        dispatches: Vec::new(),
        aggregates: Vec::new(),
        activity: None,
    }
}

/// Reads one rocprof CSV given as text (`name` names it in errors).
pub fn read_str(name: &str, text: &str) -> Result<CounterSet, CounterError> {
    let path = Path::new(name);
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let t = parse_table(path, text)?;
    if is_stats_table(&t) {
        let mut set = empty_set(CounterFormat::RocprofStats, vec![name.to_string()]);
        set.aggregates = stats_aggregates(path, &t)?;
        return Ok(set);
    }
    let mut set = empty_set(CounterFormat::RocprofV1, vec![name.to_string()]);
    let mut wn = WideNotes::default();
    set.dispatches = wide_dispatches(path, &t, &mut wn)?;
    wn.into_notes(name, &mut set.source.notes);
    Ok(set)
}

/// The `pmc:` lines of an `input.txt`, one per pass.
pub(crate) fn pmc_lines(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| l.strip_prefix("pmc:").or_else(|| l.strip_prefix("pmc :")))
        .map(|rest| {
            rest.split([' ', ',', '\t']).filter(|s| !s.is_empty()).map(str::to_string).collect()
        })
        .filter(|v: &Vec<String>| !v.is_empty())
        .collect()
}

fn note_input_txt(dir: &Path, set: &mut CounterSet) {
    let p = dir.join("input.txt");
    if let Ok(text) = read_text(&p) {
        let passes = pmc_lines(&text);
        if !passes.is_empty() {
            set.source.files.push(p.display().to_string());
            set.source.notes.push(format!(
                "input.txt requests {} pass(es): {}",
                passes.len(),
                passes.iter().map(|p| p.join(" ")).collect::<Vec<_>>().join(" | ")
            ));
        }
    }
}

fn csv_files(dir: &Path) -> Result<Vec<PathBuf>, CounterError> {
    let rd = std::fs::read_dir(dir).map_err(|e| CounterError::io(dir, &e))?;
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
            p.is_file() && super::has_extension(crate::compressed::name_without_gz(n), &["csv"])
        })
        .collect();
    v.sort();
    Ok(v)
}

/// Joins passes by dispatch id; kernel names must agree per id.
fn join_passes(
    base: &mut Vec<Dispatch>,
    pass: Vec<Dispatch>,
    pass_path: &Path,
) -> Result<(), CounterError> {
    let mut by_id: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, d) in base.iter().enumerate() {
        by_id.insert(d.id, i);
    }
    for d in pass {
        if let Some(b) = by_id.get(&d.id).and_then(|&i| base.get_mut(i)) {
            if b.name != d.name {
                return Err(CounterError::new(
                    pass_path,
                    format!(
                        "passes disagree at dispatch {}: `{}` here, `{}` in an earlier \
                         pass (the application is not deterministic; passes cannot be \
                         joined)",
                        d.id, d.name, b.name
                    ),
                ));
            }
            for (k, v) in d.counters {
                b.counters.entry(k).or_insert(v);
            }
            if b.duration_ns.is_none() {
                b.duration_ns = d.duration_ns;
                b.start_ns = b.start_ns.or(d.start_ns);
                b.end_ns = b.end_ns.or(d.end_ns);
            }
        } else {
            by_id.insert(d.id, base.len());
            base.push(d);
        }
    }
    Ok(())
}

/// Reads a rocprof CSV file, or a directory of them (passes joined by dispatch index).
pub fn read(path: &Path) -> Result<CounterSet, CounterError> {
    if !path.is_dir() {
        let text = read_text(path)?;
        let mut set = read_str(&path.display().to_string(), &text)?;
        set.source.files = vec![path.display().to_string()];
        if let Some(dir) = path.parent() {
            note_input_txt(dir, &mut set);
        }
        return Ok(set);
    }
    let mut dispatch_files: Vec<(PathBuf, Table)> = Vec::new();
    let mut stats: Option<(PathBuf, Table)> = None;
    for p in csv_files(path)? {
        let fname = p.file_name().and_then(|f| f.to_str()).unwrap_or("").to_ascii_lowercase();
        if fname.contains("hip_stats")
            || fname.contains("copy_stats")
            || fname.contains("hsa_stats")
        {
            continue;
        }
        let Ok(text) = read_text(&p) else { continue };
        let Ok(t) = parse_table(&p, &text) else { continue };
        if is_stats_table(&t) {
            stats = Some((p, t));
        } else if t.col(NAME).is_some() && t.col(ID).is_some() && !t.has("Counter_Name") {
            dispatch_files.push((p, t));
        }
    }
    if dispatch_files.is_empty() {
        let Some((p, t)) = stats else {
            return Err(CounterError::unknown(
                path,
                "no rocprof CSV here (expected a per-dispatch CSV with `Index`/`KernelName` \
                 columns or a results.stats.csv)",
            ));
        };
        let mut set = empty_set(CounterFormat::RocprofStats, vec![p.display().to_string()]);
        set.aggregates = stats_aggregates(&p, &t)?;
        note_input_txt(path, &mut set);
        return Ok(set);
    }
    let mut set = empty_set(CounterFormat::RocprofV1, Vec::new());
    let n_passes = dispatch_files.len();
    for (p, t) in dispatch_files {
        let mut wn = WideNotes::default();
        let ds = wide_dispatches(&p, &t, &mut wn)?;
        let label = p.display().to_string();
        wn.into_notes(&label, &mut set.source.notes);
        join_passes(&mut set.dispatches, ds, &p)?;
        set.source.files.push(label);
    }
    if n_passes > 1 {
        set.source.notes.push(format!("{n_passes} per-dispatch CSVs joined by dispatch index"));
    }
    if let Some((p, _)) = stats {
        set.source.notes.push(format!(
            "{} not read: per-dispatch rows are present",
            p.file_name().and_then(|f| f.to_str()).unwrap_or("results.stats.csv")
        ));
    }
    note_input_txt(path, &mut set);
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_f64("2048.0"), Some(2048.0));
        assert_eq!(parse_f64(" 1e3 "), Some(1000.0));
        assert_eq!(parse_f64("inf"), None);
        assert_eq!(parse_f64("NaN"), None);
        assert_eq!(parse_f64("0x7f"), None);
        assert_eq!(parse_u64("1411551767635712"), Some((1_411_551_767_635_712, false)));
        assert_eq!(parse_u64("8.1097E+14"), Some((810_970_000_000_000, true)));
        assert_eq!(parse_u64("-1"), None);
    }

    #[test]
    fn old_header_and_instances() {
        let text = "Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,vgpr,\
                    sgpr,fbar,sig,TCC_HIT[0],TCC_HIT[1],SQ_WAVES,BeginNs,EndNs\n\
                    0,\"k(int, float) [clone .kd]\",4,0,0,1,1,1024,256,0,0,8,16,0,0x0,3,4,16,100,350\n";
        let set = read_str("r.csv", text).unwrap();
        let d = &set.dispatches[0];
        assert_eq!(&*d.name, "k(int, float)");
        assert_eq!(d.grid, Some([4, 1, 1]));
        assert_eq!(d.vgprs, Some(8));
        assert_eq!(d.duration_ns, Some(250.0));
        assert_eq!(d.counter("TCC_HIT_sum"), Some(7.0));
        assert_eq!(d.counter("SQ_WAVES"), Some(16.0));
        assert!(d.counter("fbar").is_none());
    }

    #[test]
    fn pmc() {
        let p = pmc_lines("# c\npmc: SQ_WAVES GRBM_COUNT\nrange: 0:1\npmc:TCC_HIT,TCC_MISS\n");
        assert_eq!(p, vec![vec!["SQ_WAVES", "GRBM_COUNT"], vec!["TCC_HIT", "TCC_MISS"]]);
    }
}
