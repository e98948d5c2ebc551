//! Device-file entries built in code: the entries `rooftop ceilings` writes and the
//! backends' own descriptions of their devices (a CPU from `/proc` and sysfs, a CUDA
//! device from its driver attributes), which are then checked by the same code as a file
//! ([`Catalog::resolve`](super::Catalog::resolve)) or written with
//! [`DeviceFile::to_toml`](super::DeviceFile::to_toml).
//!
//! Invariant: [`DeviceEntry::from_spec`] of a checked [`DeviceSpec`] resolves back to the
//! same spec (every figure with its value and meta).

use super::file::MemorySection;
use super::file::{unplaced, ComputeSection, DeviceEntry, Figure, FigureMap, LimitsSection};
use super::{ArchFamily, DeviceSpec};
use crate::units::{Confidence, Provenance};
use toml::Spanned;

impl DeviceEntry {
    /// An entry for a new device called `id` (fill in the required keys).
    pub fn new(id: &str) -> DeviceEntry {
        DeviceEntry { id: Some(unplaced(id.to_string())), ..DeviceEntry::default() }
    }

    /// An entry that changes the device `base` (an id or alias) under the same id.
    pub fn extending(base: &str) -> DeviceEntry {
        DeviceEntry { extends: Some(unplaced(base.to_string())), ..DeviceEntry::default() }
    }

    /// Sets the defaults of every figure without meta of its own.
    pub fn set_defaults(&mut self, source: &str, confidence: Confidence, provenance: Provenance) {
        self.source = Some(source.to_string());
        self.confidence = Some(confidence);
        self.provenance = Some(provenance);
    }

    /// `[device.compute]`, created empty when absent.
    pub fn compute_mut(&mut self) -> &mut ComputeSection {
        self.compute.get_or_insert_with(ComputeSection::default)
    }

    /// `[device.memory]`, created empty when absent.
    pub fn memory_mut(&mut self) -> &mut MemorySection {
        self.memory.get_or_insert_with(MemorySection::default)
    }

    /// `[device.limits]`, created empty when absent.
    pub fn limits_mut(&mut self) -> &mut LimitsSection {
        self.limits.get_or_insert_with(LimitsSection::default)
    }

    /// Sets `[device.peak_tflops] <key>` (`fp32_vector`).
    pub fn set_peak(&mut self, key: &str, figure: Figure) {
        insert(&mut self.peak_tflops, key, figure);
    }

    /// Sets `[device.achievable_tflops] <key>`.
    pub fn set_achievable(&mut self, key: &str, figure: Figure) {
        insert(&mut self.achievable_tflops, key, figure);
    }

    /// Sets `[device.variant_peaks_tflops] <key>`.
    pub fn set_variant_peak(&mut self, key: &str, figure: Figure) {
        insert(&mut self.variant_peaks_tflops, key, figure);
    }

    /// A full entry (no `extends`) that resolves to `spec`: every figure, bare where its
    /// meta is the device's default, with its own meta otherwise.
    pub fn from_spec(spec: &DeviceSpec) -> DeviceEntry {
        let mut e = DeviceEntry::new(&spec.id);
        write_identity(&mut e, spec);
        write_compute(&mut e, spec);
        for p in &spec.peaks {
            let k = format!("{}_{}", p.precision.as_str(), p.unit.as_str());
            e.set_peak(&k, figure(spec, &format!("peak_tflops.{k}"), p.tflops));
        }
        for p in &spec.achievable {
            let k = format!("{}_{}", p.precision.as_str(), p.unit.as_str());
            e.set_achievable(&k, figure(spec, &format!("achievable_tflops.{k}"), p.tflops));
        }
        for (k, v) in &spec.variant_peaks {
            e.set_variant_peak(k, figure(spec, &format!("variant_peaks_tflops.{k}"), *v));
        }
        write_memory(&mut e, spec);
        write_limits(&mut e, spec);
        e
    }
}

fn insert(map: &mut Option<FigureMap>, key: &str, figure: Figure) {
    map.get_or_insert_with(FigureMap::new).insert(unplaced(key.to_string()), unplaced(figure));
}

/// The figure `key` of `spec` with `value`: bare when its meta is the device default.
fn figure(spec: &DeviceSpec, key: &str, value: f64) -> Figure {
    let m = spec.figure(key);
    if *m == spec.meta {
        Figure::new(value)
    } else {
        Figure::new(value)
            .with_source(m.source.clone())
            .with_confidence(m.confidence)
            .with_provenance(m.provenance)
    }
}

/// The file's name of a family (`sm90`, `cdna3`): what `parse_family` reads.
pub(super) fn family_key(f: ArchFamily) -> String {
    match f {
        ArchFamily::NvidiaCc { major, minor } => format!("sm{major}{minor}"),
        ArchFamily::Cdna1 => "cdna1".into(),
        ArchFamily::Cdna2 => "cdna2".into(),
        ArchFamily::Cdna3 => "cdna3".into(),
        ArchFamily::Cdna4 => "cdna4".into(),
        ArchFamily::Rdna3 => "rdna3".into(),
        ArchFamily::Apple78 => "apple7".into(),
        ArchFamily::Apple9 => "apple9".into(),
        ArchFamily::IntelXe => "xe".into(),
        ArchFamily::Cpu => "cpu".into(),
        ArchFamily::Unknown => "unknown".into(),
    }
}

fn write_identity(e: &mut DeviceEntry, d: &DeviceSpec) {
    e.name = Some(unplaced(d.name.clone()));
    e.vendor = Some(unplaced(d.vendor.key().to_string()));
    e.arch = Some(d.arch.clone()).filter(|a| !a.is_empty());
    e.family = Some(unplaced(family_key(d.family)));
    e.chip.clone_from(&d.chip);
    e.compute_capability = d.compute_capability.clone().map(unplaced);
    e.llvm_target.clone_from(&d.llvm_target);
    e.aliases = Some(d.aliases.clone()).filter(|a| !a.is_empty());
    e.unsupported = Some(d.unsupported.clone()).filter(|u| !u.is_empty());
    e.note.clone_from(&d.note);
    e.set_defaults(&d.meta.source, d.meta.confidence, d.meta.provenance);
}

fn write_compute(e: &mut DeviceEntry, d: &DeviceSpec) {
    let c = e.compute_mut();
    c.num_cu = Some(unplaced(figure(d, "compute.num_cu", f64::from(d.num_cu))));
    c.cu_kind = Some(d.cu_kind.clone());
    c.warp_size = Some(unplaced(figure(d, "compute.warp_size", f64::from(d.warp_size))));
    c.alt_warp_size =
        d.alt_warp_size.map(|w| unplaced(figure(d, "compute.alt_warp_size", f64::from(w))));
    c.boost_clock_mhz =
        d.boost_clock_mhz.map(|v| unplaced(figure(d, "compute.boost_clock_mhz", v)));
}

fn write_memory(e: &mut DeviceEntry, d: &DeviceSpec) {
    use super::MemLevel;
    let m = e.memory_mut();
    m.mem_type.clone_from(&d.mem_type);
    m.size_gb = d.mem_gb.map(|g| unplaced(figure(d, "memory.size_gb", g)));
    m.bandwidth_gbs = Some(unplaced(figure(d, "memory.bandwidth_gbs", d.peak_bw_gbs)));
    // Sizes in KiB: bytes / 1024 is exact in f64, and reads back to the same bytes.
    m.l2_kib = d.l2_bytes.map(|b| unplaced(figure(d, "memory.l2_mib", b as f64 / 1024.0)));
    m.llc_kib = d.llc_bytes.map(|b| unplaced(figure(d, "memory.llc_mib", b as f64 / 1024.0)));
    for b in &d.bandwidths {
        let key = format!("memory.{}_bandwidth_gbs", b.level.as_str());
        let f = Some(unplaced(figure(d, &key, b.gbs)));
        match b.level {
            MemLevel::Llc => m.llc_bandwidth_gbs = f,
            MemLevel::L2 => m.l2_bandwidth_gbs = f,
            MemLevel::L1 => m.l1_bandwidth_gbs = f,
            // DRAM is `bandwidth_gbs`, never a level of `bandwidths`; device files have
            // no LDS key (a profiler's level, never a catalog figure).
            MemLevel::Dram | MemLevel::Lds => {}
        }
    }
}

/// A limit of `[device.limits]`: its key, its value, and its field of the section.
type LimitRow = (&'static str, Option<f64>, fn(&mut LimitsSection) -> &mut Option<Spanned<Figure>>);

fn write_limits(e: &mut DeviceEntry, d: &DeviceSpec) {
    let l = &d.limits;
    let kib = |b: Option<u64>| b.map(|b| b as f64 / 1024.0);
    let n32 = |v: Option<u32>| v.map(f64::from);
    let n64 = |v: Option<u64>| v.map(|v| v as f64);
    let rows: [LimitRow; 19] = [
        ("smem_kib_per_cu", kib(l.smem_bytes_per_cu), |s| &mut s.smem_kib_per_cu),
        ("smem_kib_per_wgp", kib(l.smem_bytes_per_wgp), |s| &mut s.smem_kib_per_wgp),
        ("smem_kib_per_block_max", kib(l.smem_bytes_per_block_max), |s| {
            &mut s.smem_kib_per_block_max
        }),
        ("smem_kib_per_block_default", kib(l.smem_bytes_per_block_default), |s| {
            &mut s.smem_kib_per_block_default
        }),
        ("smem_alloc_granularity_bytes", n64(l.smem_alloc_granularity_bytes), |s| {
            &mut s.smem_alloc_granularity_bytes
        }),
        ("smem_reserved_per_block_bytes", n64(l.smem_reserved_per_block_bytes), |s| {
            &mut s.smem_reserved_per_block_bytes
        }),
        ("max_threads_per_block", n32(l.max_threads_per_block), |s| &mut s.max_threads_per_block),
        ("max_threads_per_cu", n32(l.max_threads_per_cu), |s| &mut s.max_threads_per_cu),
        ("regs_32bit_per_cu", n32(l.regs_32bit_per_cu), |s| &mut s.regs_32bit_per_cu),
        ("reg_file_kib_per_cu", n32(l.reg_file_kib_per_cu), |s| &mut s.reg_file_kib_per_cu),
        ("max_regs_per_thread", n32(l.max_regs_per_thread), |s| &mut s.max_regs_per_thread),
        ("max_warps_per_cu", n32(l.max_warps_per_cu), |s| &mut s.max_warps_per_cu),
        ("max_blocks_per_cu", n32(l.max_blocks_per_cu), |s| &mut s.max_blocks_per_cu),
        ("simds_per_cu", n32(l.simds_per_cu), |s| &mut s.simds_per_cu),
        ("max_waves_per_simd", n32(l.max_waves_per_simd), |s| &mut s.max_waves_per_simd),
        ("vgpr_per_lane_per_simd", n32(l.vgpr_per_lane_per_simd), |s| {
            &mut s.vgpr_per_lane_per_simd
        }),
        ("agpr_per_lane_per_simd", n32(l.agpr_per_lane_per_simd), |s| {
            &mut s.agpr_per_lane_per_simd
        }),
        ("vgpr_alloc_granule", n32(l.vgpr_alloc_granule), |s| &mut s.vgpr_alloc_granule),
        ("sgpr_per_simd", n32(l.sgpr_per_simd), |s| &mut s.sgpr_per_simd),
    ];
    if rows.iter().all(|(_, v, _)| v.is_none()) {
        return;
    }
    let out = e.limits_mut();
    for (k, v, field) in rows {
        if let Some(v) = v {
            *field(out) = Some(unplaced(figure(d, &format!("limits.{k}"), v)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{Catalog, DeviceFile};

    #[test]
    fn every_catalog_device_round_trips_through_an_entry_and_toml() {
        let cat = Catalog::builtin();
        for d in &cat.devices {
            let entry = DeviceEntry::from_spec(d);
            // In code, then through the text `toml::to_string` writes.
            let back = Catalog::empty().resolve_entry(entry.clone(), "test").unwrap();
            assert_eq!(&back, d, "{}", d.id);
            let text = DeviceFile::new(vec![entry]).to_toml().unwrap();
            let parsed = Catalog::empty().parse_file(&text, "test").unwrap();
            assert_eq!(parsed, vec![d.clone()], "{}\n{text}", d.id);
        }
    }
}
