//! Comparing a kernel's outputs with the reference.

use crate::backend::HostBuf;
pub use rooftop_core::schema::bench::{CheckResult, Tolerance};

/// Compares `got` with `want` buffer by buffer. f16/bf16 outputs are decoded per
/// `half_is_bf16` (true = bf16) before comparing. Elements whose reference value is NaN
/// are not checked (kernels with expensive references compute a sample exactly and leave
/// the rest NaN); every other element must be within tolerance, and a NaN output fails.
/// A check that compared no element at all fails, and says so.
pub fn compare(
    names: &[&str],
    got: &[HostBuf],
    want: &[HostBuf],
    half_is_bf16: &[bool],
    tol: Tolerance,
) -> CheckResult {
    let got: Vec<&HostBuf> = got.iter().collect();
    compare_refs(names, &got, want, half_is_bf16, tol)
}

/// Elements per parallel task of a comparison.
pub(super) const CHUNK: usize = 1 << 16;

/// What one chunk of a comparison found.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Part {
    pub(super) elements: u64,
    pub(super) max_abs: f64,
    pub(super) max_rel: f64,
    /// The first failing element: (index, got, want).
    pub(super) first_failure: Option<(usize, f64, f64)>,
}

impl Part {
    /// `self` then `later` (a chunk of higher indices).
    pub(super) fn then(self, later: Part) -> Part {
        Part {
            elements: self.elements + later.elements,
            max_abs: self.max_abs.max(later.max_abs),
            max_rel: self.max_rel.max(later.max_rel),
            first_failure: self.first_failure.or(later.first_failure),
        }
    }
}

/// [`compare`] of outputs held elsewhere (a backend's own host buffers): chunks of
/// `CHUNK` elements in parallel, results identical to a sequential scan (the first
/// failure is the lowest index).
pub fn compare_refs(
    names: &[&str],
    got: &[&HostBuf],
    want: &[HostBuf],
    half_is_bf16: &[bool],
    tol: Tolerance,
) -> CheckResult {
    use rayon::prelude::*;
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
        if g.len() != w.len() {
            r.passed = false;
            r.first_failure.get_or_insert_with(|| {
                format!("{name}: {} elements, reference has {}", g.len(), w.len())
            });
            continue;
        }
        let chunks = g.len().div_ceil(CHUNK);
        let part: Part = (0..chunks)
            .into_par_iter()
            .map(|c| {
                let range = c * CHUNK..((c + 1) * CHUNK).min(g.len());
                // The common pairs get a loop of their own (no per-element dispatch).
                match (g, w) {
                    (HostBuf::F32(a), HostBuf::F32(b)) => {
                        scan(range, |j| f64::from(a[j]), |j| f64::from(b[j]), tol)
                    }
                    (HostBuf::F64(a), HostBuf::F64(b)) => scan(range, |j| a[j], |j| b[j], tol),
                    _ => scan(range, |j| element(g, j, bf16), |j| element(w, j, bf16), tol),
                }
            })
            .reduce(Part::default, Part::then);
        r.elements += part.elements;
        r.max_abs_error = r.max_abs_error.max(part.max_abs);
        r.max_rel_error = r.max_rel_error.max(part.max_rel);
        if let Some((j, a, b)) = part.first_failure {
            r.passed = false;
            r.first_failure.get_or_insert_with(|| format!("{name}[{j}]: got {a}, want {b}"));
        }
    }
    fail_if_nothing_compared(&mut r);
    r
}

/// A check that compared no element (a reference that is NaN everywhere, empty outputs)
/// proves nothing about the kernel: it fails, and says why.
pub(super) fn fail_if_nothing_compared(r: &mut CheckResult) {
    if r.passed && r.elements == 0 {
        r.passed = false;
        r.first_failure = Some(
            "no element was compared (the reference is NaN everywhere, or the outputs are \
             empty): nothing shows the kernel is right"
                .to_string(),
        );
    }
}

/// Compares elements `range` of two outputs read through `got` and `want`.
#[inline]
pub(super) fn scan(
    range: std::ops::Range<usize>,
    got: impl Fn(usize) -> f64,
    want: impl Fn(usize) -> f64,
    tol: Tolerance,
) -> Part {
    let mut p = Part::default();
    for j in range {
        let (a, b) = (got(j), want(j));
        if b.is_nan() {
            // A NaN in the reference means "not checked" (sampled checks of large GEMMs
            // compute a subset of the outputs exactly).
            continue;
        }
        p.elements += 1;
        let err = (a - b).abs();
        // NaN in either fails (err is NaN, the comparison is false).
        let ok = err <= tol.abs + tol.rel * b.abs();
        if err.is_finite() {
            p.max_abs = p.max_abs.max(err);
            if b != 0.0 {
                p.max_rel = p.max_rel.max(err / b.abs());
            }
        } else if a.to_bits() != b.to_bits() {
            p.max_abs = f64::INFINITY;
        }
        if !ok && p.first_failure.is_none() {
            p.first_failure = Some((j, a, b));
        }
    }
    p
}

/// Element `i` of `b` as f64 (f16/bf16 bits decoded per `bf16`), without copying the
/// buffer: a check of a 32 Mi-element output reads it in place.
#[inline]
fn element(b: &HostBuf, i: usize, bf16: bool) -> f64 {
    match b {
        HostBuf::F32(v) => f64::from(v[i]),
        HostBuf::F64(v) => v[i],
        HostBuf::U16(v) if bf16 => half::bf16::from_bits(v[i]).to_f64(),
        HostBuf::U16(v) => half::f16::from_bits(v[i]).to_f64(),
        HostBuf::U8(v) => f64::from(v[i]),
        HostBuf::I8(v) => f64::from(v[i]),
        HostBuf::U32(v) => f64::from(v[i]),
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
    fn a_check_that_compares_nothing_fails() {
        // Every reference element NaN: nothing checked, so no pass.
        let got = [HostBuf::F32(vec![1.0, 2.0])];
        let want = [HostBuf::F32(vec![f32::NAN, f32::NAN])];
        let r = compare(&["c"], &got, &want, &[false], Tolerance::new(1.0, 1.0));
        assert_eq!((r.passed, r.elements), (false, 0));
        assert!(r.first_failure.unwrap().starts_with("no element was compared"));
        // Empty outputs, and no outputs at all.
        let r = compare(
            &["c"],
            &[HostBuf::F64(vec![])],
            &[HostBuf::F64(vec![])],
            &[false],
            Tolerance::EXACT,
        );
        assert!(!r.passed);
        assert!(!compare(&[], &[], &[], &[], Tolerance::EXACT).passed);
        // One element compared is enough.
        let r = compare(
            &["c"],
            &[HostBuf::F64(vec![1.0, 5.0])],
            &[HostBuf::F64(vec![1.0, f64::NAN])],
            &[false],
            Tolerance::EXACT,
        );
        assert!(r.passed);
    }

    #[test]
    fn nan_output_fails() {
        let got = [HostBuf::F32(vec![f32::NAN])];
        let want = [HostBuf::F32(vec![1.0])];
        assert!(!compare(&["c"], &got, &want, &[false], Tolerance::new(1.0, 1.0)).passed);
    }
}
