//! The profiler's own findings: Nsight Compute's rules (the `Rule Name`, `Rule Type`,
//! `Rule Description`, `Estimated Speedup Type`, `Estimated Speedup` columns of a
//! details-page export since 2023.2), kept as the tool wrote them and labelled as the
//! tool's, never as rooftop's.
//!
//! Per dispatch the reader keeps every rule row ([`ToolRule`]); per kernel the rules of
//! all its dispatches are merged ([`collect`]): one [`ToolFinding`] per (section, rule,
//! description), with the number of dispatches it fired on and the largest estimated
//! speedup. [`ranked`] puts the tool's findings and rooftop's in one list.
//!
//! Severity of a rule, from its type as Nsight Compute documents the rule system
//! (ProfilingGuide, "Rule System"): `ERR` (an error in the measurement) is critical,
//! `WRN` and `OPT` (an optimization opportunity, with an estimated speedup) are
//! warnings, `INF` is information. Within one severity the ranking is by estimated
//! speedup, largest first; rooftop's findings of that severity come first (their order
//! is their rule order).

use crate::diagnose::{Finding, Severity};
use serde::Serialize;

/// One rule row of one dispatch, as the tool wrote it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolRule {
    /// The tool that ran the rule (`Nsight Compute`).
    pub tool: String,
    /// Section identifier (`SpeedOfLight`, `Occupancy`, `WorkloadDistribution`).
    pub section: Option<String>,
    /// Rule identifier (`SOLBottleneck`, `TheoreticalOccupancy`).
    pub rule: String,
    /// `OPT`, `WRN`, `INF`, `ERR` (as written).
    pub rule_type: String,
    pub description: String,
    /// `global` (speedup of the whole kernel) or `local` (of the part the rule looks at).
    pub speedup_type: Option<String>,
    /// Estimated speedup, percent of the kernel's time (as the tool estimates it).
    pub estimated_speedup_pct: Option<f64>,
}

/// A tool rule merged over a kernel's dispatches.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolFinding {
    pub tool: String,
    pub section: Option<String>,
    pub rule: String,
    pub rule_type: String,
    /// rooftop's severity for the rule type (see the module docs).
    pub severity: Severity,
    pub description: String,
    pub speedup_type: Option<String>,
    /// The largest estimate over the dispatches.
    pub estimated_speedup_pct: Option<f64>,
    /// Dispatches the rule fired on.
    pub dispatches: u64,
}

/// rooftop's severity for a tool rule type.
pub fn severity_of(rule_type: &str) -> Severity {
    match rule_type.trim().to_ascii_uppercase().as_str() {
        "ERR" | "ERROR" => Severity::Critical,
        "WRN" | "WARNING" | "OPT" => Severity::Warning,
        _ => Severity::Info,
    }
}

/// Merges rules of several dispatches: one finding per (section, rule, description).
pub fn collect<'a>(rules: impl IntoIterator<Item = &'a ToolRule>) -> Vec<ToolFinding> {
    let mut out: Vec<ToolFinding> = Vec::new();
    for r in rules {
        let same = out
            .iter_mut()
            .find(|f| f.rule == r.rule && f.section == r.section && f.description == r.description);
        match same {
            Some(f) => {
                f.dispatches += 1;
                f.estimated_speedup_pct = match (f.estimated_speedup_pct, r.estimated_speedup_pct) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
            }
            None => out.push(ToolFinding {
                tool: r.tool.clone(),
                section: r.section.clone(),
                rule: r.rule.clone(),
                rule_type: r.rule_type.clone(),
                severity: severity_of(&r.rule_type),
                description: r.description.clone(),
                speedup_type: r.speedup_type.clone(),
                estimated_speedup_pct: r.estimated_speedup_pct,
                dispatches: 1,
            }),
        }
    }
    sort(&mut out);
    out
}

/// Severity first, then the estimated speedup, largest first.
fn sort(v: &mut [ToolFinding]) {
    v.sort_by(|a, b| {
        b.severity.cmp(&a.severity).then_with(|| {
            b.estimated_speedup_pct
                .unwrap_or(-1.0)
                .total_cmp(&a.estimated_speedup_pct.unwrap_or(-1.0))
        })
    });
}

/// A finding of rooftop's or of the profiler's, for one ranked list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AnyFinding<'a> {
    Rooftop(&'a Finding),
    Tool(&'a ToolFinding),
}

impl AnyFinding<'_> {
    pub fn severity(&self) -> Severity {
        match self {
            AnyFinding::Rooftop(f) => f.severity,
            AnyFinding::Tool(t) => t.severity,
        }
    }

    /// Who found it: `rooftop`, or the tool's name.
    pub fn by(&self) -> &str {
        match self {
            AnyFinding::Rooftop(_) => "rooftop",
            AnyFinding::Tool(t) => &t.tool,
        }
    }
}

/// rooftop's findings and the tool's, ranked together (see the module docs).
pub fn ranked<'a>(ours: &'a [Finding], tools: &'a [ToolFinding]) -> Vec<AnyFinding<'a>> {
    let mut v: Vec<AnyFinding<'a>> =
        ours.iter().map(AnyFinding::Rooftop).chain(tools.iter().map(AnyFinding::Tool)).collect();
    // Stable: within a severity, rooftop's (in rule order) then the tool's (by speedup).
    v.sort_by_key(|f| std::cmp::Reverse(f.severity()));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(name: &str, ty: &str, desc: &str, speedup: Option<f64>) -> ToolRule {
        ToolRule {
            tool: "Nsight Compute".to_string(),
            section: Some("S".to_string()),
            rule: name.to_string(),
            rule_type: ty.to_string(),
            description: desc.to_string(),
            speedup_type: speedup.map(|_| "global".to_string()),
            estimated_speedup_pct: speedup,
        }
    }

    #[test]
    fn merges_and_ranks() {
        let rules = [
            rule("A", "INF", "a", None),
            rule("B", "OPT", "b", Some(5.0)),
            rule("B", "OPT", "b", Some(7.5)),
            rule("C", "OPT", "c", Some(50.0)),
            rule("D", "ERR", "d", None),
        ];
        let f = collect(&rules);
        let names: Vec<&str> = f.iter().map(|x| x.rule.as_str()).collect();
        assert_eq!(names, ["D", "C", "B", "A"]);
        let b = &f[2];
        assert_eq!((b.dispatches, b.estimated_speedup_pct), (2, Some(7.5)));
        assert_eq!(f[0].severity, Severity::Critical);
        assert_eq!(f[3].severity, Severity::Info);
    }

    #[test]
    fn ranked_beside_ours() {
        let ours = [Finding {
            id: "counters.bandwidth_room",
            severity: Severity::Warning,
            title: "t".to_string(),
            evidence: String::new(),
            recommendation: String::new(),
            expected_gain: None,
            stake: None,
        }];
        let tools = collect(&[rule("D", "ERR", "d", None), rule("B", "OPT", "b", Some(9.0))]);
        let r = ranked(&ours, &tools);
        let by: Vec<&str> = r.iter().map(AnyFinding::by).collect();
        assert_eq!(by, ["Nsight Compute", "rooftop", "Nsight Compute"]);
    }
}
