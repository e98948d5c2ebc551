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
//! Severity of a rule follows the one rule of every command
//! ([`crate::diagnose::Severity::of_share`]) applied to the time the tool says is at
//! stake: the rule's estimated speedup (Nsight Compute's ProfilingGuide, "Rule System":
//! the estimated reduction of the kernel's duration, in percent) of the kernel's measured
//! time per dispatch. An `ERR` rule (an error in the measurement) puts the whole measured
//! time at stake: every number of the kernel rests on the measurement it refutes. A rule
//! without an estimate, or a kernel without a duration, is info. Findings are ranked the
//! way every report ranks them ([`crate::diagnose::rank`]'s order): severity, then time
//! at stake; rooftop's first among equals.

use crate::diagnose::{Finding, Severity, Stake, WindowKind};
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
    /// rooftop's severity for the rule's time at stake (see the module docs).
    pub severity: Severity,
    /// The time the rule puts at stake per dispatch, µs (`None`: no estimate, or no
    /// duration).
    pub time_at_stake_us: Option<f64>,
    /// The same with its window (the kernel's time per dispatch).
    #[serde(skip)]
    pub stake: Option<Stake>,
    pub description: String,
    pub speedup_type: Option<String>,
    /// The largest estimate over the dispatches.
    pub estimated_speedup_pct: Option<f64>,
    /// Dispatches the rule fired on.
    pub dispatches: u64,
}

/// The time a rule of type `rule_type` with `speedup_pct` estimated speedup puts at stake
/// of a kernel whose dispatch takes `duration_ns` (see the module docs).
pub fn stake_of(
    rule_type: &str,
    speedup_pct: Option<f64>,
    duration_ns: Option<f64>,
) -> Option<Stake> {
    let t = duration_ns.filter(|t| t.is_finite() && *t > 0.0)? * 1e-3;
    if matches!(rule_type.trim().to_ascii_uppercase().as_str(), "ERR" | "ERROR") {
        return Stake::whole(t, WindowKind::Kernel);
    }
    let p = speedup_pct.filter(|p| p.is_finite() && *p > 0.0)?;
    Stake::new(t * p.min(100.0) / 100.0, t, WindowKind::Kernel)
}

/// Merges rules of several dispatches whose mean time is `duration_ns`: one finding per
/// (section, rule, description), graded by its time at stake.
pub fn collect<'a>(
    rules: impl IntoIterator<Item = &'a ToolRule>,
    duration_ns: Option<f64>,
) -> Vec<ToolFinding> {
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
                severity: Severity::Info,
                time_at_stake_us: None,
                stake: None,
                description: r.description.clone(),
                speedup_type: r.speedup_type.clone(),
                estimated_speedup_pct: r.estimated_speedup_pct,
                dispatches: 1,
            }),
        }
    }
    for f in &mut out {
        let stake = stake_of(&f.rule_type, f.estimated_speedup_pct, duration_ns);
        f.severity = Severity::of_stake(stake.as_ref());
        f.time_at_stake_us = stake.map(|s| s.time_us);
        f.stake = stake;
    }
    sort(&mut out);
    out
}

/// Severity first, then the time at stake, then the estimated speedup, largest first.
fn sort(v: &mut [ToolFinding]) {
    let key = |x: Option<f64>| x.unwrap_or(f64::NEG_INFINITY);
    v.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| key(b.time_at_stake_us).total_cmp(&key(a.time_at_stake_us)))
            .then_with(|| key(b.estimated_speedup_pct).total_cmp(&key(a.estimated_speedup_pct)))
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

    /// The time at stake per dispatch, µs.
    pub fn time_at_stake_us(&self) -> Option<f64> {
        self.stake().map(|s| s.time_us)
    }

    /// The time at stake per dispatch and its window.
    pub fn stake(&self) -> Option<Stake> {
        match self {
            AnyFinding::Rooftop(f) => f.stake,
            AnyFinding::Tool(t) => t.stake,
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
    // Stable: among equals, rooftop's (in rank order) then the tool's.
    let key = |f: &AnyFinding<'_>| f.time_at_stake_us().unwrap_or(f64::NEG_INFINITY);
    v.sort_by(|a, b| b.severity().cmp(&a.severity()).then_with(|| key(b).total_cmp(&key(a))));
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
        // A 200 µs kernel: B's largest estimate, 7.5%, is 15 µs (a warning from 5%);
        // C's 50% is 100 µs (critical from 50%); the error stakes all 200 µs.
        let f = collect(&rules, Some(200_000.0));
        let names: Vec<&str> = f.iter().map(|x| x.rule.as_str()).collect();
        assert_eq!(names, ["D", "C", "B", "A"]);
        let b = &f[2];
        assert_eq!((b.dispatches, b.estimated_speedup_pct), (2, Some(7.5)));
        let stakes: Vec<Option<f64>> = f.iter().map(|x| x.time_at_stake_us).collect();
        assert_eq!(stakes, [Some(200.0), Some(100.0), Some(15.0), None]);
        let sev: Vec<Severity> = f.iter().map(|x| x.severity).collect();
        assert_eq!(
            sev,
            [Severity::Critical, Severity::Critical, Severity::Warning, Severity::Info]
        );
        // A 4% estimate is info, the same as rooftop's own findings below 5%.
        let small = collect(&[rule("E", "OPT", "e", Some(4.0))], Some(1_000.0));
        assert_eq!(small[0].severity, Severity::Info);
    }

    #[test]
    fn no_duration_no_stake() {
        let f = collect(&[rule("D", "ERR", "d", None), rule("C", "OPT", "c", Some(80.0))], None);
        assert!(f.iter().all(|x| x.severity == Severity::Info && x.time_at_stake_us.is_none()));
    }

    #[test]
    fn ranked_beside_ours() {
        // rooftop's 30 µs of a 100 µs kernel (warning) sits between the tool's error
        // (all 100 µs) and its 9% estimate (9 µs, also a warning).
        let ours = [Finding::new(
            "counters.bandwidth_room",
            "t",
            "",
            "",
            Stake::new(30.0, 100.0, WindowKind::Kernel),
        )];
        let tools = collect(
            &[rule("D", "ERR", "d", None), rule("B", "OPT", "b", Some(9.0))],
            Some(100_000.0),
        );
        let r = ranked(&ours, &tools);
        let by: Vec<&str> = r.iter().map(AnyFinding::by).collect();
        assert_eq!(by, ["Nsight Compute", "rooftop", "Nsight Compute"]);
        assert_eq!(r[2].severity(), Severity::Warning);
    }
}
