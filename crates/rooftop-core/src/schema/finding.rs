//! A finding as exports hold it: the engine's [`Finding`] with owned text, so that an
//! export can be read back (the engine's stable ids are `&'static str`).

use crate::diagnose::{Finding, Severity, WindowKind};
use serde::{Deserialize, Serialize};

/// One finding: what was seen, the numbers that show it, and what to do. Serialises
/// exactly as [`Finding`] does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindingRecord {
    /// Stable identifier (`bandwidth.low`, `tiles.wave_quantization`, ...).
    pub id: String,
    pub severity: Severity,
    pub title: String,
    pub evidence: String,
    pub recommendation: String,
    /// The gain the recommendation can bring, when it can be quantified.
    #[serde(deserialize_with = "super::nullable")]
    pub expected_gain: Option<String>,
    /// Time at stake, µs (`null`: the finding measures none).
    #[serde(deserialize_with = "super::nullable")]
    pub time_at_stake_us: Option<f64>,
    /// Its share of `window`, percent.
    #[serde(deserialize_with = "super::nullable")]
    pub percent_of_total_time: Option<f64>,
    /// What the time is a share of.
    #[serde(deserialize_with = "super::nullable")]
    pub window: Option<WindowKind>,
    #[serde(deserialize_with = "super::nullable")]
    pub window_us: Option<f64>,
}

impl From<&Finding> for FindingRecord {
    fn from(f: &Finding) -> Self {
        FindingRecord {
            id: f.id.to_string(),
            severity: f.severity,
            title: f.title.clone(),
            evidence: f.evidence.clone(),
            recommendation: f.recommendation.clone(),
            expected_gain: f.expected_gain.clone(),
            time_at_stake_us: f.time_at_stake_us(),
            percent_of_total_time: f.share_pct(),
            window: f.stake.map(|s| s.window),
            window_us: f.stake.map(|s| s.window_us),
        }
    }
}

impl From<Finding> for FindingRecord {
    fn from(f: Finding) -> Self {
        FindingRecord::from(&f)
    }
}
