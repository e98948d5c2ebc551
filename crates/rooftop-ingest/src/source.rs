//! One entry point for every trace `rooftop trace` reads, whichever its format: the
//! reader is chosen by content, not by name. A JAX profile (XSpace protobuf,
//! [`crate::xplane`]) or a PyTorch profiler trace (Kineto JSON, plain or gzip,
//! [`crate::kineto`]); for a directory, per-host `*.xplane.pb` profiles or per-rank
//! Kineto traces ([`list_dir`]). A TensorBoard / XProf trace-viewer export
//! (`*.trace.json.gz`) is JSON but not a Kineto trace: [`read_one`] refuses it and
//! names the file to read instead.
//!
//! # Example: read a trace
//!
//! A PyTorch profiler trace with one `aten::mm` that launched one kernel, read into a
//! [`TraceModel`] and analysed (`rooftop_core::trace::report`) for its top kernels:
//!
//! ```
//! use rooftop_core::trace::report::{analyze, TraceOptions};
//! use rooftop_ingest::kineto::ReadOptions;
//! use rooftop_ingest::source::read_one;
//!
//! let json = r#"{"traceEvents": [
//!   {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
//!    "ts": 0, "dur": 50, "args": {"External id": 7,
//!    "Input Dims": [[64, 32], [32, 16]], "Input type": ["float", "float"]}},
//!   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
//!    "ts": 10, "dur": 5, "args": {"correlation": 42, "External id": 7}},
//!   {"ph": "X", "cat": "kernel", "name": "sgemm_64x16", "pid": 0, "tid": 7,
//!    "ts": 20, "dur": 30, "args": {"correlation": 42, "External id": 7,
//!    "device": 0, "stream": 7}}
//! ]}"#;
//! let path = std::env::temp_dir().join(format!("rooftop-doc-{}.json", std::process::id()));
//! std::fs::write(&path, json)?;
//!
//! let model = read_one(&path, &ReadOptions::default(), &mut |_done, _total| {})?;
//! std::fs::remove_file(&path)?;
//! assert_eq!(model.ops.len(), 1);
//! assert_eq!(model.gpu.len(), 1);
//!
//! let report = analyze(&model, None, &TraceOptions::for_model(&model));
//! let top = &report.kernels[0];
//! assert_eq!(top.name, "sgemm_64x16");
//! assert_eq!(top.parent_op.as_deref(), Some("aten::mm"));
//! assert_eq!(top.total_us, 30.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::kineto::{self, ReadOptions, TraceError};
use crate::xplane::{self, XplaneError};
use rooftop_core::trace::TraceModel;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The first bytes of `path` (empty when unreadable: the reader then says why).
fn head(path: &Path) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        // Room for the blank lines and indentation a JSON text may start with.
        let _ = f.take(4096).read_to_end(&mut buf);
    }
    buf
}

/// The first bytes after a UTF-8 BOM and ASCII blanks.
fn after_blanks(head: &[u8]) -> &[u8] {
    let h = head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head);
    let at = h.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(h.len());
    &h[at..]
}

/// Whether the first bytes are JSON that a trace can be, where an XSpace protobuf could
/// start the same way: blanks only, an object opening (`{` then `"` or `}`) or an array
/// opening (`[` then `{`, `[` or `]`), after a BOM and blanks. A line break (0x0a) is
/// the first byte of both. In a protobuf the byte after it is a length and the next a
/// field's tag; `{`, `[` and `]` as tags are the group encoding, which proto3 never
/// writes, so only a first plane of exactly 123 bytes whose first field is its event
/// metadata (`\n{"`) would look like JSON.
fn opens_json(head: &[u8]) -> bool {
    let mut bytes = after_blanks(head).iter().copied().filter(|b| !b.is_ascii_whitespace());
    match bytes.next() {
        None => true,
        Some(b'{') => bytes.next().is_none_or(|b| b == b'"' || b == b'}'),
        Some(b'[') => bytes.next().is_none_or(|b| matches!(b, b'{' | b'[' | b']')),
        Some(_) => false,
    }
}

/// Whether a file name says JSON (`*.json`, any case).
fn is_json_name(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

/// A compression rooftop does not inflate, told by its first bytes: its name and the
/// command that inflates it.
fn other_compression(head: &[u8]) -> Option<(&'static str, &'static str)> {
    let magic: [(&[u8], &str, &str); 5] = [
        (b"BZh", "bzip2", "bunzip2"),
        (&[0xfd, b'7', b'z', b'X', b'Z', 0x00], "xz", "unxz"),
        (&[0x28, 0xb5, 0x2f, 0xfd], "zstd", "unzstd"),
        (&[0x04, 0x22, 0x4d, 0x18], "lz4", "unlz4"),
        (b"PK\x03\x04", "zip", "unzip"),
    ];
    magic.iter().find(|(m, ..)| head.starts_with(m)).map(|&(_, kind, tool)| (kind, tool))
}

/// Whether the first bytes can start JSON (after a BOM and whitespace) or gzip. JSON
/// that is not an object or an array (`null`, a number, ...) counts, so that the Kineto
/// reader names it rather than the XSpace decoder failing on it.
fn json_or_gzip(head: &[u8]) -> bool {
    let v = after_blanks(head);
    let Some(&first) = v.first() else { return true };
    head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head).starts_with(&[0x1f, 0x8b])
        || matches!(first, b'{' | b'[' | b'-' | b'0'..=b'9')
        || [&b"null"[..], b"true", b"false"].iter().any(|w| v.starts_with(w))
}

/// Why [`read_one`] could not read a file: one sentence naming it.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A Kineto (PyTorch profiler) trace that does not read.
    #[error(transparent)]
    Kineto(#[from] TraceError),
    /// An XSpace protobuf (JAX profile) that does not read.
    #[error(transparent)]
    Xplane(XplaneError),
    /// Neither an XSpace protobuf nor JSON.
    #[error("{0} (nor JSON: a PyTorch/Kineto trace is a JSON object or an array of events)")]
    Unrecognised(XplaneError),
    /// A TensorBoard / XProf trace-viewer export: JSON, but not a Kineto trace.
    #[error(
        "{}: this is a TensorBoard / XProf trace viewer export (Chrome-trace JSON with \
         `/device:` and `/host:` processes), not a PyTorch (Kineto) trace: it has no HLO \
         shapes or launch links. Pass the `.xplane.pb` it was made from (same run \
         directory, `plugins/profile/<run>/<host>.xplane.pb`).",
        .0.display()
    )]
    TraceViewerExport(PathBuf),
    /// rooftop's own Perfetto export (`rooftop trace --format perfetto`).
    #[error(
        "{}: this is rooftop's own Perfetto export (`rooftop trace --format perfetto`): its \
         kernels without the CPU ops and launch calls a report is made from. Analyse the \
         trace it was written from; open this file in ui.perfetto.dev.",
        .0.display()
    )]
    OwnPerfettoExport(PathBuf),
    /// Compressed otherwise than with gzip.
    #[error(
        "{}: this file is {kind}-compressed; rooftop reads traces plain or gzip-compressed: \
         inflate it first (`{tool} FILE`) or compress it with gzip",
        path.display()
    )]
    Compressed { path: PathBuf, kind: &'static str, tool: &'static str },
}

impl From<ReadError> for rooftop_core::InputError {
    fn from(e: ReadError) -> rooftop_core::InputError {
        rooftop_core::InputError(e.to_string())
    }
}

impl From<ReadError> for String {
    fn from(e: ReadError) -> String {
        e.to_string()
    }
}

/// Reads one trace or profile, whichever its content is, with the default options and
/// no progress reports: [`read_one`] for the rest.
///
/// # Errors
/// As [`read_one`].
pub fn read(path: &Path) -> Result<TraceModel, ReadError> {
    read_one(path, &ReadOptions::default(), &mut |_, _| {})
}

/// Reads one trace or profile, whichever its content is; `progress(done, total)` in
/// bytes (an XPlane profile reports once, at the end).
///
/// # Errors
/// The reader's one sentence naming the file (bad input): unreadable, neither JSON nor
/// an XSpace protobuf, not a Kineto trace, or a TensorBoard trace-viewer export.
pub fn read_one(
    path: &Path,
    opts: &ReadOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<TraceModel, ReadError> {
    let h = head(path);
    if let Some((kind, tool)) = other_compression(&h) {
        return Err(ReadError::Compressed { path: path.to_path_buf(), kind, tool });
    }
    // A JSON string's `"` is also the tag of an XSpace's hostnames: named `*.json`, the
    // file is JSON (and the JSON reader names what it found).
    let string = is_json_name(path) && after_blanks(&h).first() == Some(&b'"');
    let pb =
        xplane::is_xplane(&h) && (xplane::is_profile_name(path) || !(string || opens_json(&h)));
    if pb || !(string || json_or_gzip(&h)) {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let m = xplane::read_path(path).map_err(|e| {
            if pb {
                ReadError::Xplane(e)
            } else {
                ReadError::Unrecognised(e)
            }
        })?;
        progress(size, size);
        return Ok(m);
    }
    let m = kineto::read_path(path, opts, progress)?;
    if m.gpu.is_empty() && m.ops.is_empty() && xplane::is_xprof_trace_json(path) {
        return Err(ReadError::TraceViewerExport(path.to_path_buf()));
    }
    if m.ops.is_empty() && m.runtime.is_empty() && is_own_perfetto_export(path) {
        return Err(ReadError::OwnPerfettoExport(path.to_path_buf()));
    }
    Ok(m)
}

/// Whether a JSON file is `rooftop trace --format perfetto`'s export: it starts with
/// `{"displayTimeUnit":"ns","otherData":{"generator":"rooftop ` (plain or gzip).
fn is_own_perfetto_export(path: &Path) -> bool {
    const HEAD: &[u8] = br#"{"displayTimeUnit":"ns","otherData":{"generator":"rooftop "#;
    crate::compressed::read_head(path, HEAD.len() as u64).is_ok_and(|h| h.starts_with(HEAD))
}

/// Bytes of a JSON file's start (inflated when gzip) in which [`looks_like_trace`]
/// looks for `"traceEvents"`: Kineto writes it after the trace's metadata
/// (`schemaVersion`, `deviceProperties`, `distributedInfo`, ...), a few KB.
const SNIFF: u64 = 1 << 20;

/// Whether `path` is a trace [`read_one`] reads, rather than other JSON (a rooftop
/// export, say), told by its first bytes: an XSpace protobuf, a file compressed otherwise
/// than with gzip (which [`read_one`] names), or JSON, plain or gzip, whose first MiB
/// holds a `"traceEvents"` key or that is an array holding a `"ph"` key (a bare array of
/// events). A file that cannot be read is not (whoever reads it next says why).
pub fn looks_like_trace(path: &Path) -> bool {
    let raw = head(path);
    if other_compression(&raw).is_some() {
        return true;
    }
    let string = is_json_name(path) && after_blanks(&raw).first() == Some(&b'"');
    if xplane::is_xplane(&raw) && (xplane::is_profile_name(path) || !(string || opens_json(&raw))) {
        return true;
    }
    let Ok(text) = crate::compressed::read_head(path, SNIFF) else { return false };
    let body = after_blanks(&text);
    let has = |key: &[u8]| memchr::memmem::find(body, key).is_some();
    has(b"\"traceEvents\"") || (body.first() == Some(&b'[') && has(b"\"ph\""))
}

/// The traces of a directory of ranks: its per-host JAX profiles when it has any
/// ([`xplane::list_profiles`]: directly or in the newest `plugins/profile/<run>/`), else
/// its per-rank Kineto traces ([`kineto::list_traces`]: `*.json`, `*.json.gz`).
///
/// # Errors
/// The Kineto listing's error: [`TraceError::NoTraces`] when the directory has neither.
pub fn list_dir(dir: &Path) -> Result<Vec<PathBuf>, TraceError> {
    xplane::list_profiles(dir).or_else(|_| kineto::list_traces(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_told_from_a_protobuf_by_what_follows_its_blanks() {
        // Kineto traces inflated from some gzip files start with a line break.
        assert!(opens_json(b"\n  {\n    \"schemaVersion\": 1"));
        assert!(opens_json(b"\xef\xbb\xbf\r\n\t[{\"ph\": \"X\"}]"));
        assert!(opens_json(b"{}"));
        // An XSpace's first plane, and JSON that is no container.
        assert!(!opens_json(&[0x0a, 0x03, 0x08, 0x96, 0x01]));
        assert!(!opens_json(&[0x0a, 0x20, 0x12, 0x07]));
        assert!(opens_json(b"\n\n"));
        assert!(opens_json(b"\n[\n"));
        assert!(!opens_json(b"\n 12"));
        // A first plane of 123 or 91 bytes whose first field is its lines (0x1a).
        assert!(!opens_json(&[0x0a, b'{', 0x1a, 0x05]));
        assert!(!opens_json(&[0x0a, b'[', 0x1a, 0x05]));
    }

    #[test]
    fn traces_are_told_from_other_json_by_their_first_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        for trace in [
            "kineto/hta_tiny_plain.json",
            "kineto/tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz",
            "jax/amd_gfx950_te_fused_attn.xplane.pb",
        ] {
            assert!(looks_like_trace(&fixtures.join(trace)), "{trace}");
        }
        let write = |name: &str, text: &[u8]| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        // A bare array of events; metadata before `traceEvents`; another compression.
        assert!(looks_like_trace(&write("bare.json", b"[{\"ph\": \"X\", \"name\": \"k\"}]")));
        let late = format!("{{\"meta\": \"{}\", \"traceEvents\": []}}", "x".repeat(100_000));
        assert!(looks_like_trace(&write("late.json", late.as_bytes())));
        assert!(looks_like_trace(&write("t.json.zst", &[0x28, 0xb5, 0x2f, 0xfd, 0x24])));
        // Exports, other JSON, text that is not JSON, a file that is not there.
        assert!(!looks_like_trace(&write("export.json", b"{\"schema_version\": 1, \"ops\": []}")));
        assert!(!looks_like_trace(&write("list.json", b"[{\"schema_version\": 1}]")));
        assert!(!looks_like_trace(&write("junk.json", b"{\n \"a\": [1, 2,\n")));
        assert!(!looks_like_trace(&write("empty.json", b"")));
        assert!(!looks_like_trace(&dir.join("missing.json")));
    }

    #[test]
    fn other_compressions_are_named_with_what_inflates_them() {
        assert_eq!(other_compression(b"BZh91AY&SY"), Some(("bzip2", "bunzip2")));
        assert_eq!(other_compression(&[0x28, 0xb5, 0x2f, 0xfd, 0x24]), Some(("zstd", "unzstd")));
        assert_eq!(other_compression(b"\xfd7zXZ\x00\x00"), Some(("xz", "unxz")));
        assert_eq!(other_compression(&[0x1f, 0x8b, 0x08]), None);
        assert_eq!(other_compression(b"{\"traceEvents\": []}"), None);
        assert_eq!(other_compression(&[0x0a, 0x03, 0x08, 0x96, 0x01]), None);
    }

    #[test]
    fn a_trace_that_starts_with_a_line_break_is_read_as_json() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let body = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \
                    \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2}]}";
        let json = dir.join("blank_first.json");
        std::fs::write(&json, format!("\n  {body}")).unwrap();
        let model = read(&json).map_err(|e| e.to_string());
        // A JSON text that is a string starts with the byte of an XSpace's hostnames tag:
        // named `.json`, it is JSON, and the JSON reader says what it found.
        let string = dir.join("string.JSON");
        std::fs::write(&string, "\"hello\"").unwrap();
        let e = read(&string).unwrap_err().to_string();
        assert!(e.contains("invalid trace JSON at byte 0") && e.contains("a JSON string"), "{e}");
        // Named as a profile, the same bytes go to the XSpace decoder, which refuses them.
        let pb = dir.join("blank_first.xplane.pb");
        std::fs::write(&pb, format!("\n  {body}")).unwrap();
        let as_pb = read(&pb).map_err(|e| e.to_string());
        assert_eq!(model.map(|m| m.gpu.len()), Ok(1));
        assert!(as_pb.is_err_and(|e| e.contains("XSpace")));
    }
}
