//! Comparing a kernel's outputs with the reference.

use crate::backend::HostBuf;
use serde::Serialize;

/// Pass when `|got - want| <= abs + rel * |want|` for every element.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

impl Tolerance {
    /// Exact equality (integer outputs, copies).
    pub const EXACT: Tolerance = Tolerance { abs: 0.0, rel: 0.0 };

    pub fn new(abs: f64, rel: f64) -> Tolerance {
        Tolerance { abs, rel }
    }
}

/// The outcome of a check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    pub passed: bool,
    pub max_abs_error: f64,
    pub max_rel_error: f64,
    pub tolerance: Tolerance,
    /// Elements compared (all outputs).
    pub elements: u64,
    /// The first failing element, as `buffer[index]: got X, want Y`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
}

/// Compares `got` with `want` buffer by buffer. f16/bf16 outputs are decoded per
/// `half_is_bf16` (true = bf16) before comparing. Elements whose reference value is NaN
/// are not checked (kernels with expensive references compute a sample exactly and leave
/// the rest NaN); every other element must be within tolerance, and a NaN output fails.
pub fn compare(
    names: &[&str],
    got: &[HostBuf],
    want: &[HostBuf],
    half_is_bf16: &[bool],
    tol: Tolerance,
) -> CheckResult {
    let mut r = CheckResult {
        passed: true,
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        tolerance: tol,
        elements: 0,
        first_failure: None,
    };
    if got.len() != want.len() {
        r.passed = false;
        r.first_failure =
            Some(format!("{} output buffers, reference has {}", got.len(), want.len()));
        return r;
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let name = names.get(i).copied().unwrap_or("out");
        let bf16 = half_is_bf16.get(i).copied().unwrap_or(false);
        let (g, w) = (decode(g, bf16), decode(w, bf16));
        if g.len() != w.len() {
            r.passed = false;
            r.first_failure.get_or_insert_with(|| {
                format!("{name}: {} elements, reference has {}", g.len(), w.len())
            });
            continue;
        }
        for (j, (&a, &b)) in g.iter().zip(&w).enumerate() {
            if b.is_nan() {
                // A NaN in the reference means "not checked" (sampled checks of large
                // GEMMs compute a subset of the outputs exactly).
                continue;
            }
            r.elements += 1;
            let err = (a - b).abs();
            let ok = err <= tol.abs + tol.rel * b.abs();
            // NaN in either fails (err is NaN, the comparison above is false).
            if err.is_finite() {
                r.max_abs_error = r.max_abs_error.max(err);
                if b != 0.0 {
                    r.max_rel_error = r.max_rel_error.max(err / b.abs());
                }
            } else if a.to_bits() != b.to_bits() {
                r.max_abs_error = f64::INFINITY;
            }
            if !ok {
                r.passed = false;
                r.first_failure.get_or_insert_with(|| format!("{name}[{j}]: got {a}, want {b}"));
            }
        }
    }
    r
}

fn decode(b: &HostBuf, bf16: bool) -> Vec<f64> {
    match b {
        HostBuf::U16(v) if bf16 => v.iter().map(|&x| half::bf16::from_bits(x).to_f64()).collect(),
        HostBuf::U16(v) => v.iter().map(|&x| half::f16::from_bits(x).to_f64()).collect(),
        other => other.to_f64_lossy(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_tolerance_passes_and_reports_errors() {
        let got = [HostBuf::F32(vec![1.0, 2.001])];
        let want = [HostBuf::F32(vec![1.0, 2.0])];
        let r = compare(&["c"], &got, &want, &[false], Tolerance::new(0.0, 1e-3));
        assert!(r.passed);
        assert!((r.max_abs_error - 0.001).abs() < 1e-6);
        let r = compare(&["c"], &got, &want, &[false], Tolerance::new(0.0, 1e-4));
        assert!(!r.passed);
        assert!(r.first_failure.unwrap().starts_with("c[1]"));
    }

    #[test]
    fn nan_in_reference_is_skipped() {
        let got = [HostBuf::F64(vec![1.0, 123.0])];
        let want = [HostBuf::F64(vec![1.0, f64::NAN])];
        let r = compare(&["c"], &got, &want, &[false], Tolerance::EXACT);
        assert!(r.passed);
        assert_eq!(r.elements, 1);
    }

    #[test]
    fn nan_output_fails() {
        let got = [HostBuf::F32(vec![f32::NAN])];
        let want = [HostBuf::F32(vec![1.0])];
        assert!(!compare(&["c"], &got, &want, &[false], Tolerance::new(1.0, 1.0)).passed);
    }
}
