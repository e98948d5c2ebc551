//! What a CUDA device reports about itself (driver attributes), and the figures derived
//! from it: theoretical DRAM bandwidth, FP32/FP64 FMA peaks, the catalog match, and a
//! device spec for `rooftop bench` / `rooftop ceilings` when the catalog has no entry.
//!
//! Formulas:
//! - DRAM bandwidth = 2 (double data rate) x memory clock x bus width / 8, decimal GB/s
//!   (`CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE` in kHz, `..._GLOBAL_MEMORY_BUS_WIDTH` in
//!   bits; the formula of NVIDIA's `bandwidthTest` sample). H100 SXM: 2 x 2619 MHz x
//!   5120 bit / 8 = 3352 GB/s, the datasheet's 3.35 TB/s.
//! - FMA peak = SMs x FMA lanes per SM x 2 FLOP x the boost clock
//!   (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`, kHz). Lanes per SM per compute capability from the
//!   CUDA C++ Programming Guide's "Arithmetic Instructions" throughput table
//!   (docs/reference/devices.md#how-a-peak-is-built): H100 SXM 132 x 128 x 2 x 1.98 GHz =
//!   66.9 TFLOP/s.
//!
//! Every function here is pure, so the logic is tested with synthetic attributes on
//! machines without a GPU.

use crate::ceilings::device_file::slug;
use rooftop_core::device::{unplaced, Catalog, DeviceEntry, DeviceSpec, Figure};
use rooftop_core::units::{Confidence, Precision, Provenance};
use serde::Serialize;
use std::fmt::Write as _;

/// The driver attributes rooftop reads (cuDeviceGetAttribute and friends), in the
/// driver's units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceAttributes {
    pub ordinal: u32,
    /// `cuDeviceGetName` (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
    /// Maximum (boost) SM clock, kHz.
    pub clock_khz: u32,
    /// Peak memory clock, kHz.
    pub mem_clock_khz: u32,
    pub bus_width_bits: u32,
    pub l2_bytes: u64,
    pub total_mem_bytes: u64,
    pub smem_per_sm_bytes: u64,
    /// Per-block shared memory without the opt-in attribute (48 KiB).
    pub smem_per_block_bytes: u64,
    /// Per-block shared memory with `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub smem_per_block_optin_bytes: u64,
    /// Shared memory the driver reserves per block (1 KiB on CC >= 8.0).
    pub smem_reserved_per_block_bytes: u64,
    pub regs_per_sm: u32,
    pub regs_per_block: u32,
    pub max_threads_per_sm: u32,
    pub max_threads_per_block: u32,
    pub max_blocks_per_sm: u32,
    pub warp_size: u32,
    /// `domain:bus:device` of the PCI address.
    pub pci: String,
}

/// FP32 and FP64 FMA lanes per SM for a compute capability (CUDA C++ Programming Guide,
/// throughput of native arithmetic instructions: 32-bit and 64-bit fused multiply-add
/// results per clock per SM). `None` for capabilities rooftop has no figures for.
// One arm per compute capability, as the guide's table lists them.
#[allow(clippy::match_same_arms)]
pub fn fma_lanes_per_sm(cc: (u32, u32)) -> Option<(u32, u32)> {
    Some(match cc {
        (6, 0) => (64, 32),
        (6, 1 | 2) => (128, 4),
        (7, 0) => (64, 32),
        (7, 2) => (64, 2),
        (7, 5) => (64, 2),
        (8, 0) => (64, 32),
        (8, 6 | 7 | 9) => (128, 2),
        (9, 0) => (128, 64),
        (10, 0 | 3) => (128, 64),
        (11 | 12, _) => (128, 2),
        _ => return None,
    })
}

/// A theoretical FMA peak and how it was computed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuPeak {
    pub precision: Precision,
    pub gflops: f64,
    pub formula: String,
}

impl DeviceAttributes {
    /// `sm_90`: the NVRTC target of this device.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }

    /// Theoretical DRAM bandwidth, decimal GB/s (module doc); `None` when the driver
    /// reports no memory clock or bus width (some integrated parts, CUDA 13 on some
    /// boards).
    pub fn theoretical_bandwidth_gbs(&self) -> Option<f64> {
        (self.mem_clock_khz > 0 && self.bus_width_bits > 0).then(|| {
            2.0 * f64::from(self.mem_clock_khz) * 1e3 * f64::from(self.bus_width_bits) / 8.0 / 1e9
        })
    }

    /// The bandwidth formula with this device's numbers.
    pub fn bandwidth_formula(&self) -> Option<String> {
        self.theoretical_bandwidth_gbs().map(|g| {
            format!(
                "2 x {:.0} MHz memory clock x {}-bit bus / 8 = {g:.0} GB/s",
                f64::from(self.mem_clock_khz) / 1e3,
                self.bus_width_bits
            )
        })
    }

    /// Theoretical FMA peak of `precision` (fp32 or fp64), from the SM count, the boost
    /// clock and the lanes per SM of the compute capability.
    pub fn fma_peak(&self, precision: Precision) -> Option<GpuPeak> {
        let (f32_lanes, f64_lanes) = fma_lanes_per_sm(self.compute_capability)?;
        let lanes = match precision {
            Precision::Fp32 => f32_lanes,
            Precision::Fp64 => f64_lanes,
            _ => return None,
        };
        if self.clock_khz == 0 || self.sm_count == 0 {
            return None;
        }
        let ghz = f64::from(self.clock_khz) / 1e6;
        let gflops = f64::from(self.sm_count) * f64::from(lanes) * 2.0 * ghz;
        Some(GpuPeak {
            precision,
            gflops,
            formula: format!(
                "{} SMs x {lanes} {} FMA lanes/SM (CC {}.{}) x 2 FLOP x {ghz:.3} GHz boost = {:.1} TFLOP/s",
                self.sm_count,
                precision.as_str(),
                self.compute_capability.0,
                self.compute_capability.1,
                gflops / 1e3
            ),
        })
    }

    /// One line for notes and `rooftop devices --local`.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} (CC {}.{}, {} SMs, {:.0} MHz boost, {:.1} GiB, L2 {:.0} MiB",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sm_count,
            f64::from(self.clock_khz) / 1e3,
            self.total_mem_bytes as f64 / f64::from(1u32 << 30),
            self.l2_bytes as f64 / f64::from(1u32 << 20),
        );
        if let Some(f) = self.bandwidth_formula() {
            let _ = write!(s, ", {f}");
        }
        s.push(')');
        s
    }

    /// The catalog device for this name, if any (by id, alias or full name).
    pub fn catalog_match(&self, catalog: &Catalog) -> Option<DeviceSpec> {
        catalog.lookup(&self.name).ok().cloned()
    }

    /// Notes that compare what the device reports with its catalog entry.
    pub fn compare_with(&self, spec: &DeviceSpec) -> Vec<String> {
        let mut notes = vec![format!(
            "catalog match: `{}` ({}) for the driver's name `{}`",
            spec.id, spec.name, self.name
        )];
        if spec.num_cu != self.sm_count {
            notes.push(format!(
                "the catalog says {} SMs but the device reports {}: a different SKU or a \
                 partitioned (MIG) device; the catalog's peaks may not apply",
                spec.num_cu, self.sm_count
            ));
        }
        if let Some(bw) = self.theoretical_bandwidth_gbs() {
            let rel = (bw - spec.peak_bw_gbs).abs() / spec.peak_bw_gbs;
            notes.push(format!(
                "DRAM bandwidth: catalog {:.0} GB/s, from the driver's attributes {bw:.0} GB/s \
                 ({}){}",
                spec.peak_bw_gbs,
                self.bandwidth_formula().unwrap_or_default(),
                if rel > 0.05 { " - they differ by more than 5%" } else { "" }
            ));
        }
        if let Some(p) = self.fma_peak(Precision::Fp32) {
            if let Some(c) =
                spec.peak(Precision::Fp32, rooftop_core::units::ExecUnit::Vector).map(|p| p.tflops)
            {
                notes.push(format!(
                    "FP32 FMA peak: catalog {c:.1} TFLOP/s, from the attributes {}",
                    p.formula
                ));
            }
        }
        notes
    }

    /// A device-file entry (docs/device-format.md) built from the attributes alone, for
    /// devices the catalog lacks: counts, sizes, limits and the DRAM bandwidth formula
    /// from the driver (provenance `driver`), FMA peaks from the lanes-per-SM table
    /// (`datasheet`, the formula as source). `measured_fma` (fp32, fp64 GFLOP/s from
    /// `rooftop ceilings`, `calibrated`) stands in for a peak the table cannot give.
    ///
    /// # Errors
    /// No memory clock or bus width (so no DRAM bandwidth), or no peak at all.
    pub(crate) fn device_entry(
        &self,
        measured_fma: &[(Precision, f64)],
    ) -> Result<DeviceEntry, String> {
        let bw = self.theoretical_bandwidth_gbs().ok_or_else(|| {
            format!(
                "{} reports no memory clock or bus width, so its DRAM bandwidth is unknown: \
                 pass --device-file with `memory.bandwidth_gbs`",
                self.name
            )
        })?;
        let (major, minor) = self.compute_capability;
        let mut e = DeviceEntry::new(&format!("cuda-{}", slug(&self.name)));
        e.name = Some(unplaced(self.name.clone()));
        e.aliases = Some(vec![self.name.clone()]);
        e.vendor = Some(unplaced("nvidia".to_string()));
        e.family = Some(unplaced(format!("sm{major}{minor}")));
        e.compute_capability = Some(unplaced(format!("{major}.{minor}")));
        e.set_defaults(
            "the CUDA driver's device attributes (cuDeviceGetAttribute)",
            Confidence::High,
            Provenance::Driver,
        );
        for p in [Precision::Fp32, Precision::Fp64] {
            let key = format!("{}_vector", p.as_str());
            if let Some(t) = self.fma_peak(p) {
                let f = Figure::new(t.gflops / 1e3)
                    .with_source(t.formula)
                    .with_confidence(Confidence::Medium)
                    .with_provenance(Provenance::Datasheet);
                e.set_peak(&key, f);
            } else if let Some((_, g)) = measured_fma.iter().find(|(q, _)| *q == p) {
                let f = Figure::new(g / 1e3)
                    .with_source("measured by rooftop ceilings (FMA kernel)")
                    .with_provenance(Provenance::Calibrated);
                e.set_peak(&key, f);
            }
        }
        if e.peak_tflops.is_none() {
            return Err(format!(
                "no FP32 peak for {} (compute capability {major}.{minor} is not in rooftop's \
                 lanes-per-SM table): run `rooftop ceilings --backend cuda` first or pass \
                 --device-file",
                self.name
            ));
        }
        let count = |v: u64| (v > 0).then(|| unplaced(Figure::new(v as f64)));
        let kib = |b: u64| (b > 0).then(|| unplaced(Figure::new(b as f64 / 1024.0)));
        let c = e.compute_mut();
        c.num_cu = Some(unplaced(Figure::new(f64::from(self.sm_count))));
        c.cu_kind = Some("SM".to_string());
        c.warp_size = Some(unplaced(Figure::new(f64::from(self.warp_size.max(1)))));
        c.boost_clock_mhz = count(u64::from(self.clock_khz))
            .map(|_| unplaced(Figure::new(f64::from(self.clock_khz) / 1e3)));
        let m = e.memory_mut();
        m.size_gb = count(self.total_mem_bytes)
            .map(|_| unplaced(Figure::new(self.total_mem_bytes as f64 / 1e9)));
        let formula = self.bandwidth_formula().unwrap_or_default();
        m.bandwidth_gbs = Some(unplaced(Figure::new(bw).with_source(formula)));
        m.l2_kib = kib(self.l2_bytes);
        let l = e.limits_mut();
        l.smem_kib_per_cu = kib(self.smem_per_sm_bytes);
        l.smem_kib_per_block_max = kib(self.smem_per_block_optin_bytes);
        l.smem_kib_per_block_default = kib(self.smem_per_block_bytes);
        l.smem_reserved_per_block_bytes = count(self.smem_reserved_per_block_bytes);
        l.max_threads_per_block = count(u64::from(self.max_threads_per_block));
        l.max_threads_per_cu = count(u64::from(self.max_threads_per_sm));
        l.regs_32bit_per_cu = count(u64::from(self.regs_per_sm));
        l.max_warps_per_cu = count(u64::from(self.max_threads_per_sm / self.warp_size.max(1)));
        l.max_blocks_per_cu = count(u64::from(self.max_blocks_per_sm));
        Ok(e)
    }

    /// The device's spec: the catalog entry when the name matches one, else one built
    /// from the attributes ([`DeviceAttributes::device_entry`]).
    ///
    /// # Errors
    /// As [`DeviceAttributes::device_entry`], or an attribute out of range.
    pub(crate) fn device_spec(
        &self,
        measured_fma: &[(Precision, f64)],
    ) -> Result<DeviceSpec, String> {
        if let Some(spec) = self.catalog_match(Catalog::builtin()) {
            return Ok(spec);
        }
        let entry = self.device_entry(measured_fma)?;
        Catalog::builtin()
            .resolve_entry(entry, "<CUDA device attributes>")
            .map_err(|e| format!("the device built from {}'s attributes: {e}", self.name))
    }
}

/// A synthetic H100 SXM as its driver reports it (CUDA 12/13, driver 550+): the
/// attribute values the tests and docs use.
pub fn h100_sxm_attributes() -> DeviceAttributes {
    DeviceAttributes {
        ordinal: 0,
        name: "NVIDIA H100 80GB HBM3".to_string(),
        compute_capability: (9, 0),
        sm_count: 132,
        clock_khz: 1_980_000,
        mem_clock_khz: 2_619_000,
        bus_width_bits: 5120,
        l2_bytes: 50 << 20,
        total_mem_bytes: 85_029_158_912,
        smem_per_sm_bytes: 233_472,
        smem_per_block_bytes: 49_152,
        smem_per_block_optin_bytes: 232_448,
        smem_reserved_per_block_bytes: 1024,
        regs_per_sm: 65_536,
        regs_per_block: 65_536,
        max_threads_per_sm: 2048,
        max_threads_per_block: 1024,
        max_blocks_per_sm: 32,
        warp_size: 32,
        pci: "0000:00:00".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h100_bandwidth_and_peaks_by_hand() {
        let d = h100_sxm_attributes();
        // 2 x 2.619e9 Hz x 5120 bit / 8 = 2 x 2.619e9 x 640 B = 3352.32 GB/s.
        let bw = d.theoretical_bandwidth_gbs().unwrap();
        assert!((bw - 3352.32).abs() < 1e-6, "{bw}");
        // 132 x 128 x 2 x 1.98 = 66 908.16 GFLOP/s; fp64 half of it.
        let p = d.fma_peak(Precision::Fp32).unwrap();
        assert!((p.gflops - 66_908.16).abs() < 1e-6, "{}", p.gflops);
        assert!(p.formula.contains("132 SMs x 128"), "{}", p.formula);
        let p = d.fma_peak(Precision::Fp64).unwrap();
        assert!((p.gflops - 33_454.08).abs() < 1e-6);
        assert!(d.fma_peak(Precision::Bf16).is_none());
        assert_eq!(d.arch(), "sm_90");
    }

    #[test]
    fn a100_and_l4_by_hand() {
        // A100 SXM 40GB: 108 SMs, 1410 MHz, 5120-bit HBM2 at 1215 MHz:
        // 2 x 1.215e9 x 640 = 1555.2 GB/s; 108 x 64 x 2 x 1.41 = 19 491.84 GFLOP/s.
        let a = DeviceAttributes {
            name: "NVIDIA A100-SXM4-40GB".into(),
            compute_capability: (8, 0),
            sm_count: 108,
            clock_khz: 1_410_000,
            mem_clock_khz: 1_215_000,
            ..h100_sxm_attributes()
        };
        assert!((a.theoretical_bandwidth_gbs().unwrap() - 1555.2).abs() < 1e-6);
        assert!((a.fma_peak(Precision::Fp32).unwrap().gflops - 19_491.84).abs() < 1e-6);
        // L4: 58 SMs x 128 lanes x 2 x 2.04 GHz = 30 289.92; 192-bit GDDR6 at 6251 MHz
        // (the driver's figure): 2 x 6.251e9 x 24 B = 300.048 GB/s.
        let l4 = DeviceAttributes {
            name: "NVIDIA L4".into(),
            compute_capability: (8, 9),
            sm_count: 58,
            clock_khz: 2_040_000,
            mem_clock_khz: 6_251_000,
            bus_width_bits: 192,
            ..h100_sxm_attributes()
        };
        assert!((l4.fma_peak(Precision::Fp32).unwrap().gflops - 30_289.92).abs() < 1e-6);
        assert!((l4.theoretical_bandwidth_gbs().unwrap() - 300.048).abs() < 1e-6);
        // fp64 at 2 lanes/SM: 58 x 2 x 2 x 2.04 = 473.28.
        assert!((l4.fma_peak(Precision::Fp64).unwrap().gflops - 473.28).abs() < 1e-6);
    }

    #[test]
    fn missing_memory_clock_gives_no_bandwidth_and_a_clear_error() {
        let d = DeviceAttributes {
            mem_clock_khz: 0,
            name: "Mystery GPU".into(),
            ..h100_sxm_attributes()
        };
        assert!(d.theoretical_bandwidth_gbs().is_none());
        let e = d.device_entry(&[]).unwrap_err();
        assert!(e.contains("Mystery GPU") && e.contains("--device-file"), "{e}");
    }

    #[test]
    fn h100_matches_the_catalog_and_notes_compare_both() {
        let d = h100_sxm_attributes();
        let spec = d.catalog_match(Catalog::builtin()).expect("H100 80GB HBM3 is in the catalog");
        assert_eq!(spec.id, "h100-sxm");
        let notes = d.compare_with(&spec);
        assert!(notes[0].contains("h100-sxm"), "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("3352 GB/s") && n.contains("3350")), "{notes:?}");
        assert!(!notes.iter().any(|n| n.contains("differ by more")), "{notes:?}");
        // The spec the backend hands out is the catalog's.
        assert_eq!(d.device_spec(&[]).unwrap().id, "h100-sxm");
    }

    #[test]
    fn unknown_device_gets_a_spec_from_its_attributes() {
        let d = DeviceAttributes { name: "NVIDIA Future GPU X".into(), ..h100_sxm_attributes() };
        assert!(d.catalog_match(Catalog::builtin()).is_none());
        let spec = d.device_spec(&[]).unwrap();
        assert_eq!(spec.id, "cuda-nvidia-future-gpu-x");
        assert_eq!(spec.num_cu, 132);
        assert!((spec.peak_bw_gbs - 3352.32).abs() < 1e-6);
        assert_eq!(spec.l2_bytes, Some(50 << 20));
        assert_eq!(spec.limits.max_warps_per_cu, Some(64));
        assert_eq!(spec.limits.smem_bytes_per_cu, Some(233_472));
        let p = spec.peak(Precision::Fp32, rooftop_core::units::ExecUnit::Vector).unwrap();
        assert!((p.tflops - 66.908_16).abs() < 1e-9);
        // Where each figure came from: the driver's attributes, and the guide's lanes per
        // SM for the peaks; never "catalog", which this device is not in.
        assert_eq!(spec.meta.provenance, Provenance::Driver);
        for key in
            ["compute.num_cu", "memory.bandwidth_gbs", "memory.l2_mib", "limits.smem_kib_per_cu"]
        {
            assert_eq!(spec.figure(key).provenance, Provenance::Driver, "{key}");
        }
        assert!(spec.figure("memory.bandwidth_gbs").source.contains("5120-bit bus"));
        assert_eq!(p.meta.provenance, Provenance::Datasheet);
        assert!(p.meta.source.contains("132 SMs x 128"), "{}", p.meta.source);
        // Occupancy works on the generated spec (family sm90).
        let occ = rooftop_core::occupancy::occupancy(
            &spec,
            &rooftop_core::occupancy::KernelResources {
                threads_per_block: 256,
                regs_per_thread: Some(32),
                smem_bytes: 0,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(occ.blocks_per_cu, 8);
        assert!((occ.occupancy_pct - 100.0).abs() < 1e-9);
    }

    #[test]
    fn unknown_capability_falls_back_to_measured_peaks() {
        let d = DeviceAttributes {
            name: "NVIDIA Future GPU Y".into(),
            compute_capability: (15, 0),
            ..h100_sxm_attributes()
        };
        assert!(d.device_entry(&[]).unwrap_err().contains("rooftop ceilings"));
        let spec = d.device_spec(&[(Precision::Fp32, 50_000.0)]).unwrap();
        let p = spec.peak(Precision::Fp32, rooftop_core::units::ExecUnit::Vector).unwrap();
        assert!((p.tflops - 50.0).abs() < 1e-9);
    }
}
