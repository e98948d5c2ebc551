//! Measured ceilings written as a device file (docs/device-format.md) that every command
//! accepts with `--device-file`: a [`DeviceEntry`] built from the ceilings (on top of the
//! device's own entry) and written with `toml::to_string`, never TOML text by hand.

use super::bandwidth::bytes_label;
use super::{BandwidthCeiling, Ceilings};
use crate::error::DeviceFileWriteError;
use rooftop_core::device::{unplaced, Catalog, DeviceEntry, DeviceFile, DeviceSpec, Figure};
use rooftop_core::device::{MemLevel, MemorySection};
use rooftop_core::units::{Confidence, Precision, Provenance};
use std::fmt::Write as _;

/// [`device_file_toml`] for the ceilings measured `date`, checked to load back as a
/// device before it is handed out; `origin` names the file in the parser's errors.
///
/// # Errors
/// The entry could not be written, or the text rooftop wrote does not load back (a bug
/// in rooftop, said as such).
pub fn checked_device_file(
    base: &DeviceSpec,
    ceilings: &Ceilings,
    date: &str,
    origin: &str,
) -> Result<String, DeviceFileWriteError> {
    let toml = device_file_toml(base, ceilings, date)?;
    rooftop_core::device::parse_device_file(&toml, origin)
        .map_err(DeviceFileWriteError::LoadBack)?;
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

/// The best measured bandwidth ceiling of `level`, if any.
pub(crate) fn best_bandwidth(c: &Ceilings, level: MemLevel) -> Option<&BandwidthCeiling> {
    c.bandwidth.iter().filter(|b| b.level == level).max_by(|a, b| a.gbs.total_cmp(&b.gbs))
}

/// A device id made of a name: lowercase ASCII letters and digits, runs of anything else
/// one `-` (`AMD EPYC 9R14 96-Core` -> `amd-epyc-9r14-96-core`).
pub(crate) fn slug(name: &str) -> String {
    name.to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// A device file (docs/device-format.md) with `base`'s figures overridden by the
/// measured ceilings, `provenance = "calibrated"`, written with `toml::to_string` after a
/// comment line that says when and on what it was measured.
///
/// A base from the built-in catalog is extended (`extends = "<id>"`, only the measured
/// figures written, as the format's example does); any other base (a CPU, a device
/// from a user file) is written out in full ([`DeviceEntry::from_spec`]) so that the file
/// stands alone. Measured figures: `memory.bandwidth_gbs` (best DRAM pattern),
/// `llc/l2/l1_bandwidth_gbs` where measured, and `fp32_vector`/`fp64_vector` both as
/// peaks (the roofs the analysis uses) and as achievable ceilings; each says what was
/// measured at which working set.
///
/// # Errors
/// A figure TOML cannot hold (never for measured ceilings, which are finite).
pub fn device_file_toml(
    base: &DeviceSpec,
    ceilings: &Ceilings,
    date: &str,
) -> Result<String, DeviceFileWriteError> {
    let entry = ceilings_entry(base, ceilings, date);
    let text = DeviceFile::new(vec![entry]).to_toml().map_err(DeviceFileWriteError::Write)?;
    // A comment is one line: the device name is the backend's, and may hold anything.
    let device: String =
        ceilings.device_name.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    Ok(format!(
        "# Written by rooftop ceilings on {date} ({} backend, {device}).\n{text}",
        ceilings.backend
    ))
}

/// The `[[device]]` entry of [`device_file_toml`].
pub fn ceilings_entry(base: &DeviceSpec, ceilings: &Ceilings, date: &str) -> DeviceEntry {
    let cal = |value: f64, what: String| {
        Figure::new(value)
            .with_source(format!("measured by rooftop ceilings on {date}: {what}"))
            .with_provenance(Provenance::Calibrated)
            .with_confidence(Confidence::Medium)
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
    let mut e = if Catalog::builtin().get(&base.id).is_some() {
        let mut e = DeviceEntry::extending(&base.id);
        e.set_defaults(
            &format!("measured by rooftop ceilings on {date}"),
            Confidence::Medium,
            Provenance::Calibrated,
        );
        e
    } else {
        DeviceEntry::from_spec(base)
    };
    for p in [Precision::Fp32, Precision::Fp64] {
        let Some(cc) = ceilings.compute.iter().find(|c| c.precision == p && c.variant == "vector")
        else {
            continue;
        };
        let mut what = format!("{} vector FMA kernel", p.as_str());
        if let Some(t) = cc.theoretical_gflops {
            let _ =
                write!(what, ", {:.0}% of the theoretical {:.1} GFLOP/s", 100.0 * cc.gflops / t, t);
        }
        let key = format!("{}_vector", p.as_str());
        e.set_peak(&key, cal(cc.gflops / 1e3, what.clone()));
        e.set_achievable(&key, cal(cc.gflops / 1e3, what));
    }
    let m = e.memory_mut();
    if let Some(b) = best_bandwidth(ceilings, MemLevel::Dram) {
        m.bandwidth_gbs = Some(unplaced(cal(b.gbs, bw_what(b))));
    }
    for level in [MemLevel::Llc, MemLevel::L2, MemLevel::L1] {
        let Some(b) = best_bandwidth(ceilings, level) else { continue };
        let f = Some(unplaced(cal(b.gbs, bw_what(b))));
        match level {
            MemLevel::Llc => m.llc_bandwidth_gbs = f,
            MemLevel::L2 => m.l2_bandwidth_gbs = f,
            _ => m.l1_bandwidth_gbs = f,
        }
    }
    if e.memory.as_ref().is_some_and(|m| *m == MemorySection::default()) {
        e.memory = None;
    }
    e
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
    use rooftop_core::device::{parse_device_file, ArchFamily, Vendor};
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
        let text = device_file_toml(&base, &c, "2026-01-02").unwrap();
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
        let text = device_file_toml(&base, &c, "2026-01-02").unwrap();
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
        let text = device_file_toml(&base, &c, "2026-01-02").unwrap();
        let d =
            parse_device_file(&text, "x").unwrap_or_else(|e| panic!("{e}\n{text}")).pop().unwrap();
        assert_eq!(d.name, "Test \"CPU\" (1 cores)");
        assert_eq!(d.family, ArchFamily::Cpu);
        assert_eq!(d.peak(Precision::Fp64, ExecUnit::Vector).unwrap().tflops, 0.04);
        // fp32 not measured: the theoretical 1 core x 3 GHz x 16 lanes x 2 = 96 GFLOP/s.
        let p = d.peak(Precision::Fp32, ExecUnit::Vector).unwrap();
        assert!((p.tflops - 0.096).abs() < 1e-12);
        assert_eq!(p.meta.provenance, Provenance::Datasheet);
        assert_eq!(d.l2_bytes, Some(1 << 20));
        assert_eq!(d.peak_bw_gbs, 20.0);
    }
}
