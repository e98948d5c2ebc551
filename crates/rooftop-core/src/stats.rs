//! Statistics of samples: the one implementation every command uses.
//!
//! - Descriptive statistics ([`Stats`], [`mean`], [`sample_std`], [`population_std`],
//!   [`median`], [`percentile_sorted`]): the mean and the standard deviations are summed
//!   in the order the values are given (callers that sorted first get the sum of the
//!   sorted values); the median of an even count is the midpoint of the two middle
//!   values, and percentiles interpolate linearly between neighbouring order statistics
//!   (numpy's and pandas' default).
//! - Outliers as hyperfine flags them ([`mad`], [`modified_z`], [`outliers`]): the
//!   modified Z-score of Iglewicz and Hoaglin, `0.6745 (x − median) / MAD`, above
//!   [`OUTLIER_Z`].
//! - Two-sample tests that tell a change from noise (`rooftop diff`):
//!   [`mann_whitney_u`] on raw samples (Mann & Whitney 1947; exact null distribution for
//!   small samples without ties, else the normal approximation with the tie and
//!   continuity corrections of SciPy's `mannwhitneyu(method="asymptotic")`) and
//!   [`welch_t`] on summary statistics (Welch 1947). The distribution functions (normal
//!   and Student t tails) are statrs's; nothing here approximates a special function.
//!
//! Every function returns `None` (or a p-value of 1 for tests on empty samples) rather
//! than a made-up number when a statistic does not exist for its input.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Threshold of the modified Z-score above which a sample is an outlier (Iglewicz and
/// Hoaglin's 3.5, as hyperfine).
pub const OUTLIER_Z: f64 = 3.5;

/// Largest sample size for which [`mann_whitney_u`] enumerates the exact U
/// distribution.
pub const EXACT_MAX: usize = 20;

/// Descriptive statistics of a sample (the unit is the values').
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub mean: f64,
    pub median: f64,
    /// Sample standard deviation (n − 1), as pandas computes it; `None` for one value.
    pub std: Option<f64>,
    pub min: f64,
    pub max: f64,
}

impl Stats {
    /// Statistics of `v` in any order; `None` when it is empty. The mean and standard
    /// deviation are summed in `v`'s order; a sorted copy gives the median, min and max.
    pub fn of(v: &[f64]) -> Option<Stats> {
        let m = mean(v)?;
        let mut sorted = v.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Stats::with_mean(&sorted, v, m))
    }

    /// Statistics of `sorted` (ascending, as `sort_by(f64::total_cmp)` leaves it), without
    /// copying; `None` when it is empty.
    pub fn of_sorted(sorted: &[f64]) -> Option<Stats> {
        let m = mean(sorted)?;
        Some(Stats::with_mean(sorted, sorted, m))
    }

    fn with_mean(sorted: &[f64], v: &[f64], mean: f64) -> Stats {
        Stats {
            mean,
            median: median_sorted(sorted).unwrap_or(mean),
            std: sample_std(v, mean),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        }
    }
}

/// Arithmetic mean of `v` (summed in order); `None` when empty.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn squares(v: &[f64], mean: f64) -> f64 {
    v.iter().map(|x| (x - mean).powi(2)).sum::<f64>()
}

/// Sample standard deviation (n − 1) of `v` around `mean`; `None` for fewer than two
/// values.
pub fn sample_std(v: &[f64], mean: f64) -> Option<f64> {
    (v.len() > 1).then(|| (squares(v, mean) / (v.len() - 1) as f64).sqrt())
}

/// Population standard deviation (n) of `v` around `mean`; `None` when empty.
pub fn population_std(v: &[f64], mean: f64) -> Option<f64> {
    (!v.is_empty()).then(|| (squares(v, mean) / v.len() as f64).sqrt())
}

/// Median of `v` in any order (sorts a copy); `None` when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    median_sorted(&sorted)
}

/// Median of ascending `sorted`: the middle value, or the midpoint of the two middle
/// ones for an even count; `None` when empty.
pub fn median_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some(f64::midpoint(sorted[n / 2 - 1], sorted[n / 2])),
    }
}

/// The `p`-quantile (0 ≤ p ≤ 1) of ascending `sorted`, interpolating linearly between
/// the neighbouring order statistics (numpy's `percentile` default, pandas'
/// `quantile`); `None` when empty or `p` is outside [0, 1].
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&p) {
        return None;
    }
    let pos = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let f = pos - lo as f64;
    Some(sorted[lo] * (1.0 - f) + sorted[hi] * f)
}

/// Median absolute deviation of `v` from `median` (unscaled); `None` when empty.
pub fn mad(v: &[f64], median_: f64) -> Option<f64> {
    let dev: Vec<f64> = v.iter().map(|x| (x - median_).abs()).collect();
    median(&dev)
}

/// The modified Z-score of `x`; 0 when the MAD is 0 and `x` equals the median, infinite
/// when the MAD is 0 and it does not (every other sample is identical).
pub fn modified_z(x: f64, median_: f64, mad_: f64) -> f64 {
    if mad_ == 0.0 {
        if x == median_ {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        0.6745 * (x - median_) / mad_
    }
}

/// Indices of the samples of `v` whose modified Z-score exceeds [`OUTLIER_Z`].
pub fn outliers(v: &[f64], median_: f64) -> Vec<usize> {
    let Some(m) = mad(v, median_) else { return Vec::new() };
    v.iter()
        .enumerate()
        .filter(|(_, &x)| modified_z(x, median_, m).abs() > OUTLIER_Z)
        .map(|(i, _)| i)
        .collect()
}

/// Mean, sample standard deviation and count of a sample: what Welch's test needs, and
/// what a trace row carries per call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moments {
    pub mean: f64,
    /// Sample standard deviation (n − 1).
    pub std: f64,
    /// Number of values (a float: trace rows carry it as a count).
    pub n: f64,
}

impl Moments {
    /// Of raw values; `None` for fewer than two.
    pub fn of(v: &[f64]) -> Option<Moments> {
        let m = mean(v)?;
        Some(Moments { mean: m, std: sample_std(v, m)?, n: v.len() as f64 })
    }
}

/// Ranks of `all` (1-based, ties get their average rank) and Σ(t³ − t) over tie groups.
fn ranks(all: &[(f64, usize)]) -> (Vec<f64>, f64) {
    let mut idx: Vec<usize> = (0..all.len()).collect();
    idx.sort_by(|&a, &b| all[a].0.total_cmp(&all[b].0));
    let mut r = vec![0.0; all.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i + 1;
        while j < idx.len() && all[idx[j]].0 == all[idx[i]].0 {
            j += 1;
        }
        // Positions i..j (0-based) share the average of ranks i+1..=j.
        let avg = (i + 1 + j) as f64 / 2.0;
        for &k in &idx[i..j] {
            r[k] = avg;
        }
        let t = (j - i) as f64;
        ties += t * t * t - t;
        i = j;
    }
    (r, ties)
}

/// Number of arrangements of `n1` + `n2` values with each U from 0 to n1·n2 (no ties):
/// counting, c(m, n, u) = c(m − 1, n, u − n) + c(m, n − 1, u).
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect();
    for m in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        cur.push(vec![1.0]);
        for n in 1..=n2 {
            let mut d = vec![0.0; m * n + 1];
            for (u, slot) in d.iter_mut().enumerate() {
                let a = if u >= n { prev[n].get(u - n).copied().unwrap_or(0.0) } else { 0.0 };
                let b = cur[n - 1].get(u).copied().unwrap_or(0.0);
                *slot = a + b;
            }
            cur.push(d);
        }
        prev = cur;
    }
    prev.pop().unwrap_or_else(|| vec![1.0])
}

/// The two-sided p-value of the Mann-Whitney U test of `a` against `b` (1 when either
/// is empty).
// Single-letter names are the test's own (U, n₁, n₂, R₁).
#[allow(clippy::many_single_char_names)]
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    let all: Vec<(f64, usize)> =
        a.iter().map(|&v| (v, 0)).chain(b.iter().map(|&v| (v, 1))).collect();
    let (r, ties) = ranks(&all);
    let r1: f64 = r.iter().zip(&all).filter(|(_, x)| x.1 == 0).map(|(r, _)| r).sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u = u1.min(f1 * f2 - u1);
    if n1 <= EXACT_MAX && n2 <= EXACT_MAX && ties == 0.0 {
        let dist = u_distribution(n1, n2);
        let total: f64 = dist.iter().sum();
        let k = u.round() as usize;
        let tail: f64 = dist.iter().take(k + 1).sum::<f64>() / total;
        return (2.0 * tail).min(1.0);
    }
    let n = f1 + f2;
    let var = f1 * f2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((f1 * f2 / 2.0 - u).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * Normal::standard().sf(z)).min(1.0)
}

/// The outcome of Welch's t-test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// Two-sided p-value.
    pub p_value: f64,
    /// The t statistic (NaN when there is no spread).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (NaN when there is no spread).
    pub df: f64,
}

/// Welch's unequal-variance t-test of `a` against `b`, two-sided. Without any spread
/// (or with fewer than two values on a side) the p-value is 1 when the means are equal
/// and 0 when they differ.
pub fn welch_t(a: Moments, b: Moments) -> Welch {
    let va = a.std * a.std / a.n;
    let vb = b.std * b.std / b.n;
    let se2 = va + vb;
    if se2.is_nan() || se2 <= 0.0 || a.n < 2.0 || b.n < 2.0 {
        let p_value = if a.mean == b.mean { 1.0 } else { 0.0 };
        return Welch { p_value, t: f64::NAN, df: f64::NAN };
    }
    let t = (a.mean - b.mean) / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.n - 1.0) + vb * vb / (b.n - 1.0));
    // df > 0 here (both variances are non-negative and their sum positive); a NaN t
    // (an infinite spread) has no p-value to give but "no evidence".
    let p_value = match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) if t.is_finite() => (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0),
        _ => 1.0,
    };
    Welch { p_value, t, df }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptive_statistics_by_hand() {
        // mean 2.5, sample variance ((1.5² + 0.5²) · 2) / 3 = 5/3, population 5/4.
        let s = Stats::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.mean, s.median, s.min, s.max), (2.5, 2.5, 1.0, 4.0));
        assert!((s.std.unwrap() - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!(
            (population_std(&[1.0, 2.0, 3.0, 4.0], 2.5).unwrap() - 1.25f64.sqrt()).abs() < 1e-12
        );
        assert_eq!(Stats::of(&[5.0]).unwrap().std, None);
        assert!(Stats::of(&[]).is_none());
        assert_eq!(Stats::of_sorted(&[1.0, 2.0, 10.0]).unwrap().median, 2.0);
    }

    #[test]
    fn percentiles_match_pandas() {
        // pandas.Series([1, 2, 3, 4, 10]).quantile([0, 0.5, 0.9, 1]) = 1, 3, 7.6, 10.
        let v = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert_eq!(percentile_sorted(&v, 0.0), Some(1.0));
        assert_eq!(percentile_sorted(&v, 0.5), Some(3.0));
        assert!((percentile_sorted(&v, 0.9).unwrap() - 7.6).abs() < 1e-12);
        assert_eq!(percentile_sorted(&v, 1.0), Some(10.0));
        assert_eq!(percentile_sorted(&[], 0.5), None);
        assert_eq!(percentile_sorted(&v, 1.5), None);
    }

    #[test]
    fn outliers_by_modified_z() {
        // median 10, deviations 0,1,1,1,1,90 → MAD 1; z(100) = 0.6745 · 90 = 60.7.
        let v = [10.0, 9.0, 11.0, 9.0, 11.0, 100.0];
        assert_eq!(mad(&v, 10.0), Some(1.0));
        assert_eq!(outliers(&v, 10.0), vec![5]);
        assert_eq!(modified_z(5.0, 5.0, 0.0), 0.0);
        assert_eq!(modified_z(6.0, 5.0, 0.0), f64::INFINITY);
    }

    #[test]
    fn distribution_tails_known_values() {
        // The 95% two-sided normal quantile 1.959964; Student t with 10 df: t = 2.228139
        // is its 97.5% quantile (tables of the t distribution).
        assert!((2.0 * Normal::standard().sf(1.959_964) - 0.05).abs() < 1e-6);
        let t10 = StudentsT::new(0.0, 1.0, 10.0).unwrap();
        assert!((2.0 * t10.sf(2.228_139) - 0.05).abs() < 1e-6);
    }

    #[test]
    fn mann_whitney_exact_small_samples() {
        // All of a below all of b: U = 0; P(U = 0) = 1 / C(6, 3) = 1/20; two-sided 0.1.
        assert!((mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
        // n = 10 each, separated: 2 / C(20, 10) = 2 / 184756.
        let a: Vec<f64> = (1..=10).map(f64::from).collect();
        let b: Vec<f64> = (11..=20).map(f64::from).collect();
        assert!((mann_whitney_u(&a, &b) - 2.0 / 184_756.0).abs() < 1e-15);
        // Interleaved samples: no evidence of a shift.
        let c: Vec<f64> = (0..10).map(|i| f64::from(2 * i)).collect();
        let d: Vec<f64> = (0..10).map(|i| f64::from(2 * i + 1)).collect();
        assert!(mann_whitney_u(&c, &d) > 0.5);
        // Symmetric.
        assert_eq!(mann_whitney_u(&a, &b), mann_whitney_u(&b, &a));
    }

    #[test]
    fn mann_whitney_normal_approximation_with_ties() {
        // By hand (average ranks, tie-corrected variance, continuity correction):
        // U = 56, var = 3567.709, z = (392 − 56 − 0.5) / √var = 5.6169, p = erfc(z/√2)
        // = 1.944e-8.
        let a: Vec<f64> = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0].repeat(4);
        let b: Vec<f64> = [3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0].repeat(4);
        let p = mann_whitney_u(&a, &b);
        assert!((p / 1.944e-8 - 1.0).abs() < 1e-3, "{p}");
        // Identical samples: p = 1.
        assert_eq!(mann_whitney_u(&[1.0; 30], &[1.0; 30]), 1.0);
    }

    #[test]
    fn welch_matches_the_textbook_example() {
        // Wikipedia "Welch's t-test", example 1: t = −2.46, df ≈ 25.0, p = 0.021.
        let a = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let b = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let w = welch_t(Moments::of(&a).unwrap(), Moments::of(&b).unwrap());
        assert!((w.t + 2.46).abs() < 0.01, "t {}", w.t);
        assert!((w.df - 25.0).abs() < 0.1, "df {}", w.df);
        assert!((w.p_value - 0.021).abs() < 0.001, "p {}", w.p_value);
        // No spread: equal means → 1, different → 0.
        let s = |m| Moments { mean: m, std: 0.0, n: 5.0 };
        assert_eq!(welch_t(s(1.0), s(1.0)).p_value, 1.0);
        assert_eq!(welch_t(s(1.0), s(2.0)).p_value, 0.0);
    }
}
