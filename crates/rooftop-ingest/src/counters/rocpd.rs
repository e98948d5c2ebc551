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

use super::sqlite::{self, col_or_null, for_each_row};
use super::CounterError;
use rooftop_core::counters::activity::{
    attribute, summarize_api, summarize_copies, Activity, KernelLaunch, RangeSpan,
};
use rooftop_core::counters::{
    clean_kernel_name, CounterFormat, CounterName, CounterSet, CounterSource, DeviceInfo, Dispatch,
};
use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

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
    tables: BTreeSet<String>,
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
    name: std::sync::Arc<str>,
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
    let ctx = Ctx { path, conn, tables };
    let strings = strings(&ctx)?;
    let agents = agents(&ctx)?;
    let symbols = symbols(&ctx)?;
    let events = events(&ctx)?;
    let (mut dispatches, event_of, agents_used, launch_of) = dispatches(&ctx, &symbols)?;
    let counters = counters(&ctx, &event_of, &mut dispatches)?;
    let (calls, ranges, api_starts) = regions(&ctx, &strings, &events)?;
    let copies = copies(&ctx, &strings)?;

    // Kernel launches: the API region with the dispatch event's stack id.
    let mut launches = Vec::new();
    for (i, d) in dispatches.iter().enumerate() {
        let Some(ns) = d.duration_ns else { continue };
        let stack =
            launch_of.get(i).copied().flatten().and_then(|e| events.get(&e)).map(|e| e.stack);
        if let Some(&(thread, launch_ns)) = stack.flatten().and_then(|s| api_starts.get(&s)) {
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
        api: summarize_api(calls.iter().map(|(n, d)| (n.as_str(), *d))),
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
    let mut m = HashMap::new();
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
    let mut m = HashMap::new();
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

#[derive(Debug, Clone, Copy)]
struct Event {
    category: Option<i64>,
    stack: Option<i64>,
}

fn events(ctx: &Ctx<'_>) -> Result<HashMap<i64, Event>, CounterError> {
    let mut m = HashMap::new();
    if let Some(sql) = ctx.select("rocpd_event", &["id", "category_id", "stack_id"])? {
        for_each_row(ctx.path, ctx.conn, "rocpd_event", &sql, |r| {
            if let Some(id) = r.int(0, "id")? {
                m.insert(
                    id,
                    Event { category: r.int(1, "category_id")?, stack: r.int(2, "stack_id")? },
                );
            }
            Ok(())
        })?;
    }
    Ok(m)
}

/// Dispatches, event id → dispatch index, agents used, each dispatch's event id.
type DispatchRows = (Vec<Dispatch>, HashMap<i64, usize>, BTreeSet<i64>, Vec<Option<i64>>);

fn dispatches(ctx: &Ctx<'_>, symbols: &HashMap<i64, Symbol>) -> Result<DispatchRows, CounterError> {
    let base = "rocpd_kernel_dispatch";
    let wanted = [
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
    let mut out = Vec::new();
    let mut by_event = HashMap::new();
    let mut used = BTreeSet::new();
    let mut event_ids = Vec::new();
    let Some(sql) = ctx.select(base, &wanted)? else {
        return Ok((out, by_event, used, event_ids));
    };
    // Capped just past the row limit before sorting (see `sqlite::row_cap`).
    let sql = format!("SELECT * FROM ({sql} LIMIT {}) ORDER BY \"start\"", sqlite::row_cap());
    for_each_row(ctx.path, ctx.conn, base, &sql, |r| {
        let kid = r.int(2, "kernel_id")?;
        let sym = kid.and_then(|k| symbols.get(&k));
        let agent = r.int(1, "agent_id")?;
        if let Some(a) = agent {
            used.insert(a);
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
            ([Some(x), Some(y), Some(z)], Some(b)) => {
                Some([x.div_ceil(b[0]), y.div_ceil(b[1]), z.div_ceil(b[2])])
            }
            _ => None,
        };
        let d = Dispatch {
            id: r.uint(0, "dispatch_id")?.unwrap_or(r.n),
            name: sym.map_or_else(
                || {
                    kid.map_or_else(
                        || "(unknown kernel)".into(),
                        |k| format!("kernel_id {k}").into(),
                    )
                },
                |s| s.name.clone(),
            ),
            gpu: agent.map(|a| format!("Agent {a}").into()),
            stream: r.int(3, "queue_id")?.map(|q| q.to_string().into()),
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
        let ev = r.int(14, "event_id")?;
        if let Some(e) = ev {
            by_event.insert(e, out.len());
        }
        event_ids.push(ev);
        out.push(d);
        Ok(())
    })?;
    Ok((out, by_event, used, event_ids))
}

/// Adds counter values to their dispatches; returns the counter names seen.
fn counters(
    ctx: &Ctx<'_>,
    event_of: &HashMap<i64, usize>,
    dispatches: &mut [Dispatch],
) -> Result<Vec<String>, CounterError> {
    let (Some(ev), Some(info)) = (
        ctx.select("rocpd_pmc_event", &["event_id", "pmc_id", "value"])?,
        ctx.select("rocpd_info_pmc", &["id", "name"])?,
    ) else {
        return Ok(Vec::new());
    };
    let sql = format!(
        "SELECT E.event_id, I.name, SUM(E.value) FROM ({ev}) E JOIN ({info}) I ON I.id = \
         E.pmc_id GROUP BY E.event_id, I.name"
    );
    let mut names: BTreeMap<String, CounterName> = BTreeMap::new();
    for_each_row(ctx.path, ctx.conn, "rocpd_pmc_event", &sql, |r| {
        let (Some(e), Some(n)) = (r.int(0, "event_id")?, r.text(1, "name")?) else {
            return Ok(());
        };
        let Some(v) = r.num(2, "value")? else { return Ok(()) };
        let key = names.entry(n.clone()).or_insert_with(|| n.as_str().into()).clone();
        if let Some(d) = event_of.get(&e).and_then(|&i| dispatches.get_mut(i)) {
            d.counters.insert(key, v);
        }
        Ok(())
    })?;
    Ok(names.into_keys().collect())
}

type Regions = (Vec<(String, f64)>, Vec<RangeSpan>, HashMap<i64, (u64, i64)>);

/// API calls `(name, duration)`, marker ranges, and API call start per stack id.
fn regions(
    ctx: &Ctx<'_>,
    strings: &HashMap<i64, String>,
    events: &HashMap<i64, Event>,
) -> Result<Regions, CounterError> {
    let mut calls = Vec::new();
    let mut ranges = Vec::new();
    let mut starts = HashMap::new();
    let Some(sql) = ctx.select("rocpd_region", &["start", "end", "tid", "name_id", "event_id"])?
    else {
        return Ok((calls, ranges, starts));
    };
    for_each_row(ctx.path, ctx.conn, "rocpd_region", &sql, |r| {
        let (Some(s), Some(e)) = (r.int(0, "start")?, r.int(1, "end")?) else { return Ok(()) };
        let tid = r.uint(2, "tid")?.unwrap_or(0);
        let name = r
            .int(3, "name_id")?
            .and_then(|i| strings.get(&i).cloned())
            .unwrap_or_else(|| "(unnamed region)".to_string());
        let ev = r.int(4, "event_id")?.and_then(|i| events.get(&i)).copied();
        let category =
            ev.and_then(|e| e.category).and_then(|c| strings.get(&c)).map_or("", String::as_str);
        if category.contains("MARKER") {
            if e >= s {
                ranges.push(RangeSpan { name, thread: tid, start_ns: s, end_ns: e });
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
    let mut rows: Vec<(String, f64, f64)> = Vec::new();
    if let Some(sql) = ctx.select("rocpd_memory_copy", &["start", "end", "size", "name_id"])? {
        for_each_row(ctx.path, ctx.conn, "rocpd_memory_copy", &sql, |r| {
            let d = match (r.int(0, "start")?, r.int(1, "end")?) {
                (Some(s), Some(e)) => (e - s).max(0) as f64,
                _ => 0.0,
            };
            let kind = r
                .int(3, "name_id")?
                .and_then(|i| strings.get(&i).cloned())
                .unwrap_or_else(|| "MEMORY_COPY".to_string());
            rows.push((kind, r.num(2, "size")?.unwrap_or(0.0), d));
            Ok(())
        })?;
    }
    Ok(summarize_copies(rows.iter().map(|(k, b, d)| (k.as_str(), *b, *d))))
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
