//! Measuring ceilings (being written).

use super::Ceilings;
use crate::backend::Backend;
use crate::error::BenchError;
use crate::harness::{Progress, TimingOptions};
use rooftop_core::device::DeviceSpec;
use std::sync::atomic::AtomicBool;

/// What `measure` sweeps.
#[derive(Debug, Clone, PartialEq)]
pub struct CeilingOptions {
    /// DRAM bandwidth and FMA peaks only (what `rooftop bench` measures first).
    pub quick: bool,
    pub timing: TimingOptions,
    /// Largest working set of the sweep, bytes (default: 4x the last-level cache, at
    /// least 256 MiB).
    pub max_working_set: Option<u64>,
}

/// Measures the ceilings of `backend`'s device.
pub fn measure(
    backend: &mut dyn Backend,
    opts: &CeilingOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Ceilings, BenchError> {
    let _ = (backend, opts, stop, progress);
    Err(BenchError::Model("ceilings are not measured yet".to_string()))
}

/// A device file (docs/device-format.md) with `base`'s figures overridden by the
/// measured ceilings, `provenance = "calibrated"`.
pub fn device_file_toml(base: &DeviceSpec, ceilings: &Ceilings, date: &str) -> String {
    let _ = (base, ceilings, date);
    String::new()
}
