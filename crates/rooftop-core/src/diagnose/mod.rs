//! Diagnosis: turns an analysis's numbers into findings — what was seen, the numbers
//! that show it, what to do, and what that can gain.
//!
//! The rules' thresholds are rooftop's conventions, listed with their reasons in
//! docs/reference/formulas.md#diagnosis-thresholds-rooftops-conventions:
//! - achieved bandwidth >= 70% of peak is near-optimal (fuse to go faster), 30-70% has
//!   room (coalescing, threadgroup size, barriers, redundant reads), < 30% is a major
//!   issue (grid too small, launch overhead, hidden copies, register spilling);
//! - the bandwidth efficiency each op class usually reaches, and "an RMSNorm under 40%
//!   of peak bandwidth is likely wrong", "element-wise kernels should be within 2x of
//!   peak bandwidth" (the rule of thumb "fusing two memory-bound kernels gives ~2x" is
//!   not used: the fusion finding states the bytes a fusion actually saves, see
//!   `docs/methodology.md`);
//! - a fixed launch cost of microseconds dominates small tensors;
//! - compute-bound and low-occupancy symptoms and fixes (>= 70% of the compute roof or
//!   below it; theoretical occupancy < 50%, docs/reference/occupancy.md);
//! - tile and wave quantization waste in GEMMs
//!   (docs/reference/formulas.md#tile-wave-and-dimension-efficiency).
//!
//! Every finding, whatever command makes it, is a [`Finding`] graded by one rule: its
//! severity is a function of the time it puts at stake as a share of its window
//! ([`Severity::of_share`], [`finding`]'s docs and `docs/methodology.md`), and reports
//! list findings by [`rank`]. A kernel's own rules ([`diagnose`]) state as time at stake:
//! - for the roofline findings (bandwidth, compute, class band, launch overhead with a
//!   measured time), the kernel's gap to its floor, `time − floor` of the measured time,
//!   while the kernel is under 70% of its roofline (from 70% it is near-optimal and the
//!   gap is not claimed);
//! - for tile and wave quantization, the padded share of the kernel's time
//!   (`1 − efficiency`), of the measured time or, without one, of the modelled time;
//! - for a kernel faster than its floor, the whole measured time: every number of the
//!   analysis is in doubt;
//! - for structural observations (occupancy, fusion, matrix units, a measured ceiling
//!   beaten, launch overhead without a time), nothing: they are info and listed after
//!   the findings with a time at stake.
//!
//! Findings are written for the person reading them: whole sentences with the numbers in
//! them, op classes named as nouns ("an RMSNorm", "a GEMM"), counts agreeing with their
//! nouns ([`count`]), and no citation of rooftop's internal notes.

pub mod finding;
mod rules;

pub use rules::{diagnose, expected_band, DiagnoseInput, ExpectedBand};

/// The indefinite article before `word`: "an" before a vowel (any case) or the initialism
/// NVIDIA ("an NVIDIA GPU", "an analyze export"), "a" otherwise.
pub fn article(word: &str) -> &'static str {
    let vowel = word.chars().next().is_some_and(|c| "aeiouAEIOU".contains(c));
    if vowel || word.starts_with("NVIDIA") {
        "an"
    } else {
        "a"
    }
}

/// `n` with its noun, singular or plural: "1 chain", "3 chains" (findings are read as
/// sentences, not as templates with "(s)").
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub use finding::{rank, Finding, Severity, Stake, WindowKind};
