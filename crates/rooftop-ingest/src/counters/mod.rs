//! Readers of vendor profiler outputs with hardware counters → [`CounterSet`].
//!
//! One module per format, plus [`guess`], which looks at a path (file or directory) and
//! its first bytes and names the format, as inferno's collapse `guess` does:
//! - [`rocprof`]: rocprof v1 / rocprofv2 `results.csv` / counter CSVs (one row per
//!   dispatch), `input.txt` `pmc:` lines, `results.stats.csv`;
//! - [`rocprofv3`]: `kernel_trace.csv` (early and current column sets),
//!   `counter_collection.csv` (long format, pivoted per dispatch), `results.json`;
//! - [`rocprof_compute`]: rocprof-compute / Omniperf workload folders;
//! - [`ncu`]: Nsight Compute CSV (raw page, details page, `--metrics` long format);
//! - [`nsys`]: `nsys stats --format csv` reports `cuda_gpu_kern_sum`, `cuda_gpu_trace`;
//! - [`nsys_sqlite`]: `nsys export --type sqlite` databases;
//! - [`rocpd`]: rocprofv3 rocpd databases (`--output-format rocpd`).
//!
//! Every file may be gzip-compressed (told by its first bytes, see
//! [`crate::compressed`]); SQLite databases are told by their 16-byte header and then
//! by their tables.
//!
//! Readers normalise (base units, grid in blocks, names without `.kd`) and never derive:
//! the formulas live in `rooftop_core::counters`.

mod csvline;
pub mod error;
pub mod ncu;
mod ncu_units;
pub mod nsys;
pub mod nsys_sqlite;
pub mod rocpd;
pub mod rocprof;
pub mod rocprof_compute;
pub mod rocprofv3;
mod sqlite;
mod text;

pub use error::CounterError;

use rooftop_core::counters::{CounterFormat, CounterSet};
use std::path::Path;

/// Names the format of `path` (a file or a directory), or says why it cannot.
///
/// Directories: a rocprof-compute workload has `pmc_perf.csv` beside `sysinfo.csv` or
/// `roofline.csv`; rocprofv3 writes `*kernel_trace.csv` / `*counter_collection.csv` /
/// `*results.json` (possibly one level down, under the host name); anything else is
/// judged by its CSV files. Files: by the first header line after any preamble.
pub fn guess(path: &Path) -> Result<CounterFormat, CounterError> {
    let meta = std::fs::metadata(path).map_err(|e| CounterError::io(path, &e))?;
    if meta.is_dir() {
        return guess_dir(path);
    }
    let name = file_name(path);
    if name == "pmc_perf.csv" {
        return Ok(CounterFormat::RocprofCompute);
    }
    // Side files of a profiler's output directory: point at what to pass instead.
    let dir = path.parent().map_or_else(|| ".".to_string(), |p| p.display().to_string());
    let side = match name.as_str() {
        "sysinfo.csv" | "roofline.csv" | "pmc_kernel_top.csv" => Some(format!(
            "this is a rocprof-compute workload's {name}, not its counters: pass the workload \
             folder ({dir})"
        )),
        n if n.ends_with("memory_copy_trace.csv")
            || n.ends_with("agent_info.csv")
            || n.ends_with("hip_api_trace.csv") =>
        {
            Some(format!(
                "this rocprofv3 file has no kernel dispatches: pass the kernel_trace.csv or \
                 counter_collection.csv beside it, or the output folder ({dir})"
            ))
        }
        _ => None,
    };
    if let Some(msg) = side {
        return Err(CounterError::new(path, msg));
    }
    if let Some(msg) = binary_report(path, &name) {
        return Err(CounterError::new(path, msg));
    }
    let head_bytes = text::read_head_bytes(path, 256 << 10)?;
    if sqlite::is_sqlite(&head_bytes) {
        return guess_sqlite(path);
    }
    let head =
        String::from_utf8_lossy(head_bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&head_bytes))
            .into_owned();
    if head.trim().is_empty() {
        return Err(CounterError::new(path, "the file is empty: expected profiler output"));
    }
    if let Some(msg) = trace_file(path, &head) {
        return Err(CounterError::new(path, msg));
    }
    guess_text(&name, &head).ok_or_else(|| {
        CounterError::unknown(
            path,
            "not a counter file rooftop knows: expected a rocprof results.csv / \
             results.stats.csv, a rocprofv3 kernel_trace.csv / counter_collection.csv / \
             results.json or rocpd database, a rocprof-compute workload folder, an Nsight \
             Compute CSV (--csv), an `nsys stats --format csv` report or an `nsys export \
             --type sqlite` database",
        )
    })
}

/// What to run instead for a trace (PyTorch profiler / Kineto, JAX or TensorFlow trace
/// viewer JSON) given to `rooftop counters`: `rooftop trace` reads those.
fn trace_file(path: &Path, head: &str) -> Option<String> {
    let t = head.trim_start();
    let json = t.starts_with('{') || t.starts_with('[');
    let chrome = head.contains("\"traceEvents\"") || head.contains("\"displayTimeUnit\"");
    (json && chrome && !head.contains("rocprofiler-sdk-tool")).then(|| {
        format!(
            "this is a trace (PyTorch profiler / Kineto or JAX trace-viewer JSON), not hardware \
             counters: `rooftop trace {}` reads it (ops, kernels, roofline per op); `rooftop \
             counters` reads Nsight Compute, Nsight Systems and rocprof outputs",
            path.display()
        )
    })
}

/// The tools' binary reports, which rooftop cannot read, with the command that exports
/// them to something it can.
fn binary_report(path: &Path, name: &str) -> Option<String> {
    let shown = path.display();
    if has_extension(name, &["nsys-rep", "qdrep"]) {
        return Some(format!(
            "an Nsight Systems report is a binary rooftop cannot read: export it with `nsys \
             export --type sqlite --output report.sqlite {shown}` and pass report.sqlite"
        ));
    }
    if name.ends_with(".xplane.pb") {
        return Some(format!(
            "this is a JAX / TensorFlow profile (XPlane), not hardware counters: `rooftop trace \
             {shown}` reads it"
        ));
    }
    if has_extension(name, &["ncu-rep"]) {
        return Some(format!(
            "an Nsight Compute report is a binary rooftop cannot read: export it with `ncu \
             --import {shown} --csv --page details > report.csv` (or `--page raw`) and pass \
             report.csv"
        ));
    }
    None
}

/// The format of a SQLite database, by its tables.
fn guess_sqlite(path: &Path) -> Result<CounterFormat, CounterError> {
    let conn = sqlite::open(path)?;
    let tables = sqlite::tables(path, &conn)?;
    if nsys_sqlite::is_nsys(&tables) {
        return Ok(CounterFormat::NsysSqlite);
    }
    if rocpd::is_rocpd(&tables) {
        return Ok(CounterFormat::Rocpd);
    }
    let some: Vec<&str> = tables.iter().map(String::as_str).take(8).collect();
    Err(CounterError::unknown(
        path,
        format!(
            "a SQLite database rooftop does not know (tables: {}): expected an `nsys export \
             --type sqlite` database (CUPTI_ACTIVITY_KIND_KERNEL, StringIds) or a rocprofv3 \
             rocpd database (rocpd_kernel_dispatch, rocpd_info_agent)",
            if some.is_empty() { "none".to_string() } else { some.join(", ") }
        ),
    ))
}

/// The SQLite databases directly in `dir` (`<pid>_results.db`, `report.sqlite`).
fn databases_in(dir: &Path) -> Result<Vec<std::path::PathBuf>, CounterError> {
    let mut out = Vec::new();
    for p in files_in(dir)? {
        if has_extension(&file_name(&p), &["db", "sqlite", "sqlite3"])
            && text::read_head_bytes(&p, 16).is_ok_and(|h| sqlite::is_sqlite(&h))
        {
            out.push(p);
        }
    }
    Ok(out)
}

/// The format a file's name and first bytes show.
pub fn guess_text(name: &str, head: &str) -> Option<CounterFormat> {
    let head = head.strip_prefix('\u{feff}').unwrap_or(head);
    if head.trim_start().starts_with('{') {
        return head.contains("rocprofiler-sdk-tool").then_some(CounterFormat::Rocprofv3Json);
    }
    for line in head.lines().take(400) {
        let l = line.trim_start_matches('\u{feff}').trim();
        let unquoted: String = l.chars().filter(|c| *c != '"').collect();
        let has = |col: &str| unquoted.split(',').any(|c| c.trim() == col);
        if unquoted.starts_with("Time (%)") {
            return Some(CounterFormat::NsysKernSum);
        }
        if unquoted.starts_with("Start (ns)")
            || unquoted.starts_with("Start (us)")
            || unquoted.starts_with("Start (ms)")
        {
            return Some(CounterFormat::NsysGpuTrace);
        }
        if has("ID") && has("Kernel Name") {
            return Some(if has("Metric Name") {
                CounterFormat::NcuDetails
            } else {
                CounterFormat::NcuRaw
            });
        }
        if has("Name") && has("Calls") && has("TotalDurationNs") {
            return Some(CounterFormat::RocprofStats);
        }
        if has("KernelName") && (has("Index") || has("grd")) {
            return Some(CounterFormat::RocprofV1);
        }
        if has("Counter_Name") || (has("Kernel_Name") && (has("Dispatch_Id") || has("Kind"))) {
            return Some(CounterFormat::Rocprofv3Csv);
        }
        if has("Dispatch_ID") && has("Kernel_Name") {
            // rocprofv2's file plugin and rocprof-compute's joined table share this
            // header; the workload folder is told by its name and siblings.
            return Some(if name == "pmc_perf.csv" {
                CounterFormat::RocprofCompute
            } else {
                CounterFormat::RocprofV1
            });
        }
    }
    None
}

/// The file name without a `.gz` suffix: gzipped outputs keep their naming conventions.
fn file_name(path: &Path) -> String {
    let n = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    crate::compressed::name_without_gz(&n).to_string()
}

/// Whether a file name ends with one of `exts` (compared case-insensitively).
pub(crate) fn has_extension(name: &str, exts: &[&str]) -> bool {
    Path::new(name).extension().is_some_and(|e| exts.iter().any(|x| e.eq_ignore_ascii_case(x)))
}

/// Whether a (gz-stripped) file name is a CSV file's.
fn is_csv_name(p: &Path) -> bool {
    has_extension(&file_name(p), &["csv"])
}

/// Files of a directory and of its direct subdirectories (rocprofv3 writes under the
/// host name), sorted.
fn files_in(dir: &Path) -> Result<Vec<std::path::PathBuf>, CounterError> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| CounterError::io(dir, &e))?;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Ok(sub) = std::fs::read_dir(&p) {
                out.extend(sub.flatten().map(|e| e.path()).filter(|p| p.is_file()));
            }
        } else {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn guess_dir(dir: &Path) -> Result<CounterFormat, CounterError> {
    let files = files_in(dir)?;
    let names: Vec<String> = files.iter().map(|p| file_name(p)).collect();
    let has = |n: &str| names.iter().any(|x| x == n);
    if has("pmc_perf.csv") && (has("sysinfo.csv") || has("roofline.csv")) {
        return Ok(CounterFormat::RocprofCompute);
    }
    if names.iter().any(|n| {
        n.ends_with("kernel_trace.csv")
            || n.ends_with("counter_collection.csv")
            || n.ends_with("results.json")
    }) {
        return Ok(if files.iter().any(|p| is_csv_name(p)) {
            CounterFormat::Rocprofv3Csv
        } else {
            CounterFormat::Rocprofv3Json
        });
    }
    if let Some(n) =
        names.iter().find(|n| n.ends_with(".xplane.pb") || n.ends_with(".pt.trace.json"))
    {
        return Err(CounterError::new(
            dir,
            format!(
                "this directory holds a trace ({n}), not hardware counters: `rooftop trace {}` \
                 reads it",
                dir.display()
            ),
        ));
    }
    let dbs = databases_in(dir)?;
    if let [one] = dbs.as_slice() {
        return guess_sqlite(one);
    }
    if dbs.len() > 1 {
        return Err(CounterError::unknown(
            dir,
            format!(
                "the directory holds {} databases ({}): give one file",
                dbs.len(),
                dbs.iter().map(|p| file_name(p)).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    let mut seen = Vec::new();
    for p in files.iter().filter(|p| is_csv_name(p)) {
        let head = text::read_head(p, 64 << 10)?;
        if let Some(f) = guess_text(&file_name(p), &head) {
            if !seen.contains(&f) {
                seen.push(f);
            }
        }
    }
    match seen.as_slice() {
        [one] => Ok(*one),
        [] => Err(CounterError::unknown(
            dir,
            "no profiler output in this directory: expected a rocprof-compute workload \
             (pmc_perf.csv + sysinfo.csv), rocprofv3 output (*kernel_trace.csv, \
             *counter_collection.csv, *results.json) or rocprof/ncu/nsys CSV files",
        )),
        many => Err(CounterError::unknown(
            dir,
            format!(
                "the directory mixes formats ({}): give one file",
                many.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// Reads `path` (a file or a directory) in the format [`guess`] names.
pub fn read_path(path: &Path) -> Result<CounterSet, CounterError> {
    read_as(path, guess(path)?)
}

/// Reads `path` as `format`.
pub fn read_as(path: &Path, format: CounterFormat) -> Result<CounterSet, CounterError> {
    match format {
        CounterFormat::RocprofV1 | CounterFormat::RocprofStats => rocprof::read(path),
        CounterFormat::Rocprofv3Csv | CounterFormat::Rocprofv3Json => rocprofv3::read(path),
        CounterFormat::RocprofCompute => rocprof_compute::read(path),
        CounterFormat::NcuRaw | CounterFormat::NcuDetails => ncu::read(path),
        CounterFormat::NsysKernSum | CounterFormat::NsysGpuTrace => nsys::read(path),
        CounterFormat::NsysSqlite => nsys_sqlite::read(&database(path)?),
        CounterFormat::Rocpd => rocpd::read(&database(path)?),
    }
}

/// `path`, or the one database in the directory `path`.
fn database(path: &Path) -> Result<std::path::PathBuf, CounterError> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    match databases_in(path)?.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(CounterError::new(path, "no SQLite database (*.db, *.sqlite) in this directory")),
        many => Err(CounterError::new(
            path,
            format!("the directory holds {} databases: give one file", many.len()),
        )),
    }
}
