//! rooftop-tables: one rank's normalised trace as Parquet tables with a versioned
//! schema ([`tables`], `docs/parquet-schema.md`) — the interchange of multi-rank
//! map/reduce. The map step ([`write_rank`]) runs anywhere (a thread here, a Slurm
//! array task, a Kubernetes Indexed Job, a Ray task); the reduce reads back only what
//! it needs ([`read_rank`]: the `meta` and `collectives` tables), so a thousand ranks'
//! tables reduce in seconds. The tables open unchanged in DuckDB, pandas/pyarrow and
//! Spark (flat columns, UTF-8 strings, signed integers, Snappy).
//!
//! [`run`] runs the map and reduce of many ranks on this machine, on threads.
//!
//! Invariant: [`read_rank`] of a folder [`write_rank`] wrote gives back exactly the
//! [`RankMeta`] and [`CollectiveRecord`]s it was given, so the cross-rank report from
//! tables equals the report from the traces.

mod columns;
mod error;
pub mod run;
pub mod tables;

pub use columns::{in_reader, Kind, Spec, ROW_GROUP_ROWS};
pub use error::TableError;
pub use tables::SCHEMA_VERSION;

use columns::{read_table, TableWriter, Values};
use rooftop_core::trace::comm::{ArgsFrom, CollectiveKind, CollectiveRecord};
use rooftop_core::trace::model::{CommArgs, GpuKind, TraceModel, TraceWarning};
use rooftop_core::trace::ranks::RankMeta;
use rooftop_core::trace::timeline::{is_comm, is_linked, merge};
use std::path::{Path, PathBuf};

/// What [`write_rank`] writes.
#[derive(Debug, Clone, Copy)]
pub struct RankInput<'a> {
    pub meta: &'a RankMeta,
    pub model: &'a TraceModel,
    pub collectives: &'a [CollectiveRecord],
    /// Size of the trace file, bytes.
    pub source_bytes: Option<u64>,
    /// Count GPU events no runtime call launched in the segments (the timeline's
    /// setting).
    pub include_unlinked: bool,
}

/// Rows written per table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    pub tables: Vec<(String, usize)>,
}

/// Writes the six tables of one rank into `dir` (created if needed).
pub fn write_rank(dir: &Path, input: &RankInput<'_>) -> Result<Written, TableError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| TableError::Io { path: dir.to_path_buf(), source: e })?;
    let rank = input.meta.rank;
    let v = SCHEMA_VERSION;
    let mut written = Written::default();
    let mut done = |name: &str, n: usize| written.tables.push((name.to_string(), n));

    // Collectives first: `meta` is the last file written, so a folder with a `meta`
    // table is complete (a map task killed half-way leaves no `meta`).
    let mut w = TableWriter::create(
        &dir.join(tables::COLLECTIVES),
        "collectives",
        v,
        &tables::COLLECTIVE_COLS,
    )?;
    for c in input.collectives {
        let a = &c.args;
        w.push(|r| {
            r.i64(rank)
                .i32(i32::try_from(c.index).ok())
                .str(Some(&c.kernel))
                .i64(Some(c.device))
                .i64(Some(c.stream))
                .i64(Some(c.ts_ns))
                .i64(Some(c.dur_ns))
                .str(Some(c.kind.as_str()))
                .str(Some(c.args_from.as_str()))
                .str(a.collective.as_deref())
                .u64(a.in_nelems)
                .u64(a.out_nelems)
                .i32(a.group_size.and_then(|g| i32::try_from(g).ok()))
                .str(a.dtype.as_deref())
                .u64(c.message_bytes())
                .str(a.pg_name.as_deref())
                .str(a.pg_desc.as_deref())
                .str(a.pg_ranks.as_deref())
                .str(a.in_split.as_deref())
                .str(a.out_split.as_deref())
                .i64(a.seq)
                .i64(a.src_rank)
                .i64(a.dst_rank)
                .i64(Some(c.compute_before_ns))
                .str(c.compute_before.as_deref());
        })?;
    }
    done("collectives", w.finish()?);

    let m = input.model;
    let mut w =
        TableWriter::create(&dir.join(tables::KERNELS), "kernels", v, &tables::KERNEL_COLS)?;
    for (i, g) in m.gpu.iter().enumerate() {
        let op = g.op.and_then(|o| m.ops.get(o as usize));
        let dim = |d: Option<[u32; 3]>, k: usize| d.and_then(|d| i32::try_from(d[k]).ok());
        w.push(|r| {
            r.i64(rank)
                .i32(i32::try_from(i).ok())
                .str(Some(match g.kind {
                    GpuKind::Kernel => "kernel",
                    GpuKind::Memcpy => "memcpy",
                    GpuKind::Memset => "memset",
                }))
                .str(Some(&g.name))
                .i64(Some(g.ts_ns))
                .i64(Some(g.dur_ns))
                .i64(Some(g.device))
                .i64(Some(g.stream))
                .i64(g.correlation)
                .i64(g.external_id)
                .i32(g.op.and_then(|o| i32::try_from(o).ok()))
                .str(op.map(|o| o.name.as_ref()))
                .str(
                    rooftop_core::trace::ops::categorize_kernel_shared(&g.name)
                        .map(rooftop_core::trace::ops::Category::as_str),
                )
                .bool(Some(is_comm(g)))
                .i32(dim(g.grid(), 0))
                .i32(dim(g.grid(), 1))
                .i32(dim(g.grid(), 2))
                .i32(dim(g.block(), 0))
                .i32(dim(g.block(), 1))
                .i32(dim(g.block(), 2))
                .i32(g.registers_per_thread().and_then(|x| i32::try_from(x).ok()))
                .u64(g.shared_memory_bytes())
                .u64(g.bytes);
        })?;
    }
    done("kernels", w.finish()?);

    let mut w = TableWriter::create(&dir.join(tables::OPS), "ops", v, &tables::OP_COLS)?;
    for (i, o) in m.ops.iter().enumerate() {
        let json = |x: &dyn erased::Ser| x.json();
        let dims = (!o.args.input_dims.is_empty()).then(|| json(&o.args.input_dims));
        let types = (!o.args.input_types.is_empty()).then(|| json(&o.args.input_types));
        w.push(|r| {
            r.i64(rank)
                .i32(i32::try_from(i).ok())
                .str(Some(&o.name))
                .i64(Some(o.ts_ns))
                .i64(Some(o.dur_ns))
                .i64(Some(o.pid))
                .i64(Some(o.tid))
                .i32(o.parent.and_then(|p| i32::try_from(p).ok()))
                .i64(o.external_id)
                .i64(o.sequence_number)
                .i32(i32::try_from(o.launched.len()).ok())
                .str(dims.as_deref())
                .str(types.as_deref());
        })?;
    }
    done("ops", w.finish()?);

    let mut w =
        TableWriter::create(&dir.join(tables::SEGMENTS), "segments", v, &tables::SEGMENT_COLS)?;
    for (device, class, s, e) in segments(m, input.include_unlinked) {
        w.push(|r| {
            r.i64(rank).i64(Some(device)).str(Some(class)).i64(Some(s)).i64(Some(e));
        })?;
    }
    done("segments", w.finish()?);

    let mut w =
        TableWriter::create(&dir.join(tables::WARNINGS), "warnings", v, &tables::WARNING_COLS)?;
    for x in &m.warnings {
        w.push(|r| {
            r.i64(rank).str(Some(&x.kind)).u64(Some(x.count)).str(Some(&x.example));
        })?;
    }
    done("warnings", w.finish()?);

    let mt = input.meta;
    let mut w = TableWriter::create(&dir.join(tables::META), "meta", v, &tables::META_COLS)?;
    w.push(|r| {
        r.i32(i32::try_from(SCHEMA_VERSION).ok())
            .str(Some(env!("CARGO_PKG_VERSION")))
            .i64(mt.rank)
            .str(Some(&mt.name))
            .i64(mt.world_size)
            .i64(mt.base_time_ns)
            .str(mt.device_name.as_deref())
            .str(mt.catalog_id.as_deref())
            .u64(Some(mt.steps))
            .f64(Some(mt.total_ms))
            .f64(Some(mt.busy_ms))
            .f64(Some(mt.idle_ms))
            .f64(Some(mt.computation_ms))
            .f64(Some(mt.communication_ms))
            .f64(Some(mt.exposed_communication_ms))
            .u64(Some(mt.collective_kernel_count))
            .f64(Some(mt.collective_kernel_time_ms))
            .u64(Some(mt.gpu_events))
            .u64(Some(mt.cpu_ops))
            .u64(Some(input.collectives.len() as u64))
            .u64(input.source_bytes);
    })?;
    done("meta", w.finish()?);
    Ok(written)
}

/// Serialises argument lists as JSON text.
mod erased {
    pub trait Ser {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }
}

/// The GPU timeline as merged intervals per (device, class): `computation` (kernels
/// and memsets that are not communication), `communication`, `memcpy`, `memset` (also
/// inside computation, as in the timeline).
pub fn segments(m: &TraceModel, include_unlinked: bool) -> Vec<(i64, &'static str, i64, i64)> {
    use std::collections::BTreeMap;
    let mut by: BTreeMap<(i64, &'static str), Vec<(i64, i64)>> = BTreeMap::new();
    for g in &m.gpu {
        if !include_unlinked && !is_linked(g) {
            continue;
        }
        let iv = (g.ts_ns, g.ts_ns.saturating_add(g.dur_ns));
        let class = if is_comm(g) {
            "communication"
        } else if g.kind == GpuKind::Memcpy {
            "memcpy"
        } else {
            "computation"
        };
        by.entry((g.device, class)).or_default().push(iv);
        if g.kind == GpuKind::Memset {
            by.entry((g.device, "memset")).or_default().push(iv);
        }
    }
    let mut out = Vec::new();
    for ((device, class), mut iv) in by {
        merge(&mut iv);
        out.extend(iv.into_iter().map(|(s, e)| (device, class, s, e)));
    }
    out
}

/// Whether `dir` holds one rank's tables.
pub fn is_rank_dir(dir: &Path) -> bool {
    dir.join(tables::META).is_file()
}

/// The rank folders directly in `dir` (sorted), or `dir` itself when it is one.
pub fn list_rank_dirs(dir: &Path) -> Result<Vec<PathBuf>, TableError> {
    if is_rank_dir(dir) {
        return Ok(vec![dir.to_path_buf()]);
    }
    let io = |e| TableError::Io { path: dir.to_path_buf(), source: e };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let p = entry.map_err(io)?.path();
        if p.is_dir() && is_rank_dir(&p) {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

fn cell<T>(v: &[Option<T>], row: usize) -> Option<&T> {
    v.get(row).and_then(Option::as_ref)
}

/// The `meta` and `collectives` tables of one rank folder: what the reduce needs.
pub fn read_rank(dir: &Path) -> Result<(RankMeta, Vec<CollectiveRecord>), TableError> {
    if !is_rank_dir(dir) {
        return Err(TableError::NotRankDir { path: dir.to_path_buf() });
    }
    let meta = read_meta(&dir.join(tables::META))?;
    let records = read_collectives(&dir.join(tables::COLLECTIVES))?;
    Ok((meta, records))
}

fn bad(path: &Path, row: usize, column: &str, message: impl Into<String>) -> TableError {
    TableError::Value {
        path: path.to_path_buf(),
        row,
        column: column.to_string(),
        message: message.into(),
    }
}

fn read_meta(path: &Path) -> Result<RankMeta, TableError> {
    let t = read_table(path, "meta", SCHEMA_VERSION, &tables::META_COLS)?;
    if t.rows != 1 {
        return Err(TableError::MetaRows { path: path.to_path_buf(), rows: t.rows });
    }
    let c = &t.cols;
    let (i64s, f64s, strs) = (
        |k: usize| match &c[k] {
            Values::I64(v) => cell(v, 0).copied(),
            _ => None,
        },
        |k: usize| match &c[k] {
            Values::F64(v) => cell(v, 0).copied(),
            _ => None,
        },
        |k: usize| match &c[k] {
            Values::Str(v) => cell(v, 0).cloned(),
            _ => None,
        },
    );
    // Times are durations: a negative or non-finite one is a damaged table, refused
    // rather than printed (a missing one stays 0, as the writer never leaves it out).
    let time = |k: usize| {
        let v = f64s(k).unwrap_or(0.0);
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(bad(
                path,
                0,
                tables::META_COLS[k].name,
                format!("duration {v} ms: expected a finite time of at least 0"),
            ))
        }
    };
    let count = |k: usize| {
        let v = i64s(k).unwrap_or(0);
        u64::try_from(v)
            .map_err(|_| bad(path, 0, tables::META_COLS[k].name, format!("negative count {v}")))
    };
    Ok(RankMeta {
        rank: i64s(2),
        name: strs(3).unwrap_or_default(),
        world_size: i64s(4),
        base_time_ns: i64s(5),
        device_name: strs(6),
        catalog_id: strs(7),
        steps: count(8)?,
        total_ms: time(9)?,
        busy_ms: time(10)?,
        idle_ms: time(11)?,
        computation_ms: time(12)?,
        communication_ms: time(13)?,
        exposed_communication_ms: time(14)?,
        collective_kernel_count: count(15)?,
        collective_kernel_time_ms: time(16)?,
        gpu_events: count(17)?,
        cpu_ops: count(18)?,
    })
}

fn read_collectives(path: &Path) -> Result<Vec<CollectiveRecord>, TableError> {
    let t = read_table(path, "collectives", SCHEMA_VERSION, &tables::COLLECTIVE_COLS)?;
    let c = &t.cols;
    let i64c = |k: usize, row: usize| match &c[k] {
        Values::I64(v) => cell(v, row).copied(),
        _ => None,
    };
    let i32c = |k: usize, row: usize| match &c[k] {
        Values::I32(v) => cell(v, row).copied(),
        _ => None,
    };
    let strc = |k: usize, row: usize| match &c[k] {
        Values::Str(v) => cell(v, row).cloned(),
        _ => None,
    };
    let mut out = Vec::with_capacity(t.rows);
    for row in 0..t.rows {
        let name = |k: usize| tables::COLLECTIVE_COLS[k].name;
        let unsigned = |k: usize| -> Result<Option<u64>, TableError> {
            i64c(k, row)
                .map(|v| {
                    u64::try_from(v)
                        .map_err(|_| bad(path, row, name(k), format!("negative count {v}")))
                })
                .transpose()
        };
        let kind_s = strc(7, row).unwrap_or_default();
        let kind = CollectiveKind::parse(&kind_s)
            .ok_or_else(|| bad(path, row, "kind", format!("unknown kind `{kind_s}`")))?;
        let from_s = strc(8, row).unwrap_or_default();
        let args_from = ArgsFrom::parse(&from_s)
            .ok_or_else(|| bad(path, row, "args_from", format!("unknown value `{from_s}`")))?;
        let index = i32c(1, row)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| bad(path, row, "index", "negative index"))?;
        let group_size = match i32c(12, row) {
            Some(v) => Some(
                u32::try_from(v)
                    .map_err(|_| bad(path, row, "group_size", format!("negative size {v}")))?,
            ),
            None => None,
        };
        out.push(CollectiveRecord {
            index,
            kernel: strc(2, row).unwrap_or_default(),
            device: i64c(3, row).unwrap_or(0),
            stream: i64c(4, row).unwrap_or(0),
            ts_ns: i64c(5, row).unwrap_or(0),
            dur_ns: match i64c(6, row).unwrap_or(0) {
                d if d < 0 => {
                    return Err(bad(path, row, "dur_ns", format!("negative duration {d} ns")))
                }
                d => d,
            },
            kind,
            args_from,
            args: CommArgs {
                collective: strc(9, row).map(Into::into),
                in_nelems: unsigned(10)?,
                out_nelems: unsigned(11)?,
                group_size,
                dtype: strc(13, row).map(Into::into),
                pg_name: strc(15, row).map(Into::into),
                pg_desc: strc(16, row).map(Into::into),
                pg_ranks: strc(17, row).map(Into::into),
                in_split: strc(18, row).map(Into::into),
                out_split: strc(19, row).map(Into::into),
                seq: i64c(20, row),
                src_rank: i64c(21, row),
                dst_rank: i64c(22, row),
            },
            compute_before_ns: match i64c(23, row).unwrap_or(0) {
                d if d < 0 => {
                    return Err(bad(
                        path,
                        row,
                        "compute_before_ns",
                        format!("negative duration {d} ns"),
                    ))
                }
                d => d,
            },
            compute_before: strc(24, row),
        });
    }
    Ok(out)
}

/// The reader warnings of a rank folder (`warnings` table).
pub fn read_warnings(dir: &Path) -> Result<Vec<TraceWarning>, TableError> {
    let path = dir.join(tables::WARNINGS);
    let t = read_table(&path, "warnings", SCHEMA_VERSION, &tables::WARNING_COLS)?;
    let mut out = Vec::with_capacity(t.rows);
    for row in 0..t.rows {
        let (Values::Str(k), Values::I64(n), Values::Str(e)) = (&t.cols[1], &t.cols[2], &t.cols[3])
        else {
            break;
        };
        out.push(TraceWarning {
            kind: cell(k, row).cloned().unwrap_or_default(),
            count: cell(n, row).and_then(|v| u64::try_from(*v).ok()).unwrap_or(0),
            example: cell(e, row).cloned().unwrap_or_default(),
        });
    }
    Ok(out)
}
