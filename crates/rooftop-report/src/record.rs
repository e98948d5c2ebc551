//! The stable, documented record of one analysis (`docs/json-schema.md`): what
//! `--format json` prints and what CSV columns are made of.
//!
//! Invariant: fields are only added, never renamed or removed, within a
//! `schema_version`. Absent values are `null` (a measurement that was not given, an
//! efficiency that does not apply), never a made-up number.

use rooftop_core::analysis::Analysis;
use rooftop_core::device::FigureMeta;
use rooftop_core::diagnose::Finding;
use serde::Serialize;

/// Version of the analysis JSON schema.
pub const SCHEMA_VERSION: u32 = 1;

/// Where a figure came from.
#[derive(Debug, Clone, Serialize)]
pub struct Source {
    pub provenance: &'static str,
    pub source: String,
    pub confidence: &'static str,
}

impl From<&FigureMeta> for Source {
    fn from(m: &FigureMeta) -> Self {
        Source {
            provenance: m.provenance.as_str(),
            source: m.source.clone(),
            confidence: m.confidence.as_str(),
        }
    }
}

/// The compute roof used.
#[derive(Debug, Clone, Serialize)]
pub struct RoofRecord {
    pub precision: &'static str,
    pub unit: &'static str,
    pub tflops: f64,
    pub note: Option<String>,
    #[serde(flatten)]
    pub source: Source,
}

/// Tile/wave details.
#[derive(Debug, Clone, Serialize)]
pub struct TilesRecord {
    pub family: Option<String>,
    pub mt_m: u32,
    pub mt_n: u32,
    pub kernel_m: u64,
    pub kernel_n: u64,
    pub swapped_from_torch_view: bool,
    pub num_tiles: u64,
    pub waves: Option<u64>,
    pub notes: Vec<String>,
}

/// Occupancy details.
#[derive(Debug, Clone, Serialize)]
pub struct OccupancyRecord {
    pub blocks_per_cu: u32,
    pub active_warps_per_cu: u32,
    pub max_warps_per_cu: u32,
    pub limiter: String,
    pub estimate: bool,
    pub notes: Vec<String>,
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct FindingRecord {
    pub id: &'static str,
    pub severity: &'static str,
    pub title: String,
    pub evidence: String,
    pub recommendation: String,
    pub expected_gain: Option<String>,
    /// Time at stake, µs (`null`: the finding measures none).
    pub time_at_stake_us: Option<f64>,
    /// Its share of `window`, percent.
    pub percent_of_total_time: Option<f64>,
    /// What the time is a share of (`kernel`: the measured time; `model`: the modelled
    /// time).
    pub window: Option<&'static str>,
    pub window_us: Option<f64>,
}

impl From<&Finding> for FindingRecord {
    fn from(f: &Finding) -> Self {
        FindingRecord {
            id: f.id,
            severity: f.severity.as_str(),
            title: f.title.clone(),
            evidence: f.evidence.clone(),
            recommendation: f.recommendation.clone(),
            expected_gain: f.expected_gain.clone(),
            time_at_stake_us: f.time_at_stake_us(),
            percent_of_total_time: f.share_pct(),
            window: f.stake.map(|s| s.window.as_str()),
            window_us: f.stake.map(|s| s.window_us),
        }
    }
}

/// The flat analysis record. Units are in the field names.
#[derive(Debug, Clone, Serialize)]
pub struct AnalysisRecord {
    pub schema_version: u32,
    pub device_id: String,
    pub device_name: String,
    pub op: &'static str,
    pub shape: String,
    pub kernel_name: Option<String>,
    /// model
    pub flops: f64,
    /// model
    pub bytes: f64,
    pub bytes_read: f64,
    pub bytes_written: f64,
    pub flops_formula: String,
    pub bytes_formula: String,
    pub assumptions: Vec<String>,
    /// null when no bytes move (infinite intensity)
    pub arithmetic_intensity: Option<f64>,
    pub ridge_point: Option<f64>,
    pub compute_roof: Option<RoofRecord>,
    pub peak_tflops: Option<f64>,
    pub peak_bandwidth_gbs: f64,
    pub bandwidth_source: Source,
    pub attainable_tflops: f64,
    pub compute_floor_us: f64,
    pub memory_floor_us: f64,
    pub floor_time_us: f64,
    pub bound: &'static str,
    /// measured (given by the user or timed by rooftop)
    pub time_us: Option<f64>,
    pub achieved_tflops: Option<f64>,
    pub achieved_gbs: Option<f64>,
    pub compute_utilization_pct: Option<f64>,
    pub memory_utilization_pct: Option<f64>,
    pub roofline_attainment_pct: Option<f64>,
    pub tile_efficiency: Option<f64>,
    pub wave_efficiency: Option<f64>,
    pub dim_efficiency: Option<f64>,
    pub tiles: Option<TilesRecord>,
    pub occupancy_pct: Option<f64>,
    pub occupancy: Option<OccupancyRecord>,
    pub occupancy_note: Option<String>,
    pub findings: Vec<FindingRecord>,
}

/// JSON numbers cannot be infinite: an infinite intensity (no bytes moved) is `null`.
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

impl AnalysisRecord {
    /// Builds the record of `a`.
    pub fn from_analysis(a: &Analysis) -> AnalysisRecord {
        let r = &a.roofline;
        let m = r.achieved.as_ref();
        AnalysisRecord {
            schema_version: SCHEMA_VERSION,
            device_id: a.device.id.clone(),
            device_name: a.device.name.clone(),
            op: a.work.class.as_str(),
            shape: a.work.shape.clone(),
            kernel_name: a.kernel_name.clone(),
            flops: r.flops,
            bytes: r.bytes,
            bytes_read: a.work.bytes_read,
            bytes_written: a.work.bytes_written,
            flops_formula: a.work.flops_formula.clone(),
            bytes_formula: a.work.bytes_formula.clone(),
            assumptions: a.work.assumptions.clone(),
            arithmetic_intensity: finite(r.arithmetic_intensity),
            ridge_point: r.ridge_point,
            compute_roof: r.compute_roof.as_ref().map(|c| RoofRecord {
                precision: c.precision.as_str(),
                unit: c.unit.as_str(),
                tflops: c.tflops,
                note: c.note.clone(),
                source: Source::from(&c.meta),
            }),
            peak_tflops: r.compute_roof.as_ref().map(|c| c.tflops),
            peak_bandwidth_gbs: r.bandwidth_gbs,
            bandwidth_source: Source::from(&r.bandwidth_meta),
            attainable_tflops: r.attainable_tflops,
            compute_floor_us: r.compute_floor_us,
            memory_floor_us: r.memory_floor_us,
            floor_time_us: r.floor_time_us,
            bound: r.bound.as_str(),
            time_us: m.map(|m| m.time_us),
            achieved_tflops: m.map(|m| m.achieved_tflops),
            achieved_gbs: m.map(|m| m.achieved_gbs),
            compute_utilization_pct: m.map(|m| m.compute_utilization_pct),
            memory_utilization_pct: m.map(|m| m.memory_utilization_pct),
            roofline_attainment_pct: m.map(|m| m.roofline_attainment_pct),
            tile_efficiency: a.tiles.as_ref().map(|t| t.efficiency.tile_eff),
            wave_efficiency: a.tiles.as_ref().and_then(|t| t.efficiency.wq_eff),
            dim_efficiency: a.tiles.as_ref().map(|t| t.efficiency.dim_eff),
            tiles: a.tiles.as_ref().map(|t| TilesRecord {
                family: a.gemm_kernel.as_ref().map(|k| k.family.label().to_string()),
                mt_m: t.efficiency.mt_m,
                mt_n: t.efficiency.mt_n,
                kernel_m: t.kernel_m,
                kernel_n: t.kernel_n,
                swapped_from_torch_view: t.swapped,
                num_tiles: t.efficiency.num_tiles,
                waves: t.efficiency.waves,
                notes: t.efficiency.notes.clone(),
            }),
            occupancy_pct: a.occupancy.as_ref().map(|o| o.occupancy_pct),
            occupancy: a.occupancy.as_ref().map(|o| OccupancyRecord {
                blocks_per_cu: o.blocks_per_cu,
                active_warps_per_cu: o.active_warps_per_cu,
                max_warps_per_cu: o.max_warps_per_cu,
                limiter: o.limiter.as_str().to_string(),
                estimate: o.estimate,
                notes: o.notes.clone(),
            }),
            occupancy_note: a.occupancy_note.clone(),
            findings: a.findings.iter().map(FindingRecord::from).collect(),
        }
    }
}
