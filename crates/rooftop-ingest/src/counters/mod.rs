//! Readers of vendor profiler outputs with hardware counters → [`CounterSet`].
//!
//! One module per format, plus [`guess`], which looks at a path (file or directory) and
//! its first bytes and names the format, as inferno's collapse `guess` does:
//! - [`rocprof`]: rocprof v1 / rocprofv2 `results.csv` / counter CSVs (one row per
//!   dispatch), `input.txt` `pmc:` lines, `results.stats.csv`;
//! - [`rocprofv3`]: `kernel_trace.csv` (early and current column sets),
//!   `counter_collection.csv` (long format, pivoted per dispatch), `results.json`;
//! - [`rocprof_compute`]: rocprof-compute / Omniperf workload folders;
//! - [`ncu`]: Nsight Compute CSV (raw page, details page, `--metrics` long format);
//! - [`nsys`]: `nsys stats --format csv` reports `cuda_gpu_kern_sum`, `cuda_gpu_trace`.
//!
//! Readers normalise (base units, grid in blocks, names without `.kd`) and never derive:
//! the formulas live in `rooftop_core::counters`.

pub mod error;
pub mod ncu;
pub mod nsys;
pub mod rocprof;
pub mod rocprof_compute;
pub mod rocprofv3;
mod text;

pub use error::CounterError;

use rooftop_core::counters::{CounterFormat, CounterSet};
use std::path::Path;

/// Names the format of `path` (a file or a directory), or says why it cannot.
pub fn guess(path: &Path) -> Result<CounterFormat, CounterError> {
    let _ = path;
    Err(CounterError::unknown(path, "format detection is not written yet"))
}

/// Reads `path` (a file or a directory) in the format [`guess`] names.
pub fn read_path(path: &Path) -> Result<CounterSet, CounterError> {
    read_as(path, guess(path)?)
}

/// Reads `path` as `format`.
pub fn read_as(path: &Path, format: CounterFormat) -> Result<CounterSet, CounterError> {
    match format {
        CounterFormat::RocprofV1 | CounterFormat::RocprofStats => rocprof::read(path),
        CounterFormat::Rocprofv3Csv | CounterFormat::Rocprofv3Json => rocprofv3::read(path),
        CounterFormat::RocprofCompute => rocprof_compute::read(path),
        CounterFormat::NcuRaw | CounterFormat::NcuDetails => ncu::read(path),
        CounterFormat::NsysKernSum | CounterFormat::NsysGpuTrace => nsys::read(path),
    }
}
