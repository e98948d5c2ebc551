//! Unit changes and sums of the numbers `rooftop diff` reads, done on their decimal
//! digits, so that what it writes is what the exports hold.
//!
//! An export writes each number in the shortest decimal that reads back as the same
//! `f64` (serde_json, like Rust's `{}` and `{:e}`). Multiplying `0.000123` s by `1e6` in
//! binary floating point gives `123.00000000000001` µs, and `100.1 + 100.3` gives
//! `200.39999999999998`; shifting the decimal point of `1.23e-4` gives `123` exactly,
//! and adding the digits `1001 + 1003` (× 10⁻¹) gives `200.4`. Both are the exact
//! decimal result rounded once to the nearest `f64`, as any JSON number is: nothing is
//! rounded that the inputs did not already round.

/// A finite `f64` as the decimal its shortest representation writes: `digits × 10^exp`.
fn decimal(v: f64) -> Option<(i128, i32)> {
    if !v.is_finite() {
        return None;
    }
    // `{:e}` writes the shortest representation that reads back as `v`: `-1.2345e-4`.
    let s = format!("{v:e}");
    let (mantissa, exp) = s.split_once('e')?;
    let exp: i32 = exp.parse().ok()?;
    let (whole, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: i128 = format!("{whole}{frac}").parse().ok()?;
    let frac_len = i32::try_from(frac.len()).ok()?;
    Some((digits, exp - frac_len))
}

/// `digits × 10^exp`, rounded once to the nearest `f64`.
fn to_f64(digits: i128, exp: i32) -> Option<f64> {
    format!("{digits}e{exp}").parse().ok()
}

/// `v × 10^power`, moving the decimal point of `v`'s shortest representation:
/// `shift(0.000123, 6)` is `123.0` (µs from s; `0.000123 * 1e6` is `123.00000000000001`),
/// `shift(0.5, 3)` is `500.0` (GB/s from TB/s).
/// A value that is not finite is returned as it is.
pub fn shift(v: f64, power: i32) -> f64 {
    decimal(v).and_then(|(d, e)| to_f64(d, e.checked_add(power)?)).unwrap_or(v)
}

/// The sum of `values` done on their decimal digits: `sum(&[100.1, 100.3])` is `200.4`,
/// where adding the `f64`s gives `200.39999999999998`. Values too far apart in scale
/// for 38 digits (or not finite) are added as `f64`s.
pub fn sum(values: &[f64]) -> f64 {
    let float = || values.iter().sum::<f64>();
    let Some(parts) = values.iter().map(|&v| decimal(v)).collect::<Option<Vec<_>>>() else {
        return float();
    };
    let Some(low) = parts.iter().map(|&(_, e)| e).min() else { return 0.0 };
    let mut total: i128 = 0;
    for (digits, exp) in parts {
        let scaled = u32::try_from(exp - low)
            .ok()
            .and_then(|k| 10i128.checked_pow(k))
            .and_then(|f| digits.checked_mul(f));
        match scaled.and_then(|s| total.checked_add(s)) {
            Some(t) => total = t,
            None => return float(),
        }
    }
    to_f64(total, low).unwrap_or_else(float)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_of_shortest_representations() {
        assert_eq!(decimal(2e-4), Some((2, -4)));
        assert_eq!(decimal(100.1), Some((1001, -1)));
        assert_eq!(decimal(-1.25), Some((-125, -2)));
        assert_eq!(decimal(3350.0), Some((335, 1)));
        assert_eq!(decimal(0.0), Some((0, 0)));
        assert_eq!(decimal(f64::NAN), None);
    }

    #[test]
    fn shifting_moves_the_decimal_point() {
        // 0.000123 s = 123 µs; in binary, 0.000123 * 1e6 is 123.00000000000001.
        assert_ne!(0.000_123 * 1e6, 123.0);
        assert_eq!(shift(0.000_123, 6), 123.0);
        // 0.0002003 s = 200.3 µs (in binary, 200.29999999999998); 0.07 = 7%.
        assert_ne!(0.000_200_3 * 1e6, 200.3);
        assert_eq!(shift(0.000_200_3, 6), 200.3);
        assert_eq!(shift(0.07, 2), 7.0);
        // 12.5 ms = 12 500 µs; 1500 ns = 1.5 µs; 0.5 TB/s = 500 GB/s.
        assert_eq!(shift(12.5, 3), 12_500.0);
        assert_eq!(shift(1500.0, -3), 1.5);
        assert_eq!(shift(0.5, 3), 500.0);
        assert_eq!(shift(-2e-4, 6), -200.0);
        assert!(shift(f64::NAN, 3).is_nan());
        assert_eq!(shift(f64::INFINITY, 3), f64::INFINITY);
    }

    #[test]
    fn sums_are_the_sums_of_the_decimals() {
        // 100.1 + 100.3 = 200.4; in binary, 200.39999999999998.
        assert_ne!(100.1 + 100.3, 200.4);
        assert_eq!(sum(&[100.1, 100.3]), 200.4);
        // 0.1 + 0.2 = 0.3 (in binary, 0.30000000000000004); 12.3 + 45.6 = 57.9.
        assert_ne!(0.1 + 0.2, 0.3);
        assert_eq!(sum(&[0.1, 0.2]), 0.3);
        assert_eq!(sum(&[12.3, 45.6]), 57.9);
        assert_eq!(sum(&[150.0, 50.0]), 200.0);
        assert_eq!(sum(&[1.5, -0.25, 1e3]), 1001.25);
        assert_eq!(sum(&[]), 0.0);
        // 1e300 and 1e-300 cannot be aligned in 38 digits: the f64 sum, 1e300.
        assert_eq!(sum(&[1e300, 1e-300]), 1e300);
        assert!(sum(&[1.0, f64::NAN]).is_nan());
    }
}
