//! Occupancy and grid waves from a dispatch's launch configuration when the counters do
//! not give them: system traces (nsys SQLite, rocpd, rocprofv3 kernel traces) record the
//! grid, block, registers and shared memory of every launch but no occupancy metric.
//!
//! With a catalog or device-file entry, [`crate::occupancy`] (the CUDA occupancy
//! calculator's rules, AMD's VGPR/LDS rules) gives the resident blocks per SM/CU and the
//! theoretical occupancy; grid waves are then blocks / (units × resident blocks per
//! unit), the definition of Nsight Compute's "Waves Per SM". A profiler's own figure
//! always wins: this only fills what is `None`.

use super::{Derived, Dispatch};
use crate::device::DeviceSpec;
use crate::occupancy::{occupancy, KernelResources, Scope};

/// Fills `x.theoretical_occupancy_pct` and `x.grid_waves` from the launch of `d` on
/// `device`, when they are unknown and the launch gives a block size.
pub fn fill(d: &Dispatch, x: &mut Derived, device: &DeviceSpec) {
    if x.theoretical_occupancy_pct.is_some() && x.grid_waves.is_some() {
        return;
    }
    let Some(threads) = d.threads_per_block().and_then(|t| u32::try_from(t).ok()) else {
        return;
    };
    if threads == 0 || (d.vgprs.is_none() && d.shared_bytes.is_none()) {
        return;
    }
    let res = KernelResources {
        threads_per_block: threads,
        regs_per_thread: d.vgprs,
        agprs: d.agprs,
        sgprs: d.sgprs,
        smem_bytes: d.shared_bytes.unwrap_or(0),
        wave_size: d.wave_size,
    };
    let Ok(o) = occupancy(device, &res) else { return };
    if x.theoretical_occupancy_pct.is_none() {
        x.theoretical_occupancy_pct = Some(o.occupancy_pct);
        x.formula(format!(
            "theoretical occupancy = rooftop's occupancy calculator on {} (block size, \
             registers, shared memory of the launch) [occupancy module]",
            device.id
        ));
    }
    let units = match o.scope {
        Scope::Wgp => device.num_cu / 2,
        Scope::Sm | Scope::Cu | Scope::Core => device.num_cu,
    };
    if x.grid_waves.is_none() && o.blocks_per_cu > 0 && units > 0 {
        if let Some(blocks) = d.blocks() {
            x.grid_waves = Some(blocks as f64 / (f64::from(units) * f64::from(o.blocks_per_cu)));
            x.formula(format!(
                "grid waves = blocks / ({} {}s × resident blocks per {} from the occupancy \
                 calculator)",
                units,
                o.scope.as_str(),
                o.scope.as_str()
            ));
            x.missing.retain(|m| m.quantity != "grid_waves");
        }
    }
    x.missing.retain(|m| m.quantity != "theoretical_occupancy_pct");
}
