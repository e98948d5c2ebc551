//! The fuzz targets of rooftop's readers: one plain function per reader, taking the bytes
//! of one input file, driving it through the entry the CLI uses and on through the
//! analysis and the renderers, and returning nothing.
//!
//! Invariant a target checks: whatever the bytes, the reader and everything after it end
//! without a panic (a crash under AFL++), in bounded time (a hang) and bounded memory (an
//! allocation failure). Errors are the expected outcome for most inputs and are dropped.
//!
//! The same functions run three ways: under AFL++ (`fuzz/afl`, built by
//! `scripts/fuzz.sh`), over the seed corpus and the saved regression inputs on every
//! `cargo test` (`tests/replay.rs`), and by hand (`rooftop-fuzz-afl TARGET < input`).
//!
//! Readers that take a path (traces, SQLite databases, Parquet rank tables, model
//! configs) get the bytes through a scratch file: the path is what the CLI hands them, so
//! sniffing, memory mapping and gzip detection are fuzzed too.

use flate2::write::GzEncoder;
use rooftop_core::counters::{analyze_in, CounterSet};
use rooftop_core::device::{Catalog, DeviceSpec};
use rooftop_core::model::{budget, Phase, StepOptions, WeightScheme};
use rooftop_core::trace::comm::collectives;
use rooftop_core::trace::comm::reduce::ReduceOptions;
use rooftop_core::trace::ranks::RankMeta;
use rooftop_core::trace::report::{analyze, TraceOptions};
use rooftop_core::trace::run::{device_for, DeviceLookup};
use rooftop_core::units::Precision;
use rooftop_ingest::counters::{
    ncu, nsys, nsys_sqlite, rocpd, rocprof, rocprof_compute, rocprofv3, CounterError,
};
use rooftop_ingest::kineto::ReadOptions;
use rooftop_report::trace::{RenderOptions, Section};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Makes seed inputs from the repository at the given root.
pub type MakeSeeds = fn(&Path) -> Vec<Vec<u8>>;

/// One fuzz target: a reader, its function, and where its seeds come from.
#[derive(Debug)]
pub struct Target {
    /// The name `scripts/fuzz.sh` and the AFL++ harness know it by.
    pub name: &'static str,
    /// The reader it drives, in words.
    pub reader: &'static str,
    /// The function: any bytes, no panic.
    pub run: fn(&[u8]),
    /// Seeds: repository-relative files, or folders whose files ending in one of
    /// `suffixes` are taken (not recursively), each at most `max_seed` bytes.
    pub seeds: &'static [&'static str],
    pub suffixes: &'static [&'static str],
    pub max_seed: u64,
    /// Seeds made at run time from the fixtures (Parquet tables are written, not stored).
    pub make_seeds: Option<MakeSeeds>,
}

const KIB: u64 = 1024;

/// Every target, one per reader (two for Kineto: plain and gzip).
pub const TARGETS: &[Target] = &[
    Target {
        name: "kineto",
        reader: "Kineto/PyTorch trace JSON (plain or .gz as given), through the trace analysis",
        run: kineto,
        seeds: &[
            "tests/fixtures/kineto/handmade",
            "tests/fixtures/kineto/hta_tiny_plain.json",
            "tests/fixtures/kineto/ranks/rank0.json",
            "tests/fixtures/kineto/ranks-args-op",
            "tests/fixtures/kineto/h200",
            "tests/fixtures/jax/h200",
        ],
        suffixes: &[".json", ".json.gz"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "kineto_gz",
        reader: "Kineto/PyTorch trace JSON, gzipped before reading (the streaming inflater)",
        run: kineto_gz,
        seeds: &[
            "tests/fixtures/kineto/handmade",
            "tests/fixtures/kineto/hta_tiny_plain.json",
            "tests/fixtures/kineto/ranks/rank0.json",
        ],
        suffixes: &[".json"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "xplane",
        reader: "JAX XPlane profile (XSpace protobuf), through the trace analysis",
        run: xplane,
        seeds: &["tests/fixtures/jax"],
        suffixes: &[".xplane.pb"],
        max_seed: 256 * KIB,
        make_seeds: None,
    },
    Target {
        name: "ncu_csv",
        reader: "Nsight Compute CSV (raw and details pages), through the counter analysis",
        run: ncu_csv,
        seeds: &["tests/fixtures/ncu", "tests/fixtures/ncu/handmade", "tests/fixtures/ncu/h200"],
        suffixes: &[".csv"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "nsys_csv",
        reader: "Nsight Systems CSV reports (cuda_gpu_kern_sum, cuda_gpu_trace)",
        run: nsys_csv,
        seeds: &["tests/fixtures/nsys/handmade"],
        suffixes: &[".csv"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "rocprof_csv",
        reader: "rocprof v1 CSV (results.csv, results.stats.csv)",
        run: rocprof_csv,
        seeds: &[
            "tests/fixtures/rocprof/rocprof_compute_vcopy_MI200/SQ_LEVEL_WAVES.csv",
            "tests/fixtures/rocprof/rocprof_compute_vcopy_MI200/SQ_INST_LEVEL_VMEM.csv",
            "fuzz/corpus/rocprof_csv",
        ],
        suffixes: &[".csv"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "rocprofv3",
        reader: "rocprofv3 CSV (kernel trace, counter collection) and results.json",
        run: rocprofv3_any,
        seeds: &[
            "tests/fixtures/rocprof/rocprofv3_docs_examples",
            "tests/fixtures/rocprof/rocprofv3_gfx1151_decode",
            "tests/fixtures/rocprof/handmade_rocprofv3_json",
        ],
        suffixes: &[".csv", ".json"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "rocprof_compute",
        reader: "rocprof-compute workload (pmc_perf.csv, sysinfo.csv, roofline.csv)",
        run: rocprof_compute_any,
        seeds: &[
            "tests/fixtures/rocprof/rocprof_compute_vcopy_MI200",
            "tests/fixtures/rocprof/rocprof_compute_vcopy_MI300X_A1",
        ],
        suffixes: &["pmc_perf.csv", "sysinfo.csv", "roofline.csv"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "nsys_sqlite",
        reader: "Nsight Systems SQLite export",
        run: nsys_sqlite_db,
        seeds: &["tests/fixtures/nsys/sqlite"],
        suffixes: &[".sqlite"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "rocpd",
        reader: "rocprofv3 rocpd SQLite database",
        run: rocpd_db,
        seeds: &["tests/fixtures/rocprof/rocpd"],
        suffixes: &[".db"],
        max_seed: 128 * KIB,
        make_seeds: None,
    },
    Target {
        name: "rank_tables",
        reader: "Parquet rank tables (meta, collectives, warnings), through the reduce",
        run: rank_tables,
        seeds: &[],
        suffixes: &[],
        max_seed: 0,
        make_seeds: Some(rank_table_seeds),
    },
    Target {
        name: "bench_export",
        reader: "JSON exports read by `rooftop diff` (bench, trace, counters)",
        run: bench_export,
        seeds: &["fuzz/corpus/bench_export"],
        suffixes: &[".json"],
        max_seed: 64 * KIB,
        make_seeds: Some(export_seeds),
    },
    Target {
        name: "devices",
        reader: "device TOML files (merged into the built-in catalog, then looked up)",
        run: devices,
        seeds: &["fuzz/corpus/devices"],
        suffixes: &[".toml"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "model_config",
        reader: "Hugging Face config.json, through the model step budget",
        run: model_config,
        seeds: &["tests/fixtures/model"],
        suffixes: &[".json"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
    Target {
        name: "kernel_spec",
        reader: "kernel spec TOML (`rooftop bench --spec`)",
        run: kernel_spec,
        seeds: &["examples/kernels/kernels.toml", "fuzz/corpus/kernel_spec"],
        suffixes: &[".toml"],
        max_seed: 64 * KIB,
        make_seeds: None,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The seed inputs of `t`, read from the repository at `root`: its fixture files, then
/// the seeds it makes. A listed file or folder that is missing yields nothing (the
/// replay test checks that every target has seeds).
pub fn seeds(t: &Target, root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in t.seeds {
        let p = root.join(entry);
        let files = if p.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(&p)
                .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            v.retain(|f| {
                let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
                name.is_some_and(|n| t.suffixes.iter().any(|s| n.ends_with(s)))
            });
            v.sort();
            v
        } else {
            vec![p]
        };
        for f in files {
            let small = std::fs::metadata(&f).is_ok_and(|m| m.is_file() && m.len() <= t.max_seed);
            if let (true, Ok(bytes)) = (small, std::fs::read(&f)) {
                let name = f.strip_prefix(root).unwrap_or(&f).display().to_string();
                out.push((name, bytes));
            }
        }
    }
    if let Some(make) = t.make_seeds {
        for (i, bytes) in make(root).into_iter().enumerate() {
            out.push((format!("{}-made-{i}", t.name), bytes));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Scratch files

/// A scratch folder for this thread (the replay test runs targets on several threads;
/// AFL++ runs one process per target), under `$ROOFTOP_FUZZ_TMP` or the system's
/// temporary folder; removed when the thread ends. `None` when it cannot be made.
fn scratch_dir() -> Option<PathBuf> {
    thread_local! {
        static SCRATCH: Option<tempfile::TempDir> = {
            let base = std::env::var_os("ROOFTOP_FUZZ_TMP")
                .map_or_else(std::env::temp_dir, PathBuf::from);
            tempfile::Builder::new().prefix("rooftop-fuzz-").tempdir_in(base).ok()
        };
    }
    SCRATCH.with(|d| d.as_ref().map(|d| d.path().to_path_buf()))
}

/// `bytes` written to the scratch file `name`; `None` when it cannot be written (the
/// input is then skipped: a full disk is not a finding).
fn scratch_file(name: &str, bytes: &[u8]) -> Option<PathBuf> {
    let path = scratch_dir()?.join(name);
    std::fs::write(&path, bytes).ok().map(|()| path)
}

/// The built-in device catalog (parsed once per process by `Catalog::builtin`).
fn builtin() -> &'static Catalog {
    Catalog::builtin()
}

// ---------------------------------------------------------------------------------------
// Traces: `rooftop trace FILE`

/// What `rooftop trace FILE` does with a file: read it as the CLI does (content sniffing:
/// Kineto JSON, gzip or XPlane), pick the device the trace names, analyse, and render the
/// table (every section), the JSON and the Perfetto export.
fn trace_file(name: &str, bytes: &[u8]) {
    let Some(path) = scratch_file(name, bytes) else { return };
    let Ok(model) =
        rooftop_ingest::source::read_one(&path, &ReadOptions { threads: 1 }, &mut |_, _| {})
    else {
        return;
    };
    let device: Option<&DeviceSpec> = match device_for(builtin(), &model) {
        DeviceLookup::Found { spec, .. } => Some(spec),
        DeviceLookup::Unnamed | DeviceLookup::Unknown(_) => None,
    };
    let options = TraceOptions::for_model(&model);
    let report = analyze(&model, device, &options);
    let ro = RenderOptions { top: 10, section: Section::All };
    let _ = rooftop_report::trace::table(&report, &ro);
    let _ = rooftop_report::trace::json(&report);
    let _ = rooftop_report::perfetto::trace(&model, &report, None);
}

/// Kineto trace JSON as given (plain, or gzip when the bytes start with its magic).
pub fn kineto(data: &[u8]) {
    trace_file("fuzz.json", data);
}

/// Kineto trace JSON, gzipped first: the bytes reach the streaming parser behind the
/// inflater, which a mutated gzip stream rarely gets past.
pub fn kineto_gz(data: &[u8]) {
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::fast());
    if gz.write_all(data).is_err() {
        return;
    }
    if let Ok(bytes) = gz.finish() {
        trace_file("fuzz.json.gz", &bytes);
    }
}

/// A JAX XPlane profile (`*.xplane.pb`).
pub fn xplane(data: &[u8]) {
    trace_file("fuzz.xplane.pb", data);
}

// ---------------------------------------------------------------------------------------
// Counters: `rooftop counters FILE`

/// What `rooftop counters` does with a counter set: the analysis on the built-in
/// catalog (the device the set names), then the table and the JSON.
fn counters_report(set: Result<CounterSet, CounterError>) {
    let Ok(set) = set else { return };
    if let Ok(rep) = analyze_in(set, builtin(), None) {
        let o = rooftop_report::counters::RenderOptions::default();
        let _ = rooftop_report::counters::table(&rep, &o);
        let _ = rooftop_report::counters::json(&rep);
    }
}

/// Text the way the CLI reads it: a file that is not UTF-8 is refused before any reader.
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Nsight Compute CSV.
pub fn ncu_csv(data: &[u8]) {
    if let Some(t) = text(data) {
        counters_report(ncu::read_str("fuzz.csv", t));
    }
}

/// Nsight Systems CSV reports.
pub fn nsys_csv(data: &[u8]) {
    if let Some(t) = text(data) {
        counters_report(nsys::read_str("fuzz.csv", t));
    }
}

/// rocprof v1 CSV.
pub fn rocprof_csv(data: &[u8]) {
    if let Some(t) = text(data) {
        counters_report(rocprof::read_str("fuzz.csv", t));
    }
}

/// rocprofv3 output: a CSV (kernel trace or counter collection) or, when it starts with
/// `{`, `results.json` (the reader tells them by content).
pub fn rocprofv3_any(data: &[u8]) {
    if let Some(t) = text(data) {
        counters_report(rocprofv3::read_str("fuzz_kernel_trace.csv", t));
    }
}

/// rocprof-compute: the bytes as `pmc_perf.csv`, `sysinfo.csv` and `roofline.csv`.
pub fn rocprof_compute_any(data: &[u8]) {
    if let Some(t) = text(data) {
        counters_report(rocprof_compute::read_str("pmc_perf.csv", t));
        let _ = rocprof_compute::device_from_sysinfo(Path::new("sysinfo.csv"), t);
        let mut notes = Vec::new();
        let _ = rocprof_compute::roofs_from_csv(Path::new("roofline.csv"), t, &mut notes);
    }
}

/// An Nsight Systems SQLite export.
pub fn nsys_sqlite_db(data: &[u8]) {
    if let Some(path) = scratch_file("fuzz.sqlite", data) {
        counters_report(nsys_sqlite::read(&path));
    }
}

/// A rocpd SQLite database.
pub fn rocpd_db(data: &[u8]) {
    if let Some(path) = scratch_file("fuzz_results.db", data) {
        counters_report(rocpd::read(&path));
    }
}

// ---------------------------------------------------------------------------------------
// Parquet rank tables: `rooftop trace DIR_OF_RANK_TABLES`

/// The tables a rank-table input carries, in order.
const RANK_TABLES: [&str; 3] = [
    rooftop_tables::tables::META,
    rooftop_tables::tables::COLLECTIVES,
    rooftop_tables::tables::WARNINGS,
];

/// Several files in one input: each part is its length (4 bytes, little-endian) then its
/// bytes.
pub fn pack_parts(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        let len = u32::try_from(p.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&p[..len as usize]);
    }
    out
}

/// The parts of a packed input; a length past the end takes what is left.
pub fn unpack_parts(mut data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while let Some((len, rest)) = data.split_first_chunk::<4>() {
        let n = (u32::from_le_bytes(*len) as usize).min(rest.len());
        let (part, tail) = rest.split_at(n);
        out.push(part);
        data = tail;
    }
    out
}

/// A rank-table folder from packed parts (meta, collectives, warnings), read by the
/// reduce the CLI runs on a folder of rank tables, then its warnings table.
pub fn rank_tables(data: &[u8]) {
    let Some(dir) = scratch_dir().map(|d| d.join("rank")) else { return };
    let _ = std::fs::remove_dir_all(&dir);
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    for (name, part) in RANK_TABLES.iter().zip(unpack_parts(data)) {
        if std::fs::write(dir.join(name), part).is_err() {
            return;
        }
    }
    let dirs = [dir.clone()];
    let _ = rooftop_tables::run::reduce_tables(&dirs, 1, ReduceOptions::default(), &|| {});
    let _ = rooftop_tables::read_warnings(&dir);
}

/// Rank tables written from the four-rank fixture job, packed.
fn rank_table_seeds(root: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for rank in ["rank0.json", "rank1.json"] {
        let trace = root.join("tests/fixtures/kineto/ranks").join(rank);
        let read =
            rooftop_ingest::kineto::read_path(&trace, &ReadOptions { threads: 1 }, &mut |_, _| {});
        let Ok(model) = read else { continue };
        let meta = RankMeta::of(rank, &model, None, false);
        let records = collectives(&model);
        let input = rooftop_tables::RankInput {
            meta: &meta,
            model: &model,
            collectives: &records,
            source_bytes: None,
            include_unlinked: false,
        };
        let Some(dir) = scratch_dir().map(|d| d.join(format!("seed-{rank}"))) else { continue };
        if rooftop_tables::write_rank(&dir, &input).is_err() {
            continue;
        }
        let parts: Vec<Vec<u8>> =
            RANK_TABLES.iter().filter_map(|n| std::fs::read(dir.join(n)).ok()).collect();
        if parts.len() == RANK_TABLES.len() {
            out.push(pack_parts(&parts.iter().map(Vec::as_slice).collect::<Vec<_>>()));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    out
}

// ---------------------------------------------------------------------------------------
// The other files the CLI reads

/// A JSON export as `rooftop diff` reads it, compared with itself and rendered.
pub fn bench_export(data: &[u8]) {
    use rooftop_report::diff;
    let Some(t) = text(data) else { return };
    let Ok(export) = diff::load(t, "fuzz.json") else { return };
    if let Ok(d) = diff::compare(&export, &export, &diff::Options::default()) {
        let _ = diff::render::table(&d);
        let _ = diff::render::json(&d);
    }
}

/// The JSON exports of `rooftop trace` and `rooftop counters` on two fixtures.
fn export_seeds(root: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let trace = root.join("tests/fixtures/kineto/hta_tiny_plain.json");
    let opts = ReadOptions { threads: 1 };
    if let Ok(model) = rooftop_ingest::source::read_one(&trace, &opts, &mut |_, _| {}) {
        let report = analyze(&model, None, &TraceOptions::for_model(&model));
        out.push(rooftop_report::trace::json(&report).into_bytes());
    }
    let ncu = root.join("tests/fixtures/ncu/handmade/details_page.csv");
    if let Ok(set) = rooftop_ingest::counters::read_path(&ncu) {
        if let Ok(rep) = analyze_in(set, builtin(), None) {
            out.push(rooftop_report::counters::json(&rep).into_bytes());
        }
    }
    out
}

/// A device file (`--devices FILE`): merged into the built-in catalog, then each of its
/// devices looked up by id and by name.
pub fn devices(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let mut cat = builtin().clone();
    let Ok(parsed) = cat.parse_file(t, "fuzz.toml") else { return };
    let keys: Vec<(String, String)> =
        parsed.iter().map(|d| (d.id.clone(), d.name.clone())).collect();
    cat.merge(parsed);
    for (id, name) in keys {
        let _ = cat.lookup(&id);
        let _ = cat.lookup(&name);
    }
}

/// A Hugging Face `config.json` (`rooftop model --config FILE`), budgeted for one decode
/// and one prefill step in bf16 on an H100.
pub fn model_config(data: &[u8]) {
    let Some(path) = scratch_file("config.json", data) else { return };
    let Ok(cfg) = rooftop_ingest::model_config::read(&path) else { return };
    let Ok(device) = builtin().lookup("h100-sxm") else { return };
    let weights = WeightScheme::Dense(Precision::Bf16);
    for (phase, context, tokens) in [(Phase::Decode, 1024, 0), (Phase::Prefill, 0, 512)] {
        let opts =
            StepOptions { phase, batch: 4, context, tokens, weights, kv_dtype: Precision::Bf16 };
        let _ = budget(&cfg, &opts, device, None);
    }
}

/// A kernel spec (`rooftop bench --spec FILE`); sources it names resolve in the scratch
/// folder.
pub fn kernel_spec(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let Some(base) = scratch_dir() else { return };
    let _ = rooftop_bench::spec::parse::parse_str(t, &base.join("fuzz.toml"), &base);
}
