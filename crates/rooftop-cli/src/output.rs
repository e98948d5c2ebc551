//! Where a command's output goes: standard output or the `-o` file.

use crate::args::OutputFormat;
use crate::error::{CliError, Result};
use rooftop_report::Format;
use std::io::{BufWriter, Write};
use std::path::Path;

/// The renderer format of a CLI format flag.
pub fn format(f: OutputFormat) -> Format {
    match f {
        OutputFormat::Table => Format::Table,
        // Parquet is refused before any command but `trace` runs (`commands::run`).
        OutputFormat::Json | OutputFormat::Parquet => Format::Json,
        OutputFormat::Csv => Format::Csv,
        OutputFormat::Md => Format::Markdown,
        OutputFormat::Html => Format::Html,
        OutputFormat::Perfetto => Format::Perfetto,
    }
}

/// The error for `--format perfetto` on a command without a timeline.
pub fn no_perfetto(command: &str) -> CliError {
    CliError::input(format!(
        "--format perfetto is a timeline of kernels: only `rooftop trace` writes it, not `rooftop {command}` \
         (use --format html, json, csv, md or table)"
    ))
}

/// Checks, before any work starts, that `path` (given with `flag`) can be written: its
/// folder exists and is a folder, and the path itself is not a folder unless `dir_ok`
/// (outputs that are folders). A run that would lose its results at the end is refused
/// up front with exit code 2.
pub fn check_writable(path: &Path, flag: &str, dir_ok: bool) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let refuse = |why: String| {
        Err(CliError::input(format!("{flag} {}: {why}; nothing was run", path.display())))
    };
    if !parent.is_dir() {
        let why = if parent.exists() { "is not a folder" } else { "does not exist" };
        return refuse(format!("its folder {} {why}", parent.display()));
    }
    if !dir_ok && path.is_dir() {
        return refuse("is a folder, not a file".to_string());
    }
    if parent.metadata().is_ok_and(|m| m.permissions().readonly()) {
        return refuse(format!("its folder {} is read-only", parent.display()));
    }
    Ok(())
}

/// Writes `text` to `path`, or to standard output. A closed pipe (`| head`) is not an
/// error.
pub fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    emit_with(path, |w| w.write_all(text.as_bytes()))
}

/// Bytes gathered before each write of [`emit_with`]: the size of a pipe's buffer.
/// Each page of the buffer is a page fault the first time it is written, after all
/// else is done; writes larger than the buffer go out directly. 1 MiB cost the 27.9 MB
/// trace's JSON about 100 more faults (median of 40 runs; docs/validation.md,
/// forty-fourth round).
const WRITE_BUFFER: usize = 64 << 10;

/// Streams what `write` writes to `path`, or to standard output, through one buffer
/// (the text is never held whole). A closed pipe (`| head`) is not an error.
pub fn emit_with(
    path: Option<&Path>,
    write: impl FnOnce(&mut BufWriter<Box<dyn Write + '_>>) -> std::io::Result<()>,
) -> Result<()> {
    let inner: Box<dyn Write> = match path {
        Some(p) => Box::new(std::fs::File::create(p).map_err(|e| cannot_write(Some(p), &e))?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut w = BufWriter::with_capacity(WRITE_BUFFER, inner);
    match write(&mut w).and_then(|()| w.flush()) {
        Ok(()) => Ok(()),
        Err(e) if path.is_none() && e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(cannot_write(path, &e)),
    }
}

fn cannot_write(path: Option<&Path>, e: &std::io::Error) -> CliError {
    match path {
        Some(p) => CliError::Runtime(format!("cannot write the output to {}: {e}", p.display())),
        None => CliError::Runtime(format!("cannot write to standard output: {e}")),
    }
}
