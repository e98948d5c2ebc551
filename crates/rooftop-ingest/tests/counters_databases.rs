//! The SQLite readers: Nsight Systems exports (`nsys export --type sqlite`) and rocprofv3
//! rocpd databases.
//!
//! The databases under `tests/fixtures/nsys/sqlite` and `tests/fixtures/rocprof/rocpd`
//! are built from the published schemas by the scripts beside them (no real ones small
//! enough, with a licence, were at hand; see the READMEs): every expected value below is
//! the scenario those scripts write, with the arithmetic in the comments, never
//! rooftop's output.

#![allow(clippy::unwrap_used)]

use rooftop_core::counters::activity::RangeSummary;
use rooftop_core::counters::{amd, analyze, CounterFormat, CounterSet};
use rooftop_core::device::Catalog;
use rooftop_ingest::counters::{guess, nsys_sqlite, read_path, rocpd};
use std::io::Write as _;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn nsys(name: &str) -> PathBuf {
    fixtures().join("nsys/sqlite").join(name)
}

fn rocpd_db() -> PathBuf {
    fixtures().join("rocprof/rocpd/mi300x_5151_results.db")
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::Builder::new().prefix("rooftop-db-tests-").tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn gzip_copy(src: &Path, dir: &Path, name: &str) -> PathBuf {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&std::fs::read(src).unwrap()).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, e.finish().unwrap()).unwrap();
    p
}

fn range<'a>(set: &'a CounterSet, name: &str) -> &'a RangeSummary {
    let a = set.activity.as_ref().unwrap();
    a.ranges.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("no range {name}"))
}

#[track_caller]
fn range_is(
    set: &CounterSet,
    name: &str,
    instances: u64,
    range_ns: f64,
    kernels: u64,
    kernel_ns: f64,
) {
    let r = range(set, name);
    assert_eq!(
        (r.instances, r.range_ns, r.kernels, r.kernel_ns),
        (instances, range_ns, kernels, kernel_ns),
        "{name}"
    );
}

#[test]
fn nsys_export_kernels_launches_and_device() {
    let p = nsys("h100_train_step.sqlite");
    assert_eq!(guess(&p).unwrap(), CounterFormat::NsysSqlite);
    let set = read_path(&p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set.source.format, CounterFormat::NsysSqlite);
    assert_eq!(set.source.tool_version.as_deref(), Some("nsys 2024.5.1.113"));
    assert_eq!(set.dispatches.len(), 7);
    let g = &set.dispatches[0];
    assert_eq!(&*g.name, "void gemm_bf16_tn<128, 256>(Params)");
    // [20000, 220000] ns.
    assert_eq!(
        (g.start_ns, g.end_ns, g.duration_ns),
        (Some(20_000), Some(220_000), Some(200_000.0))
    );
    assert_eq!((g.grid, g.block), (Some([132, 1, 1]), Some([256, 1, 1])));
    // 128 registers; 0 static + 65536 dynamic bytes of shared memory.
    assert_eq!((g.vgprs, g.shared_bytes, g.scratch_bytes), (Some(128), Some(65_536), Some(0)));
    assert_eq!(g.gpu.as_deref(), Some("NVIDIA H100 80GB HBM3 (0)"));
    assert_eq!(g.stream.as_deref(), Some("7"));
    let dev = &set.device;
    assert_eq!(dev.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    assert_eq!(
        (dev.arch.as_deref(), dev.compute_units, dev.l2_bytes),
        (Some("9.0"), Some(132), Some(52_428_800))
    );
    // Ordered by start; ids are that order.
    let ids: Vec<u64> = set.dispatches.iter().map(|d| d.id).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5, 6]);
}

#[test]
fn nsys_kernel_time_per_nvtx_range() {
    let set = read_path(&nsys("h100_train_step.sqlite")).unwrap();
    let a = set.activity.as_ref().unwrap();
    // Kernels: 200 + 10 + 400 + 30 + 200 + 5 + 1 us = 846 us; the last has no launching
    // call (correlationId 999) and the one launched at 3.0 ms is outside every range:
    // 840 us inside.
    assert_eq!(
        (a.kernels, a.kernel_ns, a.kernel_ns_in_ranges, a.kernels_with_launch),
        (7, 846_000.0, 840_000.0, 6)
    );
    // train_step: [1us, 1000us] and [2000us, 2500us] = 999 + 500 us; the kernels launched
    // at 10, 350, 600, 950 us and 2100 us: 200 + 10 + 400 + 30 + 200 = 840 us.
    range_is(&set, "train_step", 2, 1_499_000.0, 5, 840_000.0);
    range_is(&set, "forward", 1, 398_000.0, 2, 210_000.0);
    range_is(&set, "backward", 1, 400_000.0, 1, 400_000.0);
    // A range in the `pytorch` domain (NvtxDomainCreate row) and one named by textId.
    range_is(&set, "pytorch:aten::linear", 1, 297_000.0, 1, 200_000.0);
    range_is(&set, "optimizer", 1, 80_000.0, 1, 30_000.0);
    // A start/end range on the loader thread launches nothing.
    range_is(&set, "data_load", 1, 900_000.0, 0, 0.0);
    // Marks (eventType 34) are not ranges.
    assert_eq!(a.ranges.len(), 6);
    assert_eq!(a.ranges[0].name, "train_step");
}

#[test]
fn nsys_api_calls_and_copies() {
    let set = read_path(&nsys("h100_train_step.sqlite")).unwrap();
    let a = set.activity.as_ref().unwrap();
    let api: Vec<(&str, u64, f64)> =
        a.api.iter().map(|c| (c.name.as_str(), c.calls, c.total_ns)).collect();
    // cudaStreamSynchronize 500 us; 2 cudaMemcpyAsync of 100 us; 6 launches of 5 us
    // (the `_v3020` / `_v7000` suffixes dropped).
    assert_eq!(
        api,
        [
            ("cudaStreamSynchronize", 1, 500_000.0),
            ("cudaMemcpyAsync", 2, 200_000.0),
            ("cudaLaunchKernel", 6, 30_000.0)
        ]
    );
    let c: Vec<(&str, u64, f64, f64)> =
        a.copies.iter().map(|c| (c.kind.as_str(), c.count, c.bytes, c.total_ns)).collect();
    assert_eq!(
        c,
        [
            ("memcpy Host-to-Device", 2, 134_217_728.0, 4_800_000.0),
            ("memcpy Device-to-Host", 1, 1_048_576.0, 100_000.0),
            ("memset", 1, 4096.0, 2_000.0)
        ]
    );
    // 2 x 64 MiB in 2 x 2.4 ms = 27.96 GB/s.
    let h2d = a.copies[0].achieved_gbs.unwrap();
    assert!((h2d - 134_217_728.0 / 4_800_000.0).abs() < 1e-9, "{h2d}");
}

#[test]
fn nsys_launches_get_occupancy_and_waves_from_the_catalog() {
    let cat = Catalog::builtin();
    let set = read_path(&nsys("h100_train_step.sqlite")).unwrap();
    let rep = analyze(set, cat.lookup("NVIDIA H100 80GB HBM3").ok());
    let k = |name: &str| rep.kernels.iter().find(|k| k.name.starts_with(name)).unwrap();
    // GEMM: 256 threads = 8 warps; 128 regs x 32 = 4096 per warp -> 65536 / (8 x 4096) =
    // 2 blocks; smem 64 KiB + 1 KiB reserve -> 228 / 65 = 3 blocks; warps 64 / 8 = 8;
    // -> 2 blocks = 16 of 64 warps = 25%; 132 blocks / (132 SMs x 2) = 0.5 waves.
    assert_eq!(k("void gemm").derived.theoretical_occupancy_pct, Some(25.0));
    assert_eq!(k("void gemm").derived.grid_waves, Some(0.5));
    // Elementwise: 128 threads = 4 warps, 16 regs: 64 warps / 4 = 16 blocks (under the
    // 32-block limit and the register limit) -> 100%; 1024 / (132 x 16) = 0.485 waves.
    assert_eq!(k("void elementwise").derived.theoretical_occupancy_pct, Some(100.0));
    assert!((k("void elementwise").derived.grid_waves.unwrap() - 1024.0 / 2112.0).abs() < 1e-12);
    // Adam: 512 threads x 64 regs = 32768 -> 2 blocks of 16 warps = 50%; 528 / 264 = 2.
    assert_eq!(k("void adam").derived.theoretical_occupancy_pct, Some(50.0));
    assert_eq!(k("void adam").derived.grid_waves, Some(2.0));
}

#[test]
fn nsys_exports_of_an_older_schema() {
    // No TARGET_INFO_CUDA_DEVICE, no ENUM_CUDA_MEMCPY_OPER, no META_DATA_EXPORT, NVTX
    // without textId/domainId, kernels without localMemoryPerThread.
    let set =
        read_path(&nsys("h100_train_step_old_schema.sqlite")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set.dispatches.len(), 7);
    assert_eq!(set.source.tool_version, None);
    assert_eq!(set.dispatches[0].scratch_bytes, None);
    assert_eq!(set.device.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
    range_is(&set, "train_step", 2, 1_499_000.0, 5, 840_000.0);
    range_is(&set, "optimizer", 1, 80_000.0, 1, 30_000.0);
    // Copy kinds named by CUPTI's numbering when the enum table is absent.
    let a = set.activity.as_ref().unwrap();
    assert_eq!(a.copies[0].kind, "memcpy Host-to-Device");
}

#[test]
fn rocpd_dispatches_counters_and_agent() {
    let p = rocpd_db();
    assert_eq!(guess(&p).unwrap(), CounterFormat::Rocpd);
    let set = read_path(&p).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set.source.format, CounterFormat::Rocpd);
    assert_eq!(set.source.tool_version.as_deref(), Some("rocpd schema 3"));
    assert_eq!(set.dispatches.len(), 3);
    let g = &set.dispatches[0];
    assert_eq!(&*g.name, "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x1_SN_K1");
    assert_eq!(g.id, 1);
    assert_eq!(g.duration_ns, Some(100_000.0));
    // 311296 work-items / 256 per workgroup = 1216 workgroups.
    assert_eq!((g.grid, g.block), (Some([1216, 1, 1]), Some([256, 1, 1])));
    assert_eq!(
        (g.vgprs, g.agprs, g.sgprs, g.shared_bytes),
        (Some(128), Some(128), Some(96), Some(65_536))
    );
    // Counters summed over their 8 dimension rows: TCC_HIT 8 x 7500, TCC_MISS 8 x 2500.
    assert_eq!(g.counter("TCC_HIT"), Some(60_000.0));
    assert_eq!(g.counter("TCC_MISS"), Some(20_000.0));
    assert_eq!(g.counter("FETCH_SIZE"), Some(65_536.0));
    // The third dispatch has no counters.
    assert!(set.dispatches[2].counters.is_empty());
    let d = &set.device;
    assert_eq!(
        (d.name.as_deref(), d.arch.as_deref()),
        (Some("AMD Instinct MI300X"), Some("gfx942"))
    );
    assert_eq!(
        (d.compute_units, d.wave_size, d.num_xcd, d.max_sclk_mhz),
        (Some(304), Some(64), Some(8), Some(2100.0))
    );
    // AMD formulas on what was read: (65536 + 16384) KiB of DRAM traffic, 75% L2 hits.
    let x = amd::derive(g, d);
    assert_eq!(x.dram_bytes(), Some((65_536.0 + 16_384.0) * 1024.0));
    assert_eq!(x.l2_hit_rate_pct, Some(75.0));
}

#[test]
fn rocpd_activity() {
    let set = read_path(&rocpd_db()).unwrap();
    let a = set.activity.as_ref().unwrap();
    // Kernels 100 + 5 + 100 us; each launched by a hipLaunchKernel with its stack id.
    assert_eq!((a.kernels, a.kernel_ns, a.kernels_with_launch), (3, 205_000.0, 3));
    // forward [80, 250] us holds the launches at 90 and 205 us; backward [280, 450] the
    // one at 290 us.
    range_is(&set, "forward", 1, 170_000.0, 2, 105_000.0);
    range_is(&set, "backward", 1, 170_000.0, 1, 100_000.0);
    assert_eq!(a.kernel_ns_in_ranges, 205_000.0);
    let api: Vec<(&str, u64, f64)> =
        a.api.iter().map(|c| (c.name.as_str(), c.calls, c.total_ns)).collect();
    assert_eq!(api, [("hipDeviceSynchronize", 1, 150_000.0), ("hipLaunchKernel", 3, 12_000.0)]);
    // 32 MiB in 50 us = 671 GB/s.
    let c = &a.copies[0];
    assert_eq!(
        (c.kind.as_str(), c.count, c.bytes, c.total_ns),
        ("MEMORY_COPY_HOST_TO_DEVICE", 1, 33_554_432.0, 50_000.0)
    );
}

#[test]
fn gzipped_databases_read_like_the_plain_ones() {
    let (_dir_guard, dir) = tempdir();
    for (src, name) in [
        (nsys("h100_train_step.sqlite"), "report.sqlite.gz"),
        (rocpd_db(), "results.db.gz"),
        (nsys("h100_train_step.sqlite"), "gzipped_without_suffix.sqlite"),
    ] {
        let plain = read_path(&src).unwrap();
        let z = read_path(&gzip_copy(&src, &dir, name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(z.dispatches, plain.dispatches, "{name}");
        assert_eq!(z.activity, plain.activity, "{name}");
    }
}

#[test]
fn a_rocprofv3_output_folder_with_its_database() {
    let (_dir_guard, tmp) = tempdir();
    let dir = tmp.join("rocprofv3_out");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(rocpd_db(), dir.join("5151_results.db")).unwrap();
    assert_eq!(guess(&dir).unwrap(), CounterFormat::Rocpd);
    assert_eq!(read_path(&dir).unwrap().dispatches.len(), 3);
}

#[test]
fn databases_rooftop_cannot_read_say_why() {
    let (_dir_guard, dir) = tempdir();
    // A database of another program: its tables are named.
    let p = dir.join("other.sqlite");
    {
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch(
            "CREATE TABLE orders (id INTEGER, total REAL); INSERT INTO orders VALUES (1, 2.5);",
        )
        .unwrap();
    }
    let e = guess(&p).unwrap_err().to_string();
    assert!(e.contains("other.sqlite") && e.contains("orders") && e.contains("nsys export"), "{e}");
    // The binary reports: the export command.
    let rep = dir.join("run.nsys-rep");
    std::fs::write(&rep, b"binary").unwrap();
    let e = guess(&rep).unwrap_err().to_string();
    assert!(e.contains("nsys export --type sqlite") && e.contains("run.nsys-rep"), "{e}");
    let rep = dir.join("run.ncu-rep");
    std::fs::write(&rep, b"binary").unwrap();
    let e = guess(&rep).unwrap_err().to_string();
    assert!(e.contains("ncu --import") && e.contains("--page details"), "{e}");
    // A value of the wrong type names the table, row and column.
    let p = dir.join("bad_start.sqlite");
    std::fs::copy(nsys("h100_train_step.sqlite"), &p).unwrap();
    {
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon' WHERE correlationId = 102",
            [],
        )
        .unwrap();
    }
    let e = nsys_sqlite::read(&p).unwrap_err().to_string();
    assert!(
        e.contains("CUPTI_ACTIVITY_KIND_KERNEL") && e.contains("`start`") && e.contains("`soon`"),
        "{e}"
    );
    // A truncated database: SQLite's own words, not a panic.
    let p = dir.join("cut.db");
    let bytes = std::fs::read(rocpd_db()).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 3]).unwrap();
    let e = rocpd::read(&p).unwrap_err().to_string();
    assert!(e.contains("cut.db") && e.contains("SQLite"), "{e}");
}

/// The kernels come in SQLite's `ORDER BY "start"` order, ties in table order, whether
/// the reader sorts them itself (integer starts) or lets SQLite sort them (a start of
/// another type). Oracle: the same `ORDER BY` run by SQLite on the file. 100,000 rows
/// with 997 distinct starts, inserted out of order: more than SQLite's sorter keeps in
/// memory, so its merge of sorted runs is what is matched.
#[test]
fn nsys_kernels_in_start_order_with_ties() {
    let (_dir_guard, dir) = tempdir();
    let order_of = |p: &Path| -> Vec<u64> {
        let c = rusqlite::Connection::open(p).unwrap();
        let mut st =
            c.prepare("SELECT gridX FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start").unwrap();
        let v: Vec<i64> = st.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        v.into_iter().map(|x| u64::try_from(x).unwrap()).collect::<Vec<u64>>()
    };
    let read_order = |p: &Path| -> Vec<u64> {
        let set = nsys_sqlite::read(p).unwrap_or_else(|e| panic!("{e}"));
        set.dispatches.iter().map(|d| d.grid.unwrap()[0]).collect()
    };
    for real_start in [false, true] {
        let p = dir.join(format!("ties_{real_start}.sqlite"));
        std::fs::copy(nsys("h100_train_step.sqlite"), &p).unwrap();
        {
            let mut c = rusqlite::Connection::open(&p).unwrap();
            let t = c.transaction().unwrap();
            // gridX numbers the rows: the fixture's own kernels have gridX < 100,000.
            t.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 100000 + rowid", []).unwrap();
            {
                let mut ins = t
                    .prepare(
                        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM \
                         CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1",
                    )
                    .unwrap();
                let mut upd = t
                    .prepare(
                        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = ?1, end = ?1 + 1000, \
                         gridX = ?2 WHERE rowid = last_insert_rowid()",
                    )
                    .unwrap();
                for i in 0..100_000i64 {
                    ins.execute([]).unwrap();
                    upd.execute([(i * 7919) % 997 + 1_000, i]).unwrap();
                }
            }
            if real_start {
                t.execute(
                    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 1500.0 WHERE gridX = 5",
                    [],
                )
                .unwrap();
            }
            t.commit().unwrap();
        }
        let want = order_of(&p);
        assert_eq!(want.len(), 100_000 + 7, "the fixture's 7 kernels and the added ones");
        let got = read_order(&p);
        assert!(got == want, "real start: {real_start}; first difference at {:?}", {
            got.iter().zip(&want).position(|(a, b)| a != b)
        });
    }
}

/// The rocpd dispatches come in SQLite's `ORDER BY "start"` order, ties in table order,
/// and a dispatch without an id is numbered by its row in that order, whether the reader
/// sorts them itself (integer starts) or lets SQLite sort them (a start of another
/// type). Oracle: the same `ORDER BY` run by SQLite on the file. 20,000 dispatches with
/// 997 distinct starts, inserted out of order, read through a view that hides every
/// fifth one's id.
#[test]
fn rocpd_dispatches_in_start_order_with_ties_and_row_numbers() {
    const COLS: &str = "id, guid, nid, pid, tid, agent_id, kernel_id, queue_id, stream_id, \
                        start, end, private_segment_size, group_segment_size, \
                        workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, \
                        grid_size_y, grid_size_z, region_name_id, event_id, extdata";
    let (_dir_guard, dir) = tempdir();
    // SQLite's order of (grid_size_x, id as read or the row number).
    let order_of = |p: &Path| -> Vec<(u64, u64)> {
        let c = rusqlite::Connection::open(p).unwrap();
        let mut st = c
            .prepare("SELECT grid_size_x, dispatch_id FROM rocpd_kernel_dispatch ORDER BY start")
            .unwrap();
        let rows = st.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<i64>>(1)?)));
        rows.unwrap()
            .map(Result::unwrap)
            .enumerate()
            .map(|(n, (g, id))| (g as u64, id.map_or(n as u64 + 1, |i| i as u64)))
            .collect()
    };
    for real_start in [false, true] {
        let p = dir.join(format!("ties_{real_start}.db"));
        std::fs::copy(rocpd_db(), &p).unwrap();
        {
            let mut c = rusqlite::Connection::open(&p).unwrap();
            let t = c.transaction().unwrap();
            let table: String = t
                .query_row(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE \
                     'rocpd_kernel_dispatch_%'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            // One workgroup per work-item: the grid in blocks is grid_size_x, which
            // numbers the rows (the fixture's own dispatches have grids under 100,000).
            t.execute(
                &format!(
                    "UPDATE \"{table}\" SET workgroup_size_x = 1, grid_size_x = 100000 + rowid"
                ),
                [],
            )
            .unwrap();
            {
                let mut ins = t
                    .prepare(&format!(
                        "INSERT INTO \"{table}\" (nid, pid, tid, agent_id, kernel_id, \
                         dispatch_id, queue_id, stream_id, start, end, workgroup_size_x, \
                         workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, \
                         grid_size_z) VALUES (1, 1, 1, 1, 1, ?2, 1, 0, ?1, ?1 + 1000, 1, 1, \
                         1, ?2, 1, 1)"
                    ))
                    .unwrap();
                for i in 0..20_000i64 {
                    ins.execute([(i * 7919) % 997 + 1_000, i]).unwrap();
                }
            }
            if real_start {
                t.execute(
                    &format!("UPDATE \"{table}\" SET start = 1500.0 WHERE grid_size_x = 5"),
                    [],
                )
                .unwrap();
            }
            t.execute("DROP VIEW rocpd_kernel_dispatch", []).unwrap();
            let cols = COLS.replace(
                "stream_id,",
                "stream_id, CASE WHEN grid_size_x % 5 = 0 THEN NULL ELSE dispatch_id END AS \
                 dispatch_id,",
            );
            t.execute(
                &format!("CREATE VIEW rocpd_kernel_dispatch AS SELECT {cols} FROM \"{table}\""),
                [],
            )
            .unwrap();
            t.commit().unwrap();
        }
        let want = order_of(&p);
        assert_eq!(want.len(), 20_000 + 3, "the fixture's 3 dispatches and the added ones");
        assert!(want.iter().filter(|w| w.0 % 5 == 0).count() >= 4_000);
        let set = rocpd::read(&p).unwrap_or_else(|e| panic!("{e}"));
        let got: Vec<(u64, u64)> =
            set.dispatches.iter().map(|d| (d.grid.unwrap()[0], d.id)).collect();
        assert!(got == want, "real start: {real_start}; first difference at {:?}", {
            got.iter().zip(&want).position(|(a, b)| a != b)
        });
    }
}

/// A rocpd dispatch's counters are SQLite's `SUM(value) ... GROUP BY event_id, name`
/// over the counter rows joined to their names, to the bit, whether the reader sums
/// them itself (whole numbers) or leaves it to SQLite (a fraction beside another value
/// in a group). Oracle: that query run by SQLite on the file. The fixture gets 2,000
/// more counter rows per dispatch event (several instances per counter, some NULL),
/// rows for an event that is no dispatch's and rows without an event, and a view of the
/// counter names that repeats an id (once under the same name, once under a new one, as
/// a view over several processes' tables can, once with no name).
#[test]
fn rocpd_counters_are_sqlites_sums() {
    let (_dir_guard, dir) = tempdir();
    for fraction in [false, true] {
        let p = dir.join(format!("sums_{fraction}.db"));
        std::fs::copy(rocpd_db(), &p).unwrap();
        {
            let mut c = rusqlite::Connection::open(&p).unwrap();
            let t = c.transaction().unwrap();
            let table = |like: &str| -> String {
                t.query_row(
                    &format!("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '{like}'"),
                    [],
                    |r| r.get(0),
                )
                .unwrap()
            };
            let (events, info) = (table("rocpd_pmc_event_%"), table("rocpd_info_pmc_%"));
            {
                let mut ins = t
                    .prepare(&format!(
                        "INSERT INTO \"{events}\" (event_id, pmc_id, value) VALUES (?1, ?2, ?3)"
                    ))
                    .unwrap();
                // Rows without an event: a group SQLite sums but the query drops.
                for pmc in 1..=5i64 {
                    ins.execute(rusqlite::params![None::<i64>, pmc, 7.0]).unwrap();
                }
                for (n, event) in [0i64, 1, 2, 3].into_iter().zip([2i64, 4, 6, 999]) {
                    for i in 0..2_000i64 {
                        let pmc = i % 5 + 1;
                        let whole = ((i * 7919 + n * 104_729) % 1_000_003) as f64;
                        let v = match i % 97 {
                            0 => None,
                            // A fraction in a group of many values (second run):
                            // SQLite sums that file.
                            1 if fraction => Some(whole + 0.1),
                            _ => Some(whole),
                        };
                        ins.execute(rusqlite::params![event, pmc, v]).unwrap();
                    }
                }
            }
            t.execute("CREATE TABLE extra_info (id INTEGER, name TEXT)", []).unwrap();
            t.execute(
                "INSERT INTO extra_info VALUES (3, 'TCC_HIT'), (4, 'TCC_OTHER'), (5, NULL)",
                [],
            )
            .unwrap();
            t.execute("DROP VIEW rocpd_info_pmc", []).unwrap();
            t.execute(
                &format!(
                    "CREATE VIEW rocpd_info_pmc AS SELECT id, name FROM \"{info}\" UNION ALL \
                     SELECT id, name FROM extra_info"
                ),
                [],
            )
            .unwrap();
            t.commit().unwrap();
        }
        // The oracle: each dispatch's counters by SQLite, keyed by dispatch id.
        let c = rusqlite::Connection::open(&p).unwrap();
        let mut want = std::collections::BTreeMap::<u64, Vec<(String, u64)>>::new();
        let mut st = c
            .prepare(
                "SELECT D.dispatch_id, S.name, S.total FROM rocpd_kernel_dispatch D JOIN \
                 (SELECT E.event_id AS event_id, I.name AS name, SUM(E.value) AS total FROM \
                 rocpd_pmc_event E JOIN rocpd_info_pmc I ON I.id = E.pmc_id GROUP BY \
                 E.event_id, I.name) S ON S.event_id = D.event_id WHERE S.name IS NOT NULL \
                 ORDER BY 1, 2",
            )
            .unwrap();
        let rows = st.query_map([], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, f64>(2)?))
        });
        for row in rows.unwrap() {
            let (d, name, total) = row.unwrap();
            want.entry(d as u64).or_default().push((name, total.to_bits()));
        }
        assert_eq!(want.len(), 3, "every dispatch has counters");
        assert!(want.values().all(|v| v.iter().any(|(n, _)| n == "TCC_OTHER")));
        let set = rocpd::read(&p).unwrap_or_else(|e| panic!("{e}"));
        for d in &set.dispatches {
            let got: Vec<(String, u64)> =
                d.counters.iter().map(|(k, v)| (k.to_string(), v.to_bits())).collect();
            assert_eq!(got, want[&d.id], "dispatch {} (fraction: {fraction})", d.id);
        }
    }
}
