//! A finding as exports hold it: the engine's [`Finding`] with owned text, so that an
//! export can be read back (the engine's stable ids are `&'static str`).

use crate::diagnose::{Finding, Severity};
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
        }
    }
}

impl From<Finding> for FindingRecord {
    fn from(f: Finding) -> Self {
        FindingRecord {
            id: f.id.to_string(),
            severity: f.severity,
            title: f.title,
            evidence: f.evidence,
            recommendation: f.recommendation,
            expected_gain: f.expected_gain,
        }
    }
}
