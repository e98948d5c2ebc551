//! Hand-built devices for the occupancy tests, filled from the per-SM/CU tables of
//! docs/reference/occupancy.md and docs/reference/devices.md (only the fields the calculators read are
//! meaningful; peaks and bandwidth are arbitrary positive values). The tests do not depend on the
//! catalog so that a catalog edit cannot silently change an occupancy rule's test.

use crate::device::{ArchFamily, DeviceSpec, FigureMeta, ResourceLimits, Vendor};
use std::collections::BTreeMap;

const KIB: u64 = 1024;

fn device(
    id: &str,
    vendor: Vendor,
    family: ArchFamily,
    num_cu: u32,
    warp_size: u32,
    limits: ResourceLimits,
) -> DeviceSpec {
    DeviceSpec {
        id: id.to_string(),
        name: id.to_string(),
        vendor,
        arch: String::new(),
        family,
        chip: None,
        compute_capability: None,
        llvm_target: None,
        aliases: Vec::new(),
        num_cu,
        cu_kind: String::new(),
        warp_size,
        alt_warp_size: None,
        boost_clock_mhz: None,
        peaks: Vec::new(),
        achievable: Vec::new(),
        variant_peaks: Vec::new(),
        mem_type: None,
        mem_gb: None,
        peak_bw_gbs: 1.0,
        bandwidths: Vec::new(),
        l2_bytes: None,
        llc_bytes: None,
        limits,
        unsupported: Vec::new(),
        meta: FigureMeta::default(),
        figure_meta: BTreeMap::new(),
        note: None,
    }
}

/// One row of the NVIDIA per-CC table (docs/reference/occupancy.md#nvidia).
#[allow(clippy::too_many_arguments)]
fn nvidia(
    id: &str,
    major: u32,
    minor: u32,
    sms: u32,
    max_warps: u32,
    max_blocks: u32,
    smem_sm_kib: u64,
    smem_block_kib: u64,
    granule: u64,
    reserve: u64,
) -> DeviceSpec {
    let limits = ResourceLimits {
        smem_bytes_per_cu: Some(smem_sm_kib * KIB),
        smem_bytes_per_block_max: Some(smem_block_kib * KIB),
        smem_bytes_per_block_default: Some(48 * KIB),
        smem_alloc_granularity_bytes: Some(granule),
        smem_reserved_per_block_bytes: Some(reserve),
        max_threads_per_block: Some(1024),
        max_threads_per_cu: Some(max_warps * 32),
        regs_32bit_per_cu: Some(65536),
        reg_file_kib_per_cu: Some(256),
        max_regs_per_thread: Some(255),
        max_warps_per_cu: Some(max_warps),
        max_blocks_per_cu: Some(max_blocks),
        ..ResourceLimits::default()
    };
    device(id, Vendor::Nvidia, ArchFamily::NvidiaCc { major, minor }, sms, 32, limits)
}

pub fn v100() -> DeviceSpec {
    nvidia("v100", 7, 0, 80, 64, 32, 96, 96, 256, 0)
}
pub fn t4() -> DeviceSpec {
    nvidia("t4", 7, 5, 40, 32, 16, 64, 64, 256, 0)
}
pub fn a100() -> DeviceSpec {
    nvidia("a100", 8, 0, 108, 64, 32, 164, 163, 128, 1024)
}
pub fn rtx3090() -> DeviceSpec {
    nvidia("rtx3090", 8, 6, 82, 48, 16, 100, 99, 128, 1024)
}
pub fn l4() -> DeviceSpec {
    nvidia("l4", 8, 9, 58, 48, 24, 100, 99, 128, 1024)
}
pub fn h100() -> DeviceSpec {
    nvidia("h100", 9, 0, 132, 64, 32, 228, 227, 128, 1024)
}
pub fn b200() -> DeviceSpec {
    nvidia("b200", 10, 0, 148, 64, 32, 228, 227, 128, 1024)
}

/// One row of the AMD per-family table (docs/reference/occupancy.md#amd).
#[allow(clippy::too_many_arguments)]
fn amd(
    id: &str,
    family: ArchFamily,
    cus: u32,
    warp_size: u32,
    simds: u32,
    waves_per_simd: u32,
    vgprs: u32,
    agprs: Option<u32>,
    granule: u32,
    lds_cu_kib: u64,
) -> DeviceSpec {
    let limits = ResourceLimits {
        smem_bytes_per_cu: Some(lds_cu_kib * KIB),
        smem_bytes_per_block_max: Some(lds_cu_kib * KIB),
        smem_alloc_granularity_bytes: Some(512),
        max_threads_per_block: Some(1024),
        max_threads_per_cu: Some(simds * waves_per_simd * 64),
        simds_per_cu: Some(simds),
        max_waves_per_simd: Some(waves_per_simd),
        max_warps_per_cu: Some(simds * waves_per_simd),
        vgpr_per_lane_per_simd: Some(vgprs),
        agpr_per_lane_per_simd: agprs,
        vgpr_alloc_granule: Some(granule),
        sgpr_per_simd: Some(800),
        max_blocks_per_cu: Some(16),
        ..ResourceLimits::default()
    };
    device(id, Vendor::Amd, family, cus, warp_size, limits)
}

pub fn mi100() -> DeviceSpec {
    amd("mi100", ArchFamily::Cdna1, 120, 64, 4, 10, 256, Some(256), 4, 64)
}
pub fn mi300x() -> DeviceSpec {
    amd("mi300x", ArchFamily::Cdna3, 304, 64, 4, 8, 512, None, 8, 64)
}
pub fn mi355x() -> DeviceSpec {
    amd("mi355x", ArchFamily::Cdna4, 256, 64, 4, 8, 512, None, 8, 160)
}
pub fn rx7900xtx() -> DeviceSpec {
    let mut d = amd("rx7900xtx", ArchFamily::Rdna3, 96, 32, 2, 16, 1536, None, 24, 64);
    d.alt_warp_size = Some(64);
    d.limits.smem_bytes_per_wgp = Some(128 * KIB);
    d.limits.max_threads_per_cu = Some(1024);
    d.limits.sgpr_per_simd = None;
    d
}

/// Apple M1 (measured per-core figures from metal-benchmarks; documented per-threadgroup
/// limits from Apple's Metal feature set tables; docs/reference/occupancy.md#apple).
pub fn m1() -> DeviceSpec {
    let limits = ResourceLimits {
        smem_bytes_per_cu: Some(60 * KIB),
        smem_bytes_per_block_max: Some(32 * KIB),
        max_threads_per_block: Some(1024),
        max_threads_per_cu: Some(3072),
        reg_file_kib_per_cu: Some(208),
        max_warps_per_cu: Some(96),
        ..ResourceLimits::default()
    };
    device("m1", Vendor::Apple, ArchFamily::Apple78, 8, 32, limits)
}

/// Apple M3 Max: Apple9, only the documented per-threadgroup limits.
pub fn m3_max() -> DeviceSpec {
    let limits = ResourceLimits {
        smem_bytes_per_block_max: Some(32 * KIB),
        max_threads_per_block: Some(1024),
        ..ResourceLimits::default()
    };
    device("m3-max", Vendor::Apple, ArchFamily::Apple9, 40, 32, limits)
}

/// Every device with an occupancy model, for property tests.
pub fn all_modelled() -> Vec<DeviceSpec> {
    vec![
        v100(),
        t4(),
        a100(),
        rtx3090(),
        l4(),
        h100(),
        b200(),
        mi100(),
        mi300x(),
        mi355x(),
        rx7900xtx(),
        m1(),
    ]
}
