//! Rank tables that would print nonsense or inflate without bound: a negative duration
//! is refused with the file and column; a string column whose decoded text passes
//! `ROOFTOP_LIMIT_PARQUET_BYTES` stops there with the variable named. One test only:
//! it sets the variable for this whole test binary.
#![allow(clippy::unwrap_used)]

use rooftop_core::trace::comm::CollectiveRecord;
use rooftop_core::trace::model::TraceModel;
use rooftop_core::trace::ranks::RankMeta;
use rooftop_tables::{read_rank, write_rank, RankInput, TableError};
use std::path::{Path, PathBuf};

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d =
        tempfile::Builder::new().prefix(&format!("rooftop-tables-lim-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn write(dir: &Path, meta: &RankMeta, recs: &[CollectiveRecord]) {
    let m = TraceModel::default();
    let input = RankInput {
        meta,
        model: &m,
        collectives: recs,
        source_bytes: None,
        include_unlinked: false,
    };
    write_rank(dir, &input).unwrap();
}

#[test]
fn negative_durations_and_inflating_strings_are_refused() {
    // 1 MB of decoded values at most, set before any table is read.
    std::env::set_var("ROOFTOP_LIMIT_PARQUET_BYTES", "1000000");
    let base = RankMeta::of("r.json", &TraceModel::default(), None, false);

    // `computation_ms = -1`: refused, never printed as "-1.00 ms".
    let (_dir_guard, dir) = tempdir("negative");
    let meta = RankMeta { computation_ms: -1.0, ..base.clone() };
    write(&dir, &meta, &[]);
    let e = read_rank(&dir).unwrap_err();
    assert!(matches!(e, TableError::Value { .. }), "{e}");
    let e = e.to_string();
    assert!(e.contains("meta.parquet") && e.contains("computation_ms"), "{e}");
    assert!(e.contains("duration -1 ms"), "{e}");

    // A negative kernel duration in the collectives table.
    let (_dir_guard, dir) = tempdir("negative-dur");
    let rec = CollectiveRecord { dur_ns: -5, ..CollectiveRecord::default() };
    write(&dir, &base, &[rec]);
    let e = read_rank(&dir).unwrap_err().to_string();
    assert!(e.contains("collectives.parquet") && e.contains("negative duration -5 ns"), "{e}");

    // 2000 rows of one 4 KiB kernel name: ~8 MB decoded (the file holds it once, in its
    // dictionary), over the 1 MB set above.
    let (_dir_guard, dir) = tempdir("dictionary");
    let name = "k".repeat(4096);
    let recs: Vec<CollectiveRecord> = (0..2000)
        .map(|i| CollectiveRecord { index: i, kernel: name.clone(), ..CollectiveRecord::default() })
        .collect();
    write(&dir, &base, &recs);
    let size = std::fs::metadata(dir.join("collectives.parquet")).unwrap().len();
    assert!(size < 1_000_000, "the file itself is small ({size} bytes)");
    let e = read_rank(&dir).unwrap_err();
    assert!(matches!(e, TableError::Limit { .. }), "{e}");
    let e = e.to_string();
    assert!(e.contains("collectives.parquet") && e.contains("column `kernel`"), "{e}");
    assert!(e.contains("ROOFTOP_LIMIT_PARQUET_BYTES=N"), "{e}");

    // Under the limit: read back.
    let (_dir_guard, dir) = tempdir("small");
    write(&dir, &base, &recs[..10]);
    assert_eq!(read_rank(&dir).unwrap().1.len(), 10);
}
