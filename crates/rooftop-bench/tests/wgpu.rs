//! The wgpu backend on whatever adapter this machine has (a GPU, or Mesa's lavapipe on
//! a headless Linux box): every kernel it lists passes the harness's check against the
//! CPU reference on random input, with every timer, and user WGSL kernels load, run and
//! report compile errors with line numbers.
//!
//! Every test here needs an adapter, so each is `#[ignore]`d: `cargo test` reports them
//! as ignored, never as passed. `cargo test -- --include-ignored` runs them (CI does, on
//! lavapipe, with `ROOFTOP_REQUIRE_WGPU=1`), and then a missing adapter is a failure.
#![cfg(feature = "wgpu")]
#![allow(clippy::unwrap_used, clippy::print_stderr, clippy::many_single_char_names)]

use rooftop_bench::backend::{Backend, KernelCall, Launch, Scalar, SourceKernel, SourceLang};
use rooftop_bench::harness::{run_case, CaseResult, TimingOptions};
use rooftop_bench::suite;
use rooftop_bench::wgpu::WgpuBackend;
use rooftop_bench::{BackendError, Case, HostBuf, Selection, Variant, WeightFormatKind};
use rooftop_core::units::Precision;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

/// One adapter at a time: lavapipe runs every test on the same CPU cores.
static LOCK: Mutex<()> = Mutex::new(());

/// The backend. Only the ignored tests call this, and they run only when asked for by
/// name or with `--include-ignored`: an adapter that is not there is then a failure.
fn open() -> WgpuBackend {
    WgpuBackend::open(None).unwrap_or_else(|e| {
        let why = if std::env::var("ROOFTOP_REQUIRE_WGPU").as_deref() == Ok("1") {
            "ROOFTOP_REQUIRE_WGPU=1"
        } else {
            "the test was asked to run"
        };
        panic!("{why}, but no wgpu adapter opened (needs a GPU or Mesa's lavapipe): {e}")
    })
}

fn quick() -> TimingOptions {
    TimingOptions {
        warmup_runs: 1,
        warmup_time_s: 0.0,
        min_runs: 2,
        max_runs: 3,
        min_time_s: 0.0,
        min_sample_s: 0.0,
        ..TimingOptions::default()
    }
}

fn run(b: &mut WgpuBackend, case: &Case, launch: Option<Launch>) -> CaseResult {
    let kernel = suite::find(case.kernel.name()).unwrap();
    let imp = b.implementations(case.kernel).into_iter().find(|i| i.id == "rooftop").unwrap();
    run_case(b, kernel, case, &imp, launch, &quick(), &AtomicBool::new(false), &mut |_| {})
        .unwrap_or_else(|e| panic!("{} {}: {e}", case.kernel, case.label()))
}

fn assert_checked(r: &CaseResult) {
    assert!(
        r.check.passed,
        "{} {} [{}]: {:?}",
        r.case.kernel,
        r.case.label(),
        r.launch.label(),
        r.check
    );
    let t = r.timing.as_ref().expect("a passed check is timed");
    assert!(t.stats.median_s > 0.0 && t.stats.median_s.is_finite());
}

fn cases(kernel: &str, sel: &Selection) -> Vec<Case> {
    suite::find(kernel).unwrap().cases(sel).unwrap()
}

fn config(c: &[u64]) -> Selection {
    Selection { single_config: Some(c.to_vec()), ..Selection::default() }
}

/// Small cases of every kernel the backend lists, with odd sizes for the edges.
fn small_cases(kernel: &str) -> Vec<Case> {
    match kernel {
        "read" | "write" | "copy" | "scale" | "add" | "triad" | "silu" | "gelu" => {
            [1, 1000, 65_537, 1_000_003]
                .iter()
                .flat_map(|&n| cases(kernel, &config(&[n])))
                .collect()
        }
        "rowsum" | "rmsnorm" | "layernorm" | "softmax" | "softmax-online" => {
            [[3, 37], [7, 1000], [2, 4096]].iter().flat_map(|c| cases(kernel, &config(c))).collect()
        }
        "gemm" | "hgemm" => [[1, 1, 1], [67, 45, 33], [128, 128, 128], [5, 200, 300]]
            .iter()
            .flat_map(|c| cases(kernel, &config(c)))
            .collect(),
        "qmatvec" | "qgemm" => {
            let shape: &[u64] = if kernel == "qgemm" { &[3, 37, 256] } else { &[37, 256] };
            let mut v = Vec::new();
            for wformat in [WeightFormatKind::Q4_0, WeightFormatKind::Q8_0] {
                v.extend(cases(kernel, &Selection { wformat: Some(wformat), ..config(shape) }));
            }
            for bits in [4, 8] {
                for group in [32, 64, 128] {
                    for variant in [Variant::Sym, Variant::Zp] {
                        v.extend(cases(
                            kernel,
                            &Selection {
                                wformat: Some(WeightFormatKind::Affine),
                                bits: Some(bits),
                                group_size: Some(group),
                                variant: Some(variant),
                                ..config(shape)
                            },
                        ));
                    }
                }
            }
            v
        }
        "fma" => [Variant::Vector, Variant::Scalar]
            .into_iter()
            .flat_map(|v| cases(kernel, &Selection { variant: Some(v), ..config(&[300]) }))
            .collect(),
        other => panic!("no small cases for `{other}`: add them to this test"),
    }
}

#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn every_listed_kernel_passes_its_check() {
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = open();
    eprintln!("adapter: {} / timer: {}", b.info().device_name, b.info().timer);
    let mut listed = 0;
    for k in suite::all() {
        if b.implementations(k.id()).is_empty() {
            continue;
        }
        listed += 1;
        for case in small_cases(k.name()) {
            assert_checked(&run(&mut b, &case, None));
        }
    }
    assert!(listed >= 17, "only {listed} kernels listed");
    // hgemm is listed exactly when the adapter has fp16 shaders (lavapipe does).
    assert_eq!(
        !b.implementations(rooftop_bench::KernelId::Hgemm.into()).is_empty(),
        b.adapter().shader_f16
    );
    // The fp64 FMA probe, where the adapter has SHADER_F64 (lavapipe does).
    if b.adapter().shader_f64 {
        let sel = Selection { dtype: Some(Precision::Fp64), ..config(&[300]) };
        for case in cases("fma", &sel) {
            assert_checked(&run(&mut b, &case, None));
        }
    }
}

#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn default_size_stream_and_gemm_cases_pass() {
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = open();
    // The default triad (3 x 128 MiB) exercises the 2-D grid; a sampled GEMM check.
    for case in cases("triad", &Selection::default())
        .into_iter()
        .chain(cases("gemm", &config(&[256, 512, 1024])))
    {
        assert_checked(&run(&mut b, &case, None));
    }
}

#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn every_autotune_launch_passes_and_respects_limits() {
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = open();
    let max = b.adapter().max_workgroup_invocations.min(b.adapter().max_workgroup_size[0]);
    for kernel in ["copy", "read", "softmax-online", "qmatvec", "fma"] {
        let case = small_cases(kernel).remove(1.min(small_cases(kernel).len() - 1));
        let call = KernelCall {
            case: &case,
            implementation: "rooftop",
            buffers: &[],
            launch: &Launch::default(),
            scalars: &[],
        };
        let space = b.launch_space(&call);
        assert!(space.len() >= 2, "{kernel}: {space:?}");
        for l in space {
            let [x, y, z] = l.block.unwrap();
            assert!(x.is_power_of_two() && (32..=max).contains(&x) && y == 1 && z == 1);
            assert_checked(&run(&mut b, &case, Some(l)));
        }
    }
    // A block the kernels cannot take is one clear error, not a panic.
    let case = small_cases("copy").remove(1);
    let kernel = suite::find("copy").unwrap();
    let imp = b.implementations(rooftop_bench::KernelId::Copy.into()).remove(0);
    let bad = Launch { block: Some([48, 1, 1]), ..Launch::default() };
    let e = run_case(
        &mut b,
        kernel,
        &case,
        &imp,
        Some(bad),
        &quick(),
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("power of two"), "{e}");
}

#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn wall_clock_timer_and_cache_flush_work() {
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = open();
    b.use_wall_clock();
    assert!(b.info().timer.starts_with("wall clock"), "{}", b.info().timer);
    let case = cases("triad", &config(&[100_000])).remove(0);
    assert_checked(&run(&mut b, &case, None));
    let kernel = suite::find("triad").unwrap();
    let imp = b.implementations(rooftop_bench::KernelId::Triad.into()).remove(0);
    let opts = TimingOptions { flush_cache: true, ..quick() };
    let r =
        run_case(&mut b, kernel, &case, &imp, None, &opts, &AtomicBool::new(false), &mut |_| {})
            .unwrap();
    assert_checked(&r);
    assert_eq!(r.timing.unwrap().iters_per_sample, 1);
}

#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn fp64_and_unknown_kernels_are_refused_clearly() {
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = open();
    assert!(b.implementations(rooftop_bench::KernelId::Chase.into()).is_empty());
    let case =
        cases("triad", &Selection { dtype: Some(Precision::Fp64), ..config(&[64]) }).remove(0);
    let kernel = suite::find("triad").unwrap();
    let imp = b.implementations(rooftop_bench::KernelId::Triad.into()).remove(0);
    let e =
        run_case(&mut b, kernel, &case, &imp, None, &quick(), &AtomicBool::new(false), &mut |_| {})
            .unwrap_err();
    assert!(e.to_string().contains("fp32 kernels only"), "{e}");
}

fn user_kernel(code: &str) -> SourceKernel {
    SourceKernel {
        name: "my-saxpy".to_string(),
        lang: SourceLang::Wgsl,
        path: "kernels/saxpy.wgsl".into(),
        code: code.as_bytes().to_vec(),
        entry: "saxpy".to_string(),
    }
}

const SAXPY: &str = "struct P { n: u32, alpha: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: P;

@compute @workgroup_size(64)
fn saxpy(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.n) {
        y[g.x] = p.alpha * x[g.x] + y[g.x];
    }
}
";

#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn user_wgsl_kernel_runs_and_checks() {
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = open();
    b.load_source(&user_kernel(SAXPY)).unwrap();
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let y: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
    let dx = b.alloc(rooftop_bench::DType::F32, n).unwrap();
    let dy = b.alloc(rooftop_bench::DType::F32, n).unwrap();
    b.upload(dx, &HostBuf::F32(x.clone())).unwrap();
    b.upload(dy, &HostBuf::F32(y.clone())).unwrap();
    // Any case: the source kernel takes its sizes from the scalars.
    let case = cases("copy", &config(&[n as u64])).remove(0);
    let launch = Launch { grid: Some([(n as u32).div_ceil(64), 1, 1]), ..Launch::default() };
    let scalars = [Scalar::U32(n as u32), Scalar::F32(2.0)];
    let call = KernelCall {
        case: &case,
        implementation: "my-saxpy",
        buffers: &[dx, dy],
        launch: &launch,
        scalars: &scalars,
    };
    b.prepare(&call).unwrap();
    let t = b.run(&call, 1).unwrap();
    assert!(t > 0.0);
    let HostBuf::F32(got) = b.download(dy).unwrap() else { panic!() };
    for i in 0..n {
        assert_eq!(got[i], 2.0 * x[i] + y[i], "y[{i}]");
    }
    // A block that contradicts @workgroup_size is refused.
    let bad = Launch { block: Some([128, 1, 1]), ..launch };
    let call = KernelCall { launch: &bad, ..call };
    assert!(matches!(b.prepare(&call), Err(BackendError::BadLaunch(_))));
}

#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn block_overrides_let_the_launch_set_the_workgroup_size() {
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = open();
    let code = SAXPY.replace(
        "@compute @workgroup_size(64)",
        "override BLOCK_X: u32 = 64;\n@compute @workgroup_size(BLOCK_X)",
    );
    b.load_source(&user_kernel(&code)).unwrap();
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let dx = b.alloc(rooftop_bench::DType::F32, n).unwrap();
    let dy = b.alloc(rooftop_bench::DType::F32, n).unwrap();
    b.upload(dx, &HostBuf::F32(x.clone())).unwrap();
    let case = cases("copy", &config(&[n as u64])).remove(0);
    let scalars = [Scalar::U32(n as u32), Scalar::F32(3.0)];
    for block in [32u32, 128, 256] {
        b.upload(dy, &HostBuf::F32(vec![1.0; n])).unwrap();
        // One workgroup of `block` threads per `block` elements: a wrong size at pipeline
        // creation would leave elements unwritten or write them twice.
        let launch = Launch {
            grid: Some([(n as u32).div_ceil(block), 1, 1]),
            block: Some([block, 1, 1]),
            ..Launch::default()
        };
        let call = KernelCall {
            case: &case,
            implementation: "my-saxpy",
            buffers: &[dx, dy],
            launch: &launch,
            scalars: &scalars,
        };
        b.prepare(&call).unwrap();
        b.run(&call, 1).unwrap();
        let HostBuf::F32(got) = b.download(dy).unwrap() else { panic!() };
        for i in 0..n {
            assert_eq!(got[i], 3.0 * x[i] + 1.0, "block {block}: y[{i}]");
        }
    }
    // Y has no override: a block with y = 2 is refused.
    let launch = Launch { grid: Some([4, 1, 1]), block: Some([32, 2, 1]), ..Launch::default() };
    let call = KernelCall {
        case: &case,
        implementation: "my-saxpy",
        buffers: &[dx, dy],
        launch: &launch,
        scalars: &scalars,
    };
    let e = b.prepare(&call).unwrap_err().to_string();
    assert!(e.contains("override BLOCK_Y"), "{e}");
}

#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn wgsl_syntax_and_validation_errors_give_line_numbers() {
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = open();
    // The assignment's line (1-based).
    let line = SAXPY.lines().position(|l| l.contains("y[g.x] =")).unwrap() + 1;
    assert_eq!(line, 9);
    // A syntax error there: a doubled operator.
    let broken = SAXPY.replace("p.alpha * x[g.x]", "p.alpha * * x[g.x]");
    let e = b.load_source(&user_kernel(&broken)).unwrap_err().to_string();
    eprintln!("{e}");
    assert!(e.starts_with(&format!("kernels/saxpy.wgsl:{line}:")), "{e}");
    // A type error there (validation, not syntax): a u32 assigned to an f32.
    let typed = SAXPY.replace("p.alpha * x[g.x] + y[g.x]", "g.x");
    let e = b.load_source(&user_kernel(&typed)).unwrap_err().to_string();
    eprintln!("{e}");
    assert!(e.contains(&format!("kernels/saxpy.wgsl:{line}:")), "{e}");
    // A missing entry point names the ones there are.
    let mut k = user_kernel(SAXPY);
    k.entry = "main".into();
    let e = b.load_source(&k).unwrap_err().to_string();
    assert!(e.contains("no compute entry point `main`") && e.contains("saxpy"), "{e}");
    // Metal is refused with a sentence.
    let mut k = user_kernel(SAXPY);
    k.lang = SourceLang::Metal;
    let e = b.load_source(&k).unwrap_err().to_string();
    assert!(e.contains("cannot run Metal"), "{e}");
}

#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn device_spec_and_ceiling_options_are_consistent() {
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let b = open();
    let a = b.adapter().clone();
    let o = b.ceiling_options(true, quick());
    assert!(o.max_working_set.unwrap() <= a.max_storage_binding_bytes);
    match (&a.catalog_id, b.device_spec(None)) {
        (Some(id), Ok(d)) => assert_eq!(&d.id, id),
        (None, Err(e)) => assert!(e.to_string().contains("rooftop ceilings --backend wgpu"), "{e}"),
        (id, r) => panic!("catalog {id:?} but device_spec {r:?}"),
    }
}

/// A SPIR-V user kernel: the SAXPY above compiled to SPIR-V by naga's own writer (the one
/// wgpu's Vulkan backend uses), loaded as `SourceLang::Spirv`, run and checked.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs a wgpu adapter: a GPU or Mesa's lavapipe (--include-ignored)"]
fn spirv_user_kernel_runs_and_checks() {
    use wgpu::naga;
    let _g = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut b = open();
    let module = naga::front::wgsl::parse_str(SAXPY).unwrap();
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&module)
    .unwrap();
    let words = naga::back::spv::write_vec(
        &module,
        &info,
        &naga::back::spv::Options::default(),
        Some(&naga::back::spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: "saxpy".to_string(),
        }),
    )
    .unwrap();
    let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let k = SourceKernel {
        name: "spv-saxpy".to_string(),
        lang: SourceLang::Spirv,
        path: "kernels/saxpy.spv".into(),
        code: code.clone(),
        entry: "saxpy".to_string(),
    };
    b.load_source(&k).unwrap();
    let n = 777usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| 2.0 - i as f32).collect();
    let dx = b.alloc(rooftop_bench::DType::F32, n).unwrap();
    let dy = b.alloc(rooftop_bench::DType::F32, n).unwrap();
    b.upload(dx, &HostBuf::F32(x.clone())).unwrap();
    b.upload(dy, &HostBuf::F32(y.clone())).unwrap();
    let case = cases("copy", &config(&[n as u64])).remove(0);
    let launch = Launch { grid: Some([(n as u32).div_ceil(64), 1, 1]), ..Launch::default() };
    let scalars = [Scalar::U32(n as u32), Scalar::F32(0.5)];
    let call = KernelCall {
        case: &case,
        implementation: "spv-saxpy",
        buffers: &[dx, dy],
        launch: &launch,
        scalars: &scalars,
    };
    b.prepare(&call).unwrap();
    b.run(&call, 1).unwrap();
    let HostBuf::F32(got) = b.download(dy).unwrap() else { panic!() };
    for i in 0..n {
        assert_eq!(got[i], 0.5 * x[i] + y[i], "y[{i}]");
    }
    // Bytes that are not SPIR-V: one sentence naming the file.
    let bad = SourceKernel { code: code[..code.len() - 2].to_vec(), ..k };
    let e = b.load_source(&bad).unwrap_err().to_string();
    assert!(e.starts_with("kernels/saxpy.spv: not a SPIR-V module"), "{e}");
}
