//! The two-sample tests `rooftop diff` uses to tell a change from noise.
//!
//! - [`mann_whitney`]: Mann-Whitney U (Wilcoxon rank-sum), two-sided, on raw samples
//!   (bench exports' `times_s`). Exact null distribution when both samples have at most
//!   [`EXACT_MAX`] values and no ties; otherwise the normal approximation with the tie
//!   correction and a continuity correction (Mann & Whitney 1947; the formulas of
//!   SciPy's `mannwhitneyu(method="asymptotic")`). It assumes nothing about the shape of
//!   the distribution, which suits timings (skewed, with outliers).
//! - [`welch`]: Welch's unequal-variance t-test, two-sided, from summary statistics
//!   (mean, sample standard deviation, count), for trace rows that carry only those. The
//!   p-value is the Student-t tail through the regularised incomplete beta function
//!   (Numerical Recipes §6.4, continued fraction §6.4.5; log-gamma by Lanczos).
//!
//! All functions return a p-value in [0, 1]; degenerate inputs (no spread at all) give
//! 1 when the samples are equal and 0 when they differ.

/// Largest sample size for which the exact U distribution is enumerated.
pub const EXACT_MAX: usize = 20;

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

/// Number of arrangements of `n1` + `n2` values with each U from 0 to n1·n2 (no ties).
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    // c[m][n][u]: counts for sizes m and n, built up one value at a time:
    // c(m, n, u) = c(m − 1, n, u − n) + c(m, n − 1, u).
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

/// The two-sided p-value of the Mann-Whitney U test of `a` against `b`.
// Single-letter names are the test's own (U, n₁, n₂, R₁).
#[allow(clippy::many_single_char_names)]
pub fn mann_whitney(a: &[f64], b: &[f64]) -> f64 {
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
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// Summary statistics of a sample: mean, sample standard deviation (n − 1), count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub mean: f64,
    pub std: f64,
    pub n: f64,
}

impl Summary {
    /// Of raw values (None for fewer than two).
    pub fn of(v: &[f64]) -> Option<Summary> {
        if v.len() < 2 {
            return None;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some(Summary { mean, std: var.sqrt(), n })
    }
}

/// The two-sided p-value of Welch's t-test, and its t and degrees of freedom.
pub fn welch(a: Summary, b: Summary) -> (f64, f64, f64) {
    let va = a.std * a.std / a.n;
    let vb = b.std * b.std / b.n;
    let se2 = va + vb;
    if se2.is_nan() || se2 <= 0.0 || a.n < 2.0 || b.n < 2.0 {
        let p = if a.mean == b.mean { 1.0 } else { 0.0 };
        return (p, f64::NAN, f64::NAN);
    }
    let t = (a.mean - b.mean) / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.n - 1.0) + vb * vb / (b.n - 1.0));
    let p = betai(df / 2.0, 0.5, df / (df + t * t));
    (p.clamp(0.0, 1.0), t, df)
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; relative error < 1e-13).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut s = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        s += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + s.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
// The names are Numerical Recipes' (a, b, x, c, d, h).
#[allow(clippy::many_single_char_names)]
fn betacf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function I_x(a, b).
fn betai(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * betacf(a, b, x) / a
    } else {
        1.0 - front * betacf(b, a, 1.0 - x) / b
    }
}

/// The complementary error function (Numerical Recipes `erfcc`, relative error
/// < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_and_beta_known_values() {
        // Γ(5) = 24, Γ(0.5) = √π.
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
        // I_x(1, 1) = x; I_0.5(a, a) = 0.5.
        assert!((betai(1.0, 1.0, 0.3) - 0.3).abs() < 1e-12);
        assert!((betai(2.5, 2.5, 0.5) - 0.5).abs() < 1e-12);
        // erfc(0) = 1, erfc(1.96/√2) = 0.05 (the 95% two-sided normal quantile).
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.959_964 / std::f64::consts::SQRT_2) - 0.05).abs() < 1e-6);
    }

    #[test]
    fn mann_whitney_exact_small_samples() {
        // All of a below all of b: U = 0; P(U = 0) = 1 / C(6, 3) = 1/20; two-sided 0.1.
        assert!((mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
        // n = 10 each, separated: 2 / C(20, 10) = 2 / 184756.
        let a: Vec<f64> = (1..=10).map(f64::from).collect();
        let b: Vec<f64> = (11..=20).map(f64::from).collect();
        assert!((mann_whitney(&a, &b) - 2.0 / 184_756.0).abs() < 1e-15);
        // Interleaved samples: no evidence of a shift.
        let c: Vec<f64> = (0..10).map(|i| f64::from(2 * i)).collect();
        let d: Vec<f64> = (0..10).map(|i| f64::from(2 * i + 1)).collect();
        assert!(mann_whitney(&c, &d) > 0.5);
        // Symmetric.
        assert_eq!(mann_whitney(&a, &b), mann_whitney(&b, &a));
    }

    #[test]
    fn mann_whitney_normal_approximation_with_ties() {
        // By hand (average ranks, tie-corrected variance, continuity correction):
        // U = 56, var = 3567.709, z = (392 − 56 − 0.5) / √var = 5.6169, p = erfc(z/√2)
        // = 1.944e-8.
        let a: Vec<f64> = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0].repeat(4);
        let b: Vec<f64> = [3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0].repeat(4);
        let p = mann_whitney(&a, &b);
        assert!((p / 1.944e-8 - 1.0).abs() < 1e-3, "{p}");
        // Identical samples: p = 1.
        assert_eq!(mann_whitney(&[1.0; 30], &[1.0; 30]), 1.0);
    }

    #[test]
    #[allow(clippy::many_single_char_names)]
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
        let (p, t, df) = welch(
            Summary::of(&a).unwrap_or(Summary { mean: 0.0, std: 0.0, n: 0.0 }),
            Summary::of(&b).unwrap_or(Summary { mean: 0.0, std: 0.0, n: 0.0 }),
        );
        assert!((t + 2.46).abs() < 0.01, "t {t}");
        assert!((df - 25.0).abs() < 0.1, "df {df}");
        assert!((p - 0.021).abs() < 0.001, "p {p}");
        // No spread: equal means → 1, different → 0.
        let s = |m| Summary { mean: m, std: 0.0, n: 5.0 };
        assert_eq!(welch(s(1.0), s(1.0)).0, 1.0);
        assert_eq!(welch(s(1.0), s(2.0)).0, 0.0);
    }
}
