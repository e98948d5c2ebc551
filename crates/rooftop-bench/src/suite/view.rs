//! Reading float buffers as f64 without copying them, and writing reference outputs
//! straight into the buffer type: what the references of the large kernels use, so a
//! check of a 32 Mi-element case allocates its outputs and nothing else (a widened copy
//! of every input was 256 MiB of page faults per input).
//!
//! Element-wise references run on rayon's global pool in chunks of [`CHUNK`] elements;
//! every element is computed by the same f64 expression whatever the chunking, so the
//! results are identical to a sequential loop.

use crate::backend::HostBuf;
use rayon::prelude::*;
use rooftop_core::units::Precision;

/// Elements per rayon task of an element-wise reference.
pub const CHUNK: usize = 1 << 16;

/// A float buffer read as f64.
#[derive(Debug, Clone, Copy)]
pub enum F64View<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl<'a> F64View<'a> {
    /// The view of an f32 or f64 buffer (`None` for other types).
    pub fn of(b: &'a HostBuf) -> Option<F64View<'a>> {
        match b {
            HostBuf::F32(v) => Some(F64View::F32(v)),
            HostBuf::F64(v) => Some(F64View::F64(v)),
            _ => None,
        }
    }

    /// The view of `b` when it holds exactly `len` elements.
    pub fn of_len(b: Option<&'a HostBuf>, len: usize) -> Option<F64View<'a>> {
        b.and_then(F64View::of).filter(|v| v.len() == len)
    }

    pub fn len(&self) -> usize {
        match self {
            F64View::F32(v) => v.len(),
            F64View::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        match self {
            F64View::F32(v) => f64::from(v[i]),
            F64View::F64(v) => v[i],
        }
    }

    /// Elements `start..end`.
    #[must_use]
    pub fn slice(&self, start: usize, end: usize) -> F64View<'a> {
        match self {
            F64View::F32(v) => F64View::F32(&v[start..end]),
            F64View::F64(v) => F64View::F64(&v[start..end]),
        }
    }

    /// Every element in order.
    pub fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }
}

/// `n` outputs `f(i)` stored in the buffer type of `p` (fp64 or fp32, rounded once),
/// computed in parallel.
pub fn par_store(p: Precision, n: usize, f: impl Fn(usize) -> f64 + Sync) -> HostBuf {
    if p == Precision::Fp64 {
        let mut v = vec![0.0f64; n];
        v.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
            for (j, o) in out.iter_mut().enumerate() {
                *o = f(c * CHUNK + j);
            }
        });
        HostBuf::F64(v)
    } else {
        let mut v = vec![0.0f32; n];
        v.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
            for (j, o) in out.iter_mut().enumerate() {
                *o = f(c * CHUNK + j) as f32;
            }
        });
        HostBuf::F32(v)
    }
}

/// Rows of `rows x cols` outputs, each row computed by `f(row, out)` into an f64 row,
/// stored in the buffer type of `p`, rows in parallel.
pub fn par_rows(
    p: Precision,
    rows: usize,
    cols: usize,
    f: impl Fn(usize, &mut [f64]) + Sync,
) -> HostBuf {
    let per_task = (CHUNK / cols.max(1)).max(1);
    if p == Precision::Fp64 {
        let mut v = vec![0.0f64; rows * cols];
        v.par_chunks_mut(per_task * cols.max(1)).enumerate().for_each(|(t, out)| {
            for (j, row) in out.chunks_mut(cols.max(1)).enumerate() {
                f(t * per_task + j, row);
            }
        });
        HostBuf::F64(v)
    } else {
        let mut v = vec![0.0f32; rows * cols];
        v.par_chunks_mut(per_task * cols.max(1)).enumerate().for_each(|(t, out)| {
            let mut tmp = vec![0.0f64; cols];
            for (j, row) in out.chunks_mut(cols.max(1)).enumerate() {
                f(t * per_task + j, &mut tmp);
                for (o, x) in row.iter_mut().zip(&tmp) {
                    *o = *x as f32;
                }
            }
        });
        HostBuf::F32(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_read_both_float_types_and_refuse_others() {
        let a = HostBuf::F32(vec![1.5, 2.5]);
        let v = F64View::of(&a).unwrap();
        assert_eq!((v.len(), v.get(1)), (2, 2.5));
        assert!(F64View::of_len(Some(&a), 3).is_none());
        assert!(F64View::of(&HostBuf::U8(vec![1])).is_none());
        assert_eq!(v.slice(1, 2).iter().collect::<Vec<_>>(), vec![2.5]);
    }

    #[test]
    fn parallel_stores_match_a_sequential_loop() {
        let n = 3 * CHUNK + 17;
        let HostBuf::F32(v) = par_store(Precision::Fp32, n, |i| i as f64 * 0.5) else { panic!() };
        assert!(v.iter().enumerate().all(|(i, &x)| x == (i as f64 * 0.5) as f32));
        let HostBuf::F64(r) = par_rows(Precision::Fp64, 5, 3, |r, out| {
            for (j, o) in out.iter_mut().enumerate() {
                *o = (r * 10 + j) as f64;
            }
        }) else {
            panic!()
        };
        assert_eq!(r[3 * 4 + 2], 42.0);
    }
}
