//! `rooftop bench --compare A,B`: which of two kernels is faster at the same case, by
//! how much, with its uncertainty (`rooftop-bench`'s `spec::compare` computes it).

use super::nullable;
use serde::{Deserialize, Serialize};

/// One kernel's side of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub kernel: String,
    /// Launch label of the result used (the best one after an autotune).
    pub launch: String,
    /// `None` when the kernel was not timed (failed check, interrupted).
    #[serde(deserialize_with = "nullable")]
    pub mean_s: Option<f64>,
    #[serde(deserialize_with = "nullable")]
    pub stddev_s: Option<f64>,
    pub samples: usize,
    pub check_passed: bool,
    /// Why it was not timed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub not_timed: Option<String>,
}

/// The outcome at one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The case label (`M=128 N=4096 K=4096 fp32`).
    pub case: String,
    pub a: Side,
    pub b: Side,
    /// `Some` when both were timed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub verdict: Option<Verdict>,
}

/// Which is faster and by how much.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The faster kernel's name (`a`'s when the means are equal).
    pub faster: String,
    pub slower: String,
    /// Mean of the slower over mean of the faster (>= 1).
    pub ratio: f64,
    /// Standard deviation of `ratio`.
    pub ratio_stddev: f64,
}
