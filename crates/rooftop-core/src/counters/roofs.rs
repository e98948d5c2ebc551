//! The roofs a counter set is judged against, in the roofline module's types
//! ([`BandwidthRoof`], [`ComputeRoof`]): one classification for `counters`, `analyze` and
//! `trace`.
//!
//! Where they come from, in order:
//! 1. the profiler's own measured roofs (rocprof-compute `roofline.csv`): used as the
//!    roofs, and said so;
//! 2. one device (`--device`, the name the files give, or the facts that identify it):
//!    its datasheet or calibrated figures;
//! 3. several devices the facts leave (an A100 of 40 or 80 GB): only the figures they
//!    share; every figure they disagree on is absent, and a note lists the values;
//! 4. none: no roofs, and every attainment is `null`.

use super::CounterSet;
use crate::device::{BandwidthRoof, DeviceSpec, FigureMeta, MemLevel};
use crate::roofline::{compute_roof_of, ComputeRoof};
use crate::units::{Confidence, ExecUnit, Precision, Provenance};
use serde::Serialize;
use std::str::FromStr;

/// Where the roofs came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoofSource {
    /// The profiler's own micro-benchmark on the profiled machine (rocprof-compute
    /// `roofline.csv`).
    Measured,
    /// The device catalog (datasheet peaks).
    Catalog,
    /// A calibrated device file (`rooftop ceilings -o`).
    Calibrated,
    /// No device known: no roofs.
    None,
}

impl RoofSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RoofSource::Measured => "measured",
            RoofSource::Catalog => "catalog",
            RoofSource::Calibrated => "calibrated",
            RoofSource::None => "none",
        }
    }
}

/// The roofs kernels are judged against.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoofSet {
    pub source: RoofSource,
    /// Catalog id, the tool's device name, or `None` when several devices remain.
    pub device: Option<String>,
    /// The catalog devices the files' facts leave when they do not decide one (their
    /// shared figures are the roofs).
    pub candidates: Vec<String>,
    pub bandwidth: Vec<BandwidthRoof>,
    pub compute: Vec<ComputeRoof>,
    pub notes: Vec<String>,
}

impl RoofSet {
    /// The bandwidth roof of `level`, GB/s.
    pub fn bandwidth(&self, level: MemLevel) -> Option<f64> {
        self.bandwidth.iter().find(|b| b.level == level).map(|b| b.gbs)
    }

    /// The roof of exactly (`unit`, `precision`), never another precision's figure.
    pub fn compute(&self, unit: ExecUnit, precision: Precision) -> Option<&ComputeRoof> {
        self.compute.iter().find(|c| c.unit == unit && c.precision == precision)
    }

    /// Whether there is no roof at all.
    pub fn is_empty(&self) -> bool {
        self.bandwidth.is_empty() && self.compute.is_empty()
    }
}

/// The devices a set is judged on: none, one, or several that the facts do not tell
/// apart.
#[derive(Debug, Clone, Copy)]
pub(super) struct Judged<'a> {
    pub devices: &'a [&'a DeviceSpec],
    /// The set's own measured roofs are the roofs (the devices give unit counts only).
    pub measured: bool,
}

impl<'a> Judged<'a> {
    /// The one device, when there is exactly one.
    pub fn one(&self) -> Option<&'a DeviceSpec> {
        match self.devices {
            [one] => Some(one),
            _ => None,
        }
    }

    /// A device whose launch limits stand for all candidates (for the occupancy
    /// calculator): the one device, or the first when every candidate has the same
    /// family, unit count, warp size and per-unit limits.
    pub fn launch_model(&self) -> Option<&'a DeviceSpec> {
        let (first, rest) = self.devices.split_first()?;
        rest.iter()
            .all(|d| {
                d.family == first.family
                    && d.num_cu == first.num_cu
                    && d.warp_size == first.warp_size
                    && d.limits == first.limits
            })
            .then_some(*first)
    }

    /// The compute roof for work of (`unit`, `precision`): the measured roof of exactly
    /// that pair; else the device's, with the fallbacks every command applies
    /// ([`compute_roof_of`]); with several devices, only a roof they all give alike.
    pub fn compute_roof(
        &self,
        roofs: &RoofSet,
        unit: ExecUnit,
        precision: Precision,
    ) -> Option<ComputeRoof> {
        if self.measured {
            return roofs.compute(unit, precision).cloned();
        }
        let mut each = self.devices.iter().map(|d| compute_roof_of(d, precision, unit));
        let first = each.next()??;
        each.all(|r| {
            r.is_some_and(|r| {
                r.precision == first.precision
                    && r.unit == first.unit
                    && same(r.tflops, first.tflops)
            })
        })
        .then_some(first)
    }
}

/// Two datasheet figures that are the same figure (rounding of the last digit aside).
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-3 * a.abs().max(b.abs())
}

/// The roofs of `set` judged on `judged`.
pub(super) fn roofs(set: &CounterSet, judged: &Judged<'_>) -> RoofSet {
    if judged.measured {
        return measured(set, judged.one());
    }
    match judged.devices {
        [] => RoofSet {
            source: RoofSource::None,
            device: set.device.name.clone(),
            candidates: Vec::new(),
            bandwidth: Vec::new(),
            compute: Vec::new(),
            notes: vec!["no device known (the files do not name one rooftop's catalog has, nor \
                 state facts that identify one): achieved rates are shown without attainment; \
                 pass --device"
                .to_string()],
        },
        [one] => device_roofs(one),
        several => shared(several),
    }
}

fn calibrated(d: &DeviceSpec) -> bool {
    d.peaks.iter().any(|p| p.meta.provenance == Provenance::Calibrated)
        || d.bandwidths.iter().any(|b| b.meta.provenance == Provenance::Calibrated)
}

fn dram_roof(d: &DeviceSpec) -> BandwidthRoof {
    BandwidthRoof {
        level: MemLevel::Dram,
        gbs: d.peak_bw_gbs,
        meta: d.figure("memory.bandwidth_gbs").clone(),
    }
}

fn compute_roofs(d: &DeviceSpec) -> Vec<ComputeRoof> {
    d.peaks
        .iter()
        .map(|p| ComputeRoof {
            precision: p.precision,
            unit: p.unit,
            tflops: p.tflops,
            meta: p.meta.clone(),
            note: None,
        })
        .collect()
}

fn device_roofs(d: &DeviceSpec) -> RoofSet {
    let mut bandwidth = vec![dram_roof(d)];
    bandwidth.extend(d.bandwidths.iter().filter(|b| b.level != MemLevel::Dram).cloned());
    RoofSet {
        source: if calibrated(d) { RoofSource::Calibrated } else { RoofSource::Catalog },
        device: Some(d.id.clone()),
        candidates: Vec::new(),
        bandwidth,
        compute: compute_roofs(d),
        notes: vec![format!("roofs from {} ({}): dense datasheet peaks", d.id, d.name)],
    }
}

/// The figures every candidate gives alike; the others are listed in a note.
fn shared(devices: &[&DeviceSpec]) -> RoofSet {
    let ids: Vec<String> = devices.iter().map(|d| d.id.clone()).collect();
    let mut differ: Vec<String> = Vec::new();
    let values = |f: &dyn Fn(&DeviceSpec) -> Option<f64>| -> Vec<Option<f64>> {
        devices.iter().map(|d| f(d)).collect()
    };
    let listed = |vals: &[Option<f64>], unit: &str| -> String {
        devices
            .iter()
            .zip(vals)
            .map(|(d, v)| match v {
                Some(v) => format!("{} {}", d.id, crate::units::as_given(*v)),
                None => format!("{} none", d.id),
            })
            .collect::<Vec<_>>()
            .join(", ")
            + " "
            + unit
    };
    let agreed = |vals: &[Option<f64>]| -> Option<f64> {
        let first = (*vals.first()?)?;
        vals.iter().all(|v| v.is_some_and(|v| same(v, first))).then_some(first)
    };
    let mut bandwidth = Vec::new();
    for level in [MemLevel::Dram, MemLevel::Llc, MemLevel::L2, MemLevel::L1] {
        let vals = values(&|d| d.bandwidth(level));
        if vals.iter().all(Option::is_none) {
            continue;
        }
        match agreed(&vals) {
            Some(gbs) => bandwidth.push(BandwidthRoof {
                level,
                gbs,
                meta: match level {
                    MemLevel::Dram => devices[0].figure("memory.bandwidth_gbs").clone(),
                    _ => devices[0]
                        .bandwidths
                        .iter()
                        .find(|b| b.level == level)
                        .map(|b| b.meta.clone())
                        .unwrap_or_default(),
                },
            }),
            None => {
                differ.push(format!("{} bandwidth ({})", level.as_str(), listed(&vals, "GB/s")));
            }
        }
    }
    let mut compute = Vec::new();
    for p in Precision::ALL {
        for u in [ExecUnit::Vector, ExecUnit::Matrix] {
            let vals = values(&|d| d.peak(p, u).map(|x| x.tflops));
            if vals.iter().all(Option::is_none) {
                continue;
            }
            match (agreed(&vals), devices[0].peak(p, u)) {
                (Some(tflops), Some(peak)) => compute.push(ComputeRoof {
                    precision: p,
                    unit: u,
                    tflops,
                    meta: peak.meta.clone(),
                    note: None,
                }),
                _ => differ.push(format!(
                    "{} {} peak ({})",
                    p.as_str(),
                    u.as_str(),
                    listed(&vals, "TFLOP/s")
                )),
            }
        }
    }
    let notes = vec![if differ.is_empty() {
        format!("roofs: {} have the same datasheet roofs", ids.join(", "))
    } else {
        format!(
            "roofs: only the figures {} share; left out because they differ: {}",
            ids.join(", "),
            differ.join("; ")
        )
    }];
    RoofSet {
        source: if devices.iter().all(|d| calibrated(d)) {
            RoofSource::Calibrated
        } else {
            RoofSource::Catalog
        },
        device: None,
        candidates: ids,
        bandwidth,
        compute,
        notes,
    }
}

/// The set's measured roofs (rocprof-compute `roofline.csv`).
fn measured(set: &CounterSet, device: Option<&DeviceSpec>) -> RoofSet {
    let meta = FigureMeta {
        source: format!(
            "{} roofline.csv (measured on the profiled machine)",
            set.source.format.as_str()
        ),
        confidence: Confidence::High,
        provenance: Provenance::Measured,
    };
    let mut r = RoofSet {
        source: RoofSource::Measured,
        device: set.device.name.clone(),
        candidates: Vec::new(),
        bandwidth: Vec::new(),
        compute: Vec::new(),
        notes: vec![format!(
            "roofs measured by {}'s own micro-benchmark on the profiled machine \
             (roofline.csv), used instead of datasheet peaks",
            set.source.format.as_str()
        )],
    };
    let mut unplaced = Vec::new();
    for m in &set.measured_roofs {
        let level = match m.kind.as_str() {
            "hbm" => Some(MemLevel::Dram),
            "mall" => Some(MemLevel::Llc),
            "l2" => Some(MemLevel::L2),
            "l1" => Some(MemLevel::L1),
            "lds" => Some(MemLevel::Lds),
            _ => None,
        };
        if let Some(level) = level {
            r.bandwidth.push(BandwidthRoof { level, gbs: m.value, meta: meta.clone() });
            continue;
        }
        let unit = if m.kind == "mfma" { ExecUnit::Matrix } else { ExecUnit::Vector };
        match m.precision.as_deref().map(Precision::from_str) {
            Some(Ok(precision)) => r.compute.push(ComputeRoof {
                precision,
                unit,
                tflops: m.value / 1e3,
                meta: meta.clone(),
                note: None,
            }),
            _ => unplaced.push(m.name.clone()),
        }
    }
    if !unplaced.is_empty() {
        r.notes.push(format!(
            "measured roofs of precisions rooftop has no roof type for are not used: {}",
            unplaced.join(", ")
        ));
    }
    if let Some(d) = device {
        r.notes.push(format!(
            "device {} ({}) gives only what the files do not state (unit counts, launch \
             limits); the roofs are the measured ones, not its datasheet peaks",
            d.id, d.name
        ));
    }
    r
}
