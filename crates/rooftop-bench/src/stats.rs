//! Statistics of timing samples, as hyperfine computes them: mean ± σ (sample standard
//! deviation, 0 for one sample), median, min…max, and outliers by the modified Z-score
//! of Iglewicz and Hoaglin (|0.6745 (x − median) / MAD| > 3.5). The arithmetic is
//! [`rooftop_core::stats`]'s; this module keeps hyperfine's conventions and warnings.

use rooftop_core::stats::{self, Stats, OUTLIER_Z};
use serde::Serialize;

/// Summary of timing samples (seconds per run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingStats {
    pub n: usize,
    pub mean_s: f64,
    /// Sample standard deviation (n − 1); 0 for one sample (hyperfine's convention).
    pub stddev_s: f64,
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// Indices of samples whose modified Z-score exceeds [`OUTLIER_Z`].
    pub outliers: Vec<usize>,
}

impl TimingStats {
    /// Statistics of `samples`; `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<TimingStats> {
        let s = Stats::of(samples)?;
        Some(TimingStats {
            n: samples.len(),
            mean_s: s.mean,
            stddev_s: s.std.unwrap_or(0.0),
            median_s: s.median,
            min_s: s.min,
            max_s: s.max,
            outliers: stats::outliers(samples, s.median),
        })
    }

    /// Coefficient of variation σ / mean (0 without a positive mean).
    pub fn cv(&self) -> f64 {
        if self.mean_s > 0.0 {
            self.stddev_s / self.mean_s
        } else {
            0.0
        }
    }
}

/// Warnings hyperfine would give about a set of samples.
pub fn warnings(samples: &[f64], stats: &TimingStats) -> Vec<String> {
    let mut w = Vec::new();
    // "First run slower": the first sample is an outlier and clearly the largest, the
    // signature of cold caches, page faults or lazy initialisation.
    let first_slow = stats.outliers.first() == Some(&0)
        && samples.first().is_some_and(|&f| f >= stats.max_s && f > 1.5 * stats.median_s);
    let rest: Vec<usize> =
        stats.outliers.iter().copied().filter(|&i| !(first_slow && i == 0)).collect();
    if first_slow {
        w.push(format!(
            "the first sample took {:.3}x the median: cold caches or lazy initialisation; \
             consider more warm-up (--warmup)",
            samples[0] / stats.median_s
        ));
    }
    if !rest.is_empty() {
        w.push(format!(
            "{} of {} samples are statistical outliers (modified Z-score > {OUTLIER_Z}): other \
             programs or frequency changes may have interfered; the median is reported",
            rest.len(),
            stats.n
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_stats() {
        // mean 2.5, sample variance ((1.5²+0.5²)*2)/3 = 5/3.
        let s = TimingStats::of(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(s.mean_s, 2.5);
        assert!((s.stddev_s - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(s.median_s, 2.5);
        assert_eq!((s.min_s, s.max_s), (1.0, 4.0));
        assert!(s.outliers.is_empty());
    }

    #[test]
    fn one_sample_has_zero_spread() {
        let s = TimingStats::of(&[5.0]).unwrap();
        assert_eq!((s.stddev_s, s.median_s), (0.0, 5.0));
        assert!(TimingStats::of(&[]).is_none());
    }

    #[test]
    fn outlier_by_modified_z() {
        // median 10, deviations 0,1,1,1,1,90 → MAD 1; z(100) = 0.6745*90 = 60.7.
        let samples = [10.0, 9.0, 11.0, 9.0, 11.0, 100.0];
        let s = TimingStats::of(&samples).unwrap();
        assert_eq!(s.outliers, vec![5]);
        let w = warnings(&samples, &s);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("1 of 6"));
    }

    #[test]
    fn first_run_slower_is_its_own_warning() {
        let samples = [50.0, 10.0, 9.0, 11.0, 10.0, 10.5];
        let s = TimingStats::of(&samples).unwrap();
        let w = warnings(&samples, &s);
        assert_eq!(w.len(), 1, "{w:?}");
        // median (10 + 10.5) / 2 = 10.25; 50 / 10.25 = 4.878.
        assert!(w[0].contains("first sample took 4.878x"), "{w:?}");
    }
}
