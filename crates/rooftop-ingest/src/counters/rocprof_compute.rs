//! rocprof-compute (Omniperf) workload folders: `pmc_perf.csv` (the joined per-dispatch
//! counter table, 2,000+ columns with `_1`, `_2` … pass-join duplicates), `sysinfo.csv`
//! (→ [`DeviceInfo`]), `roofline.csv` (→ measured roofs; 2.x and 3.x headers),
//! `timestamps.csv` (fills durations `pmc_perf.csv` lacks) and the `SQ_*LEVEL*.csv`
//! special passes (their `SQ_ACCUM_PREV_HIRES` accumulators), `log.txt` (tool version).

use super::rocprof::{parse_f64, parse_table, wide_dispatches, Table, WideNotes};
use super::text::read_text;
use super::CounterError;
use rooftop_core::counters::{
    CounterFormat, CounterSet, CounterSource, DeviceInfo, Dispatch, MeasuredRoof,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Reads the `sysinfo.csv` text (header + one row) into a [`DeviceInfo`].
pub fn device_from_sysinfo(path: &Path, text: &str) -> Result<DeviceInfo, CounterError> {
    let t = parse_table(path, text)?;
    let Some((_, row)) = t.rows.first() else {
        return Err(CounterError::at_line(path, 2, "sysinfo.csv has a header but no row"));
    };
    let mut dev = DeviceInfo::default();
    let u32v = |s: &str| parse_f64(s).filter(|v| *v >= 0.0).map(|v| v as u32);
    for (k, v) in t.header.iter().zip(row.iter()) {
        let v = v.trim();
        if v.is_empty() {
            continue;
        }
        match k.to_ascii_lowercase().as_str() {
            "gpu_model" => dev.name = Some(v.to_string()),
            "gpu_arch" => dev.arch = Some(v.to_string()),
            "cu_per_gpu" => dev.compute_units = u32v(v),
            "simd_per_cu" => dev.simd_per_cu = u32v(v),
            "wave_size" => dev.wave_size = u32v(v),
            "max_waves_per_cu" => dev.max_waves_per_cu = u32v(v),
            "max_sclk" => dev.max_sclk_mhz = parse_f64(v),
            "cur_sclk" => dev.cur_sclk_mhz = parse_f64(v),
            "max_mclk" => dev.mclk_mhz = parse_f64(v),
            // KB in sysinfo.csv.
            "gpu_l2" => dev.l2_bytes = parse_f64(v).map(|kb| (kb * 1024.0) as u64),
            "gpu_l1" => dev.l1_bytes = parse_f64(v).map(|kb| (kb * 1024.0) as u64),
            "lds_banks_per_cu" => dev.lds_banks_per_cu = u32v(v),
            "num_xcd" => dev.num_xcd = u32v(v),
            "hbm_bw" => dev.hbm_bw_gbs = parse_f64(v),
            _ => {
                dev.extra.insert(k.clone(), v.to_string());
            }
        }
    }
    Ok(dev)
}

/// What a `roofline.csv` column measures: (canonical name, kind, precision).
fn roof_kind(base: &str) -> Option<(String, &'static str, Option<&'static str>)> {
    let b = base.to_ascii_lowercase();
    let mem =
        [("hbmbw", "hbm"), ("mallbw", "mall"), ("l2bw", "l2"), ("l1bw", "l1"), ("ldsbw", "lds")];
    for (k, kind) in mem {
        if b == k {
            return Some((base.to_string(), kind, None));
        }
    }
    let (unit, rest) = match b.strip_prefix("mfma") {
        Some(r) => ("mfma", r),
        None => ("valu", b.as_str()),
    };
    let rest = rest.strip_suffix("flops").or_else(|| rest.strip_suffix("ops"))?;
    let prec = match rest {
        "f4" | "fp4" => "fp4",
        "f6" | "fp6" => "fp6",
        "f8" | "fp8" => "fp8",
        "f16" | "fp16" => "fp16",
        "bf16" => "bf16",
        "f32" | "fp32" => "fp32",
        "f64" | "fp64" => "fp64",
        "i8" | "fi8" => "int8",
        "i32" => "int32",
        "i64" => "int64",
        _ => return None,
    };
    Some((base.to_string(), unit, Some(prec)))
}

/// Reads `roofline.csv` text: the first device row (rocprof-compute benchmarks every GPU
/// in the node; the profiled one is device 0 unless `--device` said otherwise).
/// Values of 0 mean "not supported on this GPU" and are skipped.
pub fn roofs_from_csv(
    path: &Path,
    text: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<MeasuredRoof>, CounterError> {
    let t = parse_table(path, text)?;
    let Some((line, row)) = t.rows.first() else {
        return Err(CounterError::at_line(path, 2, "roofline.csv has a header but no row"));
    };
    if t.rows.len() > 1 {
        notes.push(format!(
            "roofline.csv holds {} devices; the first row (device {}) is used",
            t.rows.len(),
            row.get(0).unwrap_or("?")
        ));
    }
    // Group columns into (mean, low, high) by base name.
    let mut bases: Vec<String> = Vec::new();
    let mut vals: BTreeMap<String, [Option<f64>; 3]> = BTreeMap::new();
    for (i, h) in t.header.iter().enumerate() {
        if h.eq_ignore_ascii_case("device") {
            continue;
        }
        let (base, slot) = if let Some(b) = strip_suffix_ci(h, "low") {
            (b, 1)
        } else if let Some(b) = strip_suffix_ci(h, "high") {
            (b, 2)
        } else {
            (h.as_str(), 0)
        };
        // 2.x typo `MFMAFI8OpsLow` belongs to `MFMAI8Ops`.
        let base = if base.eq_ignore_ascii_case("MFMAFI8Ops") { "MFMAI8Ops" } else { base };
        let key = base.to_ascii_lowercase();
        let v = match row.get(i).map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => Some(parse_f64(s).ok_or_else(|| {
                CounterError::at_field(
                    path,
                    *line,
                    h.clone(),
                    format!("expected a number, found `{s}`"),
                )
            })?),
        };
        if slot == 0 && !bases.iter().any(|b| b.eq_ignore_ascii_case(base)) {
            bases.push(base.to_string());
        }
        if let Some(e) = vals.entry(key).or_insert([None; 3]).get_mut(slot) {
            *e = v;
        }
    }
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for base in bases {
        let Some([Some(mean), low, high]) = vals.get(&base.to_ascii_lowercase()).copied() else {
            continue;
        };
        let Some((name, kind, precision)) = roof_kind(&base) else {
            notes.push(format!("roofline.csv column `{base}` not recognised; skipped"));
            continue;
        };
        if mean <= 0.0 {
            skipped.push(name);
            continue;
        }
        out.push(MeasuredRoof {
            name,
            kind: kind.to_string(),
            precision: precision.map(str::to_string),
            value: mean,
            low,
            high,
        });
    }
    if !skipped.is_empty() {
        notes.push(format!(
            "roofline.csv: {} written as 0 (not supported on this GPU): skipped",
            skipped.join(", ")
        ));
    }
    Ok(out)
}

fn strip_suffix_ci<'a>(s: &'a str, suffix: &str) -> Option<&'a str> {
    let n = s.len().checked_sub(suffix.len())?;
    let (head, tail) = (s.get(..n)?, s.get(n..)?);
    (tail.eq_ignore_ascii_case(suffix) && !head.is_empty()).then_some(head)
}

/// Reads a `pmc_perf.csv` given as text (no side files).
pub fn read_str(name: &str, text: &str) -> Result<CounterSet, CounterError> {
    let path = Path::new(name);
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let t = parse_table(path, text)?;
    let mut set = CounterSet {
        source: CounterSource {
            format: CounterFormat::RocprofCompute,
            files: vec![name.to_string()],
            tool_version: None,
            notes: Vec::new(),
        },
        device: DeviceInfo::default(),
        measured_roofs: Vec::new(),
        dispatches: Vec::new(),
        aggregates: Vec::new(),
        activity: None,
    };
    let mut wn = WideNotes::default();
    set.dispatches = wide_dispatches(path, &t, &mut wn)?;
    wn.into_notes(name, &mut set.source.notes);
    Ok(set)
}

fn read_side_table(p: &Path) -> Option<Table> {
    let text = read_text(p).ok()?;
    parse_table(p, &text).ok()
}

/// Merges one `SQ_*LEVEL*.csv` special pass into the dispatches, by id and name.
fn merge_level_pass(p: &Path, stem: &str, dispatches: &mut [Dispatch], notes: &mut Vec<String>) {
    let Some(t) = read_side_table(p) else {
        notes.push(format!("{stem}.csv: unreadable, skipped"));
        return;
    };
    let mut wn = WideNotes::default();
    let Ok(rows) = wide_dispatches(p, &t, &mut wn) else {
        notes.push(format!("{stem}.csv: not a per-dispatch table, skipped"));
        return;
    };
    let mut merged = 0usize;
    let mut mismatched = 0usize;
    for r in rows {
        let Some(d) = dispatches.iter_mut().find(|d| d.id == r.id) else { continue };
        if d.name != r.name {
            mismatched += 1;
            continue;
        }
        merged += 1;
        for (k, v) in &r.counters {
            // The accumulator's meaning depends on the pass; keep every pass's under a
            // tagged name, and the wave-level one (occupancy) also under its own name.
            if matches!(&**k, "SQ_ACCUM_PREV_HIRES" | "GRBM_GUI_ACTIVE" | "GRBM_COUNT") {
                d.counters.insert(format!("{k}@{stem}").into(), *v);
                if stem == "SQ_LEVEL_WAVES" && &**k == "SQ_ACCUM_PREV_HIRES" {
                    d.counters.insert(k.clone(), *v);
                }
            } else {
                d.counters.entry(k.clone()).or_insert(*v);
            }
        }
    }
    notes.push(format!(
        "{stem}.csv merged into {merged} dispatches{}",
        if mismatched > 0 {
            format!(" ({mismatched} rows skipped: kernel name differs at the same id)")
        } else {
            String::new()
        }
    ));
}

/// Fills durations from `timestamps.csv` where `pmc_perf.csv` has none.
fn fill_timestamps(p: &Path, dispatches: &mut [Dispatch], notes: &mut Vec<String>) {
    if dispatches.iter().all(|d| d.duration_ns.is_some()) {
        return;
    }
    let Some(t) = read_side_table(p) else { return };
    let mut wn = WideNotes::default();
    let Ok(rows) = wide_dispatches(p, &t, &mut wn) else { return };
    let mut filled = 0usize;
    for r in rows {
        let Some(d) = dispatches.iter_mut().find(|d| d.id == r.id && d.name == r.name) else {
            continue;
        };
        if d.duration_ns.is_none() && r.duration_ns.is_some() {
            d.duration_ns = r.duration_ns;
            d.start_ns = r.start_ns;
            d.end_ns = r.end_ns;
            filled += 1;
        }
    }
    let missing = dispatches.iter().filter(|d| d.duration_ns.is_none()).count();
    notes.push(format!(
        "timestamps.csv filled {filled} durations; {missing} dispatches still have no usable \
         duration"
    ));
}

/// The tool version from the first line of `log.txt` (`Omniperf version: 2.0.0-RC1`).
fn version_from_log(dir: &Path) -> Option<String> {
    let text = std::fs::read(dir.join("log.txt")).ok()?;
    let text = String::from_utf8_lossy(&text);
    text.lines().take(20).find_map(|l| {
        let (tool, ver) = l.split_once("version:")?;
        let tool = tool.trim();
        let lower = tool.to_ascii_lowercase();
        (lower.contains("omniperf") || lower.contains("rocprof"))
            .then(|| format!("{tool} {}", ver.trim()))
    })
}

/// Reads a workload folder, or its `pmc_perf.csv`.
pub fn read(path: &Path) -> Result<CounterSet, CounterError> {
    let (dir, pmc): (PathBuf, PathBuf) = if path.is_dir() {
        (path.to_path_buf(), path.join("pmc_perf.csv"))
    } else {
        (path.parent().map(Path::to_path_buf).unwrap_or_default(), path.to_path_buf())
    };
    if !pmc.is_file() {
        return Err(CounterError::unknown(
            path,
            "not a rocprof-compute workload folder: no pmc_perf.csv",
        ));
    }
    let text = read_text(&pmc)?;
    let mut set = read_str(&pmc.display().to_string(), &text)?;
    set.source.tool_version = version_from_log(&dir);

    let sysinfo = dir.join("sysinfo.csv");
    if sysinfo.is_file() {
        let text = read_text(&sysinfo)?;
        set.device = device_from_sysinfo(&sysinfo, &text)?;
        set.source.files.push(sysinfo.display().to_string());
    } else {
        set.source.notes.push("no sysinfo.csv: device unknown".to_string());
    }
    let roof = dir.join("roofline.csv");
    if roof.is_file() {
        let text = read_text(&roof)?;
        set.measured_roofs = roofs_from_csv(&roof, &text, &mut set.source.notes)?;
        set.source.files.push(roof.display().to_string());
    }
    let mut level_files: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter_map(|p| {
                    let stem = p.file_stem()?.to_str()?.to_string();
                    let is_csv = p.extension().is_some_and(|x| x.eq_ignore_ascii_case("csv"));
                    (is_csv && stem.starts_with("SQ_") && stem.contains("LEVEL"))
                        .then_some((p, stem))
                })
                .collect()
        })
        .unwrap_or_default();
    level_files.sort();
    for (p, stem) in level_files {
        merge_level_pass(&p, &stem, &mut set.dispatches, &mut set.source.notes);
        set.source.files.push(p.display().to_string());
    }
    let ts = dir.join("timestamps.csv");
    if ts.is_file() {
        fill_timestamps(&ts, &mut set.dispatches, &mut set.source.notes);
        set.source.files.push(ts.display().to_string());
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roofline_3x_header() {
        let text = "Device,HBMBw,HBMBwLow,HBMBwHigh,MALLBw,MALLBwLow,MALLBwHigh,FP32Flops,\
                    FP32FlopsLow,FP32FlopsHigh,MFMAF4Flops,MFMAF4FlopsLow,MFMAF4FlopsHigh,\
                    MFMAF16Flops,MFMAF16FlopsLow,MFMAF16FlopsHigh,I8Ops,I8OpsLow,I8OpsHigh\n\
                    0,4250.5,4200,4300,10000,9000,11000,130000,129000,131000,0,0,0,\
                    916000,915000,917000,5000,4900,5100\n";
        let mut notes = Vec::new();
        let r = roofs_from_csv(Path::new("roofline.csv"), text, &mut notes).unwrap();
        let names: Vec<&str> = r.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["HBMBw", "MALLBw", "FP32Flops", "MFMAF16Flops", "I8Ops"]);
        assert_eq!(r[0].kind, "hbm");
        assert_eq!((r[0].value, r[0].low, r[0].high), (4250.5, Some(4200.0), Some(4300.0)));
        assert_eq!(r[1].kind, "mall");
        assert_eq!((r[3].kind.as_str(), r[3].precision.as_deref()), ("mfma", Some("fp16")));
        assert_eq!((r[4].kind.as_str(), r[4].precision.as_deref()), ("valu", Some("int8")));
        assert!(notes.iter().any(|n| n.contains("MFMAF4Flops")));
    }
}
