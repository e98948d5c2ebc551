//! The XPlane layouts the fixture is not in, built here as XSpace messages with `prost`
//! (the reader's own message structs, so the bytes are what a protobuf encoder writes):
//!
//! - **older GPU profiles**: string stats stored inline (`str_value`), CUPTI-style line
//!   names (`Stream #7(Kernel,MemcpyH2D)`), NVIDIA `kernel_details`, no `gpu_device_name`,
//!   no host plane, no `run_id`; HLO with explicit `replica_groups`, the bare
//!   `GemmBackendConfig` of pre-2023 XLA and the older `triton_gemm_config` tiles;
//! - **newer GPU profiles**: per-kernel stats on the event metadata with interned string
//!   values (`ref_value`), `gpu_device_name`, `run_id`, `collective_device_list` iota
//!   groups, host step markers (`step_num`) and launch events linked by correlation id;
//! - **TPU-style planes**: no stream lines, the `XLA Ops` line is the activity.
//!
//! Every expected number is written out from the shapes by hand.

#![allow(clippy::unwrap_used, clippy::many_single_char_names, clippy::unnecessary_wraps)]

use prost::Message;
use rooftop_core::trace::model::GpuKind;
use rooftop_core::trace::report::{analyze, TraceOptions};
use rooftop_core::trace::xla::XplaneLayout;
use rooftop_ingest::xplane::proto::*;
use rooftop_ingest::xplane::read_bytes;
use std::collections::HashMap;
use std::path::Path;

/// Builds one plane, interning stat and event names.
#[derive(Default)]
struct Pb {
    plane: XPlane,
    stats: HashMap<String, i64>,
    events: HashMap<String, i64>,
}

impl Pb {
    fn new(name: &str) -> Pb {
        Pb { plane: XPlane { name: name.to_string(), ..XPlane::default() }, ..Pb::default() }
    }

    fn stat_id(&mut self, name: &str) -> i64 {
        let next = i64::try_from(self.stats.len()).unwrap() + 1;
        let id = *self.stats.entry(name.to_string()).or_insert(next);
        self.plane.stat_metadata.entry(id).or_insert_with(|| XStatMetadata {
            id,
            name: name.to_string(),
            description: String::new(),
        });
        id
    }

    fn s(&mut self, name: &str, v: &str) -> XStat {
        XStat {
            metadata_id: self.stat_id(name),
            value: Some(x_stat::Value::StrValue(v.to_string())),
        }
    }

    fn r(&mut self, name: &str, v: &str) -> XStat {
        let rid = self.stat_id(v);
        XStat {
            metadata_id: self.stat_id(name),
            value: Some(x_stat::Value::RefValue(u64::try_from(rid).unwrap())),
        }
    }

    fn i(&mut self, name: &str, v: i64) -> XStat {
        XStat { metadata_id: self.stat_id(name), value: Some(x_stat::Value::Int64Value(v)) }
    }

    fn b(&mut self, name: &str, v: Vec<u8>) -> XStat {
        XStat { metadata_id: self.stat_id(name), value: Some(x_stat::Value::BytesValue(v)) }
    }

    fn meta(&mut self, name: &str, stats: Vec<XStat>) -> i64 {
        let next = i64::try_from(self.events.len()).unwrap() + 1;
        let id = *self.events.entry(name.to_string()).or_insert(next);
        let m = self.plane.event_metadata.entry(id).or_insert_with(|| XEventMetadata {
            id,
            name: name.to_string(),
            ..XEventMetadata::default()
        });
        m.stats.extend(stats);
        id
    }

    fn line(&mut self, name: &str, ts_ns: i64, events: Vec<XEvent>) {
        let id = i64::try_from(self.plane.lines.len()).unwrap() + 1;
        self.plane.lines.push(XLine {
            id,
            name: name.to_string(),
            timestamp_ns: ts_ns,
            events,
            ..XLine::default()
        });
    }
}

fn ev(meta: i64, offset_us: i64, dur_us: i64, stats: Vec<XStat>) -> XEvent {
    XEvent {
        metadata_id: meta,
        data: Some(x_event::Data::OffsetPs(offset_us * 1_000_000)),
        duration_ps: dur_us * 1_000_000,
        stats,
    }
}

fn shape(t: i32, dims: &[i64]) -> Option<ShapeProto> {
    Some(ShapeProto { element_type: t, dimensions: dims.to_vec(), ..ShapeProto::default() })
}

fn tuple(parts: Vec<ShapeProto>) -> Option<ShapeProto> {
    Some(ShapeProto { element_type: 13, tuple_shapes: parts, ..ShapeProto::default() })
}

const BF16: i32 = 16;
const F32: i32 = 11;
const S8: i32 = 2;

fn instr(
    id: i64,
    name: &str,
    opcode: &str,
    sh: Option<ShapeProto>,
    operands: &[i64],
) -> HloInstructionProto {
    HloInstructionProto {
        id,
        name: name.to_string(),
        opcode: opcode.to_string(),
        shape: sh,
        operand_ids: operands.to_vec(),
        ..HloInstructionProto::default()
    }
}

fn hlo_bytes(name: &str, computations: Vec<HloComputationProto>) -> Vec<u8> {
    HloProto {
        hlo_module: Some(HloModuleProto {
            name: name.to_string(),
            computations,
            ..HloModuleProto::default()
        }),
    }
    .encode_to_vec()
}

fn metadata_plane(entries: Vec<(&str, Vec<u8>)>) -> XPlane {
    let mut p = Pb::new("/host:metadata");
    for (name, bytes) in entries {
        let st = p.b("Hlo Proto", bytes);
        p.meta(name, vec![st]);
    }
    p.plane
}

/// An older GPU profile: inline string stats, line names with event kinds, NVIDIA
/// kernel details; two executions of `jit_train_step(12)` without `run_id` or host plane.
fn old_layout() -> Vec<u8> {
    // Fused computation 1: dot.1 = bf16[8,512,1024] x bf16[1024,4096], contracting {2}/{0}.
    let mut dot = instr(10, "dot.1", "dot", shape(F32, &[8, 512, 4096]), &[11, 12]);
    dot.dot_dimension_numbers = Some(DotDimensionNumbers {
        lhs_contracting_dimensions: vec![2],
        rhs_contracting_dimensions: vec![0],
        ..DotDimensionNumbers::default()
    });
    let fused = HloComputationProto {
        name: "fused_computation".into(),
        id: 1,
        root_id: 10,
        is_fusion_computation: true,
        instructions: vec![
            instr(11, "p0.1", "parameter", shape(BF16, &[8, 512, 1024]), &[]),
            instr(12, "p1.1", "parameter", shape(BF16, &[1024, 4096]), &[]),
            dot,
        ],
    };
    let mut fusion = instr(20, "fusion.1", "fusion", shape(F32, &[8, 512, 4096]), &[1, 2]);
    fusion.fusion_kind = "kCustom".into();
    fusion.called_computation_ids = vec![1];
    fusion.backend_config = br#"{"fusion_backend_config":{"kind":"__triton_gemm","triton_gemm_config":{"block_m":"128","block_n":"256","block_k":"64","split_k":"1","num_stages":"3","num_warps":"8"}}}"#.to_vec();
    let mut gemm = instr(
        21,
        "custom-call.2",
        "custom-call",
        tuple(vec![shape(F32, &[2048, 512]).unwrap(), shape(S8, &[1_048_576]).unwrap()]),
        &[3, 4],
    );
    gemm.custom_call_target = "__cublas$gemm".into();
    gemm.backend_config = br#"{"alpha_real":1,"alpha_imag":0,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},"epilogue":"DEFAULT"}"#.to_vec();
    let mut ar = instr(22, "all-reduce.3", "all-reduce", shape(F32, &[1_048_576]), &[5]);
    ar.replica_groups = vec![
        ReplicaGroup { replica_ids: vec![0, 1, 2, 3] },
        ReplicaGroup { replica_ids: vec![4, 5, 6, 7] },
    ];
    let mut conv =
        instr(23, "convolution.4", "convolution", shape(BF16, &[8, 56, 56, 128]), &[6, 7]);
    conv.convolution_dimension_numbers = Some(ConvolutionDimensionNumbers {
        input_batch_dimension: 0,
        input_feature_dimension: 3,
        input_spatial_dimensions: vec![1, 2],
        kernel_input_feature_dimension: 2,
        kernel_output_feature_dimension: 3,
        kernel_spatial_dimensions: vec![0, 1],
        output_batch_dimension: 0,
        output_feature_dimension: 3,
        output_spatial_dimensions: vec![1, 2],
    });
    let wd = WindowDimension {
        size: 3,
        stride: 1,
        padding_low: 1,
        padding_high: 1,
        window_dilation: 1,
        base_dilation: 1,
    };
    conv.window = Some(Window { dimensions: vec![wd.clone(), wd] });
    let entry = HloComputationProto {
        name: "main".into(),
        id: 2,
        root_id: 20,
        is_fusion_computation: false,
        instructions: vec![
            instr(1, "p0", "parameter", shape(BF16, &[8, 512, 1024]), &[]),
            instr(2, "p1", "parameter", shape(BF16, &[1024, 4096]), &[]),
            instr(3, "p2", "parameter", shape(F32, &[2048, 1024]), &[]),
            instr(4, "p3", "parameter", shape(F32, &[1024, 512]), &[]),
            instr(5, "p4", "parameter", shape(F32, &[1_048_576]), &[]),
            instr(6, "p5", "parameter", shape(BF16, &[8, 56, 56, 64]), &[]),
            instr(7, "p6", "parameter", shape(BF16, &[3, 3, 64, 128]), &[]),
            fusion,
            gemm,
            ar,
            conv,
        ],
    };
    let meta = metadata_plane(vec![(
        "jit_train_step(12)",
        hlo_bytes("jit_train_step", vec![fused, entry]),
    )]);

    let mut d = Pb::new("/device:GPU:0");
    let vendor = d.s("device_vendor", "Nvidia");
    let (cc_maj, cc_min, cores) =
        (d.i("compute_cap_major", 9), d.i("compute_cap_minor", 0), d.i("core_count", 132));
    d.plane.stats = vec![vendor, cc_maj, cc_min, cores];
    let kd =
        "regs:128 static_shared:0 dynamic_shared:98304 grid:32,16,1 block:256,1,1 occ_pct:12.5";
    let kernels = [
        ("fusion.1", "triton_gemm_fusion_1", 0, 100),
        ("custom-call.2", "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 110, 50),
        ("convolution.4", "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64", 170, 80),
    ];
    let mut main = Vec::new();
    let mut comm = Vec::new();
    for run in 0..2 {
        let t0 = run * 1000;
        for (op, kernel, off, dur) in kernels {
            let m = d.meta(kernel, vec![]);
            let stats = vec![
                d.s("hlo_op", op),
                d.s("hlo_module", "jit_train_step"),
                d.i("program_id", 12),
                d.s("kernel_details", kd),
            ];
            main.push(ev(m, t0 + off, dur, stats));
        }
        let m = d.meta("MemcpyH2D", vec![]);
        let st = vec![
            d.s("memcpy_details", "kind_src:pageable kind_dst:device size:4096 dest:0 async:0")
        ];
        main.push(ev(m, t0 + 260, 10, st));
        let m = d.meta("ncclDevKernel_AllReduce_Sum_f32_RING_LL", vec![]);
        let stats = vec![
            d.s("hlo_op", "all-reduce.3"),
            d.s("hlo_module", "jit_train_step"),
            d.i("program_id", 12),
        ];
        comm.push(ev(m, t0 + 300, 20, stats));
    }
    d.line("Stream #7(Kernel,MemcpyH2D)", 1_000_000, main);
    d.line("Stream #9(Kernel)", 1_000_000, comm);
    XSpace { planes: vec![meta, d.plane], ..XSpace::default() }.encode_to_vec()
}

#[test]
fn older_gpu_layout() {
    let m = read_bytes(&old_layout(), Path::new("old.xplane.pb")).unwrap();
    let x = m.xla.as_deref().unwrap();
    assert_eq!(x.layout, XplaneLayout::EventStats);
    assert_eq!(m.devices[0].name, "Nvidia device, compute capability 9.0");
    assert_eq!((m.devices[0].num_sms, m.devices[0].warp_size), (Some(132), Some(32)));
    // 2 runs × (3 kernels + memcpy + NCCL kernel).
    assert_eq!(m.gpu.len(), 10);
    let copies: Vec<_> = m.gpu.iter().filter(|g| g.kind == GpuKind::Memcpy).collect();
    assert_eq!(copies.len(), 2);
    assert!(copies.iter().all(|c| c.bytes == Some(4096) && c.op.is_none()));
    let k = m.gpu.iter().find(|g| &*g.name == "triton_gemm_fusion_1").unwrap();
    assert_eq!(
        (k.registers_per_thread(), k.shared_memory_bytes(), k.grid()),
        (Some(128), Some(98_304), Some([32, 16, 1]))
    );
    // Runs from the fallback (the module's first op recurs): 0 then 1 for every op.
    assert_eq!(m.ops.len(), 8);
    let mut runs: HashMap<&str, Vec<u32>> = HashMap::new();
    for o in &x.ops {
        runs.entry(&*o.hlo_op).or_default().push(o.run);
    }
    assert!(runs.values().all(|r| r == &[0, 1]), "{runs:?}");

    let opts = TraceOptions { include_unlinked: true, ..TraceOptions::default() };
    let cat = rooftop_core::device::Catalog::builtin();
    let r = analyze(&m, cat.lookup("h100-sxm").ok(), &opts);
    let xr = r.xla.as_ref().unwrap();
    let row = |n: &str| xr.ops.iter().find(|o| o.name == n).unwrap();
    // fusion.1: dot of bf16[8,512,1024] x bf16[1024,4096]: M = 8*512 = 4096, N = 4096,
    // K = 1024; 2*M*N*K FLOPs; the fusion reads its operands and writes f32[8,512,4096].
    let f = row("fusion.1");
    assert_eq!(f.flops, Some(2.0 * 4096.0 * 4096.0 * 1024.0));
    assert_eq!(f.bytes, Some((8 * 512 * 1024 * 2 + 1024 * 4096 * 2 + 8 * 512 * 4096 * 4) as f64));
    // Triton 128x256 block tiles over the 4096x4096 output: 32*16 = 512 tiles; 132 SMs
    // → ceil(512/132) = 4 waves, 512/(4*132) = 0.9697 wave efficiency.
    let t = f.tile.as_ref().unwrap();
    assert_eq!((t.tiles, t.waves), (512, Some(4)));
    assert!((t.wave_eff.unwrap() - 512.0 / 528.0).abs() < 1e-12);
    // custom-call.2 from the bare GemmBackendConfig: f32[2048,1024] x f32[1024,512].
    let g = row("custom-call.2");
    assert_eq!(g.flops, Some(2.0 * 2048.0 * 512.0 * 1024.0));
    assert_eq!(g.bytes, Some(((2048 * 1024 + 1024 * 512 + 2048 * 512) * 4) as f64));
    // convolution.4: 3x3, 64 → 128 channels on 8x56x56: 2*|Y|*Cin*9.
    let c = row("convolution.4");
    assert_eq!(c.flops, Some(2.0 * (8.0 * 56.0 * 56.0 * 128.0) * 64.0 * 9.0));
    assert_eq!(r.categories["CONV_fwd"].len(), 1);
    assert_eq!(r.categories["GEMM"].len(), 2);
    // all-reduce.3 over groups of 4: 4 MiB in 20 µs = 209.7152 GB/s, busbw ×2*3/4.
    let ar = &xr.collectives[0];
    assert_eq!((ar.name.as_str(), ar.group_size), ("all-reduce.3", Some(4)));
    assert_eq!(ar.message_bytes, Some(4_194_304.0));
    assert!((ar.algbw_gbs.unwrap() - 4_194_304.0 / 20_000.0).abs() < 1e-9);
    assert!((ar.busbw_gbs.unwrap() - 4_194_304.0 / 20_000.0 * 1.5).abs() < 1e-9);
    // The NCCL kernels are communication in the timeline: 2 × 20 µs.
    assert!((r.timeline.all.communication.time_ms - 0.040).abs() < 1e-12);
    assert!((r.timeline.all.memcpy.time_ms - 0.020).abs() < 1e-12);
    assert_eq!(xr.steps.rows.len(), 2);
}

/// A newer GPU profile: per-kernel stats on the metadata with interned values, run ids,
/// device name, iota replica groups, host step markers and launches.
fn new_layout() -> Vec<u8> {
    let mut ag = instr(
        1,
        "all-gather-start.1",
        "all-gather-start",
        tuple(vec![shape(BF16, &[1024, 1024]).unwrap(), shape(BF16, &[8192, 1024]).unwrap()]),
        &[3],
    );
    ag.collective_device_list = Some(CollectiveDeviceListProto {
        replica_groups: vec![],
        iota_replica_group_list: Some(IotaReplicaGroupListProto {
            num_replica_groups: 1,
            num_devices_per_group: 8,
        }),
    });
    let mut dot = instr(2, "dot.2", "dot", shape(BF16, &[64, 128, 512]), &[4, 5]);
    dot.dot_dimension_numbers = Some(DotDimensionNumbers {
        lhs_contracting_dimensions: vec![2],
        rhs_contracting_dimensions: vec![1],
        lhs_batch_dimensions: vec![0],
        rhs_batch_dimensions: vec![0],
    });
    // Instruction ids beyond 2^31, as newer XLA numbers them.
    let big = |i: i64| (7_i64 << 32) + i;
    ag.id = big(1);
    ag.operand_ids = vec![big(3)];
    dot.id = big(2);
    dot.operand_ids = vec![big(4), big(5)];
    let entry = HloComputationProto {
        name: "main".into(),
        id: 7,
        root_id: big(2),
        is_fusion_computation: false,
        instructions: vec![
            instr(big(3), "p0", "parameter", shape(BF16, &[1024, 1024]), &[]),
            instr(big(4), "p1", "parameter", shape(BF16, &[64, 128, 256]), &[]),
            instr(big(5), "p2", "parameter", shape(BF16, &[64, 256, 512]), &[]),
            ag,
            dot,
        ],
    };
    let meta = metadata_plane(vec![("jit_step(3)", hlo_bytes("jit_step", vec![entry]))]);

    let mut d = Pb::new("/device:GPU:1");
    let (name, vendor, cores) = (
        d.r("gpu_device_name", "NVIDIA H100 80GB HBM3"),
        d.r("device_vendor", "Nvidia"),
        d.i("core_count", 132),
    );
    d.plane.stats = vec![name, vendor, cores];
    let mut events = Vec::new();
    let mut comm = Vec::new();
    let specs = [
        ("all-gather-start.1", "ncclDevKernel_AllGather_RING_LL"),
        ("dot.2", "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x3_nn_align8"),
    ];
    let mut metas = Vec::new();
    for (op, kernel) in specs {
        let st = vec![
            d.r("hlo_op", op),
            d.r("hlo_module", "jit_step"),
            d.i("program_id", 3),
            d.r("kernel_details", "regs:96 static_shared:0 dynamic_shared:49152 grid:4,128,64 block:128,1,1 occ_pct:25"),
        ];
        metas.push(d.meta(kernel, st));
    }
    let mut corr = 100;
    for run in 0..2i64 {
        let t0 = run * 500;
        let st = vec![d.i("correlation_id", corr), d.i("run_id", 77 + run)];
        comm.push(ev(metas[0], t0, 40, st));
        let st = vec![d.i("correlation_id", corr + 1), d.i("run_id", 77 + run)];
        events.push(ev(metas[1], t0 + 50, 30, st));
        corr += 2;
    }
    d.line("Stream #14(Kernel)", 2_000_000, events);
    d.line("Stream #20(Kernel)", 2_000_000, comm);

    let mut h = Pb::new("/host:CPU");
    let launch = h.meta("cuLaunchKernel", vec![]);
    let mut launches = Vec::new();
    for (k, c) in [100, 101, 102, 103].into_iter().enumerate() {
        let st = vec![h.i("correlation_id", c)];
        launches.push(ev(launch, i64::try_from(k).unwrap() * 200, 5, st));
    }
    h.line("Host Threads/1", 2_000_000, launches);
    let step = h.meta("train", vec![]);
    let (s0, s1) = (vec![h.i("step_num", 0)], vec![h.i("step_num", 1)]);
    h.line("python", 2_000_000, vec![ev(step, 0, 400, s0), ev(step, 500, 400, s1)]);
    XSpace {
        planes: vec![meta, d.plane, h.plane],
        hostnames: vec!["node-3".into()],
        ..XSpace::default()
    }
    .encode_to_vec()
}

#[test]
fn newer_gpu_layout() {
    let m = read_bytes(&new_layout(), Path::new("new.xplane.pb")).unwrap();
    let x = m.xla.as_deref().unwrap();
    assert_eq!(x.layout, XplaneLayout::MetadataStats);
    assert_eq!(m.devices[0].name, "NVIDIA H100 80GB HBM3");
    assert_eq!(m.devices[0].index, 1);
    assert!(m.gpu.iter().all(|g| g.launcher.as_deref() == Some("cuLaunchKernel")));
    assert!(m.gpu.iter().all(|g| g.grid() == Some([4, 128, 64]) && g.stream != 0));
    let mut runs: Vec<(String, u32)> =
        x.ops.iter().map(|o| (o.hlo_op.to_string(), o.run)).collect();
    runs.sort();
    assert_eq!(
        runs,
        vec![
            ("all-gather-start.1".into(), 0),
            ("all-gather-start.1".into(), 1),
            ("dot.2".into(), 0),
            ("dot.2".into(), 1)
        ]
    );
    assert_eq!(x.step_markers.len(), 2);
    assert_eq!((x.step_markers[1].step, x.step_markers[1].dur_ns), (Some(1), 400_000));
    assert_eq!(x.hostnames, vec!["node-3".to_string()]);

    let cat = rooftop_core::device::Catalog::builtin();
    let dev = cat.lookup(&m.devices[0].name).unwrap();
    assert_eq!(dev.id, "h100-sxm");
    let r =
        analyze(&m, Some(dev), &TraceOptions { include_unlinked: true, ..TraceOptions::default() });
    let xr = r.xla.as_ref().unwrap();
    // dot.2: batch 64, M=128, N=512, K=256 → 2*64*128*512*256 FLOPs.
    let d = xr.ops.iter().find(|o| o.name == "dot.2").unwrap();
    assert_eq!(d.flops, Some(2.0 * 64.0 * 128.0 * 512.0 * 256.0));
    assert_eq!(d.bytes, Some(((64 * 128 * 256 + 64 * 256 * 512 + 64 * 128 * 512) * 2) as f64));
    // all-gather of bf16[1024,1024] over 8 devices (iota groups): 2 MiB × 8 = 16 MiB
    // in 40 µs; busbw × 7/8.
    let ag = &xr.collectives[0];
    assert_eq!((ag.group_size, ag.message_bytes), (Some(8), Some(16_777_216.0)));
    assert!((ag.algbw_gbs.unwrap() - 16_777_216.0 / 40_000.0).abs() < 1e-9);
    assert!((ag.busbw_gbs.unwrap() - 16_777_216.0 / 40_000.0 * 7.0 / 8.0).abs() < 1e-9);
}

/// A TPU-style plane: only `XLA Modules` and `XLA Ops` lines.
#[test]
fn xla_ops_line_layout() {
    let mut d = Pb::new("/device:TPU:0");
    let (a, b) = (d.meta("fusion.3", vec![]), d.meta("convolution.1", vec![]));
    let st = |d: &mut Pb| vec![d.s("hlo_module", "jit_f"), d.i("program_id", 5)];
    let (s1, s2) = (st(&mut d), st(&mut d));
    d.line("XLA Ops", 0, vec![ev(a, 0, 10, s1), ev(b, 10, 30, s2)]);
    let modm = d.meta("jit_f(5)", vec![]);
    d.line("XLA Modules", 0, vec![ev(modm, 0, 40, vec![])]);
    let bytes = XSpace { planes: vec![d.plane], ..XSpace::default() }.encode_to_vec();
    let m = read_bytes(&bytes, Path::new("tpu.xplane.pb")).unwrap();
    let x = m.xla.as_deref().unwrap();
    assert_eq!(x.layout, XplaneLayout::XlaOpsLine);
    assert_eq!(m.gpu.len(), 2);
    assert_eq!(
        m.ops.iter().map(|o| o.name.as_ref()).collect::<Vec<_>>(),
        vec!["fusion.3", "convolution.1"]
    );
    assert!(!x.modules[0].has_hlo);
    let r = analyze(&m, None, &TraceOptions { include_unlinked: true, ..TraceOptions::default() });
    assert!((r.timeline.all.busy.time_ms - 0.040).abs() < 1e-12);
    assert!(r.xla.as_ref().unwrap().notes[0].contains("jit_f"));
}

#[test]
fn undecodable_hlo_is_a_warning_not_an_error() {
    let mut bytes = old_layout();
    // Replace the module's HloProto with garbage: the profile still reads.
    let mut space = XSpace::decode(bytes.as_slice()).unwrap();
    for m in space.planes[0].event_metadata.values_mut() {
        for s in &mut m.stats {
            s.value = Some(x_stat::Value::BytesValue(vec![0x0a, 0xff, 0xff]));
        }
    }
    bytes = space.encode_to_vec();
    let m = read_bytes(&bytes, Path::new("bad-hlo.xplane.pb")).unwrap();
    assert!(m
        .warnings
        .iter()
        .any(|w| w.kind == "hlo_undecodable" && w.example.contains("jit_train_step")));
    assert!(m.xla.as_deref().unwrap().ops.iter().all(|o| o.instr.is_none()));
}

/// Host lines are read at once and merged: a correlation id launched on several lines
/// (as on a profile that records a call on two threads) takes its first launch in
/// plane and line order, whichever line holds the most launches.
#[test]
fn the_first_launch_of_a_correlation_id_wins_in_line_order() {
    let mut space = XSpace::decode(new_layout().as_slice()).unwrap();
    let mut h = Pb::new("/host:CPU");
    let line = |h: &mut Pb, thread: &str, call: &str, ids: &[i64]| {
        let m = h.meta(call, vec![]);
        let evs = ids
            .iter()
            .enumerate()
            .map(|(k, &c)| {
                let st = vec![h.i("correlation_id", c)];
                ev(m, i64::try_from(k).unwrap() * 100, 5, st)
            })
            .collect();
        h.line(thread, 2_000_000, evs);
    };
    // The middle line holds the most launches; the first line's 100 and the middle
    // line's 101 come first.
    line(&mut h, "Host Threads/1", "launch_a", &[100]);
    line(&mut h, "python", "launch_b", &[100, 101, 102, 103]);
    line(&mut h, "Host Threads/2", "launch_c", &[101, 104]);
    space.planes[2] = h.plane;
    let m = read_bytes(&space.encode_to_vec(), Path::new("lines.xplane.pb")).unwrap();
    let launcher = |c: i64| {
        let g = m.gpu.iter().find(|g| g.correlation == Some(c)).unwrap();
        g.launcher.as_deref().unwrap().to_string()
    };
    assert_eq!(
        [100, 101, 102, 103].map(launcher),
        ["launch_a", "launch_b", "launch_b", "launch_b"].map(String::from)
    );
    let x = m.xla.as_deref().unwrap();
    let threads: Vec<(&str, u64)> =
        x.host_threads.iter().map(|t| (t.name.as_str(), t.events)).collect();
    assert_eq!(threads, vec![("Host Threads/1", 1), ("python", 4), ("Host Threads/2", 2)]);
}
