//! Nsight Systems SQLite export (`nsys export --type sqlite report.nsys-rep`) →
//! [`CounterSet`] with one dispatch per CUDA kernel and an [`Activity`] summary.
//!
//! Tables read (NVIDIA, "SQLite Export Schema Reference" of the Nsight Systems
//! documentation; every column is optional and selected as NULL when an export of
//! another version lacks it; tables are created lazily, so a missing table is "not
//! traced", not an error):
//! - `CUPTI_ACTIVITY_KIND_KERNEL`: `start`/`end` (ns), `deviceId`, `streamId`,
//!   `correlationId`, `globalPid`, `demangledName`/`shortName` (→ `StringIds`), the
//!   launch (`gridX..Z` in blocks, `blockX..Z`, `registersPerThread`,
//!   `staticSharedMemory` + `dynamicSharedMemory`, `localMemoryPerThread`);
//! - `CUPTI_ACTIVITY_KIND_MEMCPY` (`bytes`, `copyKind` → `ENUM_CUDA_MEMCPY_OPER`, else
//!   CUPTI's `CUpti_ActivityMemcpyKind` numbering) and `CUPTI_ACTIVITY_KIND_MEMSET`;
//! - `CUPTI_ACTIVITY_KIND_RUNTIME` and `CUPTI_ACTIVITY_KIND_DRIVER` (`nameId` →
//!   `StringIds`, `globalTid`, `correlationId`): the CUDA API summary, and the thread
//!   and time at which each kernel was launched (same `correlationId` in the same
//!   process);
//! - `NVTX_EVENTS`: push/pop (`eventType` 59) and start/end (60) ranges, the name in
//!   `text` or `textId` (→ `StringIds`), the domain from `NvtxDomainCreate` (75) rows;
//!   kernel time per range with [`rooftop_core::counters::activity::attribute`];
//! - `TARGET_INFO_GPU` (`name`, `smCount`, `computeMajor`/`computeMinor`, `l2CacheSize`)
//!   and `TARGET_INFO_CUDA_DEVICE` (`pid`, `cudaId` → `gpuId`): the device;
//! - `META_DATA_EXPORT`: the exporting version.
//!
//! Process and thread ids are nsys's serialized global ids: pid = (globalTid >> 24) &
//! 0xFFFFFF ("Serialized process and thread identifiers" in the same documentation).
//! An `.nsys-rep` / `.qdrep` report is a binary this reader cannot open: the error gives
//! the export command.

use super::sqlite::{self, col_or_null, for_each_row, ReadOrder, RowRef};
use super::CounterError;
use foldhash::HashMap;
use rooftop_core::counters::activity::{
    attribute, summarize_copies, Activity, ApiTally, CopySummary, KernelLaunch, RangeSpan,
};
use rooftop_core::counters::{CounterFormat, CounterSet, CounterSource, DeviceInfo, Dispatch};
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// NVTX event types (`ENUM_NSYS_EVENT_TYPE`): push/pop range, start/end range, domain.
const NVTX_PUSH_POP: i64 = 59;
const NVTX_START_END: i64 = 60;
const NVTX_DOMAIN_CREATE: i64 = 75;

/// CUPTI's `CUpti_ActivityMemcpyKind`, for exports without `ENUM_CUDA_MEMCPY_OPER`.
fn cupti_copy_kind(k: i64) -> &'static str {
    match k {
        1 => "Host-to-Device",
        2 => "Device-to-Host",
        3 => "Host-to-Array",
        4 => "Array-to-Host",
        5 => "Array-to-Array",
        6 => "Array-to-Device",
        7 => "Device-to-Array",
        8 => "Device-to-Device",
        9 => "Host-to-Host",
        10 => "Peer-to-Peer",
        _ => "Unknown",
    }
}

/// The process id inside an nsys serialized global id.
fn pid_of(global: i64) -> i64 {
    (global >> 24) & 0x00FF_FFFF
}

/// A CUDA API name without the `_v7000`-style version suffix nsys keeps.
fn api_name(s: &str) -> &str {
    match s.rfind("_v") {
        Some(i) if i > 0 && s[i + 2..].chars().all(|c| c.is_ascii_digit()) && s.len() > i + 2 => {
            &s[..i]
        }
        _ => s,
    }
}

/// Whether the tables are an nsys export's.
pub fn is_nsys(tables: &BTreeSet<String>) -> bool {
    tables.contains("CUPTI_ACTIVITY_KIND_KERNEL")
        || (tables.contains("StringIds")
            && (tables.contains("TARGET_INFO_SESSION_START_TIME")
                || tables.contains("NVTX_EVENTS")
                || tables.contains("CUPTI_ACTIVITY_KIND_RUNTIME")))
}

/// Reads an nsys SQLite export (plain or gzipped).
pub fn read(path: &Path) -> Result<CounterSet, CounterError> {
    let conn = sqlite::open(path)?;
    read_conn(path, &conn)
}

struct Ctx<'a> {
    path: &'a Path,
    conn: &'a Connection,
    tables: &'a BTreeSet<String>,
    /// `StringIds`, each string shared by every row that names it.
    strings: &'a HashMap<i64, Arc<str>>,
}

impl Ctx<'_> {
    fn has(&self, t: &str) -> bool {
        self.tables.contains(t)
    }

    fn cols(&self, t: &str) -> Result<BTreeSet<String>, CounterError> {
        sqlite::columns(self.path, self.conn, t)
    }

    fn string(&self, id: Option<i64>) -> Option<Arc<str>> {
        id.and_then(|i| self.strings.get(&i).cloned())
    }

    /// `SELECT` of `wanted` columns (NULL for the ones the table lacks). The rows are
    /// capped just past the row limit before `tail` (an `ORDER BY` must see every row
    /// before it yields one: on a view without end it would never return).
    fn select(&self, table: &str, wanted: &[&str], tail: &str) -> Result<String, CounterError> {
        let have = self.cols(table)?;
        let cols: Vec<String> = wanted.iter().map(|c| col_or_null(&have, c)).collect();
        Ok(format!(
            "SELECT {} FROM (SELECT * FROM \"{table}\" LIMIT {}) {tail}",
            cols.join(", "),
            sqlite::row_cap()
        ))
    }
}

/// What the second connection reads: the CUDA API calls, then the copies and the NVTX
/// ranges (each only when the one before it was read).
struct Side {
    launches: Result<Launches, CounterError>,
    copies: Result<Vec<CopySummary>, CounterError>,
    ranges: Result<Vec<RangeSpan>, CounterError>,
}

fn side(ctx: &Ctx<'_>) -> Side {
    let launches = launches(ctx);
    let copies = match &launches {
        Ok(_) => copies(ctx),
        Err(_) => Ok(Vec::new()),
    };
    let ranges = match &copies {
        Ok(_) if launches.is_ok() => nvtx(ctx),
        _ => Ok(Vec::new()),
    };
    Side { launches, copies, ranges }
}

/// Reads the kernels on `ctx`'s connection and, when a second core is free and the file
/// is a plain database (a gzipped one lives in this connection's memory only), the rest
/// on a second read-only connection at the same time. Errors come in the order a
/// one-thread read meets them: API calls, kernels, copies, NVTX.
fn kernels_and_side(ctx: &Ctx<'_>, gpus: &Gpus) -> (Result<KernelRows, CounterError>, Side) {
    let big = ctx.has("CUPTI_ACTIVITY_KIND_KERNEL")
        && (ctx.has("CUPTI_ACTIVITY_KIND_RUNTIME") || ctx.has("CUPTI_ACTIVITY_KIND_DRIVER"));
    if big && rayon::current_num_threads() > 1 && !crate::compressed::is_gzip_file(ctx.path) {
        let (path, tables, strings) = (ctx.path, ctx.tables, ctx.strings);
        let out = std::thread::scope(|s| {
            let other = s.spawn(move || {
                let conn = sqlite::open(path).ok()?;
                Some(side(&Ctx { path, conn: &conn, tables, strings }))
            });
            let k = kernels(ctx, gpus);
            (k, other.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        });
        if let (k, Some(side)) = out {
            return (k, side);
        }
    }
    let launches = launches(ctx);
    let k = if launches.is_ok() { kernels(ctx, gpus) } else { Ok(KernelRows::default()) };
    let mut s = Side { launches, copies: Ok(Vec::new()), ranges: Ok(Vec::new()) };
    if s.launches.is_ok() && k.is_ok() {
        s.copies = copies(ctx);
        if s.copies.is_ok() {
            s.ranges = nvtx(ctx);
        }
    }
    (k, s)
}

fn read_conn(path: &Path, conn: &Connection) -> Result<CounterSet, CounterError> {
    let tables = sqlite::tables(path, conn)?;
    if !is_nsys(&tables) {
        return Err(CounterError::unknown(
            path,
            "a SQLite database without Nsight Systems tables (expected \
             CUPTI_ACTIVITY_KIND_KERNEL or StringIds with NVTX_EVENTS, as `nsys export \
             --type sqlite` writes)",
        ));
    }
    let mut strings = HashMap::default();
    if tables.contains("StringIds") {
        let ctx = Ctx { path, conn, tables: &tables, strings: &strings };
        let sql = ctx.select("StringIds", &["id", "value"], "")?;
        let mut read = HashMap::default();
        for_each_row(path, conn, "StringIds", &sql, |r| {
            if let (Some(id), Some(v)) = (r.int(0, "id")?, r.text(1, "value")?) {
                read.insert(id, Arc::from(v));
            }
            Ok(())
        })?;
        strings = read;
    }
    let ctx = Ctx { path, conn, tables: &tables, strings: &strings };
    let mut notes = Vec::new();
    let gpus = gpus(&ctx)?;
    let (kernel_rows, side) = kernels_and_side(&ctx, &gpus);
    let launches = side.launches?;
    let KernelRows { mut dispatches, links, used: devices_used } = kernel_rows?;
    let copies = side.copies?;
    let ranges = side.ranges?;
    // In the kernels' order, as `attribute` and the summary have always seen them.
    let kernel_launches: Vec<KernelLaunch> = links
        .iter()
        .filter_map(|l| {
            let &(key, kernel_ns) = l.as_ref()?;
            let &(thread, launch_ns) = launches.by_corr.get(&key)?;
            Some(KernelLaunch { thread, launch_ns, kernel_ns })
        })
        .collect();

    let kernel_ns: f64 = dispatches.iter().filter_map(|d| d.duration_ns).sum();
    let with_launch = kernel_launches.len() as u64;
    let (range_summaries, in_ranges) = attribute(&ranges, &kernel_launches);
    let api_calls = launches.calls.calls();
    let activity = Activity {
        api_label: "CUDA API".to_string(),
        range_label: "NVTX".to_string(),
        kernels: dispatches.len() as u64,
        kernel_ns,
        kernel_ns_in_ranges: in_ranges,
        kernels_with_launch: with_launch,
        copies,
        api: launches.calls.finish(),
        ranges: range_summaries,
    };
    if !ctx.has("CUPTI_ACTIVITY_KIND_KERNEL") {
        notes.push(
            "no CUDA kernels in this export (table CUPTI_ACTIVITY_KIND_KERNEL is absent: \
             profile with `nsys profile -t cuda`)"
                .to_string(),
        );
    }
    if !ranges.is_empty() && with_launch < dispatches.len() as u64 {
        notes.push(format!(
            "{} of {} kernels have no launching CUDA API call in the export (no matching \
             correlationId): they count in no NVTX range",
            dispatches.len() as u64 - with_launch,
            dispatches.len()
        ));
    }
    let device = device_info(&gpus, &devices_used, &mut notes);
    notes.push(format!(
        "read {} kernels, {} memory copies/sets, {} CUDA API calls and {} NVTX ranges",
        dispatches.len(),
        activity.copies.iter().map(|c| c.count).sum::<u64>(),
        api_calls,
        ranges.len()
    ));
    for (i, d) in dispatches.iter_mut().enumerate() {
        d.id = i as u64;
    }
    Ok(CounterSet {
        source: CounterSource {
            format: CounterFormat::NsysSqlite,
            files: vec![path.display().to_string()],
            tool_version: export_version(&ctx)?,
            notes,
        },
        device,
        measured_roofs: Vec::new(),
        dispatches,
        aggregates: Vec::new(),
        activity: Some(activity),
    })
}

fn export_version(ctx: &Ctx<'_>) -> Result<Option<String>, CounterError> {
    if !ctx.has("META_DATA_EXPORT") {
        return Ok(None);
    }
    let sql = ctx.select("META_DATA_EXPORT", &["name", "value"], "")?;
    let mut v = None;
    for_each_row(ctx.path, ctx.conn, "META_DATA_EXPORT", &sql, |r| {
        if r.text(0, "name")?.as_deref() == Some("EXPORT_PRODUCT_VERSION") {
            v = r.text(1, "value")?.map(|s| format!("nsys {s}"));
        }
        Ok(())
    })?;
    Ok(v)
}

/// A GPU of `TARGET_INFO_GPU`.
#[derive(Debug, Default, Clone)]
struct Gpu {
    name: Option<String>,
    sms: Option<u32>,
    cc: Option<String>,
    l2_bytes: Option<u64>,
    warp: Option<u32>,
    chip: Option<String>,
}

/// GPUs by nsys gpu id, and the (pid, CUDA device id) → gpu id map.
struct Gpus {
    by_id: BTreeMap<i64, Gpu>,
    cuda: HashMap<(i64, i64), i64>,
}

fn gpus(ctx: &Ctx<'_>) -> Result<Gpus, CounterError> {
    let mut by_id = BTreeMap::new();
    if ctx.has("TARGET_INFO_GPU") {
        let cols = [
            "id",
            "name",
            "smCount",
            "computeMajor",
            "computeMinor",
            "l2CacheSize",
            "threadsPerWarp",
            "chipName",
        ];
        let sql = ctx.select("TARGET_INFO_GPU", &cols, "")?;
        for_each_row(ctx.path, ctx.conn, "TARGET_INFO_GPU", &sql, |r| {
            let Some(id) = r.int(0, "id")? else { return Ok(()) };
            let cc = match (r.int(3, "computeMajor")?, r.int(4, "computeMinor")?) {
                (Some(a), Some(b)) => Some(format!("{a}.{b}")),
                _ => None,
            };
            by_id.insert(
                id,
                Gpu {
                    name: r.text(1, "name")?,
                    sms: r.uint(2, "smCount")?.and_then(|v| u32::try_from(v).ok()),
                    cc,
                    l2_bytes: r.uint(5, "l2CacheSize")?,
                    warp: r.uint(6, "threadsPerWarp")?.and_then(|v| u32::try_from(v).ok()),
                    chip: r.text(7, "chipName")?,
                },
            );
            Ok(())
        })?;
    }
    let mut cuda = HashMap::default();
    if ctx.has("TARGET_INFO_CUDA_DEVICE") {
        let sql = ctx.select("TARGET_INFO_CUDA_DEVICE", &["gpuId", "cudaId", "pid"], "")?;
        for_each_row(ctx.path, ctx.conn, "TARGET_INFO_CUDA_DEVICE", &sql, |r| {
            if let (Some(g), Some(c)) = (r.int(0, "gpuId")?, r.int(1, "cudaId")?) {
                cuda.insert((r.int(2, "pid")?.unwrap_or(-1), c), g);
            }
            Ok(())
        })?;
    }
    Ok(Gpus { by_id, cuda })
}

impl Gpus {
    /// The GPU a kernel of process `pid` ran on as CUDA device `device`.
    fn of(&self, pid: i64, device: i64) -> Option<(i64, &Gpu)> {
        let id = self
            .cuda
            .get(&(pid, device))
            .or_else(|| self.cuda.get(&(-1, device)))
            .copied()
            .unwrap_or(device);
        self.by_id.get(&id).map(|g| (id, g))
    }
}

/// CUDA API calls: totals per name for the summary, and `(pid, correlationId)` →
/// `(globalTid, start)` for the kernels.
struct Launches {
    calls: ApiTally,
    by_corr: HashMap<(i64, i64), (u64, i64)>,
}

fn launches(ctx: &Ctx<'_>) -> Result<Launches, CounterError> {
    let mut calls = ApiTally::default();
    let mut by_corr = HashMap::default();
    for table in ["CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"] {
        if !ctx.has(table) {
            continue;
        }
        let sql =
            ctx.select(table, &["start", "end", "globalTid", "correlationId", "nameId"], "")?;
        for_each_row(ctx.path, ctx.conn, table, &sql, |r| {
            let start = r.int(0, "start")?;
            let end = r.int(1, "end")?;
            let tid = r.int(2, "globalTid")?;
            if let (Some(s), Some(e)) = (start, end) {
                let name = r
                    .int(4, "nameId")?
                    .and_then(|i| ctx.strings.get(&i))
                    .map_or("(unnamed API call)", |n| api_name(n));
                calls.add(name, (e - s).max(0) as f64);
            }
            if let (Some(c), Some(t), Some(s)) = (r.int(3, "correlationId")?, tid, start) {
                by_corr.entry((pid_of(t), c)).or_insert((t as u64, s));
            }
            Ok(())
        })?;
    }
    Ok(Launches { calls, by_corr })
}

/// The kernels in start order, each one's `((pid, correlationId), duration)` for finding
/// its launching API call, and the GPUs they ran on.
#[derive(Default)]
struct KernelRows {
    dispatches: Vec<Dispatch>,
    links: Vec<Link>,
    used: BTreeSet<i64>,
}

/// A kernel's `((pid, correlationId), duration ns)`, when it has both.
type Link = Option<((i64, i64), f64)>;

/// The GPU of a (process, CUDA device) pair, as (gpu id, warp size), and its label.
type Label = (Option<(i64, Option<u32>)>, Arc<str>);

const KERNEL_TABLE: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
const KERNEL_COLS: [&str; 18] = [
    "start",
    "end",
    "deviceId",
    "streamId",
    "correlationId",
    "globalPid",
    "demangledName",
    "shortName",
    "gridX",
    "gridY",
    "gridZ",
    "blockX",
    "blockY",
    "blockZ",
    "registersPerThread",
    "staticSharedMemory",
    "dynamicSharedMemory",
    "localMemoryPerThread",
];

/// The kernels in `ORDER BY "start"` order. They are read in the table's order and
/// sorted here (a stable sort by the start, NULL first, as SQLite's sorter orders them)
/// when every start is an integer or NULL and every row reads; otherwise (a start of
/// another type, or any error) they are read again through SQLite's `ORDER BY`, so that
/// the result, and an error's row number, are those of the sorted query.
fn kernels(ctx: &Ctx<'_>, gpus: &Gpus) -> Result<KernelRows, CounterError> {
    if !ctx.has(KERNEL_TABLE) {
        return Ok(KernelRows::default());
    }
    if let Some(rows) = kernels_in_table_order(ctx, gpus)? {
        return Ok(rows);
    }
    let sql = ctx.select(KERNEL_TABLE, &KERNEL_COLS, "ORDER BY \"start\"")?;
    let mut k = KernelReader::new(ctx, gpus);
    let mut rows = KernelRows::default();
    for_each_row(ctx.path, ctx.conn, KERNEL_TABLE, &sql, |r| {
        let (d, link) = k.row(r)?;
        rows.dispatches.push(d);
        rows.links.push(link);
        Ok(())
    })?;
    rows.used = k.used;
    Ok(rows)
}

/// [`kernels`] without SQLite's sort ([`sqlite::read_then_order`]): `None` when it must
/// be read through `ORDER BY`.
fn kernels_in_table_order(ctx: &Ctx<'_>, gpus: &Gpus) -> Result<Option<KernelRows>, CounterError> {
    let sql = ctx.select(KERNEL_TABLE, &KERNEL_COLS, "")?;
    let mut k = KernelReader::new(ctx, gpus);
    let mut rows = KernelRows::default();
    let order = sqlite::read_then_order(ctx.path, ctx.conn, KERNEL_TABLE, &sql, 0, |r| {
        let (d, link) = k.row(r)?;
        rows.dispatches.push(d);
        rows.links.push(link);
        Ok(())
    });
    if matches!(order, ReadOrder::ReadSorted) {
        return Ok(None);
    }
    order.apply(&mut rows.dispatches);
    order.apply(&mut rows.links);
    rows.used = k.used;
    Ok(Some(rows))
}

/// Turns kernel rows into dispatches, sharing one label per (process, device) and one
/// name per stream.
struct KernelReader<'c, 'a> {
    ctx: &'c Ctx<'a>,
    gpus: &'c Gpus,
    unnamed: Arc<str>,
    labels: HashMap<(i64, i64), Label>,
    streams: HashMap<i64, Arc<str>>,
    used: BTreeSet<i64>,
}

impl<'c, 'a> KernelReader<'c, 'a> {
    fn new(ctx: &'c Ctx<'a>, gpus: &'c Gpus) -> Self {
        KernelReader {
            ctx,
            gpus,
            unnamed: Arc::from("(unnamed kernel)"),
            labels: HashMap::default(),
            streams: HashMap::default(),
            used: BTreeSet::new(),
        }
    }

    /// One row of [`KERNEL_COLS`]: the dispatch, and its `((pid, correlationId),
    /// duration)` when it has both.
    fn row(&mut self, r: &RowRef<'_, '_>) -> Result<(Dispatch, Link), CounterError> {
        let ctx = self.ctx;
        let start = r.int(0, "start")?;
        let end = r.int(1, "end")?;
        let device = r.int(2, "deviceId")?.unwrap_or(0);
        let pid = r.int(5, "globalPid")?.map_or(-1, pid_of);
        let short = r.int(7, "shortName")?;
        let name = ctx
            .string(r.int(6, "demangledName")?)
            .or_else(|| ctx.string(short))
            .unwrap_or_else(|| self.unnamed.clone());
        let dim = |a: usize, b: usize, c: usize, n: [&str; 3]| -> Result<_, CounterError> {
            Ok(match (r.uint(a, n[0])?, r.uint(b, n[1])?, r.uint(c, n[2])?) {
                (Some(x), Some(y), Some(z)) => Some([x, y, z]),
                _ => None,
            })
        };
        let gpus = self.gpus;
        let (gpu, label) = self
            .labels
            .entry((pid, device))
            .or_insert_with(|| {
                let gpu = gpus.of(pid, device);
                let label = gpu
                    .and_then(|(_, g)| g.name.as_deref())
                    .map_or_else(|| format!("GPU {device}"), |n| format!("{n} ({device})"));
                (gpu.map(|(id, g)| (id, g.warp)), Arc::from(label))
            })
            .clone();
        if let Some((id, _)) = gpu {
            self.used.insert(id);
        }
        let duration_ns = match (start, end) {
            (Some(s), Some(e)) if e >= s => Some((e - s) as f64),
            _ => None,
        };
        let shared = match (r.uint(15, "staticSharedMemory")?, r.uint(16, "dynamicSharedMemory")?) {
            (Some(a), Some(b)) => a.checked_add(b),
            (a, b) => a.or(b),
        };
        let stream = r
            .int(3, "streamId")?
            .map(|s| self.streams.entry(s).or_insert_with(|| Arc::from(s.to_string())).clone());
        let d = Dispatch {
            id: 0,
            name,
            gpu: Some(label),
            stream,
            start_ns: start.and_then(|s| u64::try_from(s).ok()),
            end_ns: end.and_then(|s| u64::try_from(s).ok()),
            duration_ns,
            grid: dim(8, 9, 10, ["gridX", "gridY", "gridZ"])?,
            block: dim(11, 12, 13, ["blockX", "blockY", "blockZ"])?,
            vgprs: r.uint(14, "registersPerThread")?.and_then(|v| u32::try_from(v).ok()),
            shared_bytes: shared,
            scratch_bytes: r.uint(17, "localMemoryPerThread")?,
            wave_size: gpu.and_then(|(_, warp)| warp),
            ..Dispatch::default()
        };
        let link = match (r.int(4, "correlationId")?, duration_ns) {
            (Some(c), Some(ns)) => Some(((pid, c), ns)),
            _ => None,
        };
        Ok((d, link))
    }
}

fn copies(ctx: &Ctx<'_>) -> Result<Vec<CopySummary>, CounterError> {
    let mut labels: HashMap<i64, String> = HashMap::default();
    if ctx.has("ENUM_CUDA_MEMCPY_OPER") {
        let sql = ctx.select("ENUM_CUDA_MEMCPY_OPER", &["id", "label", "name"], "")?;
        for_each_row(ctx.path, ctx.conn, "ENUM_CUDA_MEMCPY_OPER", &sql, |r| {
            if let Some(id) = r.int(0, "id")? {
                if let Some(l) = r.text(1, "label")?.or(r.text(2, "name")?) {
                    labels.insert(id, l);
                }
            }
            Ok(())
        })?;
    }
    let mut rows: Vec<(String, f64, f64)> = Vec::new();
    if ctx.has("CUPTI_ACTIVITY_KIND_MEMCPY") {
        let t = "CUPTI_ACTIVITY_KIND_MEMCPY";
        let sql = ctx.select(t, &["start", "end", "bytes", "copyKind"], "")?;
        for_each_row(ctx.path, ctx.conn, t, &sql, |r| {
            let d = match (r.int(0, "start")?, r.int(1, "end")?) {
                (Some(s), Some(e)) => (e - s).max(0) as f64,
                _ => 0.0,
            };
            let kind = r.int(3, "copyKind")?.unwrap_or(0);
            let label =
                labels.get(&kind).cloned().unwrap_or_else(|| cupti_copy_kind(kind).to_string());
            rows.push((format!("memcpy {label}"), r.num(2, "bytes")?.unwrap_or(0.0), d));
            Ok(())
        })?;
    }
    if ctx.has("CUPTI_ACTIVITY_KIND_MEMSET") {
        let t = "CUPTI_ACTIVITY_KIND_MEMSET";
        let sql = ctx.select(t, &["start", "end", "bytes"], "")?;
        for_each_row(ctx.path, ctx.conn, t, &sql, |r| {
            let d = match (r.int(0, "start")?, r.int(1, "end")?) {
                (Some(s), Some(e)) => (e - s).max(0) as f64,
                _ => 0.0,
            };
            rows.push(("memset".to_string(), r.num(2, "bytes")?.unwrap_or(0.0), d));
            Ok(())
        })?;
    }
    Ok(summarize_copies(rows.iter().map(|(k, b, d)| (k.as_str(), *b, *d))))
}

fn nvtx(ctx: &Ctx<'_>) -> Result<Vec<RangeSpan>, CounterError> {
    let t = "NVTX_EVENTS";
    let mut out = Vec::new();
    if !ctx.has(t) {
        return Ok(out);
    }
    let sql = ctx.select(
        t,
        &["start", "end", "eventType", "text", "textId", "globalTid", "domainId"],
        "",
    )?;
    let mut domains: HashMap<i64, String> = HashMap::default();
    let mut raw: Vec<(String, u64, i64, i64, Option<i64>)> = Vec::new();
    for_each_row(ctx.path, ctx.conn, t, &sql, |r| {
        let ty = r.int(2, "eventType")?;
        let text_id = r.int(4, "textId")?;
        let text = r.text(3, "text")?.or_else(|| ctx.string(text_id).map(|s| s.to_string()));
        let domain = r.int(6, "domainId")?;
        if ty == Some(NVTX_DOMAIN_CREATE) {
            if let (Some(d), Some(name)) = (domain, text) {
                domains.insert(d, name);
            }
            return Ok(());
        }
        if ty != Some(NVTX_PUSH_POP) && ty != Some(NVTX_START_END) {
            return Ok(());
        }
        let (Some(s), Some(e), Some(tid)) =
            (r.int(0, "start")?, r.int(1, "end")?, r.int(5, "globalTid")?)
        else {
            return Ok(());
        };
        if e < s {
            return Ok(());
        }
        raw.push((text.unwrap_or_else(|| "(unnamed range)".to_string()), tid as u64, s, e, domain));
        Ok(())
    })?;
    for (name, thread, start_ns, end_ns, domain) in raw {
        let name = match domain.and_then(|d| domains.get(&d)) {
            Some(dn) => format!("{dn}:{name}"),
            None => name,
        };
        out.push(RangeSpan { name, thread, start_ns, end_ns });
    }
    Ok(out)
}

fn device_info(gpus: &Gpus, used: &BTreeSet<i64>, notes: &mut Vec<String>) -> DeviceInfo {
    let mut dev = DeviceInfo::default();
    let first = used.iter().next().copied().or_else(|| gpus.by_id.keys().next().copied());
    let Some(g) = first.and_then(|id| gpus.by_id.get(&id)) else {
        return dev;
    };
    dev.name.clone_from(&g.name);
    dev.arch.clone_from(&g.cc);
    dev.compute_units = g.sms;
    dev.wave_size = g.warp;
    dev.l2_bytes = g.l2_bytes;
    if let Some(c) = &g.chip {
        dev.extra.insert("chipName".to_string(), c.clone());
    }
    let names: BTreeSet<&str> =
        used.iter().filter_map(|id| gpus.by_id.get(id)).filter_map(|g| g.name.as_deref()).collect();
    if names.len() > 1 {
        notes.push(format!(
            "kernels ran on {} different GPU models ({}); the device is the first",
            names.len(),
            names.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    dev
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_names_lose_version_suffixes() {
        assert_eq!(api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_name("cudaMemcpyAsync_v3020"), "cudaMemcpyAsync");
        assert_eq!(api_name("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(api_name("odd_v"), "odd_v");
    }

    #[test]
    fn serialized_ids() {
        // globalTid = pid << 24 | tid (with hardware bits above).
        let g = (1i64 << 56) | (4242 << 24) | 0x11;
        assert_eq!(pid_of(g), 4242);
    }
}
