//! End-to-end tests of `--format html` (every command) and `--format perfetto` (trace):
//! the page is self-contained, its charts are well-formed XML with a mark for every
//! analysed kernel or op, the axes have ticks, and formats without a timeline refuse
//! Perfetto with exit code 2. These run without a browser; `scripts/check-html.sh`
//! loads the same reports in headless Chromium.

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

fn fixture(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/kineto")
        .join(rel)
        .display()
        .to_string()
}

const TRACES: &[&str] = &[
    "hta_a100_alexnet.json.gz",
    "hta_a100_cupti_flop_counters.json.gz",
    "hta_mi250_minitoy_train.json.gz",
    "hta_tiny_plain.json",
    "tracelens_mi300_inductor_triton.json.gz",
    "tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "tracelens_mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
    "tracelens_mi300/gaunernst_bert-small-uncased__1016001.json.gz",
    "handmade/nesting_graph.json",
    "handmade/legacy_2021.json",
];

fn stdout_of(args: &[&str]) -> String {
    let out = rooftop().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The `<svg ...>...</svg>` charts of a page.
fn charts(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg xmlns=") {
        let from = &rest[start..];
        let end = from.find("</svg>").unwrap() + "</svg>".len();
        out.push(&from[..end]);
        rest = &from[end..];
    }
    out
}

/// A small XML well-formedness check of an SVG: tags nest and close, attribute values
/// are quoted, `&` starts an entity, `<` only starts a tag. Returns the start tags.
fn well_formed(svg: &str) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut tags = Vec::new();
    let b = svg.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'<' => {
                let end = i + svg[i..].find('>').expect("unclosed tag");
                let inner = &svg[i + 1..end];
                assert_eq!(inner.matches('"').count() % 2, 0, "unbalanced quotes in <{inner}>");
                assert!(!inner.contains('<'), "`<` inside a tag: {inner}");
                if let Some(name) = inner.strip_prefix('/') {
                    assert_eq!(stack.pop().as_deref(), Some(name.trim()), "mismatched </{name}>");
                } else {
                    let name: String =
                        inner.chars().take_while(|c| !c.is_whitespace() && *c != '/').collect();
                    tags.push(inner.to_string());
                    if !inner.ends_with('/') {
                        stack.push(name);
                    }
                }
                i = end + 1;
            }
            b'&' => {
                let semi = svg[i..].find(';').expect("bare &");
                let ent = &svg[i + 1..i + semi];
                assert!(
                    ["amp", "lt", "gt", "quot", "#39"].contains(&ent),
                    "unknown entity &{ent};"
                );
                i += semi + 1;
            }
            _ => i += 1,
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    tags
}

fn count(tags: &[String], class: &str) -> usize {
    tags.iter()
        .filter(|t| {
            t.split("class=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .is_some_and(|c| c.split(' ').any(|x| x == class))
        })
        .count()
}

fn self_contained(html: &str) {
    let stripped = html.replace("http://www.w3.org/2000/svg", "");
    for bad in ["http://", "https://", " src=", "@import"] {
        assert!(!stripped.contains(bad), "external reference `{bad}`");
    }
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
}

#[test]
fn analyze_html_has_one_mark_on_log_axes() {
    let html = stdout_of(&[
        "analyze",
        "gemm",
        "--m",
        "4096",
        "--n",
        "4096",
        "--k",
        "4096",
        "-d",
        "h100-sxm",
        "--time-us",
        "200",
        "--format",
        "html",
    ]);
    self_contained(&html);
    let svgs = charts(&html);
    assert_eq!(svgs.len(), 1);
    let tags = well_formed(svgs[0]);
    assert_eq!(count(&tags, "mark"), 1);
    assert!(count(&tags, "tick-label") >= 6);
    assert!(count(&tags, "roof") >= 5, "every H100 peak and DRAM");
    // The analysis's own numbers: 137 GFLOP, 200 µs, attainment 69.5%.
    assert!(html.contains("137 GFLOP") && html.contains("200 µs"));
    assert!(html.contains("Device spec used") && html.contains("Roofs and their provenance"));
}

#[test]
fn devices_html() {
    let html = stdout_of(&["devices", "--format", "html"]);
    self_contained(&html);
    assert!(html.contains("h100-sxm") && html.contains("class=\"sortable\""));
    let html = stdout_of(&["devices", "mi300x", "--format", "html"]);
    let tags = well_formed(charts(&html)[0]);
    assert!(count(&tags, "roof") >= 3);
}

/// Modelled rows with a rate, from the JSON report: each must have a mark.
fn modelled_rows(v: &Value) -> usize {
    v["categories"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|rows| rows.as_array().unwrap())
        .filter(|r| {
            r["unmodelled"].is_null()
                && r["flops_per_byte"].as_f64().is_some_and(|x| x > 0.0)
                && r["achieved_tflops"]["mean"].as_f64().is_some_and(|x| x > 0.0)
        })
        .count()
}

#[test]
fn every_trace_fixture_has_a_mark_per_modelled_row() {
    for f in TRACES {
        let path = fixture(f);
        let json: Value =
            serde_json::from_str(&stdout_of(&["trace", &path, "--format", "json"])).unwrap();
        let html = stdout_of(&["trace", &path, "--format", "html"]);
        self_contained(&html);
        if modelled_rows(&json) == 0 && json["device"]["catalog_id"].is_null() {
            // Nothing to draw (no shapes recorded, no device): a sentence says so.
            assert!(charts(&html).is_empty() && html.contains("No chart:"), "{f}");
            continue;
        }
        let tags = well_formed(charts(&html)[0]);
        assert_eq!(count(&tags, "mark"), modelled_rows(&json), "{f}");
        assert!(count(&tags, "tick-label") >= 5, "{f}");
        // Every mark points at a table row of the page.
        for t in tags.iter().filter(|t| t.contains("class=\"mark ")) {
            let id = t.split("data-row=\"").nth(1).unwrap().split('"').next().unwrap();
            assert!(html.contains(&format!("<tr id=\"{id}\"")), "{f}: {id}");
        }
        if json["device"]["catalog_id"].is_string() {
            assert!(count(&tags, "roof") >= 2, "{f}: roofs");
        }
    }
}

#[test]
fn trace_directory_html_has_every_rank() {
    // Four ranks of one job (`tracelens_h100/` holds two unrelated traces, which a
    // directory run refuses).
    let html = stdout_of(&["trace", &fixture("ranks"), "--format", "html"]);
    self_contained(&html);
    assert!(html.contains("Across ranks"));
    assert_eq!(charts(&html).len(), 4);
    for svg in charts(&html) {
        well_formed(svg);
    }
}

#[test]
fn perfetto_has_one_event_per_gpu_event_on_device_and_stream_tracks() {
    for f in TRACES {
        let path = fixture(f);
        let json: Value =
            serde_json::from_str(&stdout_of(&["trace", &path, "--format", "json"])).unwrap();
        let v: Value =
            serde_json::from_str(&stdout_of(&["trace", &path, "--format", "perfetto"])).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let x: Vec<&Value> = evs.iter().filter(|e| e["ph"] == "X").collect();
        // The timeline counts the linked GPU events; the export has all of them.
        let counted = json["timeline"]["event_count"].as_u64().unwrap_or(0) as usize;
        assert!(x.len() >= counted, "{f}: {} events, timeline {counted}", x.len());
        for e in &x {
            assert!(e["ts"].is_number() && e["dur"].as_f64().unwrap() >= 0.0, "{f}");
            let (pid, tid) = (&e["pid"], &e["tid"]);
            assert!(
                evs.iter()
                    .any(|m| m["name"] == "thread_name" && &m["pid"] == pid && &m["tid"] == tid),
                "{f}: no track for {pid}/{tid}"
            );
            if e["args"]["op"].is_string() {
                for k in
                    ["op_flops_per_call", "op_bytes_per_call", "roofline_attainment_pct", "bound"]
                {
                    assert!(e["args"].get(k).is_some(), "{f}: {k}");
                }
            }
        }
    }
}

/// Where two JSON texts first differ, numbers compared by value: serde_json's parser
/// (without its `float_roundtrip` feature) can read a long decimal as the float next to
/// it, so a number is the same when its values agree to 1e-15 (relative).
fn first_difference(ours: &str, serde: &str) -> Option<usize> {
    let number = |t: &[u8], at: usize| {
        let len = t[at..]
            .iter()
            .position(|c| !(c.is_ascii_digit() || b"+-.eE".contains(c)))
            .unwrap_or(t.len() - at);
        (std::str::from_utf8(&t[at..at + len]).unwrap().parse::<f64>().ok(), len)
    };
    let (a, b) = (ours.as_bytes(), serde.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let (ours, theirs) = (number(a, i), number(b, j));
            let same = match (ours.0, theirs.0) {
                (Some(ov), Some(sv)) => {
                    ov == sv || (ov - sv).abs() <= 1e-15 * ov.abs().max(sv.abs())
                }
                _ => a[i..i + ours.1] == b[j..j + theirs.1],
            };
            if !same {
                return Some(i);
            }
            (i, j) = (i + ours.1, j + theirs.1);
        } else if a[i] == b[j] {
            (i, j) = (i + 1, j + 1);
        } else {
            return Some(i);
        }
    }
    (i != a.len() || j != b.len()).then_some(i)
}

/// The rows a Perfetto export names, as (table, op, FLOPs per call), and the reasons it
/// gives for kernels without one; its text checked against serde's: the export is
/// written piece by piece, and must be what serde writes for the same document (compact,
/// every object's keys sorted).
fn perfetto_rows(path: &str) -> (BTreeSet<(String, String, String)>, BTreeSet<String>) {
    let text = stdout_of(&["trace", path, "--format", "perfetto"]);
    let v: Value = serde_json::from_str(&text).unwrap();
    let serde = format!("{}\n", serde_json::to_string(&v).unwrap());
    if let Some(at) = first_difference(&text, &serde) {
        let from = at.saturating_sub(120);
        let to = |t: &str| (at + 40).min(t.len());
        panic!(
            "{path}: byte {at}: {:?}\nserde: {:?}",
            &text[from..to(&text)],
            &serde[from..to(&serde)]
        );
    }
    let kernels = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] != "critical_path")
        .map(|e| &e["args"]);
    let (mut rows, mut reasons) = (BTreeSet::new(), BTreeSet::new());
    for a in kernels {
        if a["op"].is_string() {
            rows.insert((
                a["table"].to_string(),
                a["op"].to_string(),
                a["op_flops_per_call"].to_string(),
            ));
        } else {
            let why = a["model"].as_str().unwrap();
            let why = why.strip_prefix("none: ").and_then(|w| w.strip_suffix(" (times only)"));
            reasons.insert(why.unwrap_or_else(|| panic!("{path}: {a}")).to_string());
        }
    }
    (rows, reasons)
}

/// Every kernel's row in the Perfetto export is one of the report's rows (the same table,
/// op and FLOPs), found as the tables find it: an XLA op's from its HLO instruction (all
/// fifteen GEMM rows of the H200 JAX step; none before the export used the tables' models),
/// and a tensor list's `aten::cat` with the element size its kernel's name gives. A kernel
/// without a row says why in the words of the report's unmodelled rows (AlexNet's trace
/// has no shapes: each op's missing argument is named).
#[test]
fn perfetto_gives_each_kernel_the_row_the_tables_give_its_op() {
    let jax = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/jax/h200/h200_transformer_step.xplane.pb")
        .display()
        .to_string();
    let falconsai = fixture("tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz");
    let alexnet = fixture("hta_a100_alexnet.json.gz");
    let mut paths: Vec<String> = TRACES.iter().map(|f| fixture(f)).collect();
    paths.push(jax.clone());
    for path in &paths {
        let report: Value =
            serde_json::from_str(&stdout_of(&["trace", path, "--format", "json"])).unwrap();
        let mut rows = BTreeSet::new();
        let mut reasons = BTreeSet::from(["no CPU op around its launch in the trace".to_string()]);
        for (t, table) in report["categories"].as_object().unwrap() {
            for r in table.as_array().unwrap() {
                rows.insert((
                    Value::from(t.as_str()).to_string(),
                    r["name"].to_string(),
                    r["flops"].to_string(),
                ));
                if let Some(why) = r["unmodelled"].as_str() {
                    reasons.insert(why.to_string());
                }
            }
        }
        let (named, why) = perfetto_rows(path);
        assert!(named.is_subset(&rows), "{path}: {:?}", named.difference(&rows));
        assert!(why.is_subset(&reasons), "{path}: {:?}", why.difference(&reasons));
        if *path == jax {
            let gemm = rows.iter().filter(|r| r.0 == "\"GEMM\"").count();
            assert_eq!(gemm, 15, "the step's GEMM rows");
            assert_eq!(named.iter().filter(|r| r.0 == "\"GEMM\"").count(), gemm, "{named:?}");
        }
        if *path == falconsai {
            assert!(
                named.iter().any(|r| r.0 == "\"DataMovement\"" && r.1 == "\"aten::cat\""),
                "{named:?}"
            );
        }
        if *path == alexnet {
            assert!(why.iter().any(|w| w.starts_with("`aten::convolution`: argument 0 has no recorded shape")), "{why:?}");
        }
    }
}

/// `-o NAME.perfetto.json` (the name the docs give the export) writes the Perfetto
/// timeline without `--format`; `-o NAME.json` the JSON report; `--format` still wins.
#[test]
fn a_perfetto_json_file_name_chooses_the_export() {
    let tmp = tempfile::Builder::new().prefix("rooftop-pf-").tempdir().unwrap();
    let trace = fixture("hta_tiny_plain.json");
    let run = |name: &str, extra: &[&str]| -> Value {
        let path = tmp.path().join(name);
        rooftop().args(["trace", &trace, "-o"]).arg(&path).args(extra).assert().success();
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };
    let v = run("t.Perfetto.JSON", &[]);
    assert!(v["traceEvents"].is_array() && v["displayTimeUnit"] == "ns", "{v}");
    assert!(run("t.json", &[])["schema_version"].is_number());
    assert!(run("u.perfetto.json", &["--format", "json"])["schema_version"].is_number());
}

/// The Perfetto export read back as a trace (or diffed) is named for what it is, with
/// exit 2: its kernels alone, without the CPU ops and launches, would make an empty report.
#[test]
fn the_perfetto_export_read_as_a_trace_is_named() {
    let tmp = tempfile::Builder::new().prefix("rooftop-pf-").tempdir().unwrap();
    let export = tmp.path().join("t.perfetto.json");
    let trace = fixture("tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz");
    rooftop().args(["trace", &trace, "-o"]).arg(&export).assert().success();
    for args in [vec!["trace"], vec!["diff", &trace]] {
        let out = rooftop().args(&args).arg(&export).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("t.perfetto.json: this is rooftop's own Perfetto export"), "{err}");
        assert!(err.contains("Analyse the trace it was written from"), "{err}");
    }
}

#[test]
fn perfetto_is_refused_where_there_is_no_timeline() {
    for args in [
        vec!["analyze", "copy", "--elements", "1000", "-d", "h100-sxm"],
        vec!["devices"],
        vec!["bench", "--backend", "mock", "--kernel", "triad"],
        vec!["ceilings", "--backend", "mock", "--quick"],
        vec!["trace", "tests/fixtures/kineto/tracelens_h100"],
    ] {
        let mut c = rooftop();
        c.current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .args(&args)
            .args(["--format", "perfetto"]);
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("perfetto"), "{args:?}");
    }
}

#[test]
fn bench_and_ceilings_html_from_the_mock_backend() {
    let html = stdout_of(&[
        "bench",
        "--backend",
        "mock",
        "--kernel",
        "triad",
        "--no-ceilings",
        "--format",
        "html",
    ]);
    self_contained(&html);
    let tags = well_formed(charts(&html)[0]);
    assert_eq!(count(&tags, "mark"), 1);
    assert!(html.contains("id=\"res-0\"") && html.contains("simulated backend"));
    let html = stdout_of(&[
        "ceilings",
        "--backend",
        "mock",
        "--quick",
        "--min-time",
        "0.01",
        "--format",
        "html",
    ]);
    self_contained(&html);
    let svgs = charts(&html);
    assert_eq!(svgs.len(), 2);
    let sweep = well_formed(svgs[0]);
    assert!(count(&sweep, "point") >= 1);
    let roofs = well_formed(svgs[1]);
    assert!(count(&roofs, "roof") >= 2);
}

#[test]
fn ceilings_html_with_o_writes_the_report_not_a_device_file() {
    let tmp = tempfile::Builder::new().prefix("rooftop-html-ceil-").tempdir().unwrap();
    let dir = tmp.path();
    let out = dir.join("ceilings.html");
    let o = out.display().to_string();
    stdout_of(&[
        "ceilings",
        "--backend",
        "mock",
        "--quick",
        "--min-time",
        "0.01",
        "--format",
        "html",
        "-o",
        &o,
    ]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>"));
}

#[test]
fn model_html_has_a_mark_per_op_and_the_budget() {
    for args in [
        &["--preset", "llama-3-8b", "-d", "h100-sxm"][..],
        &["--preset", "mixtral-8x7b", "-d", "mi300x", "--phase", "prefill", "--weights", "q4_0"],
    ] {
        let json: Value =
            serde_json::from_str(&stdout_of(&[&["model"], args, &["--format", "json"]].concat()))
                .unwrap();
        let html = stdout_of(&[&["model"], args, &["--format", "html"]].concat());
        self_contained(&html);
        let tags = well_formed(charts(&html)[0]);
        // Every op with FLOPs and bytes is a mark; the others are named under the chart.
        let ops = json["ops"].as_array().unwrap();
        let drawn = ops
            .iter()
            .filter(|o| {
                o["work"]["flops"].as_f64().unwrap() > 0.0
                    && o["work"]["bytes_read"].as_f64().unwrap()
                        + o["work"]["bytes_written"].as_f64().unwrap()
                        > 0.0
            })
            .count();
        assert_eq!(count(&tags, "mark"), drawn, "{args:?}");
        assert!(count(&tags, "roof") >= 2, "{args:?}");
        for o in ops {
            assert!(html.contains(o["name"].as_str().unwrap()), "{}", o["name"]);
        }
        assert!(html.contains("Fusions") && html.contains("Assumptions"));
    }
}
