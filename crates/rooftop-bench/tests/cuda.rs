//! The CUDA backend end to end. Without an NVIDIA driver only the error path runs: the
//! tests that need a GPU are `#[ignore]`d, so `cargo test` reports them as ignored, never
//! as passed. `cargo test -- --include-ignored` runs them, and then a missing GPU is a
//! failure (scripts/gpu-validate.sh runs them so, with `ROOFTOP_REQUIRE_CUDA=1`).

#![cfg(feature = "cuda")]
// b (backend), e (error), x, y, n: short names in short tests.
#![allow(clippy::many_single_char_names)]

use rooftop_bench::backend::{
    Backend, DType, HostBuf, KernelCall, Launch, SourceKernel, SourceLang,
};
use rooftop_bench::case::{Case, Selection, Variant, WeightFormatKind};
use rooftop_bench::ceilings::{self, CeilingOptions, MatrixProbe};
use rooftop_bench::cuda::{self, CudaBackend};
use rooftop_bench::harness::{run_case, TimingOptions};
use rooftop_bench::suite::{self, KernelId};
use rooftop_core::ops::quant::WeightFormat;
use rooftop_core::units::Precision;
use std::fmt::Write as _;
use std::sync::atomic::AtomicBool;

fn required() -> bool {
    std::env::var("ROOFTOP_REQUIRE_CUDA").is_ok_and(|v| v == "1")
}

/// Why the GPU tests are ignored by default.
const NEEDS_GPU: &str = "needs an NVIDIA GPU, its driver and NVRTC (--include-ignored)";

/// The backend. Only the ignored tests call this, and they run only when asked for by
/// name or with `--include-ignored`: a GPU that is not there is then a failure.
fn gpu(test: &str) -> CudaBackend {
    CudaBackend::open(None).unwrap_or_else(|e| {
        panic!("{test} was asked to run ({NEEDS_GPU}), but the CUDA backend did not open: {e}")
    })
}

fn fast() -> TimingOptions {
    TimingOptions {
        warmup_runs: 2,
        warmup_time_s: 0.0,
        min_runs: 5,
        min_time_s: 0.01,
        ..TimingOptions::default()
    }
}

#[test]
fn without_a_driver_open_is_one_clear_sentence_not_a_panic() {
    let r = std::panic::catch_unwind(|| CudaBackend::open(None).map(|_| ()));
    let Ok(r) = r else { panic!("CudaBackend::open panicked") };
    match r {
        Ok(()) => assert!(
            std::path::Path::new("/dev/nvidiactl").exists()
                || required()
                || cfg!(not(target_os = "linux")),
            "the backend opened without an NVIDIA device node"
        ),
        Err(e) => {
            let msg = e.to_string();
            assert!(!required(), "ROOFTOP_REQUIRE_CUDA=1 but: {msg}");
            let known = [
                "no CUDA driver found (libcuda.so not loadable)",
                "NVRTC not found (libnvrtc.so.12/13 not loadable)",
                "the CUDA driver found no GPU",
                "the CUDA driver did not initialise",
                "is newer than the CUDA driver",
            ];
            assert!(known.iter().any(|k| msg.contains(k)), "unexpected error: {msg}");
            assert!(!msg.contains('\n'), "one sentence: {msg}");
            // Listing devices says the same.
            let l = cuda::list_devices().unwrap_err().to_string();
            assert_eq!(l, msg);
        }
    }
}

/// Small cases of every suite kernel (odd sizes: partial blocks and tiles).
fn small_cases() -> Vec<Case> {
    let sel = |c: Vec<u64>| Selection { single_config: Some(c), ..Selection::default() };
    let mut v = Vec::new();
    for k in suite::all() {
        let configs: Vec<Selection> = match k.size_params() {
            ["n"] => vec![sel(vec![100_003])],
            ["rows", "cols"] => vec![sel(vec![37, 1000])],
            ["m", "n", "k"] if k.id() == KernelId::Gemm => vec![sel(vec![129, 67, 45])],
            ["m", "n", "k"] => vec![sel(vec![5, 100, 256])],
            ["n", "k"] => vec![sel(vec![100, 256])],
            ["iters"] => vec![sel(vec![256])],
            ["n", "steps"] => vec![sel(vec![4096, 10_000])],
            _ => vec![],
        };
        for s in configs {
            for dtype in [None, Some(Precision::Fp64)] {
                for wf in [
                    None,
                    Some(WeightFormatKind::Q4_0),
                    Some(WeightFormatKind::Q8_0),
                    Some(WeightFormatKind::Affine),
                ] {
                    let quant = matches!(k.id().suite(), Some(KernelId::Qmatvec | KernelId::Qgemm));
                    if wf.is_some() != quant || (quant && dtype.is_some()) {
                        continue;
                    }
                    for variant in [None, Some(Variant::Zp)] {
                        if variant.is_some() && wf != Some(WeightFormatKind::Affine) {
                            continue;
                        }
                        let s = Selection {
                            dtype,
                            wformat: wf,
                            bits: (wf == Some(WeightFormatKind::Affine)).then_some(4),
                            group_size: (wf == Some(WeightFormatKind::Affine)).then_some(64),
                            variant,
                            ..s.clone()
                        };
                        if let Ok(cs) = k.cases(&s) {
                            v.extend(cs);
                        }
                    }
                }
            }
        }
    }
    v.push(suite::fma::ceiling_case(Precision::Fp32, true));
    v
}

#[test]
#[ignore = "needs an NVIDIA GPU, its driver and NVRTC (--include-ignored)"]
fn every_kernel_and_implementation_passes_its_check_on_the_gpu() {
    let mut b = gpu("every_kernel_and_implementation_passes_its_check_on_the_gpu");
    let stop = AtomicBool::new(false);
    let mut failures = Vec::new();
    let mut timed = 0;
    for case in small_cases() {
        let kernel = case.kernel.suite().unwrap().def();
        for imp in b.implementations(case.kernel) {
            match run_case(&mut b, kernel, &case, &imp, None, &fast(), &stop, &mut |_| {}) {
                Ok(r) if r.check.passed && r.timing.is_some() => timed += 1,
                Ok(r) => failures.push(format!(
                    "{} {} [{}]: {:?}",
                    case.kernel,
                    case.label(),
                    imp.id,
                    r.check.first_failure
                )),
                Err(e) => {
                    failures.push(format!("{} {} [{}]: {e}", case.kernel, case.label(), imp.id));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(timed >= 30, "{timed}");
}

#[test]
#[ignore = "needs an NVIDIA GPU, its driver and NVRTC (--include-ignored)"]
fn every_launch_of_the_launch_space_passes_its_check() {
    let mut b = gpu("every_launch_of_the_launch_space_passes_its_check");
    let stop = AtomicBool::new(false);
    let g = |m, n, k| Case {
        kernel: KernelId::Gemm.into(),
        sizes: vec![("m", m), ("n", n), ("k", k)],
        dtype: Precision::Fp32,
        weights: None,
        variant: None,
    };
    let cases = [
        Case {
            kernel: KernelId::Triad.into(),
            sizes: vec![("n", 77_777)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        },
        Case {
            kernel: KernelId::SoftmaxOnline.into(),
            sizes: vec![("rows", 9), ("cols", 3000)],
            dtype: Precision::Fp32,
            weights: None,
            variant: None,
        },
        Case {
            kernel: KernelId::Qmatvec.into(),
            sizes: vec![("n", 70), ("k", 512)],
            dtype: Precision::Fp32,
            weights: Some(WeightFormat::Q4_0),
            variant: None,
        },
        g(200, 130, 70),
    ];
    for case in &cases {
        let kernel = case.kernel.suite().unwrap().def();
        for imp in b.implementations(case.kernel).into_iter().filter(|i| !i.builtin) {
            let ids: Vec<rooftop_bench::BufId> = Vec::new();
            let launch = b.default_launch(case);
            let call = KernelCall {
                case,
                implementation: &imp.id,
                buffers: &ids,
                launch: &launch,
                scalars: &[],
            };
            let space = b.launch_space(&call);
            assert!(!space.is_empty());
            let rs = rooftop_bench::harness::autotune(
                &mut b,
                kernel,
                case,
                &imp,
                &space,
                &fast(),
                &stop,
                &mut |_| {},
            )
            .unwrap();
            for r in rs {
                assert!(
                    r.check.passed,
                    "{} [{}] {}: {:?}",
                    case.kernel,
                    imp.id,
                    r.launch.label(),
                    r.check.first_failure
                );
            }
        }
    }
    assert!(!b.launch_reports().is_empty());
    assert!(b.launch_reports().iter().all(|r| r.regs_per_thread.is_some_and(|v| v > 0)));
}

#[test]
#[ignore = "needs an NVIDIA GPU, its driver and NVRTC (--include-ignored)"]
fn flush_spec_and_short_kernels_through_graphs() {
    let mut b = gpu("flush_spec_and_short_kernels_through_graphs");
    b.flush_cache().unwrap();
    let spec = b.device_spec(None).unwrap();
    assert!(spec.peak_bw_gbs > 0.0 && spec.num_cu > 0);
    assert!(b.available_memory_bytes().unwrap() > 1 << 20);
    // A 4 KiB copy runs in a few µs: sampled through a CUDA graph, noted with both times.
    let case = Case {
        kernel: KernelId::Copy.into(),
        sizes: vec![("n", 1024)],
        dtype: Precision::Fp32,
        weights: None,
        variant: None,
    };
    let kernel = KernelId::Copy.def();
    let imp = b.implementations(KernelId::Copy.into()).remove(0);
    let r =
        run_case(&mut b, kernel, &case, &imp, None, &fast(), &AtomicBool::new(false), &mut |_| {})
            .unwrap();
    assert!(r.check.passed);
    assert!(b.info().notes.iter().any(|n| n.contains("CUDA graph")), "{:?}", b.info().notes);
    assert!(b.launch_reports().iter().any(|l| l.graph_s.is_some() && l.stream_s.is_some()));
}

#[test]
#[ignore = "needs an NVIDIA GPU, its driver and NVRTC (--include-ignored)"]
fn user_kernels_compile_run_and_report_errors_with_lines() {
    let mut b = gpu("user_kernels_compile_run_and_report_errors_with_lines");
    let src = |code: &str| SourceKernel {
        name: "my_axpy".into(),
        lang: SourceLang::Cuda,
        path: "axpy.cu".into(),
        code: code.as_bytes().to_vec(),
        entry: "axpy".into(),
    };
    let broken = "extern \"C\" __global__ void axpy(float* y) {\n  y[0] = undefined_name;\n}\n";
    let e = b.load_source(&src(broken)).unwrap_err().to_string();
    assert!(e.contains("axpy.cu") && e.contains("(2)") && e.contains("undefined_name"), "{e}");
    let e = b
        .load_source(&SourceKernel {
            entry: "nope".into(),
            ..src("extern \"C\" __global__ void axpy(float* y) {}")
        })
        .unwrap_err();
    assert!(e.to_string().contains("no kernel named `nope`"), "{e}");
    let ok = "extern \"C\" __global__ void axpy(const float* x, float* y, unsigned n, float a) {\n  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n";
    b.load_source(&src(ok)).unwrap();
    let n = 1000usize;
    let x = b.alloc(DType::F32, n).unwrap();
    let y = b.alloc(DType::F32, n).unwrap();
    b.upload(x, &HostBuf::F32((0..n).map(|i| i as f32).collect())).unwrap();
    b.upload(y, &HostBuf::F32(vec![1.0; n])).unwrap();
    let case = Case {
        kernel: rooftop_bench::KernelRef::Spec("my_axpy"),
        sizes: vec![("n", n as u64)],
        dtype: Precision::Fp32,
        weights: None,
        variant: None,
    };
    let launch = Launch { grid: Some([4, 1, 1]), block: Some([256, 1, 1]), ..Launch::default() };
    let scalars = [rooftop_bench::Scalar::U32(n as u32), rooftop_bench::Scalar::F32(2.0)];
    let call = KernelCall {
        case: &case,
        implementation: "my_axpy",
        buffers: &[x, y],
        launch: &launch,
        scalars: &scalars,
    };
    b.prepare(&call).unwrap();
    let t = b.run(&call, 1).unwrap();
    assert!(t > 0.0);
    let HostBuf::F32(out) = b.download(y).unwrap() else { panic!() };
    assert!(out.iter().enumerate().all(|(i, &v)| v == 2.0 * i as f32 + 1.0), "{:?}", &out[..4]);
}

#[test]
#[ignore = "needs an NVIDIA GPU, its driver and NVRTC (--include-ignored)"]
fn quick_ceilings_with_a_tensor_core_probe() {
    let mut b = gpu("quick_ceilings_with_a_tensor_core_probe");
    let mut opts: CeilingOptions = b.ceiling_options(true, fast());
    assert!(opts.cache_levels.iter().any(|(l, _)| *l == rooftop_core::device::MemLevel::L2));
    opts.max_working_set = Some(64 << 20);
    // One small probe instead of the large ones (fast); tf32 exists on CC >= 8.0.
    opts.matrix.retain(|m| m.precision == Precision::Bf16);
    for m in &mut opts.matrix {
        *m = MatrixProbe { shape: (1024, 512, 256), ..m.clone() };
    }
    let c = ceilings::measure(&mut b, &opts, &AtomicBool::new(false), &mut |_| {}).unwrap();
    assert!(c.best_gbs(rooftop_core::device::MemLevel::Dram).is_some_and(|g| g > 10.0), "{c:?}");
    assert!(c.vector_gflops(Precision::Fp32).is_some_and(|g| g > 100.0), "{c:?}");
    if !opts.matrix.is_empty() {
        assert!(c.compute.iter().any(|p| p.variant == "matrix"), "{:?}", c.notes);
    }
}

/// rooftop's occupancy model against `cuOccupancyMaxActiveBlocksPerMultiprocessor` for
/// every suite kernel function at several block and dynamic shared-memory sizes: they
/// must agree exactly. `ROOFTOP_OCCUPANCY_CSV=path` writes the comparison.
#[test]
#[ignore = "needs an NVIDIA GPU, its driver and NVRTC (--include-ignored)"]
fn occupancy_model_matches_the_driver_calculator() {
    let mut b = gpu("occupancy_model_matches_the_driver_calculator");
    let stop = AtomicBool::new(false);
    let once = TimingOptions {
        warmup_runs: 0,
        warmup_time_s: 0.0,
        min_runs: 1,
        min_time_s: 0.0,
        ..TimingOptions::default()
    };
    for case in small_cases() {
        let kernel = suite::find(case.kernel.name()).unwrap();
        for imp in b.implementations(case.kernel) {
            // Launch errors are the other tests' business; this one needs the functions.
            let _ = run_case(&mut b, kernel, &case, &imp, None, &once, &stop, &mut |_| {});
        }
    }
    let rows = b
        .occupancy_checks(
            &[32, 64, 96, 128, 192, 256, 384, 512, 768, 1024],
            &[0, 6144, 20_000, 40_960],
        )
        .unwrap();
    let mut csv = String::from(
        "kernel,regs_per_thread,static_smem_bytes,dynamic_smem_bytes,threads_per_block,\
         driver_blocks_per_sm,model_blocks_per_sm,model_limiter,agree\n",
    );
    let mut disagree = Vec::new();
    for r in &rows {
        let agree = r.model_blocks_per_sm == Some(r.driver_blocks_per_sm);
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{}",
            r.kernel,
            r.regs_per_thread,
            r.static_smem_bytes,
            r.dynamic_smem_bytes,
            r.threads_per_block,
            r.driver_blocks_per_sm,
            r.model_blocks_per_sm.map_or("-".to_string(), |v| v.to_string()),
            r.model_limiter.as_deref().unwrap_or("-"),
            agree
        );
        if !agree {
            disagree.push(format!("{r:?}"));
        }
    }
    if let Ok(path) = std::env::var("ROOFTOP_OCCUPANCY_CSV") {
        std::fs::write(&path, &csv).unwrap();
    }
    assert!(rows.len() >= 20, "only {} configurations", rows.len());
    assert!(
        disagree.is_empty(),
        "{} of {} disagree:\n{}",
        disagree.len(),
        rows.len(),
        disagree.join("\n")
    );
}
