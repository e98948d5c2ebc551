//! Spec'd kernels end to end: parsing and its errors, checks, out-of-bounds writes,
//! reference kernels, the mock and host backends, exports, comparisons.

// m, n, k, a, b, c: the names of the GEMM formulas.
#![allow(clippy::unwrap_used, clippy::many_single_char_names)]

use rooftop_bench::backend::{Backend, DType, HostBuf, Scalar};
use rooftop_bench::harness::TimingOptions;
use rooftop_bench::mock::{MockBackend, MockConfig};
use rooftop_bench::spec::{self, compare, parse, BufferDecl, HostBackend, KernelSpec, SpecSet};
use rooftop_bench::Selection;
use std::path::{Path, PathBuf};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels/kernels.toml")
}

fn quick() -> TimingOptions {
    TimingOptions {
        warmup_runs: 1,
        warmup_time_s: 0.0,
        min_runs: 3,
        max_runs: 5,
        min_time_s: 0.0,
        min_sample_s: 0.0,
        ..TimingOptions::default()
    }
}

fn mock_for(set: &SpecSet) -> MockBackend {
    let mut m = MockBackend::new(MockConfig::default());
    for k in set.kernels() {
        m.add_kernel(*k);
    }
    spec::load_sources(&mut m, set).unwrap();
    m
}

/// A fresh scratch directory with `files` written into it, and its path. The directory
/// is removed when the guard drops, at the end of the test whether it passed or failed:
/// bind the guard to a name (`_x_guard`), not `_`, which would drop it at once.
fn scratch(name: &str, files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::Builder::new().prefix(&format!("rooftop-spec-{name}-")).tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    for (f, text) in files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    (tmp, dir)
}

#[test]
fn example_spec_loads_in_document_order() {
    let set = parse::load(&examples()).unwrap();
    let names: Vec<&str> = set.kernels().iter().map(|k| k.spec().name.as_str()).collect();
    assert_eq!(names, ["sgemm_naive", "sgemm_tiled", "int4_matvec", "swiglu", "swiglu_files"]);
    let naive = set.find("sgemm_naive").unwrap();
    // Document order, not alphabetical (K, M, N).
    assert_eq!(naive.spec().vars, ["M", "N", "K"]);
    let names: Vec<&str> = naive.spec().scalars.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["M", "N", "K"]);
    assert_eq!(naive.spec().blocks.len(), 3);
    assert_eq!(naive.spec().sources.len(), 2);
    let case = naive.case_at(&[200, 72, 100]).unwrap();
    let l = naive.launches(&case).unwrap();
    // ceil(72 / 16) = 5, ceil(200 / 16) = 13; ceil(72 / 32) = 3, ceil(200 / 8) = 25.
    assert_eq!(l[0].grid, Some([5, 13, 1]));
    assert_eq!(l[1].grid, Some([3, 25, 1]));
    assert_eq!(
        naive.scalars(&case).unwrap(),
        vec![Scalar::U32(200), Scalar::U32(72), Scalar::U32(100)]
    );
}

#[test]
fn example_spec_runs_on_the_mock_checked_and_timed() {
    let set = parse::load(&examples()).unwrap();
    let mut mock = mock_for(&set);
    for k in set.kernels() {
        let rs = spec::run::bench_kernel(
            &mut mock,
            &set,
            &k.spec().name,
            &Selection::default(),
            false,
            &quick(),
        )
        .unwrap();
        assert_eq!(rs.len(), k.spec().sizes.len());
        for r in rs {
            assert!(r.check.passed, "{}: {:?}", r.case.label(), r.check);
            assert!(r.check.elements > 0);
            assert!(r.timing.is_some(), "{}", r.case.label());
            assert!(r.implementation.label.contains("mock of"), "{}", r.implementation.label);
        }
    }
    assert!(mock.info().simulated);
}

#[test]
fn autotune_runs_every_block_best_first() {
    let set = parse::load(&examples()).unwrap();
    let mut mock = mock_for(&set);
    let sel = Selection { single_config: Some(vec![1024, 1024]), ..Selection::default() };
    let rs = spec::run::bench_kernel(&mut mock, &set, "int4_matvec", &sel, true, &quick()).unwrap();
    assert_eq!(rs.len(), 3);
    let blocks: Vec<u32> = rs.iter().map(|r| r.launch.block.unwrap()[0]).collect();
    let mut sorted = blocks.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [64, 128, 256]);
    assert_eq!(rs[2].launch.grid, Some([1024 / rs[2].launch.block.unwrap()[0], 1, 1]));
}

#[test]
fn wrong_results_and_out_of_bounds_writes_are_reported_not_timed() {
    let set = parse::load(&examples()).unwrap();
    let mut mock = MockBackend::new(MockConfig {
        wrong_results: vec!["sgemm_naive".into()],
        memory_bytes: None,
    });
    for k in set.kernels() {
        mock.add_kernel(*k);
    }
    mock.set_write_past_end(vec!["int4_matvec".into()]);
    spec::load_sources(&mut mock, &set).unwrap();
    let sel = Selection::default();
    let rs =
        spec::run::bench_kernel(&mut mock, &set, "sgemm_naive", &sel, false, &quick()).unwrap();
    assert!(rs.iter().all(|r| !r.check.passed && r.timing.is_none()));
    assert!(rs[0].warnings[0].contains("result check failed"), "{:?}", rs[0].warnings);
    let rs =
        spec::run::bench_kernel(&mut mock, &set, "int4_matvec", &sel, false, &quick()).unwrap();
    for r in &rs {
        assert!(!r.check.passed && r.timing.is_none());
        let w = r.warnings.join(" ");
        assert!(
            w.contains("out-of-bounds write") && w.contains("past the end of output `y`"),
            "{w}"
        );
    }
}

/// A spec for a host GEMM checked against the suite's gemm.
fn host_gemm(name: &str) -> KernelSpec {
    KernelSpec::builtin(name, rooftop_bench::KernelId::Gemm, &[("m", "M"), ("n", "N"), ("k", "K")])
        .unwrap()
        .sizes(&["M", "N", "K"], &[&[33, 17, 65], &[64, 64, 64]])
        .buffer(BufferDecl::input("A", DType::F32, "M*K").unwrap())
        .buffer(BufferDecl::input("B", DType::F32, "K*N").unwrap())
        .buffer(BufferDecl::output("C", DType::F32, "M*N").unwrap())
        .scalar("M", "M")
        .unwrap()
        .scalar("N", "N")
        .unwrap()
        .scalar("K", "K")
        .unwrap()
}

fn gemm_closure(
    write_past_end: bool,
) -> impl FnMut(&mut spec::HostCall<'_>) -> Result<(), String> + Send + 'static {
    move |call| {
        let (m, n, k) = (call.size("M"), call.size("N"), call.size("K"));
        let want = [Scalar::U32(m as u32), Scalar::U32(n as u32), Scalar::U32(k as u32)];
        if call.scalars != want {
            return Err(format!("scalars {:?}", call.scalars));
        }
        let [HostBuf::F32(a), HostBuf::F32(b), HostBuf::F32(c)] = &mut call.buffers[..] else {
            return Err("expected three f32 buffers".into());
        };
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        if write_past_end {
            c[m * n] = 0.0;
        }
        Ok(())
    }
}

#[test]
fn host_closures_are_checked_timed_and_analysed() {
    let set = SpecSet::new(&[host_gemm("my_gemm")]).unwrap();
    let mut host = HostBackend::new();
    host.register("my_gemm", gemm_closure(false));
    let rs =
        spec::run::bench_kernel(&mut host, &set, "my_gemm", &Selection::default(), false, &quick())
            .unwrap();
    assert_eq!(rs.len(), 2);
    for r in &rs {
        assert!(r.check.passed, "{:?}", r.check);
        let t = r.timing.as_ref().unwrap();
        assert!(t.stats.median_s > 0.0);
    }
    // The work model is the suite's gemm: 2 M N K FLOPs.
    let k = set.find("my_gemm").unwrap();
    let w = rooftop_bench::suite::Kernel::work(k, &rs[0].case).unwrap();
    assert_eq!(w.flops, 2.0 * 33.0 * 17.0 * 65.0);
    let dev = rooftop_bench::mock::device_spec();
    let roofs = rooftop_bench::export::Roofs { theoretical: &dev, analysis: &dev, ceilings: None };
    let rec = rooftop_bench::export::evaluate(k, &rs[1], roofs).unwrap();
    assert_eq!(rec.kernel, "my_gemm");
    assert!(rec.median_s.is_some());
}

#[test]
fn host_out_of_bounds_write_is_caught_by_the_guard() {
    let set = SpecSet::new(&[host_gemm("oob_gemm")]).unwrap();
    let mut host = HostBackend::new();
    host.register("oob_gemm", gemm_closure(true));
    let rs = spec::run::bench_kernel(
        &mut host,
        &set,
        "oob_gemm",
        &Selection::default(),
        false,
        &quick(),
    )
    .unwrap();
    for r in &rs {
        assert!(!r.check.passed && r.timing.is_none());
        let msg = r.check.first_failure.as_deref().unwrap();
        assert!(msg.contains("past the end of output `C`"), "{msg}");
    }
}

#[test]
fn reference_kernel_catches_a_wrong_new_version_and_compare_works() {
    let old = host_gemm("gemm_v1");
    let new = host_gemm("gemm_v2").reference_kernel("gemm_v1");
    let broken = host_gemm("gemm_v3").reference_kernel("gemm_v2");
    let set = SpecSet::new(&[old, new, broken]).unwrap();
    let mut host = HostBackend::new();
    host.register("gemm_v1", gemm_closure(false));
    host.register("gemm_v2", gemm_closure(false));
    host.register("gemm_v3", |call: &mut spec::HostCall<'_>| {
        if let HostBuf::F32(c) = &mut call.buffers[2] {
            c.fill(1.0);
        }
        Ok(())
    });
    let sel = Selection::default();
    let v1 = spec::run::bench_kernel(&mut host, &set, "gemm_v1", &sel, false, &quick()).unwrap();
    let v2 = spec::run::bench_kernel(&mut host, &set, "gemm_v2", &sel, false, &quick()).unwrap();
    let v3 = spec::run::bench_kernel(&mut host, &set, "gemm_v3", &sel, false, &quick()).unwrap();
    assert!(v2.iter().all(|r| r.check.passed), "{:?}", v2[0].check);
    assert!(v3.iter().all(|r| !r.check.passed && r.timing.is_none()));
    let c = compare::compare(&v1[0], &v2[0]);
    let v = c.verdict.unwrap();
    assert!(v.ratio >= 1.0 && v.ratio_stddev >= 0.0);
    let c = compare::compare(&v1[0], &v3[0]);
    assert!(c.verdict.is_none());
    assert!(c.b.not_timed.unwrap().contains("check failed"));
}

/// The spec text of the examples' naive SGEMM, with `edit` applied.
fn one_kernel(edit: &dyn Fn(String) -> String) -> String {
    edit(
        r#"[[kernel]]
name    = "k1"
source  = "k.cu"
work    = { op = "gemm", m = "M", n = "N", k = "K" }
sizes   = [ { M = 64, N = 64, K = 32 } ]
grid    = [ "ceil(N / 16)", "ceil(M / 16)", 1 ]
block   = [ 16, 16, 1 ]
buffers = [
  { name = "A", dtype = "f32", len = "M*K" },
  { name = "B", dtype = "f32", len = "K*N" },
  { name = "C", dtype = "f32", len = "M*N", output = true },
]
scalars = { M = "M", N = "N", K = "K" }
"#
        .to_string(),
    )
}

#[test]
fn bad_specs_name_the_file_line_field_and_expectation() {
    let cases: Vec<(&str, String, &str, usize)> = vec![
        (
            "unknown variable",
            one_kernel(&|s| s.replace("ceil(N / 16)", "ceil(Q / 16)")),
            "grid[0] = \"ceil(Q / 16)\": unknown variable `Q` (expected one of M, N, K, BLOCK_X, BLOCK_Y, BLOCK_Z) at character 6",
            6,
        ),
        (
            "bad character",
            one_kernel(&|s| s.replace("\"M*K\"", "\"M*K$\"")),
            "buffers[0].len = \"M*K$\": unexpected `$`",
            9,
        ),
        (
            "unknown field",
            one_kernel(&|s| s.replace("block   =", "blok    =")),
            "unknown field `blok`",
            7,
        ),
        (
            "buffer too small for the built-in",
            one_kernel(&|s| s.replace("len = \"M*N\"", "len = \"M*N/2\"")),
            "buffers[2]: at sizes[0] (M=64 N=64 K=32): `C` is output f32[2048], expected output f32[4096] like `c`",
            11,
        ),
        (
            "wrong dtype for the built-in",
            one_kernel(&|s| s.replace("name = \"B\", dtype = \"f32\"", "name = \"B\", dtype = \"u32\"")),
            "`B` is input u32[2048], expected input f32[2048] like `b`",
            10,
        ),
        (
            "unknown op",
            one_kernel(&|s| s.replace("op = \"gemm\"", "op = \"gemmm\"")),
            "work.op: unknown kernel `gemmm` (did you mean gemm",
            4,
        ),
        (
            "unknown weight format",
            one_kernel(&|s| s.replace("k = \"K\" }", "k = \"K\", format = \"q9\" }")),
            "work.format: unknown weight format `q9` (expected affine, q4_0 or q8_0)",
            4,
        ),
        (
            "unknown variant",
            one_kernel(&|s| s.replace("k = \"K\" }", "k = \"K\", variant = \"asym\" }")),
            "work.variant: unknown variant `asym` (expected vector or scalar",
            4,
        ),
        (
            "missing op parameter",
            one_kernel(&|s| s.replace(", k = \"K\" }", " }")),
            "`k` is missing",
            4,
        ),
        (
            "non-integer grid",
            one_kernel(&|s| s.replace("ceil(M / 16)", "M / 48")),
            "grid[1] = \"M / 48\": at sizes[0] (M=64 N=64 K=32): the value 4/3 (= 1.3333333333333333) is not a whole number (use ceil(...) or floor(...))",
            6,
        ),
        (
            "missing source",
            one_kernel(&|s| s.replace("\"k.cu\"", "\"nope.cu\"")),
            "cannot read",
            3,
        ),
        (
            "unknown dtype",
            one_kernel(&|s| s.replace("dtype = \"f32\", len = \"M*K\"", "dtype = \"float\", len = \"M*K\"")),
            "unknown dtype `float`",
            9,
        ),
        (
            "reference cycle",
            one_kernel(&|s| s + "reference = \"k1\"\n"),
            "references form a cycle (k1 -> k1)",
            14,
        ),
        (
            "toml syntax",
            one_kernel(&|s| s.replace("block   = [ 16, 16, 1 ]", "block   = [ 16, 16, 1")),
            "missing comma between array elements",
            8,
        ),
    ];
    for (what, text, want, line) in cases {
        let (_dir_guard, dir) = scratch("bad", &[("k.cu", "// empty"), ("kernels.toml", &text)]);
        let e = parse::load(&dir.join("kernels.toml")).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with(&dir.join("kernels.toml").display().to_string()), "{what}: {msg}");
        assert!(msg.contains(want), "{what}: {msg}");
        assert_eq!(e.line_col.map(|l| l.0), Some(line), "{what}: {msg}");
    }
}

#[test]
fn custom_work_needs_a_kernel_reference_and_a_tolerance() {
    let text = one_kernel(&|s| {
        s.replace(
            "work    = { op = \"gemm\", m = \"M\", n = \"N\", k = \"K\" }",
            "work    = { flops = \"2*M*N*K\", bytes = \"4*(M*K + K*N + M*N)\", class = \"gemm\" }",
        )
    });
    let (_dir_guard, dir) = scratch("custom", &[("k.cu", "//"), ("kernels.toml", &text)]);
    let e = parse::load(&dir.join("kernels.toml")).unwrap_err();
    assert!(e.to_string().contains("\"builtin\" needs a built-in op"), "{e}");
    let two =
        format!("{}\n{}reference = \"k1\"\n", one_kernel(&|s| s), text.replace("\"k1\"", "\"k2\""));
    std::fs::write(dir.join("kernels.toml"), &two).unwrap();
    let e = parse::load(&dir.join("kernels.toml")).unwrap_err();
    assert!(e.to_string().contains("tolerance: required"), "{e}");
    std::fs::write(dir.join("kernels.toml"), two + "tolerance = 1e-4\n").unwrap();
    let set = parse::load(&dir.join("kernels.toml")).unwrap();
    let k2 = set.find("k2").unwrap();
    let case = k2.case_at(&[64, 64, 32]).unwrap();
    let w = rooftop_bench::suite::Kernel::work(k2, &case).unwrap();
    assert_eq!(w.flops, 2.0 * 64.0 * 64.0 * 32.0);
    assert_eq!(w.bytes(), 4.0 * (64.0 * 32.0 * 2.0 + 64.0 * 64.0));
    assert_eq!(w.class, rooftop_core::ops::OpClass::Gemm);
    // And it runs on the mock against k1.
    let mut mock = mock_for(&set);
    let rs = spec::run::bench_kernel(&mut mock, &set, "k2", &Selection::default(), false, &quick())
        .unwrap();
    assert!(rs[0].check.passed, "{:?}", rs[0].check);
}

#[test]
fn single_config_is_checked_like_the_spec_sizes() {
    let set = parse::load(&examples()).unwrap();
    let k = set.find("int4_matvec").unwrap();
    let sel = |v: Vec<u64>| Selection { single_config: Some(v), ..Selection::default() };
    let e = rooftop_bench::suite::Kernel::cases(k, &sel(vec![4096])).unwrap_err();
    assert!(e.to_string().contains("takes 2 size values (N,K), got 1"), "{e}");
    // K = 100 is not a multiple of the group size: the suite's qmatvec refuses it.
    let e = rooftop_bench::suite::Kernel::cases(k, &sel(vec![64, 100])).unwrap_err();
    assert!(e.to_string().contains("group size 128 does not divide k = 100"), "{e}");
    let e = rooftop_bench::suite::Kernel::cases(
        k,
        &Selection { sizes: Some(vec![1]), ..Selection::default() },
    )
    .unwrap_err();
    assert!(e.to_string().contains("--sizes does not apply"), "{e}");
    assert_eq!(rooftop_bench::suite::Kernel::cases(k, &sel(vec![64, 256])).unwrap().len(), 1);
}

#[test]
fn sources_are_refused_by_backends_without_compilers() {
    let set = parse::load(&examples()).unwrap();
    let mut host = HostBackend::new();
    let e = spec::load_sources(&mut host, &set).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("could not load any source") && msg.contains("sgemm_naive.cu"), "{msg}");
}

/// SwiGLU on the host, `y = silu(gate) * up` (right), or `y = gate * up` (wrong).
fn swiglu_closure(right: bool) -> impl FnMut(&mut spec::HostCall<'_>) -> Result<(), String> + Send {
    move |call| {
        let n = call.size("N");
        let [HostBuf::F32(g), HostBuf::F32(u), HostBuf::F32(y)] = &mut call.buffers[..] else {
            return Err("expected three f32 buffers".into());
        };
        for i in 0..n {
            let s = if right { g[i] / (1.0 + (-g[i]).exp()) } else { g[i] };
            y[i] = s * u[i];
        }
        Ok(())
    }
}

/// The examples' two SwiGLU kernels (command and file references), run on the host.
fn swiglu_set() -> SpecSet {
    let set = parse::load(&examples()).unwrap();
    let keep: Vec<KernelSpec> = set
        .kernels()
        .iter()
        .filter(|k| k.spec().name.starts_with("swiglu"))
        .map(|k| {
            let mut s = k.spec().clone();
            s.sources.clear(); // host closures instead of the .cu / .wgsl
            s
        })
        .collect();
    SpecSet::new(&keep).unwrap()
}

#[test]
fn a_command_reference_checks_a_kernel_no_builtin_computes() {
    let set = swiglu_set();
    for right in [true, false] {
        let mut host = HostBackend::new();
        host.register("swiglu", swiglu_closure(right));
        let rs = spec::run::bench_kernel(
            &mut host,
            &set,
            "swiglu",
            &Selection::default(),
            false,
            &quick(),
        )
        .unwrap();
        assert_eq!(rs.len(), 2);
        for r in &rs {
            // Random inputs in [-4, 4): the f64 Python reference and the f32 closure agree
            // within 1e-5 + 1e-5 |y|; y = gate * up misses silu and fails.
            assert_eq!(r.check.passed, right, "{right}: {:?}", r.check);
            assert_eq!(r.timing.is_some(), right);
            if right {
                assert!(r.check.max_abs_error < 1e-5, "{:?}", r.check);
                // Every element, and the guard after the output.
                let n = r.case.sizes[0].1 + spec::GUARD_ELEMENTS as u64;
                assert_eq!(r.check.elements, n);
            }
        }
    }
}

#[test]
fn a_file_reference_checks_against_numpys_outputs() {
    let set = swiglu_set();
    for right in [true, false] {
        let mut host = HostBackend::new();
        host.register("swiglu_files", swiglu_closure(right));
        let rs = spec::run::bench_kernel(
            &mut host,
            &set,
            "swiglu_files",
            &Selection::default(),
            false,
            &quick(),
        )
        .unwrap();
        for r in &rs {
            assert_eq!(r.check.passed, right, "{right}: {:?}", r.check);
        }
    }
}

#[test]
fn bad_file_and_command_references_say_what_is_wrong() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels");
    let text = std::fs::read_to_string(base.join("kernels.toml")).unwrap();
    let start = text.find("# The same kernel checked against expected outputs").unwrap();
    let files_kernel = &text[start..];
    let load = |t: &str| {
        parse::parse_str(t, Path::new("k.toml"), &base).map(|_| ()).unwrap_err().to_string()
    };
    // A missing expected file, at load time, with the file's line and the field.
    let e = load(&files_kernel.replace("data/y_{N}.npy", "data/none_{N}.npy"));
    assert!(e.contains("reference.outputs.y") && e.contains("none_1024.npy"), "{e}");
    // A random input cannot have fixed expected outputs.
    let e =
        load(&files_kernel.replace(r#"init = { file = "data/up_{N}.npy" }"#, r#"init = "random""#));
    assert!(e.contains("input `up` is random"), "{e}");
    // A file of the wrong length.
    let e = load(&files_kernel.replace("data/up_{N}.npy", "data/up_1024.npy"));
    assert!(e.contains("holds 1024 elements (shape [1024]), the buffer has 16384"), "{e}");
    // An unknown placeholder.
    let e = load(&files_kernel.replace("data/y_{N}.npy", "data/y_{M}.npy"));
    assert!(e.contains("`{M}`") && e.contains("not a size variable"), "{e}");
    // A command that fails: its stderr ends the message.
    let cmd = files_kernel.replace("swiglu_files", "swiglu_cmd").replace(
        r#"{ outputs = { y = "data/y_{N}.npy" } }"#,
        r#"{ command = "echo no numpy here >&2; exit 7" }"#,
    );
    let mut set_specs: Vec<KernelSpec> = parse::parse_str(&cmd, Path::new("k.toml"), &base)
        .unwrap()
        .kernels()
        .iter()
        .map(|k| {
            let mut s = k.spec().clone();
            s.sources.clear();
            s
        })
        .collect();
    let set = SpecSet::new(&std::mem::take(&mut set_specs)).unwrap();
    let mut host = HostBackend::new();
    host.register("swiglu_cmd", swiglu_closure(true));
    let e = spec::run::bench_kernel(
        &mut host,
        &set,
        "swiglu_cmd",
        &Selection::default(),
        false,
        &quick(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("reference command `echo no numpy here >&2; exit 7` (kernel `swiglu_cmd` at N=1024) failed")
            && e.contains("its stderr ends: no numpy here"),
        "{e}"
    );
}
