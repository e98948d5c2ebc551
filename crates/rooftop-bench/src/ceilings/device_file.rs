//! Measured ceilings written as a device file (docs/device-format.md) that every command
//! accepts with `--device-file`.

use super::bandwidth::bytes_label;
use super::{BandwidthCeiling, Ceilings};
use crate::cpu::info::quote;
use rooftop_core::device::{ArchFamily, Catalog, DeviceSpec, FigureMeta, MemLevel, Vendor};
use rooftop_core::units::Precision;
use std::fmt::Write as _;

/// [`device_file_toml`] for the ceilings measured `date`, checked to load back as a
/// device before it is handed out; `origin` names the file in the parser's errors.
///
/// # Errors
/// The text rooftop wrote does not parse (a bug in rooftop, said as such).
pub fn checked_device_file(
    base: &DeviceSpec,
    ceilings: &Ceilings,
    date: &str,
    origin: &str,
) -> Result<String, String> {
    let toml = device_file_toml(base, ceilings, date);
    rooftop_core::device::parse_device_file(&toml, origin)
        .map_err(|e| format!("the device file rooftop wrote does not parse: {e}"))?;
    Ok(toml)
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock: the date a device file
/// says its figures were measured on.
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A device file (docs/device-format.md) with `base`'s figures overridden by the
/// measured ceilings, `provenance = "calibrated"`.
///
/// A base from the built-in catalog is extended (`extends = "<id>"`, only the measured
/// figures written, as the format's example does); any other base (a CPU, a device
/// from a user file) is written out in full so that the file stands alone. Measured
/// figures: `memory.bandwidth_gbs` (best DRAM pattern), `llc/l2/l1_bandwidth_gbs` where
/// measured, and `fp32_vector`/`fp64_vector` both as peaks (the roofs the analysis
/// uses) and as achievable ceilings; each says what was measured at which working set.
pub fn device_file_toml(base: &DeviceSpec, ceilings: &Ceilings, date: &str) -> String {
    let measured = |what: String| format!("measured by rooftop ceilings on {date}: {what}");
    let cal = |value: f64, what: String| {
        format!(
            "{{ value = {}, source = {}, provenance = \"calibrated\", confidence = \"medium\" }}",
            num(value),
            quote(&measured(what))
        )
    };
    let best = |level: MemLevel| {
        ceilings
            .bandwidth
            .iter()
            .filter(|b| b.level == level)
            .max_by(|a, b| a.gbs.total_cmp(&b.gbs))
    };
    let bw_what = |b: &BandwidthCeiling| {
        format!(
            "{} at {} ({} ceilings, {} workers)",
            b.pattern.as_str(),
            bytes_label(b.working_set_bytes),
            ceilings.method,
            ceilings.parallelism
        )
    };
    let mut measured_peaks: Vec<(String, String)> = Vec::new();
    for p in [Precision::Fp32, Precision::Fp64] {
        if let Some(cc) =
            ceilings.compute.iter().find(|c| c.precision == p && c.variant == "vector")
        {
            let mut what = format!("{} vector FMA kernel", p.as_str());
            if let Some(t) = cc.theoretical_gflops {
                let _ = write!(
                    what,
                    ", {:.0}% of the theoretical {:.1} GFLOP/s",
                    100.0 * cc.gflops / t,
                    t
                );
            }
            measured_peaks.push((format!("{}_vector", p.as_str()), cal(cc.gflops / 1e3, what)));
        }
    }
    let in_catalog = Catalog::builtin().get(&base.id).is_some();

    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Written by rooftop ceilings on {date} ({} backend, {}).",
        ceilings.backend, ceilings.device_name
    );
    let _ = writeln!(t, "schema_version = 1\n\n[[device]]");
    if in_catalog {
        let _ = writeln!(t, "extends = {}", quote(&base.id));
        let _ = writeln!(t, "provenance = \"calibrated\"\nconfidence = \"medium\"");
        let _ =
            writeln!(t, "source = {}", quote(&format!("measured by rooftop ceilings on {date}")));
    } else {
        write_identity(&mut t, base);
    }

    // Compute.
    if !in_catalog {
        let _ = writeln!(t, "\n[device.compute]");
        let _ = writeln!(t, "num_cu = {}", fig(base, "compute.num_cu", f64::from(base.num_cu)));
        let _ = writeln!(t, "cu_kind = {}", quote(&base.cu_kind));
        let _ = writeln!(
            t,
            "warp_size = {}",
            fig(base, "compute.warp_size", f64::from(base.warp_size))
        );
        if let Some(w) = base.alt_warp_size {
            let _ =
                writeln!(t, "alt_warp_size = {}", fig(base, "compute.alt_warp_size", f64::from(w)));
        }
        if let Some(c) = base.boost_clock_mhz {
            let _ = writeln!(t, "boost_clock_mhz = {}", fig(base, "compute.boost_clock_mhz", c));
        }
    }

    // Peaks: measured ones replace the base's; the others are kept (full write only).
    let _ = writeln!(t, "\n[device.peak_tflops]");
    for (k, v) in &measured_peaks {
        let _ = writeln!(t, "{k} = {v}");
    }
    if !in_catalog {
        for p in &base.peaks {
            let k = format!("{}_{}", p.precision.as_str(), p.unit.as_str());
            if !measured_peaks.iter().any(|(m, _)| *m == k) {
                let _ = writeln!(t, "{k} = {}", fig(base, &format!("peak_tflops.{k}"), p.tflops));
            }
        }
    }
    if !measured_peaks.is_empty() || (!in_catalog && !base.achievable.is_empty()) {
        let _ = writeln!(t, "\n[device.achievable_tflops]");
        for (k, v) in &measured_peaks {
            let _ = writeln!(t, "{k} = {v}");
        }
        if !in_catalog {
            for p in &base.achievable {
                let k = format!("{}_{}", p.precision.as_str(), p.unit.as_str());
                if !measured_peaks.iter().any(|(m, _)| *m == k) {
                    let _ = writeln!(
                        t,
                        "{k} = {}",
                        fig(base, &format!("achievable_tflops.{k}"), p.tflops)
                    );
                }
            }
        }
    }
    if !in_catalog && !base.variant_peaks.is_empty() {
        let _ = writeln!(t, "\n[device.variant_peaks_tflops]");
        for (k, v) in &base.variant_peaks {
            let _ = writeln!(t, "{k} = {}", fig(base, &format!("variant_peaks_tflops.{k}"), *v));
        }
    }

    // Memory.
    let _ = writeln!(t, "\n[device.memory]");
    if !in_catalog {
        if let Some(m) = &base.mem_type {
            let _ = writeln!(t, "type = {}", quote(m));
        }
        if let Some(g) = base.mem_gb {
            let _ = writeln!(t, "size_gb = {}", fig(base, "memory.size_gb", g));
        }
        for (key, bytes) in [("l2", base.l2_bytes), ("llc", base.llc_bytes)] {
            if let Some(b) = bytes {
                let _ = writeln!(
                    t,
                    "{key}_kib = {}",
                    fig(base, &format!("memory.{key}_mib"), b as f64 / 1024.0)
                );
            }
        }
    }
    match best(MemLevel::Dram) {
        Some(b) => {
            let _ = writeln!(t, "bandwidth_gbs = {}", cal(b.gbs, bw_what(b)));
        }
        None if !in_catalog => {
            let _ = writeln!(
                t,
                "bandwidth_gbs = {}",
                fig(base, "memory.bandwidth_gbs", base.peak_bw_gbs)
            );
        }
        None => {}
    }
    for (level, key) in [(MemLevel::Llc, "llc"), (MemLevel::L2, "l2"), (MemLevel::L1, "l1")] {
        if let Some(b) = best(level) {
            let _ = writeln!(t, "{key}_bandwidth_gbs = {}", cal(b.gbs, bw_what(b)));
        } else if let (false, Some(r)) =
            (in_catalog, base.bandwidths.iter().find(|r| r.level == level))
        {
            let _ = writeln!(
                t,
                "{key}_bandwidth_gbs = {}",
                fig(base, &format!("memory.{key}_bandwidth_gbs"), r.gbs)
            );
        }
    }
    if !in_catalog {
        write_limits(&mut t, base);
    }
    t
}

/// Identity keys and figure defaults of a full (non-`extends`) device.
fn write_identity(t: &mut String, d: &DeviceSpec) {
    let _ = writeln!(t, "id = {}", quote(&d.id));
    let _ = writeln!(t, "name = {}", quote(&d.name));
    let vendor = match d.vendor {
        Vendor::Nvidia => "nvidia",
        Vendor::Amd => "amd",
        Vendor::Apple => "apple",
        Vendor::Intel => "intel",
        Vendor::Cpu => "cpu",
        Vendor::Other => "other",
    };
    let _ = writeln!(t, "vendor = \"{vendor}\"");
    if !d.arch.is_empty() {
        let _ = writeln!(t, "arch = {}", quote(&d.arch));
    }
    let family = match d.family {
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
    };
    let _ = writeln!(t, "family = \"{family}\"");
    for (k, v) in [
        ("chip", &d.chip),
        ("compute_capability", &d.compute_capability),
        ("llvm_target", &d.llvm_target),
    ] {
        if let Some(v) = v {
            let _ = writeln!(t, "{k} = {}", quote(v));
        }
    }
    if !d.aliases.is_empty() {
        let a: Vec<String> = d.aliases.iter().map(|a| quote(a)).collect();
        let _ = writeln!(t, "aliases = [{}]", a.join(", "));
    }
    if !d.unsupported.is_empty() {
        let a: Vec<String> = d.unsupported.iter().map(|a| quote(a)).collect();
        let _ = writeln!(t, "unsupported = [{}]", a.join(", "));
    }
    if let Some(n) = &d.note {
        let _ = writeln!(t, "note = {}", quote(n));
    }
    let _ = writeln!(t, "source = {}", quote(&d.meta.source));
    let _ = writeln!(t, "confidence = \"{}\"", d.meta.confidence.as_str());
    let _ = writeln!(t, "provenance = \"{}\"", d.meta.provenance.as_str());
}

/// `[device.limits]` of a full device.
fn write_limits(t: &mut String, d: &DeviceSpec) {
    let l = &d.limits;
    let kib = |b: Option<u64>| b.map(|b| b as f64 / 1024.0);
    let n32 = |v: Option<u32>| v.map(f64::from);
    let n64 = |v: Option<u64>| v.map(|v| v as f64);
    let rows: [(&str, Option<f64>); 19] = [
        ("smem_kib_per_cu", kib(l.smem_bytes_per_cu)),
        ("smem_kib_per_wgp", kib(l.smem_bytes_per_wgp)),
        ("smem_kib_per_block_max", kib(l.smem_bytes_per_block_max)),
        ("smem_kib_per_block_default", kib(l.smem_bytes_per_block_default)),
        ("smem_alloc_granularity_bytes", n64(l.smem_alloc_granularity_bytes)),
        ("smem_reserved_per_block_bytes", n64(l.smem_reserved_per_block_bytes)),
        ("max_threads_per_block", n32(l.max_threads_per_block)),
        ("max_threads_per_cu", n32(l.max_threads_per_cu)),
        ("regs_32bit_per_cu", n32(l.regs_32bit_per_cu)),
        ("reg_file_kib_per_cu", n32(l.reg_file_kib_per_cu)),
        ("max_regs_per_thread", n32(l.max_regs_per_thread)),
        ("max_warps_per_cu", n32(l.max_warps_per_cu)),
        ("max_blocks_per_cu", n32(l.max_blocks_per_cu)),
        ("simds_per_cu", n32(l.simds_per_cu)),
        ("max_waves_per_simd", n32(l.max_waves_per_simd)),
        ("vgpr_per_lane_per_simd", n32(l.vgpr_per_lane_per_simd)),
        ("agpr_per_lane_per_simd", n32(l.agpr_per_lane_per_simd)),
        ("vgpr_alloc_granule", n32(l.vgpr_alloc_granule)),
        ("sgpr_per_simd", n32(l.sgpr_per_simd)),
    ];
    if rows.iter().all(|(_, v)| v.is_none()) {
        return;
    }
    let _ = writeln!(t, "\n[device.limits]");
    for (k, v) in rows {
        if let Some(v) = v {
            let _ = writeln!(t, "{k} = {}", fig(d, &format!("limits.{k}"), v));
        }
    }
}

/// A figure of `d`: bare when its meta is the device default, else an inline table.
fn fig(d: &DeviceSpec, key: &str, value: f64) -> String {
    let m: &FigureMeta = d.figure(key);
    if *m == d.meta {
        num(value)
    } else {
        format!(
            "{{ value = {}, source = {}, confidence = \"{}\", provenance = \"{}\" }}",
            num(value),
            quote(&m.source),
            m.confidence.as_str(),
            m.provenance.as_str()
        )
    }
}

/// A TOML number that reads back as the same f64.
fn num(v: f64) -> String {
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn today_is_a_plausible_date() {
        let t = today_utc();
        assert_eq!(t.len(), 10);
        assert!(t.as_str() >= "2024-01-01", "{t}");
    }
    use crate::ceilings::measure::tests::fast;
    use crate::ceilings::{measure, BandwidthCeiling, CeilingOptions, ComputeCeiling, Pattern};
    use crate::cpu::info::{CpuInfo, TheoreticalPeak};
    use crate::mock::{MockBackend, MockConfig};
    use rooftop_core::device::parse_device_file;
    use rooftop_core::units::{ExecUnit, Provenance};
    use std::sync::atomic::AtomicBool;

    #[test]
    fn device_file_round_trips_through_the_parser() {
        let base = crate::mock::device_spec();
        let mut be = MockBackend::new(MockConfig::default());
        let mut opts = CeilingOptions::new(true, fast());
        opts.max_working_set = Some(1 << 20);
        opts.theoretical = vec![TheoreticalPeak {
            precision: Precision::Fp32,
            variant: "vector",
            gflops: 1000.0,
            formula: "mock".into(),
        }];
        let c = measure(&mut be, &opts, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let text = device_file_toml(&base, &c, "2026-01-02");
        let d = parse_device_file(&text, "ceilings.toml")
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
            .pop()
            .unwrap();
        assert_eq!(d.id, "mock");
        let dram = c.best_gbs(MemLevel::Dram).unwrap();
        assert_eq!(d.peak_bw_gbs, dram);
        let m = d.figure("memory.bandwidth_gbs");
        assert_eq!(m.provenance, Provenance::Calibrated);
        assert!(
            m.source.starts_with("measured by rooftop ceilings on 2026-01-02: "),
            "{}",
            m.source
        );
        let fp32 = c.vector_gflops(Precision::Fp32).unwrap();
        let p = d.peak(Precision::Fp32, ExecUnit::Vector).unwrap();
        assert_eq!(p.tflops, fp32 / 1e3);
        assert_eq!(p.meta.provenance, Provenance::Calibrated);
        assert!(p.meta.source.contains("% of the theoretical 1000.0 GFLOP/s"), "{}", p.meta.source);
        assert_eq!(d.achievable.len(), 2);
        // Unmeasured figures keep the base's values.
        assert_eq!((d.num_cu, d.warp_size), (4, 1));
        assert_eq!(d.vendor, Vendor::Other);
    }

    #[test]
    fn device_file_extends_catalog_devices() {
        let base = Catalog::builtin().get("h100-sxm").unwrap().clone();
        let c = Ceilings {
            backend: "cuda".into(),
            device_name: "H100".into(),
            method: "full".into(),
            parallelism: 132,
            bandwidth: vec![
                BandwidthCeiling {
                    level: MemLevel::Dram,
                    pattern: Pattern::Copy,
                    gbs: 3000.5,
                    working_set_bytes: 1 << 30,
                },
                BandwidthCeiling {
                    level: MemLevel::L2,
                    pattern: Pattern::Read,
                    gbs: 9100.0,
                    working_set_bytes: 16 << 20,
                },
            ],
            sweep: Vec::new(),
            compute: Vec::new(),
            notes: Vec::new(),
            caches: Vec::new(),
            adjustments: Vec::new(),
        };
        let text = device_file_toml(&base, &c, "2026-01-02");
        assert!(text.contains("extends = \"h100-sxm\""), "{text}");
        let d = parse_device_file(&text, "x").unwrap().pop().unwrap();
        assert_eq!(d.id, "h100-sxm");
        assert_eq!(d.peak_bw_gbs, 3000.5);
        assert_eq!(d.bandwidth(MemLevel::L2), Some(9100.0));
        assert_eq!(d.peaks, base.peaks, "unmeasured peaks inherited");
        assert_eq!(d.figure("memory.l2_bandwidth_gbs").provenance, Provenance::Calibrated);
    }

    #[test]
    fn cpu_device_file_round_trips() {
        let mut cpu = CpuInfo::from_files(std::path::Path::new("/nonexistent"));
        cpu.model_name = "Test \"CPU\"".into();
        cpu.fma_units = Some(2);
        cpu.fma_width_bits = Some(256);
        cpu.uarch = Some("Zen 4".into());
        cpu.measured_mhz = Some(3000.0);
        cpu.l2_bytes = Some(1 << 20);
        let c = Ceilings {
            backend: "cpu".into(),
            device_name: "Test".into(),
            method: "quick".into(),
            parallelism: 1,
            bandwidth: vec![BandwidthCeiling {
                level: MemLevel::Dram,
                pattern: Pattern::Triad,
                gbs: 20.0,
                working_set_bytes: 1 << 27,
            }],
            sweep: Vec::new(),
            caches: Vec::new(),
            adjustments: Vec::new(),
            compute: vec![ComputeCeiling {
                precision: Precision::Fp64,
                variant: "vector".into(),
                gflops: 40.0,
                theoretical_gflops: Some(48.0),
                theoretical_formula: None,
            }],
            notes: Vec::new(),
        };
        let base = cpu.device_spec(Some(&c)).unwrap();
        let text = device_file_toml(&base, &c, "2026-01-02");
        let d =
            parse_device_file(&text, "x").unwrap_or_else(|e| panic!("{e}\n{text}")).pop().unwrap();
        assert_eq!(d.name, "Test \"CPU\" (1 cores)");
        assert_eq!(d.family, ArchFamily::Cpu);
        assert_eq!(d.peak(Precision::Fp64, ExecUnit::Vector).unwrap().tflops, 0.04);
        // fp32 not measured: the theoretical 1 core x 3 GHz x 16 lanes x 2 = 96 GFLOP/s.
        let p = d.peak(Precision::Fp32, ExecUnit::Vector).unwrap();
        assert!((p.tflops - 0.096).abs() < 1e-12);
        assert_eq!(p.meta.provenance, Provenance::Catalog);
        assert_eq!(d.l2_bytes, Some(1 << 20));
        assert_eq!(d.peak_bw_gbs, 20.0);
    }
}
