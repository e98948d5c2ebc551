//! AMD counter readers against every fixture in `tests/fixtures/rocprof`, with the
//! derived quantities checked against hand arithmetic from the raw counter values
//! (written below, read off the CSVs) and rocprof-compute's documented formulas.
//!
//! The vcopy workloads run `./tests/vcopy -n 1048576 -b 256 -i 3`: 1,048,576 doubles per
//! array = 8 MiB read and 8 MiB written per dispatch, 4096 workgroups of 256.

use rooftop_core::counters::{amd, CounterFormat, CounterSet, Dispatch};
use rooftop_ingest::counters::{rocprof, rocprof_compute, rocprofv3};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/rocprof")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn derive(set: &CounterSet, i: usize) -> rooftop_core::counters::Derived {
    amd::derive(&set.dispatches[i], &set.device)
}

#[allow(clippy::unwrap_used)]
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("counters_amd_{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const ARRAY_BYTES: f64 = 1_048_576.0 * 8.0;

#[test]
fn rocprof_compute_mi200_workload() {
    let dir = fixtures().join("rocprof_compute_vcopy_MI200");
    let set = rocprof_compute::read(&dir).unwrap();
    assert_eq!(set.source.format, CounterFormat::RocprofCompute);
    assert_eq!(set.source.tool_version.as_deref(), Some("Omniperf 2.0.0-RC1"));
    assert_eq!(set.dispatches.len(), 3);
    let d: &Dispatch = &set.dispatches[0];
    assert_eq!(d.id, 0);
    assert_eq!(&*d.name, "vecCopy(double*, double*, double*, int, int)");
    assert_eq!(d.grid, Some([4096, 1, 1]));
    assert_eq!(d.block, Some([256, 1, 1]));
    assert_eq!((d.vgprs, d.agprs, d.sgprs, d.wave_size), (Some(8), Some(0), Some(16), Some(64)));
    // End_Timestamp − Start_Timestamp of row 0.
    assert_eq!(d.duration_ns, Some((1_411_551_767_656_192u64 - 1_411_551_767_635_712) as f64));
    assert_eq!(set.dispatches[1].duration_ns, Some(16_320.0));
    assert_eq!(set.dispatches[2].duration_ns, Some(15_520.0));
    // Pass-join duplicates are not counters; per-instance columns are kept.
    assert!(d.counter("wave_size_1").is_none() && d.counter("obj_3").is_none());
    assert!(d.counter("TCC_EA_WRREQ[0]").is_some());
    assert!(d.counter("SQ_WAVES_LT_32").is_some());

    // Device from sysinfo.csv.
    let dev = &set.device;
    assert_eq!(dev.name.as_deref(), Some("MI200"));
    assert_eq!(dev.arch.as_deref(), Some("gfx90a"));
    assert_eq!(dev.compute_units, Some(104));
    assert_eq!(dev.l2_bytes, Some(8192 * 1024));
    assert_eq!(dev.lds_banks_per_cu, Some(32));
    assert_eq!(dev.num_xcd, Some(1));
    assert_eq!(dev.hbm_bw_gbs, Some(1638.4));
    assert_eq!(dev.max_sclk_mhz, Some(1700.0));
    assert_eq!(dev.extra.get("rocm_version").map(String::as_str), Some("6.0.2-115"));

    // Derived, dispatch 0. Raw: TCC_EA_RDREQ_sum 131086, _32B 0, TCC_EA_WRREQ_sum 131072,
    // _64B 131072, TCP_TCC_READ/WRITE_REQ_sum 131072 each, atomics 0,
    // TCP_TOTAL_CACHE_ACCESSES_sum 524288, TCC_HIT_sum 72935, TCC_MISS_sum 131081.
    let r = derive(&set, 0);
    let read = 32.0 * 0.0 + 64.0 * (131_086.0 - 0.0);
    let written = 32.0 * (131_072.0 - 131_072.0) + 64.0 * 131_072.0;
    assert_eq!(r.dram_bytes_read, Some(read));
    assert_eq!(r.dram_bytes_written, Some(written));
    assert!((read / ARRAY_BYTES - 1.0).abs() < 0.001, "read ≈ array size");
    assert_eq!(written, ARRAY_BYTES);
    // Achieved HBM bandwidth, GB/s = bytes / ns.
    let bw = (read + written) / 20_480.0;
    assert!((bw - 819.24).abs() < 0.01, "{bw}");
    assert!(bw < set.measured_roofs[0].value, "below the measured HBM roof");
    assert_eq!(r.l2_bytes, Some(64.0 * (131_072.0 + 131_072.0)));
    assert_eq!(r.l1_bytes, Some(64.0 * 524_288.0));
    assert!(close(r.l2_hit_rate_pct.unwrap(), 100.0 * 72_935.0 / (72_935.0 + 131_081.0)));
    assert!(close(r.l1_hit_rate_pct.unwrap(), 100.0 - 100.0 * 262_144.0 / 524_288.0));
    // vcopy does no LDS work and no floating-point arithmetic.
    assert_eq!(r.lds_bytes, Some(0.0));
    assert_eq!(r.lds_bank_conflict_pct, None);
    assert_eq!(r.flops.vector.get("fp64"), Some(&0.0));
    assert_eq!(r.flops.matrix.get("bf16"), Some(&0.0));
    assert_eq!(r.flops.total(), 0.0);
    assert_eq!(r.waves_launched, Some(16_384.0));
    assert!(close(r.grid_waves.unwrap(), 4096.0 / 104.0));
    // SQ_LEVEL_WAVES.csv row 0: SQ_ACCUM_PREV_HIRES 44799316, GRBM_GUI_ACTIVE 27964.
    let occ = 100.0 * (44_799_316.0 / 27_964.0) / (32.0 * 104.0);
    assert!(close(r.achieved_occupancy_pct.unwrap(), occ), "{:?}", r.achieved_occupancy_pct);
    assert!(r.missing.is_empty(), "{:?}", r.missing);
    assert!(r.formulas.iter().any(|f| f.contains("roofline_calc.py")));

    // Measured roofs: device 0 row of roofline.csv.
    let roofs = &set.measured_roofs;
    assert_eq!(roofs.len(), 11);
    let hbm = &roofs[0];
    assert_eq!((hbm.name.as_str(), hbm.kind.as_str()), ("HBMBw", "hbm"));
    assert_eq!((hbm.value, hbm.low, hbm.high), (1388.9302, Some(1388.3835), Some(1389.4768)));
    let find = |n: &str| roofs.iter().find(|r| r.name == n).unwrap();
    assert_eq!(find("LDSBw").value, 17717.834);
    assert_eq!(find("FP64Flops").precision.as_deref(), Some("fp64"));
    assert_eq!(find("FP64Flops").kind, "valu");
    let i8 = find("MFMAI8Ops");
    assert_eq!((i8.kind.as_str(), i8.precision.as_deref()), ("mfma", Some("int8")));
    assert_eq!((i8.value, i8.low, i8.high), (166_402.27, Some(165_911.17), Some(166_893.36)));
    assert_eq!(find("MFMABF16Flops").value, 170_483.16);
    assert!(set.source.notes.iter().any(|n| n.contains("4 devices")));
}

#[test]
fn rocprof_compute_mi300x_workload() {
    let pmc = fixtures().join("rocprof_compute_vcopy_MI300X_A1/pmc_perf.csv");
    let set = rocprof_compute::read(&pmc).unwrap();
    assert_eq!(set.dispatches.len(), 3);
    assert!(set.measured_roofs.is_empty());
    let d = &set.dispatches[0];
    assert_eq!(&*d.name, "vecCopy(double*, double*, double*, int, int)");
    assert_eq!(d.grid, Some([4096, 1, 1]));
    assert_eq!((d.vgprs, d.agprs), (Some(4), Some(4)));
    // Timestamps were re-saved as 8.1097E+14: no usable duration, and it says so.
    assert_eq!(d.duration_ns, None);
    assert!(set.source.notes.iter().any(|n| n.contains("exponent notation")));
    assert!(d.counter("Correlation_ID_3").is_none() && d.counter("XCC_Index_5").is_none());
    assert_eq!(set.device.arch.as_deref(), Some("gfx942"));
    assert_eq!(set.device.num_xcd, Some(8));
    assert_eq!(set.device.compute_units, Some(304));

    // Raw: TCC_EA0_RDREQ_sum 65775, _32B 0, TCC_BUBBLE_sum 65536, TCC_EA0_WRREQ_sum 131072,
    // _64B 131072, TCP_TCC_READ_REQ_sum 65536, WRITE 131072, TCP_TOTAL_CACHE_ACCESSES 524288,
    // TCC_HIT_sum 66160, TCC_MISS_sum 131311.
    let r = derive(&set, 0);
    let read = 128.0 * 65_536.0 + 32.0 * 0.0 + 64.0 * (65_775.0 - 65_536.0 - 0.0);
    assert_eq!(r.dram_bytes_read, Some(read));
    assert!((read / ARRAY_BYTES - 1.0).abs() < 0.002);
    assert_eq!(r.dram_bytes_written, Some(64.0 * 131_072.0));
    assert_eq!(r.l2_bytes, Some(64.0 * (65_536.0 + 131_072.0)));
    assert_eq!(r.l1_bytes, Some(128.0 * 524_288.0));
    assert!(close(r.l2_hit_rate_pct.unwrap(), 100.0 * 66_160.0 / (66_160.0 + 131_311.0)));
    assert!(close(r.l1_hit_rate_pct.unwrap(), 100.0 - 100.0 * 196_608.0 / 524_288.0));
    assert_eq!(r.duration_ns, None);
    // SQ_LEVEL_WAVES.csv row 0: 155189876 / (486977 / 8 XCDs) over 304 × 32 slots.
    let occ = 100.0 * (155_189_876.0 / (486_977.0 / 8.0)) / (304.0 * 32.0);
    assert!(close(r.achieved_occupancy_pct.unwrap(), occ));
}

#[test]
fn rocprof_compute_level_pass_read_as_rocprof_v1() {
    let p = fixtures().join("rocprof_compute_vcopy_MI200/SQ_LEVEL_WAVES.csv");
    let set = rocprof::read(&p).unwrap();
    assert_eq!(set.source.format, CounterFormat::RocprofV1);
    assert_eq!(set.dispatches.len(), 3);
    assert_eq!(set.dispatches[0].counter("SQ_ACCUM_PREV_HIRES"), Some(44_799_316.0));
    assert_eq!(set.dispatches[0].duration_ns, Some(20_480.0));
    assert_eq!(set.dispatches[0].gpu.as_deref(), Some("2"));
}

#[test]
fn rocprof_v1_multi_pass_join() {
    let dir = scratch("multipass");
    let src = fixtures().join("rocprof_compute_vcopy_MI200");
    for f in ["SQ_LEVEL_WAVES.csv", "SQ_INST_LEVEL_VMEM.csv"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    std::fs::write(dir.join("input.txt"), "pmc: SQ_WAVES SQ_LEVEL_WAVES\npmc: SQ_INSTS_VMEM\n")
        .unwrap();
    let set = rocprof::read(&dir).unwrap();
    assert_eq!(set.dispatches.len(), 3);
    let d = &set.dispatches[0];
    assert_eq!(d.counter("SQ_WAVES"), Some(16_384.0));
    assert_eq!(d.counter("SQ_INSTS_VMEM"), Some(32_768.0));
    assert!(set.source.notes.iter().any(|n| n.contains("2 per-dispatch CSVs joined")));
    assert!(set.source.notes.iter().any(|n| n.contains("input.txt requests 2 pass")));

    // A pass whose kernel differs at the same index cannot be joined.
    let text = std::fs::read_to_string(src.join("SQ_IFETCH_LEVEL.csv")).unwrap();
    std::fs::write(dir.join("zz_pass.csv"), text.replacen("vecCopy", "vecAdd", 1)).unwrap();
    let e = rocprof::read(&dir).unwrap_err();
    assert!(e.message.contains("disagree at dispatch 0"), "{e}");
}

#[test]
fn rocprof_v1_results_and_stats() {
    let text = "\"Index\",\"KernelName\",\"gpu-id\",\"queue-id\",\"queue-index\",\"pid\",\"tid\",\
                \"grd\",\"wgr\",\"lds\",\"scr\",\"arch_vgpr\",\"accum_vgpr\",\"sgpr\",\"wave_size\",\
                \"sig\",\"obj\",\"FETCH_SIZE\",\"WRITE_SIZE\",\"DispatchNs\",\"BeginNs\",\"EndNs\",\
                \"CompleteNs\"\n\
                0,\"k_read(float*) [clone .kd]\",4,0,0,7,7,65536,256,512,0,12,0,16,64,0x0,0x1,\
                256.0,0.5,100,200,1200,1300\n";
    let set = rocprof::read_str("results.csv", text).unwrap();
    let d = &set.dispatches[0];
    assert_eq!(&*d.name, "k_read(float*)");
    assert_eq!(d.grid, Some([256, 1, 1]));
    assert_eq!(d.shared_bytes, Some(512));
    assert_eq!(d.duration_ns, Some(1000.0));
    let r = amd::derive(d, &set.device);
    assert_eq!(r.dram_bytes_read, Some(256.0 * 1024.0));
    assert_eq!(r.dram_bytes_written, Some(512.0));

    let stats = "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\"\n\
                 \"k_read(float*) [clone .kd]\",3,3000,1000,75.0\n\"k2\",1,1000,1000,25.0\n";
    let set = rocprof::read_str("results.stats.csv", stats).unwrap();
    assert_eq!(set.source.format, CounterFormat::RocprofStats);
    assert!(set.dispatches.is_empty());
    assert_eq!(set.aggregates.len(), 2);
    assert_eq!(set.aggregates[0].name, "k_read(float*)");
    assert_eq!((set.aggregates[0].count, set.aggregates[0].total_ns), (3, 3000.0));
    assert_eq!(set.aggregates[0].mean_ns, Some(1000.0));
}

#[test]
fn rocprofv3_docs_examples_directory() {
    let set = rocprofv3::read(&fixtures().join("rocprofv3_docs_examples")).unwrap();
    assert_eq!(set.source.format, CounterFormat::Rocprofv3Csv);
    assert_eq!(set.dispatches.len(), 7);
    let d = &set.dispatches[0];
    assert_eq!(d.id, 1);
    assert_eq!(
        &*d.name,
        "void addition_kernel<float>(float*, float const*, float const*, int, int)"
    );
    assert_eq!(d.duration_ns, Some((8_819_330_200_116_308u64 - 8_819_330_200_067_564) as f64));
    assert_eq!(d.grid, Some([16, 1024, 1]));
    assert_eq!(d.block, Some([64, 1, 1]));
    assert_eq!(d.counter("SQ_WAVES"), Some(16_384.0));
    assert!(set.dispatches.iter().all(|d| d.counter("SQ_WAVES") == Some(16_384.0)));
    assert!(set.source.notes.iter().any(|n| n.contains("7 matched, 0 only")));
    let r = amd::derive(d, &set.device);
    assert_eq!(r.waves_launched, Some(16_384.0));
    // 1048576 work-items in wave64 = 16384 waves.
    assert_eq!(d.blocks().unwrap() * 64 / 64, 16_384);
    assert!(r.missing.iter().any(|m| m.quantity == "dram_bytes_read"));

    // The long format alone (early schema: no timestamps): pivoted, products / wg size.
    let cc = rocprofv3::read(&fixtures().join("rocprofv3_docs_examples/kernel_names.csv")).unwrap();
    assert_eq!(cc.dispatches.len(), 4);
    let d = &cc.dispatches[0];
    assert_eq!(
        (d.id, &*d.name),
        (4, "divide_kernel(float*, float const*, float const*, int, int)")
    );
    assert_eq!(d.grid, Some([16_384, 1, 1]));
    assert_eq!(d.vgprs, Some(12));
    assert_eq!(d.duration_ns, None);
}

#[test]
fn rocprofv3_gfx1151_directory() {
    let set = rocprofv3::read(&fixtures().join("rocprofv3_gfx1151_decode")).unwrap();
    // 144 traced dispatches, 34 with FETCH_SIZE of which 20 are in the trace.
    assert_eq!(set.dispatches.len(), 144 + 14);
    assert!(set.source.notes.iter().any(|n| n.contains("20 matched, 14 only")));
    let d = &set.dispatches[0];
    assert_eq!((d.id, &*d.name), (164, "scale_f32(float const*, float*, float, float, long)"));
    assert_eq!(d.duration_ns, Some(2885.0));
    assert_eq!(d.grid, Some([96, 1, 1]));
    assert_eq!(d.gpu.as_deref(), Some("Agent 1"));
    let k = &set.dispatches[1];
    assert_eq!(k.grid, Some([1, 96, 1]));
    let with = set.dispatches.iter().filter(|d| d.counter("FETCH_SIZE").is_some()).count();
    assert_eq!(with, 34);
    // Counter-only dispatch 1: FETCH_SIZE 10.625 KB, grid 1024 / 512.
    let c = set.dispatches.iter().find(|d| d.id == 1).unwrap();
    assert_eq!(&*c.name, "__amd_rocclr_copyBuffer");
    assert_eq!(c.grid, Some([2, 1, 1]));
    assert_eq!(c.duration_ns, Some(3447.0));
    let dev =
        rooftop_core::counters::DeviceInfo { arch: Some("gfx1151".into()), ..Default::default() };
    let r = amd::derive(c, &dev);
    assert_eq!(r.dram_bytes_read, Some(10.625 * 1024.0));
    assert_eq!(r.dram_bytes_written, None);
    assert!(r
        .missing
        .iter()
        .any(|m| m.quantity == "dram_bytes_written" && m.needs.contains("WRITE_SIZE")));
    assert!(!r.missing.iter().any(|m| m.quantity == "flops.matrix"));
}

#[test]
fn rocprofv3_json_handmade() {
    let p = fixtures().join("handmade_rocprofv3_json/results.json");
    let set = rocprofv3::read(&p).unwrap();
    assert_eq!(set.source.format, CounterFormat::Rocprofv3Json);
    assert_eq!(set.source.tool_version.as_deref(), Some("rocprofv3 0.6.0"));
    assert_eq!(set.device.arch.as_deref(), Some("gfx942"));
    assert_eq!(set.device.compute_units, Some(304));
    assert_eq!(set.device.num_xcd, Some(8));
    assert_eq!(set.dispatches.len(), 2);
    let d = &set.dispatches[0];
    assert_eq!(&*d.name, "vecCopy(double*, double*, double*, int, int)");
    assert_eq!(d.duration_ns, Some(20_480.0));
    assert_eq!(d.grid, Some([4096, 1, 1]));
    assert_eq!(d.counter("TCC_HIT"), Some(66_000.0));
    let r = amd::derive(d, &set.device);
    assert_eq!(r.dram_bytes_read, Some(8192.0 * 1024.0));
    assert!(close(r.l2_hit_rate_pct.unwrap(), 100.0 * 66_000.0 / 197_000.0));
    assert!(close(r.grid_waves.unwrap(), 4096.0 / 304.0));
    let k = &set.dispatches[1];
    assert_eq!(&*k.name, "scale(float*, float)");
    assert_eq!((k.grid, k.block), (Some([16, 16, 1]), Some([64, 4, 1])));
    assert_eq!((k.vgprs, k.agprs, k.shared_bytes), (Some(12), Some(4), Some(1024)));
    assert!(k.counters.is_empty());
    // The directory form finds it too.
    let set = rocprofv3::read(p.parent().unwrap()).unwrap();
    assert_eq!(set.dispatches.len(), 2);
}

#[test]
fn bad_inputs() {
    // Missing columns are named.
    let e = rocprofv3::read_str("cc.csv", "Dispatch_Id,Kernel_Name,Counter_Name\n1,k,SQ_WAVES\n")
        .unwrap_err();
    assert!(e.message.contains("missing column: Counter_Value"), "{e}");
    let e = rocprofv3::read_str("x.csv", "a,b\n1,2\n").unwrap_err();
    assert!(e.message.contains("not a rocprofv3"), "{e}");
    let e = rocprofv3::read_str(
        "kt.csv",
        "Kind,Dispatch_Id,Kernel_Name,Start_Timestamp\nKERNEL_DISPATCH,1,k,5\n",
    )
    .unwrap_err();
    assert!(e.message.contains("End_Timestamp"), "{e}");
    let e = rocprof::read_str("r.csv", "Index,grd,wgr\n0,1,1\n").unwrap_err();
    assert!(e.message.contains("KernelName"), "{e}");

    // Empty files.
    for r in [
        rocprof::read_str("e.csv", ""),
        rocprofv3::read_str("e.csv", "\n\n"),
        rocprof_compute::read_str("e.csv", ""),
    ] {
        let e = r.unwrap_err();
        assert!(e.message.contains("empty"), "{e}");
    }

    // A non-numeric value names line and column.
    let text = "Index,KernelName,grd,wgr,SQ_WAVES\n0,k,64,64,16\n1,k,64,64,lots\n";
    let e = rocprof::read_str("r.csv", text).unwrap_err();
    assert_eq!(e.place.line, Some(3));
    assert_eq!(e.place.field.as_deref(), Some("SQ_WAVES"));
    assert!(e.to_string().contains("line 3") && e.to_string().contains("`lots`"), "{e}");
    let text = "Correlation_Id,Dispatch_Id,Kernel_Name,Grid_Size,Workgroup_Size,Counter_Name,Counter_Value\n\
                1,1,k,64,64,SQ_WAVES,1x\n";
    let e = rocprofv3::read_str("cc.csv", text).unwrap_err();
    assert_eq!((e.place.line, e.place.field.as_deref()), (Some(2), Some("Counter_Value")));

    // Too many fields (an unquoted comma in a name).
    let e = rocprof::read_str("r.csv", "Index,KernelName,SQ_WAVES\n0,k(int, int),4\n").unwrap_err();
    assert_eq!(e.place.line, Some(2));

    // A directory of something else.
    let dir = scratch("other");
    std::fs::write(dir.join("notes.txt"), "hello").unwrap();
    std::fs::write(dir.join("data.csv"), "a,b\n1,2\n").unwrap();
    assert!(rocprof::read(&dir).unwrap_err().message.contains("no rocprof CSV"));
    assert!(rocprofv3::read(&dir).unwrap_err().message.contains("no rocprofv3 output"));
    assert!(rocprof_compute::read(&dir).unwrap_err().message.contains("no pmc_perf.csv"));

    // Invalid JSON and JSON of another tool.
    let e = rocprofv3::read_str("r.json", "{\"rocprofiler-sdk-tool\": [").unwrap_err();
    assert!(e.message.contains("invalid JSON"), "{e}");
    let e = rocprofv3::read_str("r.json", "{\"traceEvents\": []}").unwrap_err();
    assert!(e.message.contains("rocprofiler-sdk-tool"), "{e}");

    // Counter collection and kernel trace from different runs.
    let dir = scratch("mismatch");
    std::fs::write(
        dir.join("kernel_trace.csv"),
        "Kind,Agent_Id,Queue_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,Correlation_Id,\
         Start_Timestamp,End_Timestamp\nKERNEL_DISPATCH,1,1,1,1,1,a,1,10,20\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("counter_collection.csv"),
        "Dispatch_Id,Kernel_Name,Counter_Name,Counter_Value\n1,b,SQ_WAVES,4\n",
    )
    .unwrap();
    let e = rocprofv3::read(&dir).unwrap_err();
    assert!(e.message.contains("different runs"), "{e}");
}

#[test]
fn readers_never_panic_on_garbage() {
    let inputs = [
        "\u{feff}Index,KernelName\n",
        "\"unterminated,\n1,2",
        ",,,\n,,,\n",
        "Dispatch_Id,Kernel_Name,Start_Timestamp,End_Timestamp,Grid_Size_X,Workgroup_Size_X\n\
         1,k,20,10,100,0\n",
        "Index,KernelName,grd,wgr,BeginNs,EndNs\n18446744073709551615,k,1e300,0,-1,5\n",
        "{\"rocprofiler-sdk-tool\":[{\"kernel_symbols\":{\"x\":1},\"buffer_records\":\
         {\"kernel_dispatch\":[{\"dispatch_info\":{\"grid_size\":{\"x\":1},\"workgroup_size\":{\"x\":0}}}]}}]}",
        "device,HBMBw\n0,abc\n",
    ];
    for t in inputs {
        let _ = rocprof::read_str("x.csv", t);
        let _ = rocprofv3::read_str("x.csv", t);
        let _ = rocprof_compute::read_str("x.csv", t);
        let mut notes = Vec::new();
        let _ = rocprof_compute::roofs_from_csv(Path::new("x"), t, &mut notes);
        let _ = rocprof_compute::device_from_sysinfo(Path::new("x"), t);
    }
}

/// A kernel_trace.csv cut short (`head -c 700` of the docs example: its 4th line ends
/// inside the kernel name, 7 of the header's 18 fields) is an error at that line, not a
/// kernel named `subtract_kernel(float*, float`. The line and field counts are the
/// file's own: header + 2 whole rows, then the cut one. The decode trace is CRLF, which
/// the line number must survive: its first 5000 bytes end in its 15th line, cut inside a
/// quote after 13 of 22 fields.
#[test]
fn truncated_kernel_trace_is_an_error_at_its_line() {
    let read = |rel: &str, bytes: usize| {
        let text = std::fs::read_to_string(fixtures().join(rel)).unwrap();
        let cut = &text.as_bytes()[..bytes];
        let path = scratch("truncated").join("kernel_trace.csv");
        std::fs::write(&path, cut).unwrap();
        rocprofv3::read(&path).map(|_| ()).unwrap_err().to_string()
    };
    let e = read("rocprofv3_docs_examples/kernel_trace.csv", 700);
    assert!(e.contains("kernel_trace.csv, line 4: 7 fields but the header has 18"), "{e}");
    assert!(e.contains("truncated"), "{e}");
    let e = read("rocprofv3_gfx1151_decode/decode_kernel_trace.csv", 5000);
    assert!(e.contains("line 15: 13 fields but the header has 22"), "{e}");
    // A quote the end of the file leaves open, with every field there.
    let text = "Dispatch_Id,Start_Timestamp,End_Timestamp,Kernel_Name\n\
                1,10,20,\"k(int)\"\n\
                2,30,40,\"subtract_kernel(float*, flo";
    let e = rocprofv3::read_str("kernel_trace.csv", text).unwrap_err().to_string();
    assert!(e.contains("line 3: a quoted field is not closed"), "{e}");
    // Whole rows read, with or without a last line end.
    let whole: String = text.split_inclusive('\n').take(2).collect();
    let set = rocprofv3::read_str("kernel_trace.csv", &whole).unwrap();
    assert_eq!(set.dispatches.len(), 1);
    assert!(rocprofv3::read_str("kernel_trace.csv", whole.trim_end()).is_ok());
}

/// The MI200 workload copied to a scratch folder with `edit` applied to one of its
/// files.
#[allow(clippy::unwrap_used)]
fn mi200_with(tag: &str, file: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let src = fixtures().join("rocprof_compute_vcopy_MI200");
    let dir = scratch(tag);
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap();
        let text = std::fs::read(&p).unwrap();
        if name == file {
            std::fs::write(dir.join(name), edit(std::str::from_utf8(&text).unwrap())).unwrap();
        } else {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }
    dir
}

/// Replaces the cell of column `col` in CSV line `line` (1-based; line 1 is the header).
/// Unquoted cells only, which the columns edited here are.
#[allow(clippy::unwrap_used)]
fn set_cell(text: &str, line: usize, col: &str, value: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let i = lines[0].split(',').position(|h| h == col).unwrap();
    // Split the row by commas outside quotes.
    let row = &lines[line - 1];
    let mut cells = Vec::new();
    let (mut cur, mut quoted) = (String::new(), false);
    for ch in row.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                cur.push(ch);
            }
            ',' if !quoted => cells.push(std::mem::take(&mut cur)),
            _ => cur.push(ch),
        }
    }
    cells.push(cur);
    cells[i] = value.to_string();
    lines[line - 1] = cells.join(",");
    lines.join("\n") + "\n"
}

/// A bad value in the first data row is on line 2 (line 1 is the header), in
/// pmc_perf.csv and in roofline.csv, with LF and with CRLF line ends.
#[test]
fn rocprof_compute_errors_name_the_data_line() {
    let crlf = |t: String| t.replace('\n', "\r\n");
    for (tag, file, col, value) in [
        ("line_pmc", "pmc_perf.csv", "TCC_HIT_sum", "lots"),
        ("line_roof", "roofline.csv", "HBMBw", "fast"),
    ] {
        for ends in ["lf", "crlf"] {
            let dir = mi200_with(&format!("{tag}_{ends}"), file, |t| {
                let t = set_cell(t, 2, col, value);
                if ends == "crlf" {
                    crlf(t)
                } else {
                    t
                }
            });
            let e = rocprof_compute::read(&dir).unwrap_err();
            assert_eq!(e.place.line, Some(2), "{file} {ends}: {e}");
            assert_eq!(e.place.field.as_deref(), Some(col), "{e}");
            assert!(e.path.ends_with(file), "{e}");
            assert!(e.to_string().contains(&format!("line 2, column `{col}`")), "{e}");
            // The same value in the second data row is line 3 (roofline.csv: only its
            // first row, device 0, is read).
            if file == "roofline.csv" {
                continue;
            }
            let dir = mi200_with(&format!("{tag}_{ends}_3"), file, |t| {
                let t = set_cell(t, 3, col, value);
                if ends == "crlf" {
                    crlf(t)
                } else {
                    t
                }
            });
            let e = rocprof_compute::read(&dir).err().map(|e| e.place.line);
            assert_eq!(e, Some(Some(3)));
        }
    }
}

/// A hardware counter counts events: -131086 in the second dispatch's TCC_EA_RDREQ_sum
/// (line 3 of pmc_perf.csv) is refused at its line and column, not summed into DRAM bytes.
#[test]
fn negative_counter_in_pmc_perf_is_an_error() {
    let dir =
        mi200_with("negative", "pmc_perf.csv", |t| set_cell(t, 3, "TCC_EA_RDREQ_sum", "-131086"));
    let e = rocprof_compute::read(&dir).unwrap_err();
    assert_eq!((e.place.line, e.place.field.as_deref()), (Some(3), Some("TCC_EA_RDREQ_sum")));
    assert!(e.path.ends_with("pmc_perf.csv") && e.message.contains("-131086"), "{e}");
    assert!(e.message.contains("cannot be negative"), "{e}");
    // Zero is a count.
    let dir = mi200_with("zero", "pmc_perf.csv", |t| set_cell(t, 3, "TCC_EA_RDREQ_sum", "0"));
    let set = rocprof_compute::read(&dir).unwrap();
    assert_eq!(set.dispatches[1].counter("TCC_EA_RDREQ_sum"), Some(0.0));
}
