//! The roofs a chart draws, with what the roofs table says about each: from a device
//! spec (every peak per precision and unit, every memory level, achievable figures), from
//! an analysis alone (the roofs it used), from a bench export (`device.roofs`, the
//! measured ceilings) and from measured ceilings.
//!
//! Compute roofs of equal value and style are merged on the chart (`fp16 / bf16
//! matrix`) so that the labels stay readable; the table lists each one.

use crate::svg::{Roof, RoofStyle};
use crate::MISSING;
use rooftop_core::analysis::Analysis;
use rooftop_core::device::{DeviceSpec, FigureMeta, MemLevel};
use rooftop_core::schema::bench::RoofRef;
use rooftop_core::schema::ceilings::Ceilings;
use rooftop_core::units::{si, ExecUnit, Precision, Provenance};

/// A roof and its provenance, for the chart and the roofs table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RoofEntry {
    pub roof: Roof,
    /// The name in the table (`fp16 matrix peak`).
    pub name: String,
    pub value_text: String,
    pub provenance: String,
    pub confidence: String,
    pub source: String,
}

pub(crate) fn style_of(p: Provenance) -> RoofStyle {
    match p {
        Provenance::Catalog | Provenance::Model | Provenance::Driver | Provenance::Datasheet => {
            RoofStyle::Catalog
        }
        Provenance::Calibrated | Provenance::Measured => RoofStyle::Measured,
        Provenance::Counters => RoofStyle::Counters,
    }
}

fn rate_unit(p: Precision) -> &'static str {
    if p.is_integer() {
        "OP/s"
    } else {
        "FLOP/s"
    }
}

fn level_name(l: MemLevel) -> String {
    l.as_str().to_ascii_uppercase()
}

#[allow(clippy::too_many_arguments)]
fn entry(
    label: String,
    name: String,
    value: f64,
    memory: bool,
    style: RoofStyle,
    primary: bool,
    unit: &str,
    meta: &FigureMeta,
) -> RoofEntry {
    let value_text = si(value, unit);
    RoofEntry {
        roof: Roof {
            tip: format!(
                "{name}: {value_text}\n{} ({} confidence)\n{}",
                meta.provenance, meta.confidence, meta.source
            ),
            label,
            value,
            memory,
            style,
            primary,
        },
        name,
        value_text,
        provenance: meta.provenance.to_string(),
        confidence: meta.confidence.to_string(),
        source: meta.source.clone(),
    }
}

/// Every roof of a device; `primary` is the compute roof the analysis used.
pub(crate) fn device_roofs(
    d: &DeviceSpec,
    primary: Option<(Precision, ExecUnit)>,
) -> Vec<RoofEntry> {
    let mut out = Vec::new();
    for p in &d.peaks {
        let label = format!("{} {}", p.precision, p.unit);
        out.push(entry(
            label.clone(),
            format!("{label} peak"),
            p.tflops * 1e12,
            false,
            style_of(p.meta.provenance),
            primary == Some((p.precision, p.unit)),
            rate_unit(p.precision),
            &p.meta,
        ));
    }
    for p in &d.achievable {
        let label = format!("{} {} achievable", p.precision, p.unit);
        out.push(entry(
            label.clone(),
            label,
            p.tflops * 1e12,
            false,
            RoofStyle::Achievable,
            false,
            rate_unit(p.precision),
            &p.meta,
        ));
    }
    let dram = d.figure("memory.bandwidth_gbs");
    out.push(entry(
        "DRAM".to_string(),
        "DRAM bandwidth".to_string(),
        d.peak_bw_gbs * 1e9,
        true,
        style_of(dram.provenance),
        true,
        "B/s",
        dram,
    ));
    for b in &d.bandwidths {
        if b.level == MemLevel::Dram && (b.gbs - d.peak_bw_gbs).abs() <= 1e-9 * d.peak_bw_gbs {
            continue;
        }
        let label = level_name(b.level);
        out.push(entry(
            label.clone(),
            format!("{label} bandwidth"),
            b.gbs * 1e9,
            true,
            style_of(b.meta.provenance),
            false,
            "B/s",
            &b.meta,
        ));
    }
    out
}

/// The roofs an analysis used, when the device spec is not at hand.
pub(crate) fn analysis_roofs(a: &Analysis) -> Vec<RoofEntry> {
    let r = &a.roofline;
    let mut out = Vec::new();
    if let Some(c) = &r.compute_roof {
        let label = format!("{} {}", c.precision, c.unit);
        out.push(entry(
            label.clone(),
            format!("{label} peak"),
            c.tflops * 1e12,
            false,
            style_of(c.meta.provenance),
            true,
            rate_unit(c.precision),
            &c.meta,
        ));
    }
    out.push(entry(
        "DRAM".to_string(),
        "DRAM bandwidth".to_string(),
        r.bandwidth_gbs * 1e9,
        true,
        style_of(r.bandwidth_meta.provenance),
        true,
        "B/s",
        &r.bandwidth_meta,
    ));
    for l in &r.levels {
        let label = level_name(l.level);
        let meta = FigureMeta {
            source: format!("{} bandwidth of {}", l.level.as_str(), a.device.name),
            ..FigureMeta::default()
        };
        out.push(entry(
            label.clone(),
            format!("{label} bandwidth"),
            l.bandwidth_gbs * 1e9,
            true,
            RoofStyle::Catalog,
            false,
            "B/s",
            &meta,
        ));
    }
    out
}

/// A bench export's roof (`device.roofs`, `measured_ceiling`, `theoretical_peak`).
pub(crate) fn roof_ref(r: &RoofRef, primary: bool) -> Option<RoofEntry> {
    let (value, memory, unit) = match r.unit.as_str() {
        "GB/s" => (r.value * 1e9, true, "B/s"),
        "GFLOP/s" => (r.value * 1e9, false, "FLOP/s"),
        _ => return None,
    };
    let meta =
        FigureMeta { source: r.source.clone(), provenance: r.provenance, ..FigureMeta::default() };
    let label =
        if memory && r.what.starts_with("dram") { "DRAM".to_string() } else { r.what.clone() };
    let mut e =
        entry(label, r.what.clone(), value, memory, style_of(r.provenance), primary, unit, &meta);
    // Bench roofs carry no confidence: do not show the default as if it were stated.
    e.confidence = MISSING.to_string();
    e.roof.tip = format!("{}: {}\n{}\n{}", r.what, e.value_text, r.provenance, r.source);
    Some(e)
}

/// Measured ceilings as roofs: the best bandwidth of each level, each compute ceiling.
pub(crate) fn ceiling_roofs(c: &Ceilings) -> Vec<RoofEntry> {
    let mut out = Vec::new();
    for level in [MemLevel::Dram, MemLevel::Llc, MemLevel::L2, MemLevel::L1] {
        let Some(best) =
            c.bandwidth.iter().filter(|b| b.level == level).max_by(|a, b| a.gbs.total_cmp(&b.gbs))
        else {
            continue;
        };
        let label = level_name(level);
        let meta = FigureMeta {
            source: format!(
                "rooftop ceilings ({}) on {}: {} at {}",
                c.method,
                c.device_name,
                best.pattern.as_str(),
                si(best.working_set_bytes as f64, "B")
            ),
            provenance: Provenance::Measured,
            ..FigureMeta::default()
        };
        let mut e = entry(
            format!("{label} (measured)"),
            format!("{label} bandwidth, measured"),
            best.gbs * 1e9,
            true,
            RoofStyle::Measured,
            level == MemLevel::Dram,
            "B/s",
            &meta,
        );
        e.confidence = MISSING.to_string();
        out.push(e);
    }
    for p in &c.compute {
        let meta = FigureMeta {
            source: format!(
                "rooftop ceilings ({}) on {}: {} FMA kernel",
                c.method, c.device_name, p.variant
            ),
            provenance: Provenance::Measured,
            ..FigureMeta::default()
        };
        let label = format!("{} {} (measured)", p.precision, p.variant);
        let mut e = entry(
            label.clone(),
            label,
            p.gflops * 1e9,
            false,
            RoofStyle::Measured,
            false,
            "FLOP/s",
            &meta,
        );
        e.confidence = MISSING.to_string();
        out.push(e);
        if let Some(t) = p.theoretical_gflops {
            let meta = FigureMeta {
                source: p.theoretical_formula.clone().unwrap_or_else(|| "theoretical".to_string()),
                provenance: Provenance::Catalog,
                ..FigureMeta::default()
            };
            let label = format!("{} {} (theory)", p.precision, p.variant);
            let mut e = entry(
                label.clone(),
                label,
                t * 1e9,
                false,
                RoofStyle::Catalog,
                false,
                "FLOP/s",
                &meta,
            );
            e.confidence = MISSING.to_string();
            out.push(e);
        }
    }
    // The highest measured compute roof is the primary one.
    if let Some(best) = out
        .iter_mut()
        .filter(|e| !e.roof.memory && e.roof.style == RoofStyle::Measured)
        .max_by(|a, b| a.roof.value.total_cmp(&b.roof.value))
    {
        best.roof.primary = true;
    }
    out
}

/// The chart's roofs: one per distinct (value, kind, style), labels of merged roofs
/// joined by unit (`fp16 / bf16 matrix, fp32 vector`), primary if any of them is.
pub(crate) fn chart_roofs(entries: &[RoofEntry]) -> Vec<Roof> {
    let mut out: Vec<(Roof, Vec<String>)> = Vec::new();
    for e in entries {
        let r = &e.roof;
        if let Some((m, labels)) = out.iter_mut().find(|(m, _)| {
            m.memory == r.memory
                && m.style == r.style
                && (m.value - r.value).abs() <= 1e-6 * r.value.abs().max(m.value.abs())
        }) {
            if !labels.contains(&r.label) {
                labels.push(r.label.clone());
            }
            m.primary |= r.primary;
            m.tip = format!("{}\n\n{}", m.tip, r.tip);
        } else {
            out.push((r.clone(), vec![r.label.clone()]));
        }
    }
    out.into_iter()
        .map(|(mut r, labels)| {
            r.label = merge_labels(&labels);
            r
        })
        .collect()
}

/// `fp16 matrix`, `bf16 matrix`, `fp32 vector` → `fp16 / bf16 matrix, fp32 vector`:
/// two-word labels grouped by their unit; other labels joined by ` / `.
fn merge_labels(labels: &[String]) -> String {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut others: Vec<String> = Vec::new();
    for l in labels {
        match l.split_once(' ') {
            Some((prec, unit)) if !unit.contains(' ') => {
                match groups.iter_mut().find(|(u, _)| u == unit) {
                    Some((_, ps)) => ps.push(prec.to_string()),
                    None => groups.push((unit.to_string(), vec![prec.to_string()])),
                }
            }
            _ => others.push(l.clone()),
        }
    }
    let mut parts: Vec<String> =
        groups.into_iter().map(|(u, ps)| format!("{} {u}", ps.join(" / "))).collect();
    parts.extend(others);
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_merge_on_a_shared_unit() {
        let m = |v: &[&str]| merge_labels(&v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>());
        assert_eq!(m(&["fp16 matrix", "bf16 matrix"]), "fp16 / bf16 matrix");
        assert_eq!(
            m(&["fp64 matrix", "fp32 vector", "fp32 matrix"]),
            "fp64 / fp32 matrix, fp32 vector"
        );
        assert_eq!(m(&["DRAM", "L2"]), "DRAM, L2");
        assert_eq!(m(&["DRAM"]), "DRAM");
    }

    #[test]
    fn device_roofs_have_every_peak_and_dram_primary() {
        let cat = rooftop_core::device::Catalog::builtin();
        let d = cat.lookup("h100-sxm").expect("in the catalog");
        let e = device_roofs(d, Some((Precision::Bf16, ExecUnit::Matrix)));
        assert_eq!(
            e.iter().filter(|e| !e.roof.memory && e.roof.style != RoofStyle::Achievable).count(),
            d.peaks.len()
        );
        let dram = e.iter().find(|e| e.name == "DRAM bandwidth").expect("dram");
        assert!(dram.roof.primary && dram.roof.memory);
        assert_eq!(dram.roof.value, d.peak_bw_gbs * 1e9);
        let chart = chart_roofs(&e);
        assert!(chart.len() <= e.len());
        assert!(chart.iter().any(|r| r.primary && !r.memory && r.label.contains("bf16")));
    }
}
