//! Checks without a materialised reference: the expected value of every output element
//! is computed where it is compared, in parallel chunks, by the same f64 expression the
//! kernel's `reference` uses and rounded to the output type as `reference` stores it.
//! The result is the [`CheckResult`] reference-then-compare gives (tested per kernel),
//! without allocating, writing and reading back a reference buffer as large as the
//! output: for a 32 Mi-element output that is 128 MiB of page faults and two passes
//! over memory saved per case.

use super::check::{scan, Part, CHUNK};
use super::{CheckResult, Tolerance};
use crate::backend::HostBuf;
use rayon::prelude::*;
use rooftop_core::units::Precision;

/// What is done with the expression of every output element: stored (a reference
/// buffer) or compared ([`Check`]). A trait with a generic method, so that each kernel's
/// expression is compiled into the loop rather than called through a pointer.
pub(crate) trait ElementFn {
    type Output;
    fn apply<F: Fn(usize) -> f64 + Sync>(self, f: F) -> Self::Output;
}

/// The same for rows: `f(r, out)` writes row `r`.
pub(crate) trait RowFn {
    type Output;
    fn apply<F: Fn(usize, &mut [f64]) + Sync>(self, f: F) -> Self::Output;
}

/// Stores `n` elements (or `rows` × `cols`) of precision `p`: the reference buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Store {
    pub p: Precision,
    pub rows: usize,
    pub cols: usize,
}

impl ElementFn for Store {
    type Output = HostBuf;
    fn apply<F: Fn(usize) -> f64 + Sync>(self, f: F) -> HostBuf {
        super::view::par_store(self.p, self.rows * self.cols, f)
    }
}

impl RowFn for Store {
    type Output = HostBuf;
    fn apply<F: Fn(usize, &mut [f64]) + Sync>(self, f: F) -> HostBuf {
        super::view::par_rows(self.p, self.rows, self.cols, f)
    }
}

/// Compares output `got` (`rows` × `cols` of precision `p`) element by element.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Check<'a> {
    pub name: &'a str,
    pub got: &'a HostBuf,
    pub p: Precision,
    pub rows: usize,
    pub cols: usize,
    pub tol: Tolerance,
}

impl ElementFn for Check<'_> {
    type Output = Option<CheckResult>;
    fn apply<F: Fn(usize) -> f64 + Sync>(self, f: F) -> Option<CheckResult> {
        compare_with(self.name, self.got, self.rows * self.cols, self.p, self.tol, f)
    }
}

impl RowFn for Check<'_> {
    type Output = Option<CheckResult>;
    fn apply<F: Fn(usize, &mut [f64]) + Sync>(self, f: F) -> Option<CheckResult> {
        compare_rows(self.name, self.got, self.rows, self.cols, self.p, self.tol, f)
    }
}

/// An expected value as the reference stores it: f64 for fp64 outputs, else rounded
/// once to f32.
#[inline]
pub(crate) fn stored(p: Precision, x: f64) -> f64 {
    if p == Precision::Fp64 {
        x
    } else {
        f64::from(x as f32)
    }
}

/// The element reader of a float output.
fn reader(got: &HostBuf) -> Option<super::view::F64View<'_>> {
    super::view::F64View::of(got)
}

fn result(name: &str, part: Part, tol: Tolerance) -> CheckResult {
    let mut r = CheckResult {
        passed: part.first_failure.is_none(),
        max_abs_error: part.max_abs,
        max_rel_error: part.max_rel,
        tolerance: tol,
        elements: part.elements,
        first_failure: None,
    };
    if let Some((j, a, b)) = part.first_failure {
        r.first_failure = Some(format!("{name}[{j}]: got {a}, want {b}"));
    }
    super::check::fail_if_nothing_compared(&mut r);
    r
}

fn length_mismatch(name: &str, got: usize, want: usize, tol: Tolerance) -> CheckResult {
    CheckResult {
        passed: false,
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        tolerance: tol,
        elements: 0,
        first_failure: Some(format!("{name}: {got} elements, reference has {want}")),
    }
}

/// Compares output `got` (`n` elements of precision `p`) with `want(i)`, the unrounded
/// f64 expected value of element `i`.
pub(crate) fn compare_with(
    name: &str,
    got: &HostBuf,
    n: usize,
    p: Precision,
    tol: Tolerance,
    want: impl Fn(usize) -> f64 + Sync,
) -> Option<CheckResult> {
    let g = reader(got)?;
    if g.len() != n {
        return Some(length_mismatch(name, g.len(), n, tol));
    }
    let part = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let range = c * CHUNK..((c + 1) * CHUNK).min(n);
            scan(range, |j| g.get(j), |j| stored(p, want(j)), tol)
        })
        .reduce(Part::default, Part::then);
    Some(result(name, part, tol))
}

/// Compares output `got` (`rows` × `cols` of precision `p`) with rows of expected values
/// that `row(r, out)` writes (unrounded f64) into `out`.
pub(crate) fn compare_rows(
    name: &str,
    got: &HostBuf,
    rows: usize,
    cols: usize,
    p: Precision,
    tol: Tolerance,
    row: impl Fn(usize, &mut [f64]) + Sync,
) -> Option<CheckResult> {
    let g = reader(got)?;
    if g.len() != rows * cols {
        return Some(length_mismatch(name, g.len(), rows * cols, tol));
    }
    let per_task = (CHUNK / cols.max(1)).max(1);
    let part = (0..rows.div_ceil(per_task))
        .into_par_iter()
        .map_init(
            || vec![0.0f64; cols],
            |buf, t| {
                let mut part = Part::default();
                for r in t * per_task..((t + 1) * per_task).min(rows) {
                    row(r, buf);
                    let base = r * cols;
                    let p_row =
                        scan(base..base + cols, |j| g.get(j), |j| stored(p, buf[j - base]), tol);
                    part = part.then(p_row);
                }
                part
            },
        )
        .reduce(Part::default, Part::then);
    Some(result(name, part, tol))
}

#[cfg(test)]
mod tests {
    use crate::backend::HostBuf;
    use crate::case::Case;
    use crate::suite::{compare, KernelId};
    use rooftop_core::units::Precision;

    fn case(kernel: KernelId, p: Precision) -> Case {
        let sizes = if kernel.def().size_params() == ["n"] {
            vec![("n", 3 * super::CHUNK as u64 + 17)]
        } else {
            vec![("rows", 37), ("cols", 4099)]
        };
        Case { kernel: kernel.into(), sizes, dtype: p, weights: None, variant: None }
    }

    fn poke(b: &mut HostBuf, i: usize, v: f64) {
        match b {
            HostBuf::F32(x) => x[i] = v as f32,
            HostBuf::F64(x) => x[i] = v,
            _ => panic!(),
        }
    }

    /// An in-place check of an empty output compares nothing, so it fails as the
    /// reference-then-compare check does.
    #[test]
    fn an_in_place_check_of_nothing_fails() {
        let tol = super::Tolerance::new(1.0, 1.0);
        let r =
            super::compare_with("y", &HostBuf::F32(Vec::new()), 0, Precision::Fp32, tol, |_| 1.0)
                .unwrap();
        let plain = compare(
            &["y"],
            &[HostBuf::F32(Vec::new())],
            &[HostBuf::F32(Vec::new())],
            &[false],
            tol,
        );
        assert_eq!(r, plain);
        assert!(!r.passed && r.elements == 0);
    }

    /// Element by element gives what reference-then-compare gives: passing, an element
    /// off, a NaN, for every kernel that has an in-place check.
    #[test]
    fn in_place_checks_equal_reference_then_compare() {
        for name in [
            KernelId::Write,
            KernelId::Copy,
            KernelId::Scale,
            KernelId::Add,
            KernelId::Triad,
            KernelId::Silu,
            KernelId::Gelu,
            KernelId::RmsNorm,
            KernelId::LayerNorm,
            KernelId::Softmax,
            KernelId::SoftmaxOnline,
            KernelId::RowSum,
        ] {
            for p in [Precision::Fp32, Precision::Fp64] {
                let k = name.def();
                let c = case(name, p);
                let specs = k.buffers(&c);
                let inputs = crate::rng::fill_all(&specs, 11, 7);
                let tol = k.tolerance(&c);
                let want = k.reference(&c, &inputs);
                let out_name = specs.iter().find(|s| s.output).unwrap().name;
                let mut variants = vec![want[0].clone()];
                let mut off = want[0].clone();
                poke(&mut off, 1234 % want[0].len(), 12345.0);
                variants.push(off);
                let mut nan = want[0].clone();
                poke(&mut nan, want[0].len() - 1, f64::NAN);
                variants.push(nan);
                for (v, got) in variants.iter().enumerate() {
                    let fused = k.check_in_place(&c, &inputs, &[got], tol).unwrap();
                    let plain =
                        compare(&[out_name], std::slice::from_ref(got), &want, &[false], tol);
                    assert_eq!(fused, plain, "{name} {p:?} variant {v}");
                    assert_eq!(fused.passed, v == 0, "{name} {p:?} variant {v}: {fused:?}");
                }
            }
        }
    }
}
