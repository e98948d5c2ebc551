//! Diagnosis: turns an analysis's numbers into findings with evidence and advice.

use serde::Serialize;

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

/// One finding: what was seen, the numbers that show it, and what to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Stable identifier (`bandwidth.low`, `tiles.wave_quantization`, ...).
    pub id: &'static str,
    pub severity: Severity,
    pub title: String,
    pub evidence: String,
    pub recommendation: String,
    /// The gain the recommendation can bring, when it can be quantified.
    pub expected_gain: Option<String>,
}
