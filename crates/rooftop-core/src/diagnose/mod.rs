//! Diagnosis: turns an analysis's numbers into findings — what was seen, the numbers
//! that show it, what to do, and what that can gain.
//!
//! The rules and their thresholds come from the seeds:
//! - seed 002 "Diagnostic Decision Tree": achieved bandwidth >= 70% of peak is
//!   near-optimal (fuse to go faster), 30-70% has room (coalescing, threadgroup size,
//!   barriers, redundant reads), < 30% is a major issue (grid too small, launch
//!   overhead, hidden copies, register spilling);
//! - seed 002 "Quick Reference: Expected Performance": the bandwidth efficiency each op
//!   class usually reaches, and "an RMSNorm under 40% of peak bandwidth is likely
//!   wrong", "element-wise kernels should be within 2x of peak bandwidth" (its "fusing
//!   two memory-bound kernels gives ~2x" is not used: the fusion finding states the bytes
//!   a fusion actually saves, see `docs/methodology.md`);
//! - seed 002 "Kernel Launch Overhead": fixed launch cost of ~5-20 µs dominates small
//!   tensors;
//! - seed 000 §4.2-4.3: compute-bound and low-occupancy symptoms and fixes (>70% / <30%
//!   utilisation, occupancy < 50%);
//! - seed 001: tile and wave quantization waste in GEMMs.
//!
//! Findings are ordered by severity (critical first), then by the order of the rules.
//! They are written for the person reading them: whole sentences with the numbers in
//! them, op classes named as nouns ("an RMSNorm", "a GEMM"), counts agreeing with their
//! nouns ([`count`]), and no citation of rooftop's internal notes.

mod rules;

pub use rules::{diagnose, expected_band, DiagnoseInput, ExpectedBand};

/// `n` with its noun, singular or plural: "1 chain", "3 chains" (findings are read as
/// sentences, not as templates with "(s)").
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

use serde::Serialize;

/// How much a finding matters.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
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
