//! Every file rooftop reads may be gzip-compressed, told by its first bytes: device
//! files (`--device-file`), model configs (`rooftop model --config`), `rooftop diff`
//! exports and counter files give the same output gzipped as plain, with or without a
//! `.gz` suffix, and a trace the same report inflated as gzipped, in any layout; a
//! damaged gzip stream is one sentence naming the file and exit 2.

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use std::io::Write as _;
use std::path::{Path, PathBuf};

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn tempdir(tag: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::Builder::new().prefix(&format!("rooftop-gzip-{tag}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(rel)
}

fn gzip_to(src: &[u8], dst: &Path) {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(src).unwrap();
    std::fs::write(dst, e.finish().unwrap()).unwrap();
}

fn stdout(args: &[&str]) -> String {
    let out = rooftop().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

const DEVICE_FILE: &str = r#"
[[device]]
id = "gz-box"
name = "Gzipped box"
vendor = "cpu"
family = "cpu"
source = "test"
[device.compute]
num_cu = 4
warp_size = 1
[device.memory]
bandwidth_gbs = 40
[device.peak_tflops]
fp32_vector = 0.5
"#;

#[test]
fn device_files_model_configs_and_diff_exports_may_be_gzipped() {
    let (_d_guard, d) = tempdir("inputs");
    // Device file, gzipped with and without the suffix.
    let plain = d.join("box.toml");
    std::fs::write(&plain, DEVICE_FILE).unwrap();
    let want = stdout(&["--device-file", plain.to_str().unwrap(), "devices", "gz-box"]);
    for name in ["box.toml.gz", "box-gz.toml"] {
        let z = d.join(name);
        gzip_to(DEVICE_FILE.as_bytes(), &z);
        assert_eq!(stdout(&["--device-file", z.to_str().unwrap(), "devices", "gz-box"]), want);
    }
    // Model config.
    let cfg = fixture("model/tiny.json");
    let zcfg = d.join("tiny.json.gz");
    gzip_to(&std::fs::read(&cfg).unwrap(), &zcfg);
    // Everything but the file name the report quotes is the same.
    let model = |p: &Path| {
        let out = stdout(&[
            "model",
            "--config",
            p.to_str().unwrap(),
            "--device",
            "h100-sxm",
            "--format",
            "json",
        ]);
        out.replace(p.to_str().unwrap(), "CONFIG")
    };
    assert!(model(&zcfg) == model(&cfg), "the gzipped config gives another report");
    // diff: a counters export against its gzipped self.
    let base = d.join("base.json");
    let o = rooftop()
        .args(["counters", fixture("nsys/sqlite/h100_train_step.sqlite").to_str().unwrap()])
        .args(["--format", "json", "-o", base.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let zbase = d.join("base.json.gz");
    gzip_to(&std::fs::read(&base).unwrap(), &zbase);
    let same = rooftop()
        .args(["diff", base.to_str().unwrap(), zbase.to_str().unwrap(), "--fail-above", "1%"])
        .output()
        .unwrap();
    assert_eq!(same.status.code(), Some(0), "{}", String::from_utf8_lossy(&same.stderr));
}

#[test]
fn a_damaged_gzip_stream_is_one_sentence_and_exit_2() {
    let (_d_guard, d) = tempdir("damaged");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let text: String = (0u64..3000).map(|i| (i * 7919 % 10007).to_string() + ",").collect();
    e.write_all(text.as_bytes()).unwrap();
    let z = e.finish().unwrap();
    let cut = d.join("cut.toml.gz");
    std::fs::write(&cut, &z[..z.len() / 2]).unwrap();
    for args in [
        vec!["--device-file", cut.to_str().unwrap(), "devices"],
        vec!["model", "--config", cut.to_str().unwrap(), "--device", "h100-sxm"],
        vec!["counters", cut.to_str().unwrap()],
    ] {
        let out = rooftop().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains("cut.toml.gz") && err.contains("gzip"), "{args:?}: {err}");
    }
}

/// A trace gives the same report inflated as gzipped, in the layouts people save it in:
/// as inflated (this one starts with a line break, the byte an XSpace protobuf starts
/// with), and on one line as Python's `json.dump` writes it (`}, {` between events).
#[test]
fn a_trace_reads_the_same_inflated_and_in_every_layout() {
    let (_d_guard, d) = tempdir("layouts");
    let gz = fixture("kineto/h200/graph.trace.json.gz");
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(&std::fs::read(&gz).unwrap()[..]),
        &mut text,
    )
    .unwrap();
    assert!(text.starts_with('\n'));
    let want = stdout(&["trace", gz.to_str().unwrap(), "--format", "json"]);
    // A raw line break is never inside a JSON string: only the layout changes.
    let one_line = text.replace("},\n  {", "}, {").replace('\n', " ");
    for (name, body) in [("inflated.json", &text), ("one_line.json", &one_line)] {
        let plain = d.join(name);
        std::fs::write(&plain, body).unwrap();
        let zipped = d.join(format!("{name}.gz"));
        gzip_to(body.as_bytes(), &zipped);
        for f in [&plain, &zipped] {
            let got = stdout(&["trace", f.to_str().unwrap(), "--format", "json"]);
            assert!(got == want, "{}: the report differs from the gzipped trace's", f.display());
        }
    }
}
