//! The tables of one rank and their columns: schema version [`SCHEMA_VERSION`]
//! (`docs/parquet-schema.md` is the contract; a test checks that it lists exactly
//! these columns).
//!
//! - `meta` (one row): the rank, world size, clock base, device, steps and timeline
//!   totals ([`RankMeta`](rooftop_core::trace::ranks::RankMeta));
//! - `collectives`: one row per communication kernel ([`CollectiveRecord`](rooftop_core::trace::comm::record::CollectiveRecord));
//! - `kernels`: one row per GPU activity (kernel, memcpy, memset);
//! - `ops`: one row per CPU op, with its parent in the call tree;
//! - `segments`: the GPU timeline as merged busy intervals per device and class;
//! - `warnings`: what the reader tolerated.
//!
//! Times are integer nanoseconds on the trace's own clock (`*_ns`); add
//! `meta.base_time_ns` to compare ranks. Every table has the `rank` column, so tables
//! of many ranks concatenate (`read_parquet('*/kernels.parquet')`).

use crate::columns::{opt, req, Kind, Spec};

/// Version of the table schema. Adding a column is compatible (readers ignore columns
/// they do not know); renaming, removing or retyping one bumps it.
pub const SCHEMA_VERSION: u32 = 1;

/// File names of the tables, in writing order.
pub const META: &str = "meta.parquet";
pub const COLLECTIVES: &str = "collectives.parquet";
pub const KERNELS: &str = "kernels.parquet";
pub const OPS: &str = "ops.parquet";
pub const SEGMENTS: &str = "segments.parquet";
pub const WARNINGS: &str = "warnings.parquet";

use Kind::{Bool, Str, F64, I32, I64};

pub static META_COLS: [Spec; 21] = [
    req("schema_version", I32),
    req("rooftop_version", Str),
    opt("rank", I64),
    req("name", Str),
    opt("world_size", I64),
    opt("base_time_ns", I64),
    opt("device_name", Str),
    opt("catalog_id", Str),
    req("steps", I64),
    req("total_ms", F64),
    req("busy_ms", F64),
    req("idle_ms", F64),
    req("computation_ms", F64),
    req("communication_ms", F64),
    req("exposed_communication_ms", F64),
    req("collective_kernel_count", I64),
    req("collective_kernel_time_ms", F64),
    req("gpu_events", I64),
    req("cpu_ops", I64),
    req("collectives", I64),
    opt("source_bytes", I64),
];

pub static COLLECTIVE_COLS: [Spec; 25] = [
    opt("rank", I64),
    req("index", I32),
    req("kernel", Str),
    req("device", I64),
    req("stream", I64),
    req("ts_ns", I64),
    req("dur_ns", I64),
    req("kind", Str),
    req("args_from", Str),
    opt("collective", Str),
    opt("in_nelems", I64),
    opt("out_nelems", I64),
    opt("group_size", I32),
    opt("dtype", Str),
    opt("message_bytes", I64),
    opt("pg_name", Str),
    opt("pg_desc", Str),
    opt("pg_ranks", Str),
    opt("in_split", Str),
    opt("out_split", Str),
    opt("seq", I64),
    opt("src_rank", I64),
    opt("dst_rank", I64),
    req("compute_before_ns", I64),
    opt("compute_before", Str),
];

pub static KERNEL_COLS: [Spec; 23] = [
    opt("rank", I64),
    req("index", I32),
    req("kind", Str),
    req("name", Str),
    req("ts_ns", I64),
    req("dur_ns", I64),
    req("device", I64),
    req("stream", I64),
    opt("correlation", I64),
    opt("external_id", I64),
    opt("op", I32),
    opt("op_name", Str),
    opt("category", Str),
    req("is_communication", Bool),
    opt("grid_x", I32),
    opt("grid_y", I32),
    opt("grid_z", I32),
    opt("block_x", I32),
    opt("block_y", I32),
    opt("block_z", I32),
    opt("registers_per_thread", I32),
    opt("shared_memory_bytes", I64),
    opt("bytes", I64),
];

pub static OP_COLS: [Spec; 13] = [
    opt("rank", I64),
    req("index", I32),
    req("name", Str),
    req("ts_ns", I64),
    req("dur_ns", I64),
    req("pid", I64),
    req("tid", I64),
    opt("parent", I32),
    opt("external_id", I64),
    opt("sequence_number", I64),
    req("kernels", I32),
    opt("input_dims", Str),
    opt("input_types", Str),
];

pub static SEGMENT_COLS: [Spec; 5] = [
    opt("rank", I64),
    req("device", I64),
    req("class", Str),
    req("start_ns", I64),
    req("end_ns", I64),
];

pub static WARNING_COLS: [Spec; 4] =
    [opt("rank", I64), req("kind", Str), req("count", I64), req("example", Str)];

/// Every table: (name, file, columns).
pub fn all() -> [(&'static str, &'static str, &'static [Spec]); 6] {
    [
        ("meta", META, &META_COLS),
        ("collectives", COLLECTIVES, &COLLECTIVE_COLS),
        ("kernels", KERNELS, &KERNEL_COLS),
        ("ops", OPS, &OP_COLS),
        ("segments", SEGMENTS, &SEGMENT_COLS),
        ("warnings", WARNINGS, &WARNING_COLS),
    ]
}
