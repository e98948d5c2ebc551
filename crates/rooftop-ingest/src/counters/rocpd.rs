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
///
/// A counter of a dispatch is the `SUM` of its values over the dimension instances,
/// grouped by event and counter name, as the `counters_collection` view has it. The
/// values are read in the table's order and summed here when that sum is SQLite's to
/// the bit ([`Sum`]); else (and on any error) SQLite sums them
/// (`SUM ... GROUP BY event_id, name`), whose sort of every value row was most of a
/// counter database's reading time.
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
    if let Some(names) = counters_summed_here(ctx, &ev, &info, &event_of, rows) {
        return Ok(names);
    }
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

/// What SQLite's `SUM` of one group gives, kept here while it is known exactly.
///
/// SQLite adds integers exactly (an `i64`) and reals with the Kahan–Babuška–Neumaier
/// sum, in the order its sort hands the rows over. Two cases come out the same in any
/// order and either way, and are the ones kept: whole numbers (stored as integers or as
/// reals) whose every partial sum stays within ±2^53, where each addition is exact; and
/// one value alone (a group of one: `0 + v` with no error term). Anything else (a
/// second value beside a fraction, a larger whole number, a non-finite or text value)
/// is [`Inexact`], and SQLite sums the whole table instead.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Sum {
    /// Non-NULL values added.
    n: u32,
    whole: i64,
    /// The one value, when it is not a whole number.
    fraction: Option<f64>,
}

/// The name index of a counter row whose name is NULL.
const NO_NAME: u32 = u32::MAX;

/// A sum this reader does not reproduce bit for bit ([`Sum`]).
#[derive(Debug)]
struct Inexact;

/// Whole numbers at most this large in magnitude are exact in an `f64`, and so is every
/// sum that stays within it.
const EXACT: i64 = 1 << 53;

impl Sum {
    fn add(&mut self, v: rusqlite::types::ValueRef<'_>) -> Result<(), Inexact> {
        use rusqlite::types::ValueRef;
        let whole = match v {
            ValueRef::Null => return Ok(()),
            ValueRef::Integer(i) => i,
            ValueRef::Real(r) if r.is_finite() && r.fract() == 0.0 && r.abs() <= EXACT as f64 => {
                r as i64
            }
            ValueRef::Real(r) if r.is_finite() && self.n == 0 => {
                self.fraction = Some(r);
                self.n = 1;
                return Ok(());
            }
            _ => return Err(Inexact),
        };
        if self.fraction.is_some() || !(-EXACT..=EXACT).contains(&whole) {
            return Err(Inexact);
        }
        self.whole += whole;
        self.n = self.n.saturating_add(1);
        if !(-EXACT..=EXACT).contains(&self.whole) {
            return Err(Inexact);
        }
        Ok(())
    }

    /// The sum as SQLite gives it; `None` (SQL NULL) when every value was NULL.
    fn value(&self) -> Option<f64> {
        (self.n > 0).then(|| self.fraction.unwrap_or(self.whole as f64))
    }
}

/// [`counters`] summed here: `None` when a sum would not be SQLite's to the bit, or
/// anything cannot be read (SQLite's own query then gives the numbers, or the error).
///
/// The join is the query's: an event row counts once under each counter row with its
/// `pmc_id` (views over several processes' tables can repeat an id), and a row whose
/// counter id matches none is left out. Groups without an event or a name, and those of
/// an event that is no dispatch's, are summed too (SQLite's sum of them could fail, as
/// an integer overflow) but not kept; the names of the last kind are still reported, as
/// the query's are.
fn counters_summed_here(
    ctx: &Ctx<'_>,
    ev: &str,
    info: &str,
    event_of: &ById<usize>,
    rows: &mut Rows,
) -> Option<Vec<String>> {
    use rusqlite::types::ValueRef;
    // Counter names, by index; the indices of the names of each counter id.
    let mut names: Vec<String> = Vec::new();
    let mut index: HashMap<String, u32> = HashMap::default();
    let mut of_id: HashMap<i64, Vec<u32>> = HashMap::default();
    let read = for_each_row(ctx.path, ctx.conn, "rocpd_info_pmc", info, |r| {
        let (ValueRef::Integer(id), name) = (r.value(0)?, r.value(1)?) else {
            // A NULL id joins nothing; one of another type is not modelled.
            return match r.value(0)? {
                ValueRef::Null => Ok(()),
                _ => Err(CounterError::new(ctx.path, "")),
            };
        };
        let t = match name {
            ValueRef::Text(t) => t,
            // A NULL name's groups are summed (SQLite's sum can fail) but not kept.
            ValueRef::Null => {
                of_id.entry(id).or_default().push(NO_NAME);
                return Ok(());
            }
            // A name of another type is grouped apart from its text by SQLite: not
            // modelled.
            _ => return Err(CounterError::new(ctx.path, "")),
        };
        let t = std::str::from_utf8(t).map_err(|_| CounterError::new(ctx.path, ""))?;
        let k = if let Some(&k) = index.get(t) {
            k
        } else {
            names.push(t.to_string());
            index.insert(t.to_string(), names.len() as u32 - 1);
            names.len() as u32 - 1
        };
        of_id.entry(id).or_default().push(k);
        Ok(())
    });
    read.ok()?;
    // Sums per dispatch (a few counters each: a short list) and, for events that are
    // no dispatch's, per (event, name): their sums are not kept, but SQLite's would
    // fail where these cannot be had, so they are followed too.
    let mut per_dispatch: Vec<Vec<(u32, Sum)>> = vec![Vec::new(); rows.dispatches.len()];
    let mut elsewhere: HashMap<(Option<i64>, u32), Sum> = HashMap::default();
    let read = for_each_row(ctx.path, ctx.conn, "rocpd_pmc_event", ev, |r| {
        let (event, ValueRef::Integer(pmc)) = (r.value(0)?, r.value(1)?) else {
            // A NULL counter id joins nothing; one of another type is not modelled.
            return match r.value(1)? {
                ValueRef::Null => Ok(()),
                _ => Err(CounterError::new(ctx.path, "")),
            };
        };
        // A NULL event's groups are summed (SQLite's sum can fail) but not kept.
        let e = match event {
            ValueRef::Integer(e) => Some(e),
            ValueRef::Null => None,
            _ => return Err(CounterError::new(ctx.path, "")),
        };
        let Some(ks) = of_id.get(&pmc) else { return Ok(()) };
        let v = r.value(2)?;
        for &k in ks {
            let dispatch = e.filter(|_| k != NO_NAME).and_then(|e| event_of.get(e));
            let sum = if let Some(list) = dispatch.and_then(|&i| per_dispatch.get_mut(i)) {
                let j = list.iter().position(|(n, _)| *n == k).unwrap_or_else(|| {
                    list.push((k, Sum::default()));
                    list.len() - 1
                });
                &mut list[j].1
            } else {
                elsewhere.entry((e, k)).or_default()
            };
            // Not SQLite's sum to the bit: SQLite sums the table.
            sum.add(v).map_err(|Inexact| CounterError::new(ctx.path, ""))?;
        }
        Ok(())
    });
    read.ok()?;
    // The names the query reports: those of a group with an event and a value.
    let mut seen = vec![false; names.len()];
    let here = per_dispatch.iter().flatten().map(|(k, s)| (k, s));
    let there = elsewhere.iter().filter(|((e, _), _)| e.is_some()).map(|((_, k), s)| (k, s));
    for (k, sum) in here.chain(there) {
        if let (Some(seen), Some(_)) = (seen.get_mut(*k as usize), sum.value()) {
            *seen = true;
        }
    }
    let keys: Vec<CounterName> = names.iter().map(|n| CounterName::from(n.as_str())).collect();
    for (d, sums) in rows.dispatches.iter_mut().zip(&per_dispatch) {
        for (k, sum) in sums {
            if let Some(v) = sum.value() {
                d.counters.insert(keys[*k as usize].clone(), v);
            }
        }
    }
    let mut out: Vec<String> =
        names.into_iter().zip(seen).filter_map(|(n, s)| s.then_some(n)).collect();
    out.sort_unstable();
    Some(out)
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

    /// A sum kept here is SQLite's `SUM` of the same values to the bit, and the groups it
    /// gives up on are the ones it must: oracle SQLite itself, on 4,000 groups of 1 to 6
    /// values (NULL, small and large integers, whole and fractional reals, -0.0, values
    /// near 2^53 and past it, text), in the order they were inserted.
    #[test]
    fn sums_kept_here_are_sqlites() {
        use rusqlite::types::Value;
        let c = Connection::open_in_memory().unwrap();
        c.execute("CREATE TABLE t (g INTEGER, v)", []).unwrap();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut groups: Vec<Vec<Value>> = Vec::new();
        for _ in 0..4_000 {
            let len = (next() % 6 + 1) as usize;
            let values: Vec<Value> = (0..len)
                .map(|_| {
                    let x = next();
                    match x % 11 {
                        0 => Value::Null,
                        1 => Value::Integer(((x >> 20) % 1_000_000).cast_signed() - 500_000),
                        2 => Value::Integer(EXACT - (x >> 60).cast_signed()),
                        3 => Value::Integer(i64::MAX - (x >> 60).cast_signed()),
                        4 => Value::Real(((x >> 20) % 1_000_000) as f64),
                        5 => Value::Real((x >> 11) as f64 * 1e-3),
                        6 => Value::Real(-0.0),
                        7 => Value::Real(EXACT as f64 - 2.0),
                        8 => Value::Real(1e300),
                        9 => Value::Text(format!("{}", x % 100)),
                        _ => Value::Real(((x >> 40) as f64) * 0.5),
                    }
                })
                .collect();
            groups.push(values);
        }
        {
            let mut ins = c.prepare("INSERT INTO t VALUES (?1, ?2)").unwrap();
            for (g, values) in groups.iter().enumerate() {
                for v in values {
                    ins.execute(rusqlite::params![i64::try_from(g).unwrap(), v]).unwrap();
                }
            }
        }
        // Group by group: a sum past i64 is an error ("integer overflow"), which must not
        // be one that is kept.
        c.execute("CREATE INDEX by_g ON t (g)", []).unwrap();
        let mut st = c.prepare("SELECT SUM(v) FROM t WHERE g = ?1").unwrap();
        let sums: Vec<Option<Option<f64>>> = (0..i64::try_from(groups.len()).unwrap())
            .map(|g| st.query_row([g], |r| r.get::<_, Option<f64>>(0)).ok())
            .collect();
        let (mut kept, mut left) = (0, 0);
        for (g, values) in groups.iter().enumerate() {
            let mut sum = Sum::default();
            let exact = values.iter().try_for_each(|v| sum.add(v.into())).is_ok();
            if exact {
                kept += 1;
                let want = sums[g].unwrap_or_else(|| panic!("group {g}: {values:?} fails"));
                let (got, want) = (sum.value().map(f64::to_bits), want.map(f64::to_bits));
                assert_eq!(got, want, "group {g}: {values:?}");
            } else {
                left += 1;
            }
            // What must be given up: a text, a fraction beside another value, a sum or
            // value past 2^53 (whole values within it are exact in any order).
            let whole = |v: &Value| match v {
                Value::Integer(i) => Some(*i as i128),
                Value::Real(r) if r.fract() == 0.0 && r.abs() <= EXACT as f64 => Some(*r as i128),
                _ => None,
            };
            let non_null: Vec<&Value> = values.iter().filter(|v| **v != Value::Null).collect();
            let all_whole = non_null.iter().all(|v| whole(v).is_some());
            let mut partial = 0i128;
            let within = non_null.iter().all(|v| {
                let w = whole(v).unwrap_or(0);
                partial += w;
                w.abs() <= EXACT as i128 && partial.abs() <= EXACT as i128
            });
            let one_real = matches!(non_null.as_slice(), [Value::Real(r)] if r.is_finite());
            assert_eq!(exact, (all_whole && within) || one_real, "group {g}: {values:?}");
        }
        assert!(kept > 500 && left > 500, "kept {kept}, left {left}");
    }

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
