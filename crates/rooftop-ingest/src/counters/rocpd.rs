//! rocprofv3 rocpd database (`rocprofv3 --output-format rocpd`, the default of ROCm 7;
//! `<pid>_results.db`) → [`CounterSet`]: one dispatch per kernel dispatch with its
//! counters when they were collected, the GPU agent, and an [`Activity`] summary (HIP
//! API calls, memory copies, kernel time per ROCTX range).
//!
//! Schema: rocprofiler-sdk `source/share/rocprofiler-sdk-rocpd/rocpd_tables.sql`
//! (schema version 3) and `rocpd_views.sql`. The data lives in tables suffixed with the
//! session's uuid (`rocpd_kernel_dispatch_<uuid>`); unsuffixed views select from them.
//! This reader uses the view when the database has it, else the suffixed tables (all
//! of them, `UNION ALL`, when databases were merged). Tables read:
//! - `rocpd_kernel_dispatch`: `start`/`end` (ns), `agent_id`, `kernel_id`,
//!   `dispatch_id`, `queue_id`, `tid`, `grid_size_*` (**work-items**: divided by
//!   `workgroup_size_*` here, rounding up, as the `kernels` view does),
//!   `group_segment_size` (LDS), `private_segment_size` (scratch), `event_id`;
//! - `rocpd_info_kernel_symbol`: `display_name` / `kernel_name`, `arch_vgpr_count`,
//!   `accum_vgpr_count`, `sgpr_count`;
//! - `rocpd_info_agent`: `type` (`GPU`), `name` (the gfx target), `product_name`, and
//!   `extdata` (JSON of the rocprofiler agent: `cu_count`, `simd_per_cu`,
//!   `wave_front_size`, `max_waves_per_cu`, `max_engine_clk_fcompute`, `num_xcc`);
//! - `rocpd_pmc_event` + `rocpd_info_pmc`: counter values per dispatch event, summed
//!   over dimension instances per counter name (the `counters_collection` view's
//!   `SUM(value) ... GROUP BY dispatch_id, name`);
//! - `rocpd_region` + `rocpd_event` (category → `rocpd_string`): HIP/HSA API calls and
//!   ROCTX marker ranges; a kernel's launching call is the API region whose event has
//!   the dispatch event's `stack_id` (rocprofiler's internal correlation id);
//! - `rocpd_memory_copy` (`size`, `name_id` → `MEMORY_COPY_HOST_TO_DEVICE` ...).

use super::sqlite::{self, col_or_null, for_each_row, ReadOrder, RowRef};
use super::CounterError;
use foldhash::HashMap;
use rooftop_core::counters::activity::{
    attribute, summarize_api, summarize_copies, Activity, KernelLaunch, RangeSpan,
};
use rooftop_core::counters::{
    clean_kernel_name, CounterFormat, CounterName, CounterSet, CounterSource, DeviceInfo, Dispatch,
};
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// Whether the tables are a rocpd database's.
pub fn is_rocpd(tables: &BTreeSet<String>) -> bool {
    tables
        .iter()
        .any(|t| t.starts_with("rocpd_kernel_dispatch") || t.starts_with("rocpd_info_agent"))
}

/// Reads a rocpd database (plain or gzipped).
pub fn read(path: &Path) -> Result<CounterSet, CounterError> {
    let conn = sqlite::open(path)?;
    read_conn(path, &conn)
}

struct Ctx<'a> {
    path: &'a Path,
    conn: &'a Connection,
    tables: &'a BTreeSet<String>,
}

impl Ctx<'_> {
    /// The tables holding `base`: its view, else every `base_<uuid>` table.
    fn sources(&self, base: &str) -> Vec<String> {
        if self.tables.contains(base) {
            return vec![base.to_string()];
        }
        let prefix = format!("{base}_");
        self.tables
            .iter()
            .filter(|t| {
                t.strip_prefix(&prefix)
                    .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_hexdigit() || c == '_'))
            })
            .cloned()
            .collect()
    }

    /// `SELECT wanted FROM base` over every source, NULL for columns a source lacks.
    fn select(&self, base: &str, wanted: &[&str]) -> Result<Option<String>, CounterError> {
        let srcs = self.sources(base);
        if srcs.is_empty() {
            return Ok(None);
        }
        let mut parts = Vec::new();
        for s in &srcs {
            let have = sqlite::columns(self.path, self.conn, s)?;
            let cols: Vec<String> = wanted.iter().map(|c| col_or_null(&have, c)).collect();
            parts.push(format!("SELECT {} FROM \"{}\"", cols.join(", "), s.replace('"', "\"\"")));
        }
        Ok(Some(parts.join(" UNION ALL ")))
    }
}

#[derive(Debug, Default, Clone)]
struct Symbol {
    name: Arc<str>,
    vgprs: Option<u32>,
    agprs: Option<u32>,
    sgprs: Option<u32>,
}

fn u32_of(v: Option<u64>) -> Option<u32> {
    v.and_then(|x| u32::try_from(x).ok())
}

fn read_conn(path: &Path, conn: &Connection) -> Result<CounterSet, CounterError> {
    let tables = sqlite::tables(path, conn)?;
    if !is_rocpd(&tables) {
        return Err(CounterError::unknown(
            path,
            "a SQLite database without rocpd tables (expected rocpd_kernel_dispatch and \
             rocpd_info_agent, as `rocprofv3 --output-format rocpd` writes)",
        ));
    }
    let ctx = Ctx { path, conn, tables: &tables };
    let strings = strings(&ctx)?;
    let agents = agents(&ctx)?;
    let symbols = symbols(&ctx)?;
    let (main, side) = dispatches_and_side(&ctx, &symbols, &strings);
    // Errors in the order a one-thread read meets them.
    let events = side.events?;
    let Rows { dispatches, event_ids, used: agents_used } = main.dispatches?;
    let counters = main.counters?;
    let (calls, ranges, api_starts) = side.regions?;
    let copies = side.copies?;

    // Kernel launches: the API region with the dispatch event's stack id.
    let mut launches = Vec::new();
    for (d, ev) in dispatches.iter().zip(&event_ids) {
        let Some(ns) = d.duration_ns else { continue };
        let stack = ev.and_then(|e| events.get(e)).and_then(|e| e.stack);
        if let Some(&(thread, launch_ns)) = stack.and_then(|s| api_starts.get(&s)) {
            launches.push(KernelLaunch { thread, launch_ns, kernel_ns: ns });
        }
    }
    let kernel_ns: f64 = dispatches.iter().filter_map(|d| d.duration_ns).sum();
    let (range_summaries, in_ranges) = attribute(&ranges, &launches);
    let activity = Activity {
        api_label: "HIP/HSA API".to_string(),
        range_label: "ROCTX".to_string(),
        kernels: dispatches.len() as u64,
        kernel_ns,
        kernel_ns_in_ranges: in_ranges,
        kernels_with_launch: launches.len() as u64,
        copies,
        api: summarize_api(calls.iter().copied()),
        ranges: range_summaries,
    };
    let mut notes = vec![format!(
        "read {} kernel dispatches ({} with counters: {}), {} API calls, {} ROCTX ranges",
        dispatches.len(),
        dispatches.iter().filter(|d| !d.counters.is_empty()).count(),
        if counters.is_empty() {
            "none collected".to_string()
        } else {
            counters.iter().take(8).cloned().collect::<Vec<_>>().join(", ")
                + if counters.len() > 8 { ", …" } else { "" }
        },
        calls.len(),
        ranges.len()
    )];
    let device = device_info(&agents, &agents_used, &mut notes);
    Ok(CounterSet {
        source: CounterSource {
            format: CounterFormat::Rocpd,
            files: vec![path.display().to_string()],
            tool_version: schema_version(&ctx)?,
            notes,
        },
        device,
        measured_roofs: Vec::new(),
        dispatches,
        aggregates: Vec::new(),
        activity: Some(activity),
    })
}

fn schema_version(ctx: &Ctx<'_>) -> Result<Option<String>, CounterError> {
    let Some(sql) = ctx.select("rocpd_metadata", &["tag", "value"])? else { return Ok(None) };
    let mut v = None;
    for_each_row(ctx.path, ctx.conn, "rocpd_metadata", &sql, |r| {
        if r.text(0, "tag")?.as_deref() == Some("schema_version") {
            v = r.text(1, "value")?.map(|s| format!("rocpd schema {s}"));
        }
        Ok(())
    })?;
    Ok(v)
}

fn strings(ctx: &Ctx<'_>) -> Result<HashMap<i64, String>, CounterError> {
    let mut m = HashMap::default();
    if let Some(sql) = ctx.select("rocpd_string", &["id", "string"])? {
        for_each_row(ctx.path, ctx.conn, "rocpd_string", &sql, |r| {
            if let (Some(i), Some(s)) = (r.int(0, "id")?, r.text(1, "string")?) {
                m.insert(i, s);
            }
            Ok(())
        })?;
    }
    Ok(m)
}

#[derive(Debug, Default, Clone)]
struct Agent {
    gpu: bool,
    name: Option<String>,
    product: Option<String>,
    ext: serde_json::Value,
}

fn agents(ctx: &Ctx<'_>) -> Result<BTreeMap<i64, Agent>, CounterError> {
    let mut m = BTreeMap::new();
    let wanted = ["id", "type", "name", "product_name", "model_name", "extdata"];
    if let Some(sql) = ctx.select("rocpd_info_agent", &wanted)? {
        for_each_row(ctx.path, ctx.conn, "rocpd_info_agent", &sql, |r| {
            let Some(id) = r.int(0, "id")? else { return Ok(()) };
            let ext = r
                .text(5, "extdata")?
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(serde_json::Value::Null);
            let product = r.text(3, "product_name")?.filter(|s| !s.is_empty());
            m.insert(
                id,
                Agent {
                    gpu: r.text(1, "type")?.as_deref() == Some("GPU"),
                    name: r.text(2, "name")?,
                    product: product.or(r.text(4, "model_name")?.filter(|s| !s.is_empty())),
                    ext,
                },
            );
            Ok(())
        })?;
    }
    Ok(m)
}

fn symbols(ctx: &Ctx<'_>) -> Result<HashMap<i64, Symbol>, CounterError> {
    let mut m = HashMap::default();
    let wanted =
        ["id", "display_name", "kernel_name", "arch_vgpr_count", "accum_vgpr_count", "sgpr_count"];
    if let Some(sql) = ctx.select("rocpd_info_kernel_symbol", &wanted)? {
        for_each_row(ctx.path, ctx.conn, "rocpd_info_kernel_symbol", &sql, |r| {
            let Some(id) = r.int(0, "id")? else { return Ok(()) };
            let name = r
                .text(1, "display_name")?
                .filter(|s| !s.is_empty())
                .or(r.text(2, "kernel_name")?)
                .unwrap_or_else(|| format!("kernel_id {id}"));
            m.insert(
                id,
                Symbol {
                    name: clean_kernel_name(&name).into(),
                    vgprs: u32_of(r.uint(3, "arch_vgpr_count")?),
                    agprs: u32_of(r.uint(4, "accum_vgpr_count")?),
                    sgprs: u32_of(r.uint(5, "sgpr_count")?),
                },
            );
            Ok(())
        })?;
    }
    Ok(m)
}

/// Values by a table's integer id: a vector over the ids' span when they are dense (as
/// SQLite numbers rows: a rocpd database's million events are ids 1..=N), else a hash
/// map. A repeated id keeps its last value, as a map's insert does.
enum ById<T> {
    Dense { base: i64, slots: Vec<Option<T>> },
    Sparse(HashMap<i64, T>),
}

impl<T> ById<T> {
    fn new(rows: Vec<(i64, T)>) -> Self {
        let lo = rows.iter().map(|r| r.0).min().unwrap_or(0);
        let hi = rows.iter().map(|r| r.0).max().unwrap_or(0);
        // Dense when the span is at most about twice the rows.
        let span = hi
            .checked_sub(lo)
            .and_then(|s| usize::try_from(s).ok())
            .filter(|&s| s <= rows.len().saturating_mul(2).saturating_add(1024));
        let Some(span) = span else { return ById::Sparse(rows.into_iter().collect()) };
        let mut slots: Vec<Option<T>> = std::iter::repeat_with(|| None).take(span + 1).collect();
        for (id, v) in rows {
            // In the span by construction.
            if let Some(slot) = usize::try_from(id - lo).ok().and_then(|i| slots.get_mut(i)) {
                *slot = Some(v);
            }
        }
        ById::Dense { base: lo, slots }
    }

    fn get(&self, id: i64) -> Option<&T> {
        match self {
            ById::Dense { base, slots } => {
                let i = usize::try_from(id.checked_sub(*base)?).ok()?;
                slots.get(i)?.as_ref()
            }
            ById::Sparse(m) => m.get(&id),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Event {
    category: Option<i64>,
    stack: Option<i64>,
}

fn events(ctx: &Ctx<'_>) -> Result<ById<Event>, CounterError> {
    let mut rows = Vec::new();
    if let Some(sql) = ctx.select("rocpd_event", &["id", "category_id", "stack_id"])? {
        for_each_row(ctx.path, ctx.conn, "rocpd_event", &sql, |r| {
            if let Some(id) = r.int(0, "id")? {
                rows.push((
                    id,
                    Event { category: r.int(1, "category_id")?, stack: r.int(2, "stack_id")? },
                ));
            }
            Ok(())
        })?;
    }
    Ok(ById::new(rows))
}

/// The kernel dispatches in start order, each one's event id, and the agents used.
#[derive(Default)]
struct Rows {
    dispatches: Vec<Dispatch>,
    event_ids: Vec<Option<i64>>,
    used: BTreeSet<i64>,
}

impl Rows {
    fn push(&mut self, (d, event): (Dispatch, Option<i64>)) {
        self.dispatches.push(d);
        self.event_ids.push(event);
    }
}

const DISPATCH_TABLE: &str = "rocpd_kernel_dispatch";
const DISPATCH_COLS: [&str; 15] = [
    "dispatch_id",
    "agent_id",
    "kernel_id",
    "queue_id",
    "start",
    "end",
    "workgroup_size_x",
    "workgroup_size_y",
    "workgroup_size_z",
    "grid_size_x",
    "grid_size_y",
    "grid_size_z",
    "group_segment_size",
    "private_segment_size",
    "event_id",
];

/// The dispatches in `ORDER BY "start"` order: read in the table's order and sorted here
/// when that can be done as SQLite would ([`sqlite::read_then_order`]), else through
/// SQLite's sort.
fn dispatches(ctx: &Ctx<'_>, symbols: &HashMap<i64, Symbol>) -> Result<Rows, CounterError> {
    let Some(sql) = ctx.select(DISPATCH_TABLE, &DISPATCH_COLS)? else {
        return Ok(Rows::default());
    };
    let mut k = DispatchReader::new(symbols);
    let mut rows = Rows::default();
    let order = sqlite::read_then_order(ctx.path, ctx.conn, DISPATCH_TABLE, &sql, 4, |r| {
        rows.push(k.row(r)?);
        Ok(())
    });
    if let ReadOrder::ReadSorted = order {
        // Capped just past the row limit before sorting (see `sqlite::row_cap`).
        let sql = format!("SELECT * FROM ({sql} LIMIT {}) ORDER BY \"start\"", sqlite::row_cap());
        rows = Rows::default();
        for_each_row(ctx.path, ctx.conn, DISPATCH_TABLE, &sql, |r| {
            rows.push(k.row(r)?);
            Ok(())
        })?;
    }
    order.apply(&mut rows.dispatches);
    order.apply(&mut rows.event_ids);
    if let ReadOrder::Reorder(order) = &order {
        if !k.unnumbered.is_empty() {
            // A dispatch without an id is numbered by its row in start order.
            let mut unnumbered = vec![false; order.len()];
            for &i in &k.unnumbered {
                unnumbered[i] = true;
            }
            for (j, (d, &from)) in rows.dispatches.iter_mut().zip(order).enumerate() {
                if unnumbered[from] {
                    d.id = j as u64 + 1;
                }
            }
        }
    }
    rows.used = k.used;
    Ok(rows)
}

/// Turns dispatch rows into [`Dispatch`]es, sharing one label per agent and one name
/// per queue.
struct DispatchReader<'s> {
    symbols: &'s HashMap<i64, Symbol>,
    agents: HashMap<i64, Arc<str>>,
    queues: HashMap<i64, Arc<str>>,
    used: BTreeSet<i64>,
    /// Rows (0-based, in reading order) without a `dispatch_id`: numbered by their row.
    unnumbered: Vec<usize>,
}

impl<'s> DispatchReader<'s> {
    fn new(symbols: &'s HashMap<i64, Symbol>) -> Self {
        DispatchReader {
            symbols,
            agents: HashMap::default(),
            queues: HashMap::default(),
            used: BTreeSet::new(),
            unnumbered: Vec::new(),
        }
    }

    /// One row of [`DISPATCH_COLS`]: the dispatch and its event id.
    fn row(&mut self, r: &RowRef<'_, '_>) -> Result<(Dispatch, Option<i64>), CounterError> {
        let kid = r.int(2, "kernel_id")?;
        let sym = kid.and_then(|k| self.symbols.get(&k));
        let agent = r.int(1, "agent_id")?;
        if let Some(a) = agent {
            self.used.insert(a);
        }
        let (start, end) = (r.uint(4, "start")?, r.uint(5, "end")?);
        let wg = [
            r.uint(6, "workgroup_size_x")?,
            r.uint(7, "workgroup_size_y")?,
            r.uint(8, "workgroup_size_z")?,
        ];
        let grid =
            [r.uint(9, "grid_size_x")?, r.uint(10, "grid_size_y")?, r.uint(11, "grid_size_z")?];
        let block = match wg {
            [Some(x), Some(y), Some(z)] if x > 0 && y > 0 && z > 0 => Some([x, y, z]),
            _ => None,
        };
        let blocks = match (grid, block) {
            ([Some(gx), Some(gy), Some(gz)], Some(size)) => {
                Some([gx.div_ceil(size[0]), gy.div_ceil(size[1]), gz.div_ceil(size[2])])
            }
            _ => None,
        };
        let id = r.uint(0, "dispatch_id")?;
        if id.is_none() {
            self.unnumbered.push((r.n - 1) as usize);
        }
        let d = Dispatch {
            id: id.unwrap_or(r.n),
            name: sym.map_or_else(
                || {
                    kid.map_or_else(
                        || "(unknown kernel)".into(),
                        |k| format!("kernel_id {k}").into(),
                    )
                },
                |s| s.name.clone(),
            ),
            gpu: agent.map(|a| {
                self.agents.entry(a).or_insert_with(|| format!("Agent {a}").into()).clone()
            }),
            stream: r
                .int(3, "queue_id")?
                .map(|q| self.queues.entry(q).or_insert_with(|| q.to_string().into()).clone()),
            start_ns: start,
            end_ns: end,
            duration_ns: match (start, end) {
                (Some(s), Some(e)) if e >= s => Some((e - s) as f64),
                _ => None,
            },
            grid: blocks,
            block,
            vgprs: sym.and_then(|s| s.vgprs),
            agprs: sym.and_then(|s| s.agprs),
            sgprs: sym.and_then(|s| s.sgprs),
            shared_bytes: r.uint(12, "group_segment_size")?,
            scratch_bytes: r.uint(13, "private_segment_size")?,
            ..Dispatch::default()
        };
        Ok((d, r.int(14, "event_id")?))
    }
}

/// Adds counter values to their dispatches; returns the counter names seen.
fn counters(ctx: &Ctx<'_>, rows: &mut Rows) -> Result<Vec<String>, CounterError> {
    let (Some(ev), Some(info)) = (
        ctx.select("rocpd_pmc_event", &["event_id", "pmc_id", "value"])?,
        ctx.select("rocpd_info_pmc", &["id", "name"])?,
    ) else {
        return Ok(Vec::new());
    };
    // Event id → dispatch (a repeated event id: the later dispatch, as a map's insert).
    let event_of = ById::new(
        rows.event_ids.iter().enumerate().filter_map(|(i, e)| Some(((*e)?, i))).collect(),
    );
    let sql = format!(
        "SELECT E.event_id, I.name, SUM(E.value) FROM ({ev}) E JOIN ({info}) I ON I.id = \
         E.pmc_id GROUP BY E.event_id, I.name"
    );
    let mut names: BTreeMap<String, CounterName> = BTreeMap::new();
    let dispatches = &mut rows.dispatches;
    for_each_row(ctx.path, ctx.conn, "rocpd_pmc_event", &sql, |r| {
        let (Some(e), Some(n)) = (r.int(0, "event_id")?, r.text_ref(1, "name")?) else {
            return Ok(());
        };
        let Some(v) = r.num(2, "value")? else { return Ok(()) };
        let key = match names.get(&*n) {
            Some(k) => k.clone(),
            None => names.entry(n.to_string()).or_insert_with(|| (&*n).into()).clone(),
        };
        if let Some(d) = event_of.get(e).and_then(|&i| dispatches.get_mut(i)) {
            d.counters.insert(key, v);
        }
        Ok(())
    })?;
    Ok(names.into_keys().collect())
}

/// API calls `(name, duration)`, marker ranges, and API call start per stack id.
type Regions<'s> = (Vec<(&'s str, f64)>, Vec<RangeSpan>, HashMap<i64, (u64, i64)>);

/// What is read beside the dispatches: the events, then the regions, then the copies
/// (each only when the one before it was read).
struct Side<'s> {
    events: Result<ById<Event>, CounterError>,
    regions: Result<Regions<'s>, CounterError>,
    copies: Result<Vec<rooftop_core::counters::activity::CopySummary>, CounterError>,
}

fn side<'s>(ctx: &Ctx<'_>, strings: &'s HashMap<i64, String>) -> Side<'s> {
    let events = events(ctx);
    let regions = match &events {
        Ok(ev) => regions(ctx, strings, ev),
        Err(_) => Ok(Default::default()),
    };
    let copies = match &regions {
        Ok(_) if events.is_ok() => copies(ctx, strings),
        _ => Ok(Vec::new()),
    };
    Side { events, regions, copies }
}

/// The dispatches and their counters, and then what [`side`] reads.
struct Main {
    dispatches: Result<Rows, CounterError>,
    counters: Result<Vec<String>, CounterError>,
}

fn main_part(ctx: &Ctx<'_>, symbols: &HashMap<i64, Symbol>) -> Main {
    match dispatches(ctx, symbols) {
        Ok(mut rows) => {
            let counters = counters(ctx, &mut rows);
            Main { dispatches: Ok(rows), counters }
        }
        Err(e) => Main { dispatches: Err(e), counters: Ok(Vec::new()) },
    }
}

/// Reads the dispatches and their counters on `ctx`'s connection and, when a second
/// core is free and the file is a plain database (a gzipped one lives in this
/// connection's memory only), the events, regions and copies on a second read-only
/// connection at the same time. The caller takes the errors in the order a one-thread
/// read meets them: events, dispatches, counters, regions, copies.
fn dispatches_and_side<'s>(
    ctx: &Ctx<'_>,
    symbols: &HashMap<i64, Symbol>,
    strings: &'s HashMap<i64, String>,
) -> (Main, Side<'s>) {
    if rayon::current_num_threads() > 1 && !crate::compressed::is_gzip_file(ctx.path) {
        let (path, tables) = (ctx.path, ctx.tables);
        let out = std::thread::scope(|s| {
            let other = s.spawn(move || {
                let conn = sqlite::open(path).ok()?;
                Some(side(&Ctx { path, conn: &conn, tables }, strings))
            });
            let main = main_part(ctx, symbols);
            (main, other.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        });
        if let (main, Some(side)) = out {
            return (main, side);
        }
    }
    let events = events(ctx);
    if events.is_err() {
        let main = Main { dispatches: Ok(Rows::default()), counters: Ok(Vec::new()) };
        let side = Side { events, regions: Ok(Default::default()), copies: Ok(Vec::new()) };
        return (main, side);
    }
    let main = main_part(ctx, symbols);
    let mut side = Side { events, regions: Ok(Default::default()), copies: Ok(Vec::new()) };
    if main.dispatches.is_ok() && main.counters.is_ok() {
        if let Ok(ev) = &side.events {
            side.regions = regions(ctx, strings, ev);
        }
        if side.regions.is_ok() {
            side.copies = copies(ctx, strings);
        }
    }
    (main, side)
}

fn regions<'s>(
    ctx: &Ctx<'_>,
    strings: &'s HashMap<i64, String>,
    events: &ById<Event>,
) -> Result<Regions<'s>, CounterError> {
    let mut calls = Vec::new();
    let mut ranges = Vec::new();
    let mut starts = HashMap::default();
    let Some(sql) = ctx.select("rocpd_region", &["start", "end", "tid", "name_id", "event_id"])?
    else {
        return Ok((calls, ranges, starts));
    };
    for_each_row(ctx.path, ctx.conn, "rocpd_region", &sql, |r| {
        let (Some(s), Some(e)) = (r.int(0, "start")?, r.int(1, "end")?) else { return Ok(()) };
        let tid = r.uint(2, "tid")?.unwrap_or(0);
        let name = r
            .int(3, "name_id")?
            .and_then(|i| strings.get(&i))
            .map_or("(unnamed region)", String::as_str);
        let ev = r.int(4, "event_id")?.and_then(|i| events.get(i)).copied();
        let category =
            ev.and_then(|e| e.category).and_then(|c| strings.get(&c)).map_or("", String::as_str);
        if category.contains("MARKER") {
            if e >= s {
                ranges.push(RangeSpan {
                    name: name.to_string(),
                    thread: tid,
                    start_ns: s,
                    end_ns: e,
                });
            }
        } else {
            calls.push((name, (e - s).max(0) as f64));
            if let Some(stack) = ev.and_then(|e| e.stack) {
                starts.entry(stack).or_insert((tid, s));
            }
        }
        Ok(())
    })?;
    Ok((calls, ranges, starts))
}

fn copies(
    ctx: &Ctx<'_>,
    strings: &HashMap<i64, String>,
) -> Result<Vec<rooftop_core::counters::activity::CopySummary>, CounterError> {
    let mut rows: Vec<(&str, f64, f64)> = Vec::new();
    if let Some(sql) = ctx.select("rocpd_memory_copy", &["start", "end", "size", "name_id"])? {
        for_each_row(ctx.path, ctx.conn, "rocpd_memory_copy", &sql, |r| {
            let d = match (r.int(0, "start")?, r.int(1, "end")?) {
                (Some(s), Some(e)) => (e - s).max(0) as f64,
                _ => 0.0,
            };
            let kind = r
                .int(3, "name_id")?
                .and_then(|i| strings.get(&i))
                .map_or("MEMORY_COPY", String::as_str);
            rows.push((kind, r.num(2, "size")?.unwrap_or(0.0), d));
            Ok(())
        })?;
    }
    Ok(summarize_copies(rows.iter().copied()))
}

fn device_info(
    agents: &BTreeMap<i64, Agent>,
    used: &BTreeSet<i64>,
    notes: &mut Vec<String>,
) -> DeviceInfo {
    let gpu = used
        .iter()
        .filter_map(|id| agents.get(id))
        .find(|a| a.gpu)
        .or_else(|| agents.values().find(|a| a.gpu));
    let Some(a) = gpu else { return DeviceInfo::default() };
    let u = |k: &str| {
        a.ext.get(k).and_then(serde_json::Value::as_u64).and_then(|v| u32::try_from(v).ok())
    };
    let f = |k: &str| {
        a.ext.get(k).and_then(serde_json::Value::as_f64).filter(|v| v.is_finite() && *v > 0.0)
    };
    let products: BTreeSet<&str> =
        used.iter().filter_map(|id| agents.get(id)).filter_map(|a| a.product.as_deref()).collect();
    if products.len() > 1 {
        notes.push(format!(
            "dispatches ran on {} GPU models ({}); the device is the first",
            products.len(),
            products.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    DeviceInfo {
        name: a.product.clone(),
        arch: a.name.clone(),
        compute_units: u("cu_count"),
        simd_per_cu: u("simd_per_cu"),
        wave_size: u("wave_front_size"),
        max_waves_per_cu: u("max_waves_per_cu"),
        max_sclk_mhz: f("max_engine_clk_fcompute"),
        num_xcd: u("num_xcc"),
        ..DeviceInfo::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense and sparse ids give what a hash map of the same rows gives: the last value
    /// of a repeated id, nothing outside the ids (below, above, between), negative ids,
    /// and spans that overflow 64 bits.
    #[test]
    fn values_by_id_as_a_map_holds_them() {
        let cases: Vec<Vec<(i64, u32)>> = vec![
            vec![],
            vec![(5, 1)],
            (1..=3000).map(|i| (i, i as u32)).collect(),
            vec![(3, 1), (4, 2), (3, 3), (10, 4)],
            vec![(-7, 1), (-5, 2), (0, 3)],
            vec![(1, 1), (1_000_000_000, 2)],
            vec![(i64::MIN, 1), (i64::MAX, 2), (0, 3)],
        ];
        for rows in cases {
            let map: std::collections::HashMap<i64, u32> = rows.iter().copied().collect();
            let by = ById::new(rows.clone());
            let dense = matches!(by, ById::Dense { .. });
            let probes = rows
                .iter()
                .flat_map(|r| [r.0.saturating_sub(1), r.0, r.0.saturating_add(1)])
                .chain([i64::MIN, i64::MAX, 0, 2]);
            for id in probes {
                assert_eq!(by.get(id), map.get(&id), "id {id} of {rows:?} (dense: {dense})");
            }
        }
        assert!(matches!(ById::new(vec![(1, 0), (1000, 0)]), ById::Dense { .. }));
        assert!(matches!(ById::new(vec![(1, 0), (1_000_000, 0)]), ById::Sparse(_)));
    }
}
