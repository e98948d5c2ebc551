//! Replays every fuzz target over its seed corpus, two cheap mutations of each seed (the
//! first half; every 61st byte flipped) and the inputs saved in `fuzz/regressions/<target>/`
//! (reproducers of past findings): none may panic, and each must end within the 20 s that
//! issue 34 allows any input. This is what `cargo test` checks of the fuzzers; the
//! coverage-guided runs are `scripts/fuzz.sh`.

#![allow(clippy::unwrap_used)]

use rooftop_fuzz::{pack_parts, seeds, target, unpack_parts, Target, TARGETS};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The saved regression inputs of `t`.
fn regressions(t: &Target) -> Vec<(String, Vec<u8>)> {
    let dir = root().join("fuzz/regressions").join(t.name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|f| f.is_file() && f.extension().is_none_or(|e| e != "md"));
    files.sort();
    files.into_iter().map(|f| (f.display().to_string(), std::fs::read(&f).unwrap())).collect()
}

/// Runs `t` on `data`; the failure, named, when it panics or runs past the bound.
fn replay(t: &Target, name: &str, data: &[u8]) -> Option<String> {
    const BOUND: Duration = Duration::from_secs(20);
    let start = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| (t.run)(data)));
    let took = start.elapsed();
    match outcome {
        Err(_) => Some(format!("{}: {name} panicked", t.name)),
        Ok(()) if took > BOUND => Some(format!("{}: {name} took {took:?} (> {BOUND:?})", t.name)),
        Ok(()) => None,
    }
}

fn flipped(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    for b in v.iter_mut().step_by(61) {
        *b ^= 0x5a;
    }
    v
}

#[test]
fn every_target_replays_its_seeds_and_regressions_without_a_panic() {
    let mut failures = Vec::new();
    for t in TARGETS {
        let corpus = seeds(t, &root());
        assert!(!corpus.is_empty(), "{}: no seed found (the fixtures it names moved?)", t.name);
        for (name, data) in &corpus {
            failures.extend(replay(t, name, data));
            failures.extend(replay(t, &format!("{name} (first half)"), &data[..data.len() / 2]));
            failures.extend(replay(t, &format!("{name} (bytes flipped)"), &flipped(data)));
        }
        for (name, data) in regressions(t) {
            failures.extend(replay(t, &name, &data));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn targets_have_distinct_names_and_every_regression_folder_names_one() {
    for (i, t) in TARGETS.iter().enumerate() {
        assert!(TARGETS[..i].iter().all(|u| u.name != t.name), "{} twice", t.name);
        assert!(target(t.name).is_some());
    }
    let dirs = std::fs::read_dir(root().join("fuzz/regressions")).unwrap();
    for d in dirs.filter_map(Result::ok).filter(|d| d.path().is_dir()) {
        let name = d.file_name().to_string_lossy().into_owned();
        assert!(target(&name).is_some(), "fuzz/regressions/{name} names no target");
    }
}

#[test]
fn packed_parts_round_trip_and_a_short_input_takes_what_is_left() {
    let packed = pack_parts(&[b"ab", b"", b"xyz"]);
    // Hand-written layout: 2 as u32 LE, "ab", 0, 3, "xyz".
    assert_eq!(packed, b"\x02\0\0\0ab\0\0\0\0\x03\0\0\0xyz");
    assert_eq!(unpack_parts(&packed), vec![&b"ab"[..], b"", b"xyz"]);
    // A length past the end takes the rest; a trailing stub of under 4 bytes is dropped.
    assert_eq!(unpack_parts(b"\xff\0\0\0abc"), vec![&b"abc"[..]]);
    assert_eq!(unpack_parts(b"\x01\0\0\0ab\0"), vec![&b"a"[..]]);
    assert!(unpack_parts(b"").is_empty());
}

/// The seeds a target makes or keeps in `fuzz/corpus/` are inputs its reader accepts
/// (a seed the reader refuses at once would start the fuzzer from nothing).
#[test]
fn made_and_kept_seeds_are_accepted_by_their_reader() {
    let root = root();
    let get = |name: &str| seeds(target(name).unwrap(), &root);

    let exports = get("bench_export");
    let made: Vec<_> = exports.iter().filter(|(n, _)| n.contains("-made-")).collect();
    assert_eq!(made.len(), 2, "a trace export and a counters export");
    for (name, data) in &exports {
        let text = std::str::from_utf8(data).unwrap();
        rooftop_report::diff::load(text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }

    // Rank tables of the fixture job's ranks 0 and 1 (rank0.json, rank1.json).
    let mut ranks = Vec::new();
    for (name, data) in get("rank_tables") {
        let tmp = tempfile::Builder::new().prefix("rooftop-fuzz-test-").tempdir().unwrap();
        let dir = tmp.path();
        let files = [
            rooftop_tables::tables::META,
            rooftop_tables::tables::COLLECTIVES,
            rooftop_tables::tables::WARNINGS,
        ];
        let parts = unpack_parts(&data);
        assert_eq!(parts.len(), files.len(), "{name}");
        for (f, p) in files.iter().zip(parts) {
            std::fs::write(dir.join(f), p).unwrap();
        }
        let (meta, _) = rooftop_tables::read_rank(dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        ranks.push(meta.rank);
        rooftop_tables::read_warnings(dir).unwrap();
    }
    assert_eq!(ranks, vec![Some(0), Some(1)]);

    let catalog = rooftop_core::device::Catalog::builtin();
    for (name, data) in get("devices") {
        let text = std::str::from_utf8(&data).unwrap();
        catalog.parse_file(text, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    for (name, data) in get("kernel_spec") {
        let text = std::str::from_utf8(&data).unwrap();
        let base = root.join("examples/kernels");
        rooftop_bench::spec::parse::parse_str(text, Path::new(&name), &base)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    for (name, data) in get("rocprof_csv") {
        let text = std::str::from_utf8(&data).unwrap();
        rooftop_ingest::counters::rocprof::read_str(&name, text)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
