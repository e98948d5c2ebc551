//! Export files kept up to date during a run: each is rewritten through a temporary file
//! and a rename after every case, so that a reader (or a Ctrl-C) never sees a half-written
//! file and an interrupted run keeps what it measured.

use super::JobError;
use crate::export::BenchReport;
use std::path::{Path, PathBuf};

/// Renders a report as the text of one export format (e.g. `rooftop_report::bench::json_report`),
/// or says why it could not.
pub type Renderer = fn(&BenchReport) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;

/// The files a run writes, each with its renderer.
#[derive(Debug, Clone, Default)]
pub struct Exports {
    files: Vec<(PathBuf, Renderer)>,
}

impl Exports {
    /// Adds `path`, written with `render`.
    pub fn add(&mut self, path: impl Into<PathBuf>, render: Renderer) {
        self.files.push((path.into(), render));
    }

    /// Adds `path` if there is one (an optional flag's file), written with `render`.
    #[must_use]
    pub fn with(mut self, path: Option<&Path>, render: Renderer) -> Exports {
        if let Some(p) = path {
            self.add(p, render);
        }
        self
    }

    /// Whether there is no file to write.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Writes every file from `report`, in the order they were added.
    ///
    /// # Errors
    /// The first file that cannot be rendered or written.
    pub fn write(&self, report: &BenchReport) -> Result<(), JobError> {
        for (path, render) in &self.files {
            let text = render(report)
                .map_err(|e| JobError::Runtime(format!("cannot render {}: {e}", path.display())))?;
            write_atomic(path, &text)?;
        }
        Ok(())
    }
}

/// Writes `text` to `path` through a temporary file (`path` with the extension
/// `rooftop-tmp`) and a rename.
///
/// ```
/// let path = std::env::temp_dir().join(format!("rooftop-doc-{}.txt", std::process::id()));
/// rooftop_bench::job::write_atomic(&path, "hello\n")?;
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\n");
/// # std::fs::remove_file(&path).ok();
/// # Ok::<(), rooftop_bench::job::JobError>(())
/// ```
///
/// # Errors
/// The write or the rename failed.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), JobError> {
    let tmp = path.with_extension("rooftop-tmp");
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|source| JobError::Write { path: path.to_path_buf(), source })
}
