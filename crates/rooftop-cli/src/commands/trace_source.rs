//! Which reader a `rooftop trace` input needs, decided by content: a JAX profile (XSpace
//! protobuf, `rooftop_ingest::xplane`) or a Kineto trace (JSON, plain or gzip,
//! `rooftop_ingest::kineto`); for a directory, per-host `*.xplane.pb` profiles or per-rank
//! Kineto traces. A TensorBoard / XProf trace-viewer export (`*.trace.json.gz`) is JSON
//! but not a Kineto trace: it is refused with the file to read instead.

use rooftop_core::trace::report::TraceOptions;
use rooftop_core::trace::TraceModel;
use rooftop_ingest::kineto::{self, ReadOptions};
use rooftop_ingest::xplane;
use std::io::Read as _;
use std::path::Path;

/// The first bytes of `path` (empty when unreadable: the reader then says why).
fn head(path: &Path) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(16).read_to_end(&mut buf);
    }
    buf
}

/// Whether the first bytes can start JSON (after a BOM and whitespace) or gzip.
fn json_or_gzip(head: &[u8]) -> bool {
    let h = head.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(head);
    h.starts_with(&[0x1f, 0x8b])
        || h.iter().find(|b| !b.is_ascii_whitespace()).is_none_or(|b| matches!(b, b'{' | b'['))
}

/// Reads one trace or profile, whichever its content is. Errors are the readers' one
/// sentence (bad input: exit code 2).
pub fn read_one(
    path: &Path,
    opts: &ReadOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> std::result::Result<TraceModel, String> {
    let h = head(path);
    let pb = xplane::is_xplane(&h);
    if pb || !json_or_gzip(&h) {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let m = xplane::read_path(path).map_err(|e| {
            if pb {
                e.to_string()
            } else {
                format!("{e} (nor JSON: a PyTorch/Kineto trace starts with `{{`)")
            }
        })?;
        progress(size, size);
        return Ok(m);
    }
    let m = kineto::read_path(path, opts, progress).map_err(|e| e.to_string())?;
    if m.gpu.is_empty() && m.ops.is_empty() && xplane::is_xprof_trace_json(path) {
        return Err(format!(
            "{}: this is a TensorBoard / XProf trace viewer export (Chrome-trace JSON with \
             `/device:` and `/host:` processes), not a PyTorch (Kineto) trace: it has no HLO \
             shapes or launch links. Pass the `.xplane.pb` it was made from (same run \
             directory, `plugins/profile/<run>/<host>.xplane.pb`).",
            path.display()
        ));
    }
    Ok(m)
}

/// Analysis options for a model: an XPlane model counts every device activity in the
/// timeline (each was recorded on a device stream; "unlinked" is a Kineto notion), as
/// TraceLens's JAX analysis does.
pub fn options(model: &TraceModel) -> TraceOptions {
    TraceOptions { include_unlinked: model.xla.is_some(), ..TraceOptions::default() }
}
