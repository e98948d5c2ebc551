//! Every command's terminal tables, with long names, fit 100 columns and never break a
//! token across lines: a name either appears whole or shortened as `prefix…`.
//!
//! The names are the ones a user saw broken (`softmax-onl`/`ine`, `matrixmult`/`iply`,
//! `block=256x`/`1x1`, `vllm::unified_attention_with_o`/`utput`,
//! `rank 0 (rank0_tra`/`ce.json)`), put into inputs of every command: the suite on the
//! mock backend, a spec'd kernel with a long name, a directory of two ranks whose traces
//! name a vLLM op and a long kernel, an ncu page, a model, an analysis, the device list,
//! ceilings and a diff.

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn rooftop() -> Command {
    Command::cargo_bin("rooftop").expect("the rooftop binary is built by cargo test")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stdout_of(args: &[&str]) -> String {
    let out = rooftop().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A fresh, empty scratch directory and its path. The directory is removed when the
/// guard drops, at the end of the test whether it passed or failed: bind the guard to
/// a name (`_x_guard`), not `_`, which would drop it at once.
fn scratch(name: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::Builder::new().prefix(&format!("rooftop-tables-{name}-")).tempdir().unwrap();
    let p = d.path().to_path_buf();
    (d, p)
}

/// No line wider than 100 columns; every token of `tokens` whole, or a prefix of it
/// ended by `…`, never a prefix followed by anything else (a break).
fn check(what: &str, out: &str, tokens: &[&str]) {
    for (i, line) in out.lines().enumerate() {
        assert!(
            line.chars().count() <= 100,
            "{what}: line {} has {} columns:\n{line}",
            i + 1,
            line.chars().count()
        );
    }
    for tok in tokens {
        let t: Vec<char> = tok.chars().collect();
        let head: String = t[..4].iter().collect();
        let mut seen = false;
        for (at, _) in out.match_indices(&head) {
            let rest: Vec<char> = out[at..].chars().collect();
            let same = rest.iter().zip(&t).take_while(|(a, b)| a == b).count();
            if same == t.len() {
                seen = true;
                continue;
            }
            // A shorter match: it must be the token shortened (`prefix…`), unless it is
            // another word that only starts the same way (then it does not end a cell
            // mid-token: the next character is a letter of another word).
            let next = rest.get(same).copied();
            if next == Some('…') {
                seen = true;
                continue;
            }
            let broken = next.is_none_or(|c| c == ' ' || c == '\n' || c == '│');
            assert!(
                !(broken && same >= 4),
                "{what}: `{tok}` broken after `{}`:\n{out}",
                rest[..same].iter().collect::<String>()
            );
        }
        assert!(seen, "{what}: `{tok}` missing (neither whole nor shortened):\n{out}");
    }
}

#[test]
fn bench_tables_with_long_kernel_and_launch_names() {
    let out = stdout_of(&["bench", "--backend", "mock", "--kernel", "softmax-online,gemm,qmatvec"]);
    check("bench --backend mock", &out, &["softmax-online", "block=256x1x1"]);
    // A spec'd kernel with a long name, and the CPU suite's built-in GEMM.
    let (_dir_guard, dir) = scratch("spec");
    let base = repo().join("examples/kernels");
    let text = std::fs::read_to_string(base.join("kernels.toml"))
        .unwrap()
        .replace("\"sgemm_tiled\"", "\"my_fused_attention_with_output_v2\"");
    // Sources and data stay where they are: point the paths back at the examples.
    let text = text
        .replace("source  = [\"", &format!("source  = [\"{}/", base.display()))
        .replace(".cu\", \"", &format!(".cu\", \"{}/", base.display()))
        .replace("\"data/", &format!("\"{}/data/", base.display()))
        .replace("python3 swiglu_ref.py", &format!("python3 {}/swiglu_ref.py", base.display()));
    std::fs::write(dir.join("k.toml"), text).unwrap();
    let spec = dir.join("k.toml");
    let out = stdout_of(&["bench", "--backend", "mock", "--spec", spec.to_str().unwrap()]);
    check("bench --spec", &out, &["my_fused_attention_with_output_v2", "block=16x16x1"]);
    let out = stdout_of(&[
        "bench",
        "--kernel",
        "gemm",
        "--single-config",
        "64,64,64",
        "--min-time",
        "0.01",
        "--min-runs",
        "3",
        "--no-ceilings",
        "-d",
        "m4-max",
    ]);
    check("bench --kernel gemm (cpu)", &out, &["matrixmultiply"]);
    let out = stdout_of(&["ceilings", "--backend", "mock", "--quick", "--min-time", "0.01"]);
    check("ceilings", &out, &[]);
}

/// Two ranks of a handmade trace whose op and kernel have long names, in a scratch
/// directory removed when the returned guard drops (bind it to a name, not `_`).
fn ranks_dir() -> (tempfile::TempDir, PathBuf) {
    let (guard, dir) = scratch("ranks");
    let text =
        std::fs::read_to_string(repo().join("tests/fixtures/kineto/handmade/nesting_graph.json"))
            .unwrap()
            .replace("aten::linear", "vllm::unified_attention_with_output")
            .replace(
                "gemm_kernel",
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize2x1x1",
            );
    for r in 0..2 {
        let t = text.replace("\"rank\": 3", &format!("\"rank\": {r}"));
        std::fs::write(dir.join(format!("rank{r}_trace.json")), t).unwrap();
    }
    (guard, dir)
}

#[test]
fn trace_tables_with_long_op_kernel_and_rank_names() {
    let (_dir_guard, dir) = ranks_dir();
    let one = dir.join("rank0_trace.json");
    for section in ["summary", "all"] {
        let out = stdout_of(&["trace", one.to_str().unwrap(), "--section", section]);
        check(
            &format!("trace --section {section}"),
            &out,
            &["vllm::unified_attention_with_output"],
        );
    }
    let out = stdout_of(&["trace", dir.to_str().unwrap()]);
    check("trace DIR", &out, &["(rank0_trace.json)", "(rank1_trace.json)"]);
}

#[test]
fn other_commands_tables() {
    let ncu = repo().join("tests/fixtures/ncu/handmade/details_page.csv");
    let out = stdout_of(&["counters", ncu.to_str().unwrap(), "-d", "h100-sxm"]);
    check("counters", &out, &[]);
    // Mixtral's 93.4 GB of bf16 weights need the H200's 141 GB (an H100 has 80 GB).
    let out = stdout_of(&["model", "--preset", "mixtral-8x7b", "-d", "h200-sxm"]);
    check("model", &out, &[]);
    let out = stdout_of(&[
        "analyze",
        "gemm",
        "--m",
        "1",
        "--n",
        "4096",
        "--k",
        "4096",
        "--dtype",
        "fp16",
        "--wbits",
        "3",
        "--group",
        "128",
        "-d",
        "m4-max",
        "--time-us",
        "42",
    ]);
    check("analyze", &out, &[]);
    let out = stdout_of(&["devices"]);
    check("devices", &out, &[]);
    let out = stdout_of(&["devices", "h100-sxm"]);
    check("devices ID", &out, &[]);
    // A diff of two mock exports.
    let (_dir_guard, dir) = scratch("diff");
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    for p in [&a, &b] {
        stdout_of(&[
            "bench",
            "--backend",
            "mock",
            "--kernel",
            "softmax-online,triad",
            "--sizes",
            "4096",
            "--no-ceilings",
            "--export-json",
            p.to_str().unwrap(),
        ]);
    }
    // The second run 30% slower, so that the diff has rows to show.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    for r in v["results"].as_array_mut().unwrap() {
        for key in ["median_s", "mean_s", "min_s", "max_s"] {
            r[key] = serde_json::json!(r[key].as_f64().unwrap() * 1.3);
        }
        let times: Vec<f64> =
            r["times_s"].as_array().unwrap().iter().map(|t| t.as_f64().unwrap() * 1.3).collect();
        r["times_s"] = serde_json::json!(times);
    }
    std::fs::write(&b, v.to_string()).unwrap();
    let out = stdout_of(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    check("diff", &out, &["softmax-online"]);
    assert!(Path::new(&dir).exists());
}

/// A shape or a list is never cut and continued on the next line (`op_shape=(88…` then
/// `2880)`): in every table line of a real MI300X trace, an `name=(` list (`op_shape`, `filter_shape`, `input_stride`) a cell
/// starts is closed in the same cell, continues after a whole item (`(1, 141,` then
/// `512)`), or is shortened (`…`) with nothing after it, never cut and continued.
#[test]
fn trace_shapes_are_never_split_across_lines() {
    let dir = repo().join("tests/fixtures/kineto/tracelens_mi300");
    for name in [
        "gaunernst_bert-small-uncased__1016001.json.gz",
        "Falconsai_nsfw_image_detection__1016002.json.gz",
    ] {
        let f = dir.join(name);
        let out = stdout_of(&["trace", f.to_str().unwrap(), "--section", "all"]);
        check(name, &out, &[]);
        let lines: Vec<Vec<char>> = out.lines().map(|l| l.chars().collect()).collect();
        for (i, line) in lines.iter().enumerate() {
            let text: String = line.iter().collect();
            let Some(at) = text.find("=(") else { continue };
            if !text.starts_with('│') {
                continue;
            }
            // The cell: from the start of its word to three blanks.
            let col = text[..at].rfind(' ').map_or(0, |p| text[..=p].chars().count());
            let cell: String = line[col..].iter().collect();
            let cell = cell.split("   ").next().unwrap_or_default();
            let cut = cell.matches('(').count() != cell.matches(')').count()
                && cell.trim_end().ends_with('…');
            // What the next line holds in the same column: a new `name=(…)` or nothing,
            // never the rest of a cut item (`2880)`).
            let next: String =
                lines.get(i + 1).map_or(String::new(), |n| n.iter().skip(col).collect());
            let next = next.split("   ").next().unwrap_or_default().trim().to_string();
            let continued = !next.is_empty() && !next.contains('=') && !next.starts_with('│');
            assert!(!(cut && continued), "{name}: cut list continued:\n{text}\n{next}\n{out}");
        }
    }
}

/// `rooftop devices ID` gives each figure its own source in every format: the H100 SXM's
/// memory comes from its datasheet, its limits from cuda_occupancy.h for CC 9.0 (both
/// read off the catalog entry's citations by hand).
#[test]
fn devices_id_names_each_figures_own_source_in_every_format() {
    const DATASHEET: &str =
        "resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet";
    const OCCUPANCY: &str = "CUDA 12.6 cuda_occupancy.h CC9.0";
    // Table: rows name a numbered source; the footer lists the numbers.
    let table = stdout_of(&["devices", "h100-sxm"]);
    let cell = |metric: &str| {
        table
            .lines()
            .find(|l| l.contains(metric))
            .unwrap_or_else(|| panic!("no `{metric}` row:\n{table}"))
            .to_string()
    };
    assert!(cell("memory bandwidth").contains("[1] catalog, high"), "{table}");
    assert!(cell("max blocks per CU").contains("[2] catalog, high"), "{table}");
    let one = table.find("source [1]").expect("footer lists source [1]");
    let two = table.find("source [2]").expect("footer lists source [2]");
    assert!(table[one..two].contains("resources.nvidia.com/en-us-tensor-core/"), "{table}");
    assert!(table[two..].contains(OCCUPANCY), "{table}");
    // CSV: one line per figure with its full source.
    let csv = stdout_of(&["devices", "h100-sxm", "--format", "csv"]);
    let line = |metric: &str| {
        csv.lines()
            .find(|l| l.starts_with(&format!("h100-sxm,{metric},")))
            .unwrap_or("")
            .to_string()
    };
    assert!(csv.starts_with("id,metric,value,source,confidence,provenance,note\n"), "{csv}");
    assert!(line("memory bandwidth").contains(DATASHEET), "{csv}");
    assert!(!line("memory bandwidth").contains("cuda_occupancy"), "{csv}");
    assert!(line("max blocks per CU").contains(OCCUPANCY), "{csv}");
    assert!(line("max blocks per CU").ends_with(",high,catalog,"), "{csv}");
    // JSON: `figures`, each with source, confidence and provenance.
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&["devices", "h100-sxm", "--format", "json"])).unwrap();
    let figures = json["figures"].as_array().expect("figures array");
    let fig = |metric: &str| figures.iter().find(|f| f["metric"] == metric).cloned().unwrap();
    assert!(fig("memory bandwidth")["source"].as_str().unwrap().contains(DATASHEET));
    assert!(fig("max blocks per CU")["source"].as_str().unwrap().contains(OCCUPANCY));
    assert_eq!(fig("max blocks per CU")["confidence"], "high");
    // Markdown says the same as the table.
    let md = stdout_of(&["devices", "h100-sxm", "--format", "md"]);
    assert!(md.contains("[2] catalog, high") && md.contains(OCCUPANCY), "{md}");
}
