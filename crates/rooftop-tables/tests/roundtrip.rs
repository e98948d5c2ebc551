//! The tables read back exactly what was written; a damaged or foreign file is an error
//! naming the file (and the column), never a panic.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use rooftop_core::trace::comm::{collectives, ArgsFrom, CollectiveKind, CollectiveRecord};
use rooftop_core::trace::model::{
    CommArgs, CpuOp, GpuEvent, GpuKind, LaunchDims, TraceModel, TraceWarning,
};
use rooftop_core::trace::ranks::RankMeta;
use rooftop_core::trace::report::{analyze, TraceOptions};
use rooftop_tables::{read_rank, read_warnings, write_rank, RankInput, TableError};
use std::path::PathBuf;

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::Builder::new().prefix(&format!("rooftop-tables-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn model() -> TraceModel {
    let k = |name: &str, ts: i64, dur: i64, stream: i64, comm: Option<CommArgs>| GpuEvent {
        name: name.into(),
        ts_ns: ts,
        dur_ns: dur,
        stream,
        launcher: Some("cudaLaunchKernel".into()),
        op: Some(0),
        launch: LaunchDims { grid: Some([128, 1, 1]), ..LaunchDims::default() }.shared(),
        comm: comm.map(Box::new),
        ..GpuEvent::default()
    };
    let args = CommArgs {
        collective: Some("allreduce".into()),
        in_nelems: Some(1 << 20),
        out_nelems: Some(1 << 20),
        group_size: Some(8),
        dtype: Some("BFloat16".into()),
        pg_name: Some("0".into()),
        pg_desc: Some("default_pg".into()),
        pg_ranks: Some("[0, 1, 2, 3, 4, 5, 6, 7]".into()),
        in_split: Some("[]".into()),
        out_split: Some("[]".into()),
        seq: Some(12),
        src_rank: None,
        dst_rank: None,
    };
    TraceModel {
        ops: vec![CpuOp { name: "aten::mm".into(), ts_ns: 0, dur_ns: 5, ..CpuOp::default() }],
        gpu: vec![
            k("gemm", 1_000, 60_000, 7, None),
            k("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 61_000, 80_123, 20, Some(args)),
            GpuEvent {
                kind: GpuKind::Memcpy,
                bytes: Some(4096),
                ..k("Memcpy HtoD", 200_000, 10, 8, None)
            },
        ],
        rank: Some(3),
        world_size: Some(8),
        base_time_ns: Some(1_700_000_000_000_000_123),
        warnings: vec![TraceWarning {
            kind: "missing_field".into(),
            count: 2,
            example: "an event without `ph`".into(),
        }],
        ..TraceModel::default()
    }
}

#[test]
fn meta_and_collectives_round_trip_exactly() {
    let m = model();
    let report = analyze(&m, None, &TraceOptions::default());
    let meta = RankMeta::of("rank3.json", &m, report.device.catalog_id.as_deref(), false);
    let mut recs = collectives(&m);
    // Every field set, including the rare ones.
    recs.push(CollectiveRecord {
        index: 1,
        kernel: "ncclDevKernel_SendRecv".into(),
        kind: CollectiveKind::SendRecv,
        args_from: ArgsFrom::Op,
        args: CommArgs { src_rank: Some(2), dst_rank: Some(5), ..CommArgs::default() },
        compute_before: Some("aten::mm".into()),
        compute_before_ns: 7,
        ..CollectiveRecord::default()
    });
    let (_dir_guard, dir) = tempdir("roundtrip");
    let w = write_rank(
        &dir,
        &RankInput {
            meta: &meta,
            model: &m,
            collectives: &recs,
            source_bytes: Some(1234),
            include_unlinked: false,
        },
    )
    .unwrap();
    assert_eq!(w.tables.len(), 6);
    let (meta2, recs2) = read_rank(&dir).unwrap();
    assert_eq!(meta2, meta);
    assert_eq!(recs2, recs);
    assert_eq!(read_warnings(&dir).unwrap(), m.warnings);
}

#[test]
fn foreign_and_damaged_files_are_errors_with_the_file_and_column() {
    let m = model();
    let meta = RankMeta::of("r.json", &m, None, false);
    let (_dir_guard, dir) = tempdir("bad");
    write_rank(
        &dir,
        &RankInput {
            meta: &meta,
            model: &m,
            collectives: &collectives(&m),
            source_bytes: None,
            include_unlinked: false,
        },
    )
    .unwrap();
    // A kernels table where the meta table should be: its columns are not meta's.
    std::fs::copy(dir.join("kernels.parquet"), dir.join("meta.parquet")).unwrap();
    let e = read_rank(&dir).unwrap_err().to_string();
    assert!(e.contains("meta.parquet") && e.contains("no column `schema_version`"), "{e}");
    // Not Parquet at all.
    std::fs::write(dir.join("meta.parquet"), b"{\"traceEvents\": []}").unwrap();
    let e = read_rank(&dir).unwrap_err();
    assert!(matches!(e, TableError::Parquet { .. }), "{e}");
    assert!(e.to_string().contains("meta.parquet: not a readable Parquet file"), "{e}");
    // A folder without tables.
    let (_empty_guard, empty) = tempdir("empty");
    let e = read_rank(&empty).unwrap_err().to_string();
    assert!(e.contains("no rank tables here"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Any byte of a valid table changed: an error or a value, never a panic.
    #[test]
    fn mutated_tables_never_panic(pos in 0usize..100_000, byte in any::<u8>(), which in 0usize..2) {
        let m = model();
        let meta = RankMeta::of("r.json", &m, None, false);
        let (_dir_guard, dir) = tempdir(&format!("mut-{pos}-{byte}-{which}"));
        write_rank(&dir, &RankInput { meta: &meta, model: &m, collectives: &collectives(&m), source_bytes: None, include_unlinked: false }).unwrap();
        let file = dir.join(if which == 0 { "meta.parquet" } else { "collectives.parquet" });
        let mut bytes = std::fs::read(&file).unwrap();
        let i = pos % bytes.len();
        bytes[i] = byte;
        std::fs::write(&file, &bytes).unwrap();
        let _ = read_rank(&dir);
    }
}

/// `docs/parquet-schema.md` lists exactly the columns written, in order, with their types.
#[test]
fn the_documented_schema_is_the_written_one() {
    let doc = include_str!("../../../docs/parquet-schema.md");
    for (table, _, specs) in rooftop_tables::tables::all() {
        let section = doc
            .split(&format!("### {table}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no section {table}"));
        let section = section.split("\n### ").next().unwrap_or_default();
        let rows: Vec<(String, String)> = section
            .lines()
            .filter_map(|l| {
                let l = l.strip_prefix("| `")?;
                let (name, rest) = l.split_once("` | ")?;
                Some((name.to_string(), rest.split(" |").next().unwrap_or_default().to_string()))
            })
            .collect();
        let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
        let want: Vec<&str> = specs.iter().map(|s| s.name).collect();
        assert_eq!(names, want, "{table}");
        for ((name, ty), s) in rows.iter().zip(specs) {
            let base = match s.kind {
                rooftop_tables::Kind::I32 => "INT32",
                rooftop_tables::Kind::I64 => "INT64",
                rooftop_tables::Kind::F64 => "DOUBLE",
                rooftop_tables::Kind::Bool => "BOOLEAN",
                rooftop_tables::Kind::Str => "STRING",
            };
            let expected = if s.optional { format!("{base}, null") } else { base.to_string() };
            assert_eq!(ty, &expected, "{table}.{name}");
        }
    }
}
