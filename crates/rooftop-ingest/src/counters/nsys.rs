//! `nsys stats --format csv` output → [`CounterSet`]: the `cuda_gpu_kern_sum` report
//! (per kernel name, into [`ToolAggregate`]s) and the `cuda_gpu_trace` report (per launch,
//! into [`Dispatch`]es), under their current or their old (≤ 2023: `gpukernsum`,
//! `gputrace`) names and column sets.
//!
//! Layout and traps
//! (docs/reference/input-formats.md#nsight-systems-nsys-stats-csv-and-the-sqlite-export):
//! - everything before a header whose first cell starts with `Time (%)` or `Start (` is
//!   skipped (`Generating SQLite file…`, `Processing [...] with [...]...`, `NOTICE:`,
//!   `SKIPPED:`, blank lines); a blank line ends a table, and several reports may follow
//!   each other in one stream; tables of other reports (`cuda_api_sum`, `cuda_api_trace`,
//!   `cuda_gpu_mem_time_sum`) are skipped with a note;
//! - the time unit is in the header (`(ns)`, `(us)`, `(ms)`, `(s)`), changed by
//!   `--timeunit`; every time is converted to ns;
//! - the trace's shared memory is in MB with 3 decimals (`StcSMem (MB)`, `DymSMem (MB)`),
//!   read as 10⁶ bytes, so it is exact only to ±500 bytes per column: a note says so;
//! - memcpy / memset rows (`[CUDA memcpy Host-to-Device]`, `[CUDA memset]`, empty
//!   grid) are not kernels: they are counted in a note and left out.
//!
//! nsys has no per-kernel counters: dispatches carry duration and launch configuration
//! only.

use super::csvline::{parse_number, parse_u64, split_csv_line};
use super::text::read_text;
use super::CounterError;
use rooftop_core::counters::{
    CounterFormat, CounterSet, CounterSource, DeviceInfo, Dim3, Dispatch, ToolAggregate,
};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::Path;

/// Reads an `nsys stats --format csv` file (`cuda_gpu_kern_sum` or `cuda_gpu_trace`).
pub fn read(path: &Path) -> Result<CounterSet, CounterError> {
    let text = read_text(path)?;
    parse(path, &text)
}

/// Reads `nsys stats` CSV text; `name` stands for the file in errors and notes.
pub fn read_str(name: &str, text: &str) -> Result<CounterSet, CounterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    parse(Path::new(name), text)
}

/// Header cell without spaces, lower case, unit parenthesis removed: `Total Time (ns)`
/// → `totaltime`.
fn key(cell: &str) -> String {
    let base = cell.split('(').next().unwrap_or(cell);
    base.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase()
}

/// The text inside a header cell's last parentheses: `Avg (us)` → `us`.
fn paren_unit(cell: &str) -> Option<&str> {
    let open = cell.rfind('(')?;
    let close = cell[open..].find(')')? + open;
    Some(cell[open + 1..close].trim())
}

/// An nsys time unit → ns.
fn time_unit_ns(u: &str) -> Option<f64> {
    Some(match u {
        "ns" | "nsec" => 1.0,
        "us" | "usec" | "µs" => 1e3,
        "ms" | "msec" => 1e6,
        "s" | "sec" => 1e9,
        _ => return None,
    })
}

/// An nsys memory-size unit → bytes (decimal MB, as nsys prints `Bytes (MB)`).
fn mem_unit_bytes(u: &str) -> Option<f64> {
    Some(match u {
        "B" | "b" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1_048_576.0,
        "GiB" => 1_073_741_824.0,
        _ => return None,
    })
}

#[derive(Debug)]
struct Header {
    line: u64,
    cells: Vec<String>,
}

impl Header {
    fn find(&self, keys: &[&str]) -> Option<usize> {
        self.cells.iter().position(|c| keys.contains(&key(c).as_str()))
    }

    fn need(
        &self,
        path: &Path,
        keys: &[&str],
        shown: &str,
        report: &str,
    ) -> Result<usize, CounterError> {
        self.find(keys).ok_or_else(|| {
            CounterError::at_field(
                path,
                self.line,
                shown,
                format!("the {report} header has no `{shown}` column"),
            )
        })
    }

    /// The ns factor of column `c`'s unit, or of `fallback`'s when `c` has none.
    fn time_factor(&self, path: &Path, c: usize, fallback: f64) -> Result<f64, CounterError> {
        let cell = &self.cells[c];
        match paren_unit(cell) {
            None => Ok(fallback),
            Some(u) => time_unit_ns(u).ok_or_else(|| {
                CounterError::at_field(
                    path,
                    self.line,
                    cell.trim(),
                    format!("expected a time unit (ns, us, ms, s) in the header, found `{u}`"),
                )
            }),
        }
    }
}

#[derive(Debug)]
struct KernSum {
    header: Vec<String>,
    n: usize,
    name: usize,
    count: usize,
    total: (usize, f64),
    mean: Option<(usize, f64)>,
    median: Option<(usize, f64)>,
    min: Option<(usize, f64)>,
    max: Option<(usize, f64)>,
    stddev: Option<(usize, f64)>,
}

#[derive(Debug)]
struct Trace {
    n: usize,
    start: Option<(usize, f64)>,
    duration: (usize, f64),
    grid: [usize; 3],
    block: [Option<usize>; 3],
    regs: Option<usize>,
    smem: [Option<(usize, f64)>; 2],
    device: Option<usize>,
    stream: Option<usize>,
    name: usize,
}

#[derive(Debug)]
enum Table {
    KernSum(KernSum),
    Trace(Trace),
    /// Another report's table, skipped.
    Other,
}

#[derive(Debug, Default)]
struct State {
    aggregates: Vec<ToolAggregate>,
    dispatches: Vec<Dispatch>,
    skipped_lines: usize,
    other_tables: usize,
    memcpy_rows: usize,
    memset_rows: usize,
    time_units: BTreeSet<String>,
    smem_rounded: bool,
    old_names: bool,
}

fn is_header(f: &[Cow<str>]) -> bool {
    let first = f.first().map_or("", |s| s.trim());
    let k = key(first);
    (k == "time" && first.contains('%')) || (k == "start" && f.len() > 2)
}

fn classify(path: &Path, h: &Header, st: &mut State) -> Result<Table, CounterError> {
    const KS: &str = "cuda_gpu_kern_sum";
    const TR: &str = "cuda_gpu_trace";
    let first = key(&h.cells[0]);
    let time_col = |c: usize, fb: f64| -> Result<(usize, f64), CounterError> {
        Ok((c, h.time_factor(path, c, fb)?))
    };
    if first == "time" {
        if h.find(&["instances"]).is_none() {
            return Ok(Table::Other);
        }
        let total_c = h.need(path, &["totaltime"], "Total Time (ns)", KS)?;
        let total = time_col(total_c, 1.0)?;
        if let Some(u) = paren_unit(&h.cells[total_c]) {
            st.time_units.insert(u.to_string());
        }
        if h.find(&["average", "minimum", "maximum"]).is_some() {
            st.old_names = true;
        }
        let opt = |keys: &[&str]| -> Result<Option<(usize, f64)>, CounterError> {
            h.find(keys).map(|c| time_col(c, total.1)).transpose()
        };
        return Ok(Table::KernSum(KernSum {
            header: h.cells.clone(),
            n: h.cells.len(),
            name: h.need(path, &["name"], "Name", KS)?,
            count: h.need(path, &["instances"], "Instances", KS)?,
            total,
            mean: opt(&["avg", "average"])?,
            median: opt(&["med", "median"])?,
            min: opt(&["min", "minimum"])?,
            max: opt(&["max", "maximum"])?,
            stddev: opt(&["stddev"])?,
        }));
    }
    // `Start (…)`: the GPU trace has grid columns; `cuda_api_trace` does not.
    if h.find(&["grdx"]).is_none() {
        return Ok(Table::Other);
    }
    let start_c = 0;
    let start = time_col(start_c, 1.0)?;
    if let Some(u) = paren_unit(&h.cells[start_c]) {
        st.time_units.insert(u.to_string());
    }
    let dur_c = h.need(path, &["duration"], "Duration (ns)", TR)?;
    let duration = time_col(dur_c, start.1)?;
    let smem = |keys: &[&str]| -> Result<Option<(usize, f64)>, CounterError> {
        let Some(c) = h.find(keys) else { return Ok(None) };
        let cell = &h.cells[c];
        let f = match paren_unit(cell) {
            None => 1.0,
            Some(u) => mem_unit_bytes(u).ok_or_else(|| {
                CounterError::at_field(
                    path,
                    h.line,
                    cell.trim(),
                    format!("expected a size unit (B, KB, MB, GB) in the header, found `{u}`"),
                )
            })?,
        };
        Ok(Some((c, f)))
    };
    Ok(Table::Trace(Trace {
        n: h.cells.len(),
        start: Some(start),
        duration,
        grid: [
            h.need(path, &["grdx"], "GrdX", TR)?,
            h.need(path, &["grdy"], "GrdY", TR)?,
            h.need(path, &["grdz"], "GrdZ", TR)?,
        ],
        block: [h.find(&["blkx"]), h.find(&["blky"]), h.find(&["blkz"])],
        regs: h.find(&["reg/trd"]),
        smem: [smem(&["stcsmem"])?, smem(&["dymsmem"])?],
        device: h.find(&["device"]),
        stream: h.find(&["strm"]),
        name: h.need(path, &["name"], "Name", TR)?,
    }))
}

/// Lines nsys writes around its tables.
fn is_noise(t: &str) -> bool {
    ["Processing", "NOTICE", "SKIPPED", "Generating", "Exporting", "WARNING", "ERROR", "Report"]
        .iter()
        .any(|p| t.starts_with(p))
}

fn parse(path: &Path, text: &str) -> Result<CounterSet, CounterError> {
    if text.trim().is_empty() {
        return Err(CounterError::new(path, "the file is empty (expected nsys stats CSV)"));
    }
    let mut st = State::default();
    let mut table: Option<(Table, u64)> = None;
    let mut tables = 0usize;
    for (i, line) in text.lines().enumerate() {
        let ln = i as u64 + 1;
        // Files concatenated with `cat` keep each one's BOM.
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        let t = line.trim();
        if t.is_empty() {
            table = None;
            continue;
        }
        let fields = split_csv_line(line);
        if let Some(f) = &fields {
            if is_header(f) {
                let h = Header { line: ln, cells: f.iter().map(ToString::to_string).collect() };
                let tb = classify(path, &h, &mut st)?;
                if matches!(tb, Table::Other) {
                    st.other_tables += 1;
                } else {
                    tables += 1;
                }
                table = Some((tb, ln));
                continue;
            }
        }
        let Some((tb, header_line)) = &table else {
            st.skipped_lines += 1;
            continue;
        };
        let n = match tb {
            Table::KernSum(k) => k.n,
            Table::Trace(t) => t.n,
            Table::Other => continue,
        };
        let f = match fields {
            Some(f) if f.len() == n => f,
            _ if is_noise(t) => {
                st.skipped_lines += 1;
                table = None;
                continue;
            }
            Some(f) => {
                return Err(CounterError::at_line(
                    path,
                    ln,
                    format!(
                        "expected {n} comma-separated fields as in the header on line \
                         {header_line}, found {}",
                        f.len()
                    ),
                ))
            }
            None => return Err(CounterError::at_line(path, ln, "a quoted field is not closed")),
        };
        match tb {
            Table::KernSum(k) => kern_sum_row(path, ln, k, &f, &mut st)?,
            Table::Trace(tr) => trace_row(path, ln, tr, &f, &mut st)?,
            Table::Other => {}
        }
    }
    if tables == 0 {
        let why = if st.other_tables > 0 {
            "found only tables of other reports; expected `cuda_gpu_kern_sum` (a `Time (%)` \
             header with `Instances`) or `cuda_gpu_trace` (a `Start (ns)` header with `GrdX`)"
        } else {
            "no nsys stats CSV header found (expected a line starting with `Time (%)` for \
             cuda_gpu_kern_sum or `Start (ns)` for cuda_gpu_trace)"
        };
        return Err(CounterError::new(path, why));
    }
    Ok(finish(path, st))
}

fn number(
    path: &Path,
    ln: u64,
    header: &str,
    v: &str,
    required: bool,
) -> Result<Option<f64>, CounterError> {
    let t = v.trim();
    if t.is_empty() && !required {
        return Ok(None);
    }
    parse_number(t).map(Some).ok_or_else(|| {
        CounterError::at_field(path, ln, header, format!("expected a number, found `{t}`"))
    })
}

fn kern_sum_row(
    path: &Path,
    ln: u64,
    k: &KernSum,
    f: &[Cow<str>],
    st: &mut State,
) -> Result<(), CounterError> {
    let count_text = f[k.count].trim();
    let count = parse_u64(count_text).ok_or_else(|| {
        CounterError::at_field(
            path,
            ln,
            "Instances",
            format!("expected a launch count (an integer), found `{count_text}`"),
        )
    })?;
    let time = |c: (usize, f64), required: bool| -> Result<Option<f64>, CounterError> {
        Ok(number(path, ln, k.header[c.0].trim(), &f[c.0], required)?.map(|v| v * c.1))
    };
    let opt = |c: Option<(usize, f64)>| c.map_or(Ok(None), |c| time(c, false));
    st.aggregates.push(ToolAggregate {
        name: f[k.name].trim().to_string(),
        count,
        total_ns: time(k.total, true)?.unwrap_or(0.0),
        mean_ns: opt(k.mean)?,
        median_ns: opt(k.median)?,
        min_ns: opt(k.min)?,
        max_ns: opt(k.max)?,
        stddev_ns: opt(k.stddev)?,
    });
    Ok(())
}

fn trace_row(
    path: &Path,
    ln: u64,
    t: &Trace,
    f: &[Cow<str>],
    st: &mut State,
) -> Result<(), CounterError> {
    let name = f[t.name].trim();
    let grid_empty = t.grid.iter().all(|&c| f[c].trim().is_empty());
    if name.starts_with('[') && (grid_empty || name.starts_with("[CUDA mem")) {
        if name.to_ascii_lowercase().contains("memset") {
            st.memset_rows += 1;
        } else {
            st.memcpy_rows += 1;
        }
        return Ok(());
    }
    let duration = number(path, ln, "Duration", &f[t.duration.0], true)?.map(|v| v * t.duration.1);
    let start_ns = match t.start {
        Some((c, fac)) => number(path, ln, "Start", &f[c], false)?
            .map(|v| v * fac)
            .filter(|v| *v >= 0.0 && *v < 1.8e19)
            .map(|v| v.round() as u64),
        None => None,
    };
    let end_ns = match (start_ns, duration) {
        (Some(s), Some(d)) if (0.0..1.8e19).contains(&d) => s.checked_add(d.round() as u64),
        _ => None,
    };
    let dim = |cols: [Option<usize>; 3], label: &str| -> Result<Option<Dim3>, CounterError> {
        let mut out = [0u64; 3];
        for (o, c) in out.iter_mut().zip(cols) {
            let Some(c) = c else { return Ok(None) };
            let v = f[c].trim();
            if v.is_empty() {
                return Ok(None);
            }
            *o = parse_u64(v).ok_or_else(|| {
                CounterError::at_field(
                    path,
                    ln,
                    label,
                    format!("expected a launch dimension (an integer), found `{v}`"),
                )
            })?;
        }
        Ok(Some(out))
    };
    let grid = dim([Some(t.grid[0]), Some(t.grid[1]), Some(t.grid[2])], "GrdX/GrdY/GrdZ")?;
    let block = dim(t.block, "BlkX/BlkY/BlkZ")?;
    let vgprs = match t.regs {
        Some(c) if !f[c].trim().is_empty() => {
            let v = f[c].trim();
            Some(parse_u64(v).and_then(|r| u32::try_from(r).ok()).ok_or_else(|| {
                CounterError::at_field(
                    path,
                    ln,
                    "Reg/Trd",
                    format!("expected registers per thread (an integer), found `{v}`"),
                )
            })?)
        }
        _ => None,
    };
    let mut smem_parts = Vec::new();
    for (s, label) in t.smem.iter().zip(["StcSMem", "DymSMem"]) {
        if let Some((c, fac)) = s {
            if let Some(v) = number(path, ln, label, &f[*c], false)? {
                if *fac > 1.0 {
                    st.smem_rounded = true;
                }
                smem_parts.push(v * fac);
            }
        }
    }
    let shared_bytes = (smem_parts.len() == 2)
        .then(|| smem_parts.iter().sum::<f64>())
        .filter(|v| *v >= 0.0 && *v < 1.8e19)
        .map(|v| v.round() as u64);
    let text = |c: Option<usize>| c.map(|c| f[c].trim().to_string()).filter(|s| !s.is_empty());
    st.dispatches.push(Dispatch {
        id: st.dispatches.len() as u64,
        name: name.into(),
        gpu: text(t.device).map(Into::into),
        stream: text(t.stream).map(Into::into),
        start_ns,
        end_ns,
        duration_ns: duration,
        grid,
        block,
        vgprs,
        shared_bytes,
        ..Dispatch::default()
    });
    Ok(())
}

/// `NVIDIA H100 80GB HBM3 (0)` → `NVIDIA H100 80GB HBM3`.
fn device_name(s: &str) -> &str {
    let t = s.trim();
    if let Some(open) = t.rfind(" (") {
        let inner = &t[open + 2..];
        if inner
            .strip_suffix(')')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            return t[..open].trim_end();
        }
    }
    t
}

fn finish(path: &Path, st: State) -> CounterSet {
    let mut notes = Vec::new();
    if st.skipped_lines > 0 {
        notes.push(format!(
            "skipped {} lines around the CSV tables (nsys messages: Generating, Processing, \
             NOTICE, SKIPPED)",
            st.skipped_lines
        ));
    }
    if st.other_tables > 0 {
        notes.push(format!(
            "skipped {} tables of other nsys reports (neither cuda_gpu_kern_sum nor \
             cuda_gpu_trace)",
            st.other_tables
        ));
    }
    let units: Vec<&str> =
        st.time_units.iter().map(String::as_str).filter(|u| *u != "ns").collect();
    if !units.is_empty() {
        notes.push(format!("times were written in {} and converted to ns", units.join(", ")));
    }
    if st.old_names {
        notes.push("old (≤ 2023 `gpukernsum`) column names: Average, Minimum, Maximum".into());
    }
    if st.memcpy_rows + st.memset_rows > 0 {
        notes.push(format!(
            "left out {} memcpy and {} memset rows (not kernels)",
            st.memcpy_rows, st.memset_rows
        ));
    }
    if st.smem_rounded {
        notes.push(
            "shared memory per block comes from StcSMem/DymSMem written in MB with 3 decimals, \
             read as 10^6 bytes: each is exact only to ±500 bytes (the SQLite export has exact \
             bytes)"
                .into(),
        );
    }
    let (format, aggregates) = if st.dispatches.is_empty() {
        (CounterFormat::NsysKernSum, st.aggregates)
    } else {
        if !st.aggregates.is_empty() {
            notes.push(format!(
                "the file also holds a cuda_gpu_kern_sum table ({} kernels); the per-launch \
                 cuda_gpu_trace rows are used instead",
                st.aggregates.len()
            ));
        }
        (CounterFormat::NsysGpuTrace, Vec::new())
    };
    let names: BTreeSet<&str> =
        st.dispatches.iter().filter_map(|d| d.gpu.as_deref()).map(device_name).collect();
    let mut device = DeviceInfo::default();
    if let Some(first) = names.iter().next() {
        device.name = Some((*first).to_string());
        if names.len() > 1 {
            notes.push(format!(
                "kernels ran on {} devices ({}); the device name is the first",
                names.len(),
                names.iter().copied().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    CounterSet {
        source: CounterSource {
            format,
            files: vec![path.display().to_string()],
            tool_version: None,
            notes,
        },
        device,
        measured_roofs: Vec::new(),
        dispatches: st.dispatches,
        aggregates,
        activity: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_cells() {
        assert_eq!(key("Total Time (ns)"), "totaltime");
        assert_eq!(key("Reg/Trd"), "reg/trd");
        assert_eq!(paren_unit("Avg (us)"), Some("us"));
        assert_eq!(paren_unit("Time (%)"), Some("%"));
        assert_eq!(paren_unit("Name"), None);
    }

    #[test]
    fn device_names() {
        assert_eq!(device_name("NVIDIA H100 80GB HBM3 (0)"), "NVIDIA H100 80GB HBM3");
        assert_eq!(device_name("GPU"), "GPU");
        assert_eq!(device_name("Tesla (rev A)"), "Tesla (rev A)");
    }
}
