//! The one finding type every command reports, and the one rule that grades it.
//!
//! A [`Finding`] says what was seen, the numbers that show it, what to do, what that can
//! gain, and — when it can be measured — the time it puts at stake ([`Stake`]): a time
//! and the window it is a share of (the trace's window, the devices' or ranks' windows
//! summed, one kernel's measured or modelled time).
//!
//! Severity is a function of that share and of nothing else ([`Severity::of_share`]):
//! critical from [`CRITICAL_SHARE_PCT`] of the window, warning from
//! [`WARNING_SHARE_PCT`], info below; a finding with no time at stake is info. Every
//! producer — the kernel rules ([`super::diagnose`], which `analyze`, `bench` and
//! `trace`'s per-op rows run), the trace-wide, gap and cross-rank findings — builds its
//! findings with [`Finding::new`], which applies the rule, and orders them with
//! [`rank`]; `counters` grades its own findings and the profiler's rules (by their
//! estimated speedup) with the same rule.
//! The thresholds and why they were chosen are in `docs/methodology.md` ("Severity").
//!
//! Invariant: a stake never exceeds its window ([`Stake::new`] cuts the time to the
//! window), so no finding claims more than 100% of it.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::fmt;

/// A finding whose time at stake is at least this share of its window is critical: the
/// window could run twice as fast from this finding alone (Amdahl: 1 / (1 − 0.5)).
pub const CRITICAL_SHARE_PCT: f64 = 50.0;
/// ... and a warning from this share: a fix worth at least 1.05× of the window, above
/// the run-to-run noise of a training or inference step (1–3%), so its effect can be
/// measured.
pub const WARNING_SHARE_PCT: f64 = 5.0;

/// How much a finding matters: see [`Severity::of_share`].
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

    /// The severity of a finding putting `share_pct` percent of its window at stake:
    /// critical from [`CRITICAL_SHARE_PCT`], warning from [`WARNING_SHARE_PCT`], info
    /// below (and for a share that is not a number).
    pub fn of_share(share_pct: f64) -> Severity {
        if share_pct >= CRITICAL_SHARE_PCT {
            Severity::Critical
        } else if share_pct >= WARNING_SHARE_PCT {
            Severity::Warning
        } else {
            Severity::Info
        }
    }

    /// The severity of a finding with `stake` (`None`: no time at stake, info).
    pub fn of_stake(stake: Option<&Stake>) -> Severity {
        stake.map_or(Severity::Info, |s| Severity::of_share(s.share_pct()))
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a time at stake is a share of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowKind {
    /// The trace's window: first to last counted GPU event, all devices.
    Trace,
    /// The devices' windows summed: GPU time spread over several devices (one device:
    /// its own window).
    Devices,
    /// The windows of the ranks the time is spread over, summed.
    Ranks,
    /// One kernel's measured time.
    Kernel,
    /// One kernel's modelled time (no time was measured).
    Model,
}

impl WindowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WindowKind::Trace => "trace",
            WindowKind::Devices => "devices",
            WindowKind::Ranks => "ranks",
            WindowKind::Kernel => "kernel",
            WindowKind::Model => "model",
        }
    }

    /// The window in words, for "… of {description}".
    pub fn description(self) -> &'static str {
        match self {
            WindowKind::Trace => "the trace window",
            WindowKind::Devices => "the devices' windows",
            WindowKind::Ranks => "the ranks' windows",
            WindowKind::Kernel => "the kernel's time",
            WindowKind::Model => "the kernel's modelled time",
        }
    }
}

impl fmt::Display for WindowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The time a finding concerns and the window it is a share of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stake {
    /// Time at stake, µs; never more than `window_us`.
    pub time_us: f64,
    /// The window, µs (> 0).
    pub window_us: f64,
    pub window: WindowKind,
}

impl Stake {
    /// `time_us` of a `window_us` window; `None` when the window is not a positive time
    /// or the time not a non-negative one (nothing measurable is at stake). A time
    /// longer than the window is cut to it: no finding claims more than its window.
    pub fn new(time_us: f64, window_us: f64, window: WindowKind) -> Option<Stake> {
        (window_us.is_finite() && window_us > 0.0 && time_us.is_finite() && time_us >= 0.0)
            .then(|| Stake { time_us: time_us.min(window_us), window_us, window })
    }

    /// The whole window at stake.
    pub fn whole(window_us: f64, window: WindowKind) -> Option<Stake> {
        Stake::new(window_us, window_us, window)
    }

    /// `time_us` as a percentage of `window_us` (0–100).
    pub fn share_pct(&self) -> f64 {
        (self.time_us / self.window_us * 100.0).clamp(0.0, 100.0)
    }
}

/// One finding: what was seen, the numbers that show it, what to do, and what is at
/// stake. Build it with [`Finding::new`], which grades it.
///
/// JSON: `{id, severity, title, evidence, recommendation, expected_gain,
/// time_at_stake_us, percent_of_total_time, window, window_us}`; the last four are
/// `null` when no time is at stake (`percent_of_total_time` is the share of `window`,
/// whose name it keeps from the trace schema).
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Stable identifier (`bandwidth.low`, `trace.gpu_idle`, ...).
    pub id: &'static str,
    pub severity: Severity,
    pub title: String,
    pub evidence: String,
    pub recommendation: String,
    /// The gain the recommendation can bring, when it can be quantified.
    pub expected_gain: Option<String>,
    /// The time at stake; `None` for a structural finding that measures none.
    pub stake: Option<Stake>,
}

impl Finding {
    /// A finding graded by its stake ([`Severity::of_stake`]); no expected gain.
    pub fn new(
        id: &'static str,
        title: impl Into<String>,
        evidence: impl Into<String>,
        recommendation: impl Into<String>,
        stake: Option<Stake>,
    ) -> Finding {
        Finding {
            id,
            severity: Severity::of_stake(stake.as_ref()),
            title: title.into(),
            evidence: evidence.into(),
            recommendation: recommendation.into(),
            expected_gain: None,
            stake,
        }
    }

    /// The same finding with `gain` as its expected gain.
    #[must_use]
    pub fn with_gain(mut self, gain: Option<String>) -> Finding {
        self.expected_gain = gain;
        self
    }

    /// Time at stake, µs.
    pub fn time_at_stake_us(&self) -> Option<f64> {
        self.stake.map(|s| s.time_us)
    }

    /// Time at stake as a share of its window, percent.
    pub fn share_pct(&self) -> Option<f64> {
        self.stake.as_ref().map(Stake::share_pct)
    }
}

impl Serialize for Finding {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Finding", 10)?;
        s.serialize_field("id", self.id)?;
        s.serialize_field("severity", &self.severity)?;
        s.serialize_field("title", &self.title)?;
        s.serialize_field("evidence", &self.evidence)?;
        s.serialize_field("recommendation", &self.recommendation)?;
        s.serialize_field("expected_gain", &self.expected_gain)?;
        s.serialize_field("time_at_stake_us", &self.time_at_stake_us())?;
        s.serialize_field("percent_of_total_time", &self.share_pct())?;
        s.serialize_field("window", &self.stake.map(|x| x.window))?;
        s.serialize_field("window_us", &self.stake.map(|x| x.window_us))?;
        s.end()
    }
}

/// Orders findings the one way every report lists them: by severity (critical first),
/// then by time at stake (largest first; none last), then as produced (the sort is
/// stable). Within one window severity follows the stake, so this is the order of the
/// time at stake; across windows (a rank's and the ranks' summed) no info finding is
/// listed above a warning.
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity.cmp(&a.severity).then_with(|| {
            let t = |f: &Finding| f.time_at_stake_us().unwrap_or(f64::NEG_INFINITY);
            t(b).total_cmp(&t(a))
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(id: &'static str, stake: Option<Stake>) -> Finding {
        Finding::new(id, "t", "e", "r", stake)
    }

    #[test]
    fn severity_follows_the_share_of_the_window() {
        // 30.9 ms of a 200 ms window is 15.45%: a warning; 8.3 ms is 4.15%: info.
        let gemm = f("a", Stake::new(30_900.0, 200_000.0, WindowKind::Trace));
        let ew = f("b", Stake::new(8_300.0, 200_000.0, WindowKind::Trace));
        assert_eq!(gemm.severity, Severity::Warning);
        assert_eq!(ew.severity, Severity::Info);
        // The thresholds are inclusive: 5% is a warning, 50% critical.
        assert_eq!(f("c", Stake::new(5.0, 100.0, WindowKind::Trace)).severity, Severity::Warning);
        assert_eq!(f("d", Stake::new(4.99, 100.0, WindowKind::Trace)).severity, Severity::Info);
        assert_eq!(
            f("e", Stake::new(50.0, 100.0, WindowKind::Kernel)).severity,
            Severity::Critical
        );
        assert_eq!(f("g", Stake::new(49.9, 100.0, WindowKind::Kernel)).severity, Severity::Warning);
        // No time at stake: info.
        assert_eq!(f("h", None).severity, Severity::Info);
    }

    #[test]
    fn no_finding_claims_more_than_its_window() {
        // 8 devices' idle time summed against one device's window would be 581%.
        let s = Stake::new(581.0, 100.0, WindowKind::Trace).unwrap();
        assert_eq!((s.time_us, s.share_pct()), (100.0, 100.0));
        assert!(Stake::new(1.0, 0.0, WindowKind::Trace).is_none());
        assert!(Stake::new(f64::NAN, 10.0, WindowKind::Trace).is_none());
        assert!(Stake::new(-1.0, 10.0, WindowKind::Trace).is_none());
    }

    #[test]
    fn ranked_by_severity_then_time_at_stake() {
        let mut v = vec![
            f("none", None),
            f("small", Stake::new(1.0, 100.0, WindowKind::Trace)),
            f("big", Stake::new(60.0, 100.0, WindowKind::Trace)),
            f("mid", Stake::new(10.0, 100.0, WindowKind::Trace)),
            // 20 µs of a 1000 µs window: 2%, info, though its time is larger than "mid"'s.
            f("wide", Stake::new(20.0, 1000.0, WindowKind::Ranks)),
        ];
        rank(&mut v);
        let ids: Vec<&str> = v.iter().map(|f| f.id).collect();
        assert_eq!(ids, ["big", "mid", "wide", "small", "none"]);
    }

    #[test]
    fn json_keeps_the_trace_keys_and_says_null_when_nothing_is_at_stake() {
        let with =
            serde_json::to_value(f("a", Stake::new(25.0, 100.0, WindowKind::Trace))).unwrap();
        assert_eq!(with["time_at_stake_us"], 25.0);
        assert_eq!(with["percent_of_total_time"], 25.0);
        assert_eq!(with["window"], "trace");
        assert_eq!(with["severity"], "warning");
        let without = serde_json::to_value(f("b", None)).unwrap();
        assert!(without["time_at_stake_us"].is_null() && without["window_us"].is_null());
        assert_eq!(Severity::Critical.to_string(), "critical");
    }
}
