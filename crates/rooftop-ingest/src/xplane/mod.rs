//! Reader of JAX / XLA profiles: the XSpace protobuf `jax.profiler` writes
//! (`<logdir>/plugins/profile/<run>/<host>.xplane.pb`), into the same `TraceModel` the
//! Kineto reader produces, with the XLA content in `TraceModel::xla`
//! (`rooftop_core::trace::xla`).
//!
//! - [`proto`]: the `xplane.proto` and `hlo.proto` messages as hand-written `prost`
//!   structs (no `protoc` needed to build).
//! - [`convert`](self) internals: planes, lines, events and stats → model (module docs of
//!   `convert.rs` give the rules); `hlo`: the HLO modules of the `/host:metadata` plane →
//!   instructions with shapes; `wire`: where undecodable bytes are.
//!
//! Bad input never panics: bytes that are not an XSpace give an [`XplaneError`] naming the
//! file, the byte offset and the field; a protobuf without profiler planes is refused in
//! one sentence; problems inside a valid profile (an HLO proto that does not decode,
//! aggregated events, ops missing from their module's HLO) are counted warnings.
//!
//! TensorBoard's trace viewer export (`*.trace.json.gz`) is Chrome-trace JSON without
//! Kineto's event categories, launch links or HLO shapes: [`is_xprof_trace_json`] tells it
//! apart so the caller can point to the `.xplane.pb` it was made from.

mod convert;
mod error;
mod hlo;
pub mod proto;
mod wire;

pub use error::XplaneError;

use prost::Message;
use rooftop_core::trace::TraceModel;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Whether `bytes` start like an XSpace: the key of field 1-4 with wire type 2 (a plane,
/// an error, a warning or a hostname). JSON starts with `{`/`[`/whitespace and gzip with
/// 0x1f, so content detection is unambiguous for the formats `rooftop trace` reads.
pub fn is_xplane(bytes: &[u8]) -> bool {
    matches!(bytes.first(), Some(0x0a | 0x12 | 0x1a | 0x22))
}

/// Whether a file name looks like an XPlane profile (`*.xplane.pb`, any case).
pub fn is_profile_name(path: &Path) -> bool {
    path.file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .is_some_and(|n| n.ends_with(".xplane.pb"))
}

/// Reads one profile. The file is mapped, not copied: each line's pages leave the
/// resident set once its events are read (`crate::mmap`), so memory holds the model and
/// the line at hand; a file that cannot be mapped is read into memory.
pub fn read_path(path: &Path) -> Result<TraceModel, XplaneError> {
    let io = |source| XplaneError::Io { path: path.to_path_buf(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let Ok(map) = crate::mmap::map(&file) else {
        let bytes = std::fs::read(path).map_err(io)?;
        return read_owned(&bytes::Bytes::from(bytes), path, &|_| {});
    };
    let map = std::sync::Arc::new(map);
    let bytes = bytes::Bytes::from_owner(SharedMap(std::sync::Arc::clone(&map)));
    let base = bytes.as_ptr() as usize;
    let release = |done: &[u8]| {
        let from = (done.as_ptr() as usize).wrapping_sub(base);
        crate::mmap::release(&map, from, from.saturating_add(done.len()));
    };
    read_owned(&bytes, path, &release)
}

/// A shared mapping as the owner of `Bytes`.
struct SharedMap(std::sync::Arc<crate::mmap::Map>);

impl AsRef<[u8]> for SharedMap {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Reads a profile held in memory. `name` is used in messages only.
pub fn read_bytes(bytes: &[u8], name: &Path) -> Result<TraceModel, XplaneError> {
    read_owned(&bytes::Bytes::copy_from_slice(bytes), name, &|_| {})
}

/// The planes and lines are decoded one at a time from slices of `bytes` (module docs);
/// `release` is told each line whose events have been read.
fn read_owned(
    bytes: &bytes::Bytes,
    name: &Path,
    release: &(dyn Fn(&[u8]) + Sync),
) -> Result<TraceModel, XplaneError> {
    let located = |e: &dyn std::fmt::Display| {
        let (offset, field, message) = match wire::locate(bytes) {
            Some(l) => (l.offset as u64, l.field, l.message),
            // The walk follows the same schema; should it find nothing, say what the
            // decoder said.
            None => (bytes.len() as u64, "XSpace".to_string(), e.to_string()),
        };
        XplaneError::Decode { path: name.to_path_buf(), offset, field, message }
    };
    let space = proto::XSpaceLazy::decode(bytes.clone()).map_err(|e| located(&e))?;
    let mut names = Vec::with_capacity(space.planes.len());
    for p in &space.planes {
        names.push(proto::XPlaneName::decode(p.clone()).map_err(|e| located(&e))?.name);
    }
    let profiler_planes =
        names.iter().filter(|n| n.starts_with("/device:") || n.starts_with("/host:")).count();
    if profiler_planes == 0 {
        return Err(XplaneError::NotAProfile { path: name.to_path_buf(), planes: names.len() });
    }
    convert::build(&space, release).map_err(|e| located(&e))
}

/// The profiles of a directory: `*.xplane.pb` directly in it, else in the newest run of
/// a TensorBoard log directory (`plugins/profile/<run>/`, runs named by date so the
/// last in name order is the newest), sorted by name.
pub fn list_profiles(dir: &Path) -> Result<Vec<PathBuf>, XplaneError> {
    let io = |source| XplaneError::Io { path: dir.to_path_buf(), source };
    let direct = |d: &Path| -> Result<Vec<PathBuf>, XplaneError> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(d).map_err(io)? {
            let p = entry.map_err(io)?.path();
            if p.is_file() && is_profile_name(&p) {
                out.push(p);
            }
        }
        out.sort();
        Ok(out)
    };
    let found = direct(dir)?;
    if !found.is_empty() {
        return Ok(found);
    }
    let runs_dir = [dir.join("plugins").join("profile"), dir.to_path_buf()];
    for rd in runs_dir.iter().filter(|d| d.is_dir()) {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(rd)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        runs.sort();
        for run in runs.iter().rev() {
            let f = direct(run)?;
            if !f.is_empty() {
                return Ok(f);
            }
        }
    }
    Err(XplaneError::NoProfiles { path: dir.to_path_buf() })
}

/// Whether a JSON trace (plain or gzip) is a TensorBoard / XProf trace viewer export
/// rather than a Kineto trace: its first MiB names `/device:` or `/host:` processes and
/// has no Kineto category (`"cat": "kernel"` / `"cpu_op"`).
pub fn is_xprof_trace_json(path: &Path) -> bool {
    let Ok(f) = std::fs::File::open(path) else { return false };
    let mut head = Vec::new();
    if f.take(1 << 20).read_to_end(&mut head).is_err() {
        return false;
    }
    let text = if head.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        let mut gz = flate2::read::GzDecoder::new(head.as_slice()).take(1 << 20);
        // A truncated stream still gives its first bytes.
        let _ = gz.read_to_end(&mut out);
        out
    } else {
        head
    };
    let s = String::from_utf8_lossy(&text);
    let names_planes =
        s.contains("\"/device:") || s.contains("\"/host:") || s.contains("\"host /device:");
    let kineto =
        ["\"cat\": \"kernel\"", "\"cat\":\"kernel\"", "\"cat\": \"cpu_op\"", "\"cat\":\"cpu_op\""]
            .iter()
            .any(|k| s.contains(k));
    names_planes && !kineto
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_by_content() {
        assert!(is_xplane(&[0x0a, 0x00]));
        assert!(is_xplane(&[0x22, 0x01, b'h']));
        assert!(!is_xplane(b"{\"traceEvents\": []}"));
        assert!(!is_xplane(&[0x1f, 0x8b]));
        assert!(!is_xplane(&[]));
        assert!(is_profile_name(Path::new("/a/b/host.XPLANE.pb")));
        assert!(!is_profile_name(Path::new("trace.json")));
    }

    #[test]
    fn foreign_and_truncated_protobufs_are_errors() {
        let p = Path::new("x.xplane.pb");
        // A protobuf whose field 1 is an integer: not an XSpace.
        let e = read_bytes(&[0x08, 0x96, 0x01], p).unwrap_err().to_string();
        assert!(e.contains("x.xplane.pb") && e.contains("byte 0") && e.contains("planes"), "{e}");
        // A valid protobuf with one plane named `foo`.
        let e = read_bytes(&[0x0a, 0x05, 0x12, 0x03, b'f', b'o', b'o'], p).unwrap_err().to_string();
        assert!(e.contains("without profiler planes"), "{e}");
        // Truncated inside a plane.
        let e = read_bytes(&[0x0a, 0x09, 0x12, 0x03, b'f'], p).unwrap_err().to_string();
        assert!(e.contains("at byte 0") && e.contains("length 9"), "{e}");
    }
}
