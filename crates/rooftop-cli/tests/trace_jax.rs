//! End-to-end tests of `rooftop trace` on JAX profiles (`*.xplane.pb`): the real profile
//! in `tests/fixtures/jax` in every format and section, content detection, per-host
//! directories (plain and TensorBoard `plugins/profile/<run>/`), TensorBoard's trace
//! viewer JSON refused with a pointer, and bad protobufs (exit code 2, one sentence with
//! the byte offset).

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::PathBuf;

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

fn jax(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/jax").join(rel)
}

fn profile() -> String {
    jax("amd_gfx950_te_fused_attn.xplane.pb").display().to_string()
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::Builder::new().prefix(&format!("rooftop-cli-jax-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn json(args: &[&str]) -> Value {
    let out = rooftop().arg("trace").args(args).args(["--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

#[test]
fn the_profile_in_json() {
    let v = json(&[&profile()]);
    // gfx950 (from the kernels) is shared by the MI350X and MI355X; the profile's 2400 MHz
    // clock says MI355X.
    assert_eq!(v["device"]["catalog_id"], "mi355x");
    assert_eq!(v["device"]["trace_name"], "gfx950");
    let x = &v["xla"];
    assert_eq!(x["ops"].as_array().unwrap().len(), 20);
    assert_eq!(x["modules"][0]["name"], "jit_loss_fn");
    assert_eq!(x["modules"][0]["runs"], 5);
    assert_eq!(x["modules"][0]["kernels"], 150);
    assert_eq!(x["steps"]["rows"].as_array().unwrap().len(), 5);
    // The top op is the fused-attention backward TraceLens cannot model; ours has FLOPs.
    let top = &x["ops"][0];
    assert_eq!(top["name"], "te_fused_attn_backward_ffi.18");
    assert_eq!(top["category"], "attention");
    assert_eq!(top["flops"], 2.0 * 2.0 * 16.0 * 2_098_176.0 * 640.0);
    assert!(top["roofline_attainment_pct"].as_f64().unwrap() > 0.0);
    // The GEMM and SDPA roofline tables hold the XLA ops.
    assert_eq!(v["categories"]["GEMM"].as_array().unwrap().len(), 6);
    assert_eq!(v["categories"]["SDPA_bwd"].as_array().unwrap().len(), 2);
    // Every device activity counts in the timeline (no "unlinked" exclusion).
    assert_eq!(v["timeline"]["unlinked_excluded"], 0);
    assert_eq!(v["timeline"]["event_count"], 150);
}

#[test]
fn every_format_and_section() {
    let p = profile();
    let out = rooftop().args(["trace", &p]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("XLA ops by device time"), "{text}");
    assert!(text.contains("gemm_fusion_dot"));
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    for section in ["xla", "all", "gemm", "sdpa", "kernels", "timeline"] {
        let out =
            rooftop().args(["trace", &p, "--section", section, "--top", "30"]).output().unwrap();
        assert!(out.status.success(), "{section}");
        let t = String::from_utf8(out.stdout).unwrap();
        assert!(t.lines().all(|l| l.chars().count() <= 100), "{section}:\n{t}");
    }
    let xla = rooftop().args(["trace", &p, "--section", "xla"]).output().unwrap();
    let t = String::from_utf8(xla.stdout).unwrap();
    for heading in
        ["XLA op categories", "XLA modules", "Steps", "GEMM fusion tiles", "Host threads"]
    {
        assert!(t.contains(heading), "{heading}: {t}");
    }
    let md = rooftop().args(["trace", &p, "--format", "md", "--section", "xla"]).output().unwrap();
    assert!(String::from_utf8(md.stdout).unwrap().contains("### XLA modules"));
    let html = rooftop().args(["trace", &p, "--format", "html"]).output().unwrap();
    let h = String::from_utf8(html.stdout).unwrap();
    assert!(h.contains("id=\"xla-ops\"") && h.contains("id=\"xla-tiles\""));
    let (_dir_guard, dir) = tempdir("csv");
    rooftop().args(["trace", &p, "--format", "csv", "-o"]).arg(&dir).assert().success();
    for f in ["xla_ops.csv", "xla_modules.csv", "xla_steps.csv", "xla_categories.csv", "GEMM.csv"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    let ops = std::fs::read_to_string(dir.join("xla_ops.csv")).unwrap();
    assert_eq!(ops.lines().count(), 21);
    let csv =
        rooftop().args(["trace", &p, "--format", "csv", "--section", "xla"]).output().unwrap();
    assert!(!csv.status.success(), "several xla tables need -o");
    let perfetto = rooftop().args(["trace", &p, "--format", "perfetto"]).output().unwrap();
    assert!(perfetto.status.success());
}

#[test]
fn per_host_directories() {
    let (_dir_guard, dir) = tempdir("hosts");
    for host in ["host-a", "host-b"] {
        std::fs::copy(profile(), dir.join(format!("{host}.xplane.pb"))).unwrap();
    }
    let v = json(&[&dir.display().to_string()]);
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    assert_eq!(ranks[0]["name"], "host-a.xplane.pb");
    assert_eq!(v["cross_rank"]["ranks"].as_array().unwrap().len(), 2);
    // A TensorBoard log directory: the newest run under plugins/profile/.
    let (_logdir_guard, logdir) = tempdir("logdir");
    for run in ["2025_01_01_00_00_00", "2025_02_01_00_00_00"] {
        let d = logdir.join("plugins/profile").join(run);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(profile(), d.join(format!("{run}.xplane.pb"))).unwrap();
    }
    let v = json(&[&logdir.display().to_string()]);
    assert_eq!(v["ranks"][0]["name"], "2025_02_01_00_00_00.xplane.pb");
}

#[test]
fn tensorboard_trace_json_is_refused_with_a_pointer() {
    let p = jax("xprof_2.24.2/amd_gfx950_te_fused_attn.trace.json.gz");
    rooftop()
        .args(["trace"])
        .arg(&p)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("TensorBoard / XProf trace viewer export"))
        .stderr(predicate::str::contains(".xplane.pb"));
}

#[test]
fn bad_protobufs_exit_2_with_the_byte() {
    let (_dir_guard, dir) = tempdir("bad");
    let bytes = std::fs::read(profile()).unwrap();
    let cut = dir.join("cut.xplane.pb");
    std::fs::write(&cut, &bytes[..100_000]).unwrap();
    let out = rooftop().arg("trace").arg(&cut).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("cut.xplane.pb") && err.contains("at byte") && err.contains("XSpace.planes["),
        "{err}"
    );
    // Foreign protobufs: one whose field 1 is an integer (not an XSpace at all), one that
    // decodes as an XSpace whose only plane has an id and no name.
    let foreign = dir.join("foreign.pb");
    std::fs::write(&foreign, [0x08, 0x96, 0x01]).unwrap();
    let out = rooftop().arg("trace").arg(&foreign).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("foreign.pb")
            && err.contains("not a valid XSpace")
            && err.contains("at byte 0"),
        "{err}"
    );
    let other = dir.join("other.pb");
    std::fs::write(&other, [0x0a, 0x03, 0x08, 0x96, 0x01]).unwrap();
    let out = rooftop().arg("trace").arg(&other).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("without profiler planes"));
    // An empty directory: names both kinds of input.
    let (_empty_guard, empty) = tempdir("empty");
    let out = rooftop().arg("trace").arg(&empty).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("xplane.pb"));
}
