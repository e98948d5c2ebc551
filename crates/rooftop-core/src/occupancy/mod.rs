//! Theoretical occupancy: NVIDIA (per compute capability), AMD CDNA/RDNA, Apple
//! (labelled estimate). Rules from `reference/hardware.md` §4.
//!
//! INTERFACE SKELETON: bodies are filled in by the occupancy work.

use crate::device::DeviceSpec;
use serde::Serialize;

/// What a kernel uses per block / workgroup / threadgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelResources {
    pub threads_per_block: u32,
    /// Registers per thread (NVIDIA) or architectural VGPRs per lane (AMD).
    pub regs_per_thread: Option<u32>,
    /// AMD accumulation VGPRs (AGPRs).
    pub agprs: Option<u32>,
    /// AMD scalar registers per wave.
    pub sgprs: Option<u32>,
    /// Static + dynamic shared memory / LDS / threadgroup memory per block, bytes.
    pub smem_bytes: u64,
    /// Wave size when the device has two modes (RDNA wave32/wave64).
    pub wave_size: Option<u32>,
}

/// What limited the number of resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limiter {
    Warps,
    Registers,
    SharedMemory,
    BlockSlots,
    Barriers,
}

/// Result of an occupancy calculation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occupancy {
    pub blocks_per_cu: u32,
    pub active_warps_per_cu: u32,
    pub max_warps_per_cu: u32,
    /// 0..=100.
    pub occupancy_pct: f64,
    pub limiter: Limiter,
    /// Each limit considered: (limiter, blocks it allows; None = unlimited).
    pub limits: Vec<(Limiter, Option<u32>)>,
    /// True for heuristic results (Apple): printed as an estimate.
    pub estimate: bool,
    pub notes: Vec<String>,
}

/// Why occupancy could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OccupancyError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Unsupported(String),
}

/// Theoretical occupancy of `res` on `device`.
pub fn occupancy(device: &DeviceSpec, res: &KernelResources) -> Result<Occupancy, OccupancyError> {
    let _ = (device, res);
    todo!("occupancy work")
}
