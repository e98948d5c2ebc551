//! The XPlane reader on the real JAX profile in `tests/fixtures/jax` (a training step with
//! Transformer Engine fused attention on an AMD gfx950, from TraceLens's tests), against
//! independent oracles:
//! - counts from a separate Python decoder of the protobuf wire format (no protobuf
//!   library: varints and length-delimited fields walked by hand, stats resolved through
//!   `stat_metadata`): the device plane `/device:GPU:0` has one line `Stream #2` with 150
//!   events, every one with `hlo_op`, `hlo_module` = `jit_loss_fn`, `program_id` = 17 and
//!   a `correlation_id`; `/host:CPU` has the lines `Host Threads/7` (150 runtime calls:
//!   75 `hipModuleLaunchKernel`, 50 `hipLaunchKernel`, 20 `hipMemsetAsync`, 5
//!   `hipExtModuleLaunchKernel`) and `python3` (1692 events); seven more GPU planes carry
//!   only `device_vendor` = AMD;
//! - XProf 2.24.2's own tables of the same file (`tests/fixtures/jax/xprof_2.24.2/`,
//!   README there): per-HLO-op total time and kernel count, XLA's cost-analysis FLOPs and
//!   operational intensity, and the grid of every kernel;
//! - the HLO the profile carries, written out in the tests and counted by hand.

#![allow(clippy::unwrap_used, clippy::many_single_char_names, clippy::unnecessary_wraps)]

use rooftop_core::trace::model::GpuKind;
use rooftop_core::trace::xla::hlo::HloShape;
use rooftop_core::trace::TraceModel;
use rooftop_ingest::xplane::{read_bytes, read_path};
use std::collections::HashMap;
use std::path::PathBuf;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/jax/amd_gfx950_te_fused_attn.xplane.pb")
}

fn model() -> TraceModel {
    read_path(&fixture()).unwrap()
}

fn xprof_csv(name: &str) -> Vec<HashMap<String, String>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/jax/xprof_2.24.2")
        .join(name);
    let mut rd = csv::Reader::from_path(&p).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(str::to_string).collect();
    rd.records()
        .map(|r| header.iter().cloned().zip(r.unwrap().iter().map(str::to_string)).collect())
        .collect()
}

#[test]
fn planes_lines_and_events_as_the_wire_format_says() {
    let m = model();
    assert_eq!(m.gpu.len(), 150);
    assert!(m.gpu.iter().all(|g| g.device == 0 && g.stream == 2 && g.kind == GpuKind::Kernel));
    // Sorted by time, every one linked to its runtime call by correlation id.
    assert!(m.gpu.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
    let mut launchers: HashMap<&str, usize> = HashMap::new();
    for g in &m.gpu {
        *launchers.entry(g.launcher.as_deref().unwrap()).or_default() += 1;
    }
    assert_eq!(launchers["hipModuleLaunchKernel"], 75);
    assert_eq!(launchers["hipLaunchKernel"], 50);
    assert_eq!(launchers["hipMemsetAsync"], 20);
    assert_eq!(launchers["hipExtModuleLaunchKernel"], 5);
    // The first kernel: `wrapped_convert.kd` at offset 660484000 ps on a line starting at
    // 9715872534 ns, 2960000 ps long, grid 1,1,1 block 2,1,1.
    let g = &m.gpu[0];
    assert_eq!(&*g.name, "wrapped_convert.kd");
    assert_eq!((g.ts_ns, g.dur_ns), (9_715_872_534 + 660_484, 2_960));
    assert_eq!((g.grid(), g.block(), g.correlation), (Some([1, 1, 1]), Some([2, 1, 1]), Some(2)));
    // Eight device planes; GPU:0 states its capabilities and runs gfx950 kernels.
    assert_eq!(m.devices.len(), 8);
    let d = &m.devices[0];
    assert_eq!(d.name, "gfx950");
    assert_eq!((d.num_sms, d.compute_capability.as_deref()), (Some(256), Some("9.5")));
    assert_eq!((d.total_memory_bytes, d.warp_size), (Some(309_220_868_096), Some(64)));
    let x = m.xla.as_deref().unwrap();
    assert_eq!(x.devices[0].clock_khz, Some(2_400_000));
    assert_eq!(x.devices[0].memory_bandwidth_bps, Some(4_096_000_000_000.0));
    assert_eq!(x.hostnames, vec!["934987a2fc2f".to_string()]);
    let threads: HashMap<&str, u64> =
        x.host_threads.iter().map(|t| (t.name.as_str(), t.events)).collect();
    assert_eq!(threads["Host Threads/7"], 150);
    assert_eq!(threads["python3"], 1692);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}

#[test]
fn ops_modules_and_runs() {
    let m = model();
    let x = m.xla.as_deref().unwrap();
    // One module, its HLO in /host:metadata; 20 HLO ops executed 5 times each.
    assert_eq!(x.modules.len(), 1);
    assert_eq!((x.modules[0].name.as_str(), x.modules[0].program_id), ("jit_loss_fn", Some(17)));
    assert!(x.modules[0].has_hlo);
    assert_eq!(m.ops.len(), 100);
    assert_eq!(x.ops.len(), 100);
    let mut runs: HashMap<&str, Vec<u32>> = HashMap::new();
    for o in &x.ops {
        runs.entry(&*o.hlo_op).or_default().push(o.run);
    }
    assert_eq!(runs.len(), 20);
    assert!(runs.values().all(|r| r == &[0, 1, 2, 3, 4]), "{runs:?}");
    // Every kernel belongs to exactly one op, and the op lists it.
    for (i, g) in m.gpu.iter().enumerate() {
        let op = g.op.unwrap() as usize;
        assert!(m.ops[op].launched.contains(&u32::try_from(i).unwrap()));
    }
    // te_fused_attn_backward_ffi.12 launches 5 kernels per execution (two fills, the
    // dO·O dot, the dQ/dK/dV kernel, the dQ conversion).
    let bwd: Vec<&rooftop_core::trace::CpuOp> =
        m.ops.iter().filter(|o| &*o.name == "te_fused_attn_backward_ffi.12").collect();
    assert_eq!(bwd.len(), 5);
    assert!(bwd.iter().all(|o| o.launched.len() == 5));
    assert!(x.ops.iter().all(|o| o.instr.is_some()));
    assert_eq!(
        x.ops.iter().find(|o| &*o.hlo_op == "gemm_fusion_dot").unwrap().framework_op.as_deref(),
        Some("jit(loss_fn)/jvp(bsd,de->bse)/dot_general")
    );
}

/// The memo of the tables and the coverage: one model per HLO instruction, shared by
/// its five executions, equal to the model built for each execution on its own.
#[test]
fn work_models_are_built_once_per_instruction() {
    use rooftop_core::trace::inference::Context;
    use rooftop_core::trace::ops::{model_in_context, ModelMemo};
    let m = model();
    let ctx = Context::new(&m);
    let mut memo = ModelMemo::new(&m, &ctx);
    let mut first: HashMap<String, std::rc::Rc<_>> = HashMap::new();
    let mut modelled = 0;
    for (i, o) in m.ops.iter().enumerate() {
        let got = memo.get(i);
        assert_eq!(*got, model_in_context(&m, i, &ctx), "op {i} ({})", o.name);
        modelled += usize::from(got.is_ok());
        let shared = first.entry(o.name.to_string()).or_insert_with(|| got.clone());
        assert!(std::rc::Rc::ptr_eq(shared, &got), "op {i} ({}) modelled again", o.name);
    }
    assert_eq!(first.len(), 20);
    assert!(modelled > 0);
}

#[test]
fn hlo_instructions_from_the_profile() {
    let m = model();
    let x = m.xla.as_deref().unwrap();
    let instr =
        |name: &str| x.ops.iter().find(|o| &*o.hlo_op == name).unwrap().instr.clone().unwrap();
    // gemm_fusion_dot = fusion(bf16[4096,2,1024], bf16[2,1024,6144]) -> f32[2,4096,6144],
    // kind kCustom, calling dot.16 with lhs_contracting {2}, rhs_contracting {1},
    // lhs_batch {1}, rhs_batch {0}; Triton output tile 1x128x128.
    let g = instr("gemm_fusion_dot");
    assert_eq!((g.opcode.as_str(), g.fusion_kind.as_deref()), ("fusion", Some("kCustom")));
    assert_eq!(
        g.shape,
        HloShape {
            minor_to_major: Some(vec![2, 1, 0]),
            ..HloShape::array("f32", &[2, 4096, 6144])
        }
    );
    assert_eq!(g.operands.len(), 2);
    assert_eq!(
        (g.operands[0].dims.as_slice(), g.operands[1].dims.as_slice()),
        (&[4096, 2, 1024][..], &[2, 1024, 6144][..])
    );
    let dot = g.inner.as_deref().unwrap();
    assert_eq!(dot.opcode, "dot");
    let dn = dot.dot.as_ref().unwrap();
    assert_eq!(
        (dn.lhs_contracting.as_slice(), dn.rhs_contracting.as_slice()),
        (&[2][..], &[1][..])
    );
    assert_eq!((dn.lhs_batch.as_slice(), dn.rhs_batch.as_slice()), (&[1][..], &[0][..]));
    assert_eq!(g.tile.as_ref().unwrap().output_tile, vec![1, 128, 128]);
    assert_eq!(g.fusion_backend_kind.as_deref(), Some("__triton_nested_gemm_fusion"));
    // custom-call.1 = __cublas$gemm(bf16[4096,6144], bf16[2048,6144]) ->
    // (bf16[4096,2048], s8[67108864]); contracting {1} x {1} from its backend config.
    let c = instr("custom-call.1");
    assert_eq!(c.custom_call_target.as_deref(), Some("__cublas$gemm"));
    assert_eq!(c.shape.tuple.len(), 2);
    let dn = c.dot.as_ref().unwrap();
    assert_eq!(
        (dn.lhs_contracting.as_slice(), dn.rhs_contracting.as_slice()),
        (&[1][..], &[1][..])
    );
    assert_eq!(c.attr("beta"), Some("0"));
    // te_fused_attn_forward_ffi.10: the FFI attribute dictionary.
    let a = instr("te_fused_attn_forward_ffi.10");
    for (k, v) in [
        ("input_batch", "2"),
        ("attn_heads", "16"),
        ("num_gqa_groups", "16"),
        ("q_max_seqlen", "2048"),
        ("kv_max_seqlen", "2048"),
        ("qk_head_dim", "128"),
        ("v_head_dim", "128"),
        ("mask_type", "2"),
        ("qkv_layout", "5"),
        ("is_training", "true"),
    ] {
        assert_eq!(a.attr(k), Some(v), "{k}");
    }
    assert_eq!(
        a.operands[0],
        HloShape {
            minor_to_major: Some(vec![4, 3, 2, 1, 0]),
            ..HloShape::array("bf16", &[2, 2048, 3, 16, 128])
        }
    );
    assert_eq!(a.op_name, "jit(loss_fn)/jvp()/te_fused_attn_forward_ffi");
}

#[test]
fn per_op_device_time_and_kernels_match_xprof() {
    let m = model();
    let x = m.xla.as_deref().unwrap();
    let mut ours: HashMap<&str, (i64, usize)> = HashMap::new();
    for (i, o) in x.ops.iter().enumerate() {
        let e = ours.entry(&*o.hlo_op).or_default();
        for &k in &m.ops[i].launched {
            e.0 += m.gpu[k as usize].dur_ns;
            e.1 += 1;
        }
    }
    let rows = xprof_csv("hlo_stats.csv");
    assert_eq!(rows.len(), 20);
    for r in rows {
        let name = r["hlo_op_name"].as_str();
        let (ns, kernels) = ours[name];
        // XProf counts kernels as occurrences and prints µs with ns precision.
        let total_us: f64 = r["total_time"].parse().unwrap();
        assert!((ns as f64 / 1e3 - total_us).abs() < 1e-6, "{name}: {ns} ns vs {total_us} µs");
        assert_eq!(kernels as f64, r["occurrences"].parse::<f64>().unwrap(), "{name}");
    }
}

#[test]
fn launch_grids_match_xprof_kernel_stats() {
    let m = model();
    for r in xprof_csv("kernel_stats.csv") {
        let name = r["kernel_name"].as_str();
        let parse = |s: &str| -> [u32; 3] {
            let v: Vec<u32> = s.split(',').map(|x| x.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        };
        let (grid, block) = (parse(&r["grid_dim"]), parse(&r["block_dim"]));
        let ours: Vec<_> = m.gpu.iter().filter(|g| &*g.name == name).collect();
        let total: i64 = ours.iter().map(|g| g.dur_ns).sum();
        assert_eq!(ours.len() as f64, r["occurrences"].parse::<f64>().unwrap(), "{name}");
        assert!((total as f64 / 1e3 - r["total_duration_us"].parse::<f64>().unwrap()).abs() < 1e-6);
        assert!(ours.iter().all(|g| g.grid() == Some(grid) && g.block() == Some(block)), "{name}");
    }
}

#[test]
fn bytes_in_memory_are_read_like_the_file() {
    let bytes = std::fs::read(fixture()).unwrap();
    let a = read_bytes(&bytes, &fixture()).unwrap();
    assert_eq!(a, model());
}

/// Our work per execution against XLA's own cost analysis as XProf prints it: FLOPs =
/// `model_flop_rate` × `avg_time`, bytes = FLOPs / `operational_intensity`. XProf has no
/// model for custom calls (its rate is 0 there); ours are checked by hand below.
#[test]
fn xla_work_matches_xprof_cost_analysis() {
    use rooftop_core::device::Catalog;
    use rooftop_core::trace::report::{analyze, TraceOptions};
    let m = model();
    let cat = Catalog::builtin();
    // gfx950 alone is the MI350X or the MI355X; the profile's 2400 MHz clock and 256 CUs
    // say which.
    let d = &m.devices[0];
    assert_eq!((d.clock_mhz, d.num_sms), (Some(2400.0), Some(256)));
    let facts = rooftop_core::device::DeviceFacts {
        units: d.num_sms,
        clock_mhz: d.clock_mhz,
        memory_bytes: d.total_memory_bytes,
    };
    let (dev, _) = rooftop_core::device::lookup_with_facts(cat, "gfx950", facts).unwrap();
    assert_eq!(dev.id, "mi355x");
    let opts = TraceOptions { include_unlinked: true, ..TraceOptions::default() };
    let r = analyze(&m, Some(dev), &opts);
    let x = r.xla.as_ref().unwrap();
    let row = |n: &str| x.ops.iter().find(|o| o.name == n).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
    let mut checked = 0;
    for r in xprof_csv("hlo_stats.csv") {
        let rate: f64 = r["model_flop_rate"].parse().unwrap();
        let oi: f64 = r["operational_intensity"].parse().unwrap();
        if rate == 0.0 || oi == 0.0 {
            continue;
        }
        let avg_us: f64 = r["avg_time"].parse().unwrap();
        let flops = rate * 1e9 * avg_us * 1e-6;
        let bytes = flops / oi;
        let o = row(&r["hlo_op_name"]);
        assert!(close(o.bytes.unwrap(), bytes), "{}: {:?} vs {bytes}", o.name, o.bytes);
        if o.category == "gemm" {
            assert!(close(o.flops.unwrap(), flops), "{}: {:?} vs {flops}", o.name, o.flops);
            // Same time base (5 executions, one kernel each): the same rate.
            assert!(close(o.achieved_tflops.unwrap() * 1e3, rate), "{}", o.name);
        }
        checked += 1;
    }
    assert_eq!(checked, 15);
    // Custom calls, by hand. custom-call.1: M=4096, N=2048, K=6144.
    assert_eq!(row("custom-call.1").flops, Some(2.0 * 4096.0 * 2048.0 * 6144.0));
    // TE attention, causal top-left over 2048x2048: 2048*2049/2 = 2_098_176 pairs per
    // (batch, head); forward 2*B*H*pairs*(D + Dv) = 2*2*16*2_098_176*(128 + 128).
    assert_eq!(row("te_fused_attn_forward_ffi.10").flops, Some(34_376_515_584.0));
    assert_eq!(2.0 * 2.0 * 16.0 * 2_098_176.0 * 256.0, 34_376_515_584.0);
    // Backward: five matmuls, 2*B*H*pairs*(3*D + 2*Dv).
    assert_eq!(
        row("te_fused_attn_backward_ffi.18").flops,
        Some(2.0 * 2.0 * 16.0 * 2_098_176.0 * 640.0)
    );
    // Triton GEMM fusions: the tile count from the HLO tile equals the launch grid.
    // f32[2,4096,6144] / 1x128x128 = 2*32*48 = 3072 tiles, 12 waves on 256 CUs;
    // f32[4,4096,2048] / 1x128x128 = 4*32*16 = 2048 tiles, 8 waves.
    for (name, tiles, waves) in [
        ("gemm_fusion_dot", 3072, 12),
        ("gemm_fusion_dot.3", 3072, 12),
        ("gemm_fusion_dot.6", 3072, 12),
        ("gemm_fusion_dot.7", 3072, 12),
        ("gemm_fusion_dot.1", 2048, 8),
    ] {
        let t = row(name).tile.clone().unwrap();
        assert_eq!((t.tiles, t.grid_blocks, t.waves), (tiles, Some(tiles), Some(waves)), "{name}");
        assert_eq!((t.tile_eff, t.wave_eff), (1.0, Some(1.0)));
    }
    // The roofline tables carry the same models (GEMM, SDPA_fwd, SDPA_bwd); fusions
    // without a compute model are `unmodelled` there.
    assert_eq!(r.categories["GEMM"].len(), 6);
    assert_eq!(r.categories["SDPA_fwd"].len(), 2);
    assert_eq!(r.categories["SDPA_bwd"].len(), 2);
    assert_eq!(r.categories["unmodelled"].len(), 10);
    // hipBLASLt's tile from the kernel name (MT256x256x64) on the 4096x2048 output:
    // 16*8 = 128 tiles, the launch grid (grid:128,1,1), no padding; the name's `SK3`
    // marks stream-K, so no wave quantization is claimed.
    let cc = r.categories["GEMM"].iter().find(|o| o.name == "custom-call.1").unwrap();
    assert_eq!(cc.tile_eff, Some(1.0));
    assert_eq!(cc.wave_eff, None);
    assert_eq!(cc.kernels[0].grid, Some([128, 1, 1]));
    // Steps: the five executions of jit_loss_fn.
    assert_eq!(x.steps.basis, "module:jit_loss_fn");
    assert_eq!(x.steps.rows.len(), 5);
    assert!(x.steps.rows.iter().all(|s| s.kernels == 30));
}

/// The category memo (keyed by where an op's instruction, `hlo_op` and first kernel name
/// are) answers for every op of both profiles what the op's own categorization does,
/// asked twice (the second from the memo); the profile's ops share entries.
#[test]
fn memoized_xla_categories_are_each_ops_own() {
    let h200 = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/jax/h200/h200_transformer_step.xplane.pb");
    for m in [model(), read_path(&h200).unwrap()] {
        let memo = rooftop_core::trace::ops::CategoryMemo::default();
        let mut seen = std::collections::HashSet::new();
        for i in 0..m.ops.len() {
            let own = rooftop_core::trace::ops::categorize_in(&m, i);
            assert_eq!(memo.categorize(&m, i), own, "op {i} ({})", m.ops[i].name);
            assert_eq!(memo.categorize(&m, i), own, "op {i} again");
            seen.insert(own);
        }
        assert!(m.ops.len() > 20 && seen.len() > 2, "{} ops, {seen:?}", m.ops.len());
    }
}
