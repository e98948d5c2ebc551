//! `--compare A,B`: which of two kernels is faster at the same case, by how much, with
//! its uncertainty.
//!
//! As hyperfine (`src/benchmark/relative_speed.rs`): the ratio of the mean times, slower
//! over faster, and its standard deviation by first-order propagation of uncertainty
//! with the two measurements assumed independent (covariance 0):
//! `σ_r = r · sqrt((σ_a / μ_a)² + (σ_b / μ_b)²)`.
//! The means and σ are those of the harness's samples (each sample the mean time of
//! `iters_per_sample` runs).

use crate::harness::CaseResult;
/// The comparison records (`rooftop_core::schema::compare`).
pub use rooftop_core::schema::compare::{Comparison, Side, Verdict};

fn side(r: &CaseResult) -> Side {
    let timing = r.timing.as_ref();
    let not_timed = if timing.is_some() {
        None
    } else if !r.check.passed {
        Some(format!(
            "check failed: {}",
            r.check.first_failure.as_deref().unwrap_or("outputs differ from the reference")
        ))
    } else {
        Some("interrupted before any sample".to_string())
    };
    Side {
        kernel: r.case.kernel.to_string(),
        launch: r.launch.label(),
        mean_s: timing.map(|t| t.stats.mean_s),
        stddev_s: timing.map(|t| t.stats.stddev_s),
        samples: timing.map_or(0, |t| t.stats.n),
        check_passed: r.check.passed,
        not_timed,
    }
}

/// Ratio of means `slow / fast` and its propagated σ (hyperfine's formula).
pub fn ratio_of_means(fast: (f64, f64), slow: (f64, f64)) -> Option<(f64, f64)> {
    let ((mf, sf), (ms, ss)) = (fast, slow);
    if !(mf > 0.0 && ms > 0.0) {
        return None;
    }
    let r = ms / mf;
    Some((r, r * ((sf / mf).powi(2) + (ss / ms).powi(2)).sqrt()))
}

/// Compares two results of the same case.
pub fn compare(a: &CaseResult, b: &CaseResult) -> Comparison {
    let (sa, sb) = (side(a), side(b));
    let verdict = match (sa.mean_s.zip(sa.stddev_s), sb.mean_s.zip(sb.stddev_s)) {
        (Some(ta), Some(tb)) => {
            let (fast, slow, ft, st) =
                if tb.0 < ta.0 { (&sb, &sa, tb, ta) } else { (&sa, &sb, ta, tb) };
            ratio_of_means(ft, st).map(|(ratio, ratio_stddev)| Verdict {
                faster: fast.kernel.clone(),
                slower: slow.kernel.clone(),
                ratio,
                ratio_stddev,
            })
        }
        _ => None,
    };
    Comparison { case: a.case.label(), a: sa, b: sb, verdict }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyperfine_ratio_and_sigma() {
        // 10 ± 0.3 ms vs 12.3 ± 0.4 ms: r = 1.23, σ = 1.23 · sqrt(0.03² + (0.4/12.3)²).
        let (r, s) = ratio_of_means((10e-3, 0.3e-3), (12.3e-3, 0.4e-3)).unwrap();
        assert!((r - 1.23).abs() < 1e-12);
        let want = 1.23 * (0.03f64.powi(2) + (0.4f64 / 12.3).powi(2)).sqrt();
        assert!((s - want).abs() < 1e-12, "{s} vs {want}");
        assert!(ratio_of_means((0.0, 0.0), (1.0, 0.1)).is_none());
        // No spread, no uncertainty.
        assert_eq!(ratio_of_means((2.0, 0.0), (4.0, 0.0)), Some((2.0, 0.0)));
    }
}
