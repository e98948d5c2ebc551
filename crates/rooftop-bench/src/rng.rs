//! Seeded random inputs for checks and timing (never zeros).

use crate::backend::{DType, HostBuf};
use serde::Serialize;

/// How a buffer is initialised before a kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Init {
    /// Uniform in `[lo, hi)` (floating dtypes; f16/bf16 stored as bits).
    Uniform { lo: f64, hi: f64 },
    /// Uniformly random bits (packed integer weights, quantised blocks).
    RandomBits,
    /// Uniform integers in `[lo, hi]` (i8/u8/u32).
    Int { lo: i64, hi: i64 },
    /// A random single-cycle permutation of `0..len` (`u32`): `next = buf[cur]` visits
    /// every element once before returning (pointer chasing).
    Cycle,
    /// Output buffers: filled with a NaN/sentinel pattern so that a kernel that writes
    /// nothing fails its check.
    Poison,
}

/// Fills a buffer of `dtype` and `len` per `init` from a seeded generator.
pub fn fill(dtype: DType, len: usize, init: Init, seed: u64) -> HostBuf {
    let mut rng = fastrand::Rng::with_seed(seed);
    match (init, dtype) {
        (Init::Uniform { lo, hi }, DType::F32) => {
            HostBuf::F32((0..len).map(|_| (lo + (hi - lo) * rng.f64()) as f32).collect())
        }
        (Init::Uniform { lo, hi }, DType::F64) => {
            HostBuf::F64((0..len).map(|_| lo + (hi - lo) * rng.f64()).collect())
        }
        (Init::Uniform { lo, hi }, DType::F16) => HostBuf::U16(
            (0..len).map(|_| half::f16::from_f64(lo + (hi - lo) * rng.f64()).to_bits()).collect(),
        ),
        (Init::Uniform { lo, hi }, DType::Bf16) => HostBuf::U16(
            (0..len).map(|_| half::bf16::from_f64(lo + (hi - lo) * rng.f64()).to_bits()).collect(),
        ),
        (Init::Int { lo, hi }, DType::I8) => {
            HostBuf::I8((0..len).map(|_| rng.i64(lo..=hi) as i8).collect())
        }
        (Init::Int { lo, hi }, DType::U8) => {
            HostBuf::U8((0..len).map(|_| rng.i64(lo..=hi) as u8).collect())
        }
        (Init::Int { lo, hi }, DType::U32) => {
            HostBuf::U32((0..len).map(|_| rng.i64(lo..=hi) as u32).collect())
        }
        (Init::Cycle, _) => HostBuf::U32(cycle(len, &mut rng)),
        (Init::Poison, DType::F32) => HostBuf::F32(vec![f32::NAN; len]),
        (Init::Poison, DType::F64) => HostBuf::F64(vec![f64::NAN; len]),
        (Init::Poison, DType::F16 | DType::Bf16) => HostBuf::U16(vec![0x7E00; len]),
        (Init::Poison, DType::U32) => HostBuf::U32(vec![u32::MAX; len]),
        (Init::Poison, DType::U8) => HostBuf::U8(vec![0xA5; len]),
        (Init::Poison, DType::I8) => HostBuf::I8(vec![-91; len]),
        (_, DType::U8) => HostBuf::U8((0..len).map(|_| rng.u8(..)).collect()),
        (_, DType::I8) => HostBuf::I8((0..len).map(|_| rng.i8(..)).collect()),
        (_, DType::U32) => HostBuf::U32((0..len).map(|_| rng.u32(..)).collect()),
        (_, DType::F16 | DType::Bf16) => HostBuf::U16((0..len).map(|_| rng.u16(..)).collect()),
        (_, DType::F32) => HostBuf::F32((0..len).map(|_| rng.f32() + 0.5).collect()),
        (_, DType::F64) => HostBuf::F64((0..len).map(|_| rng.f64() + 0.5).collect()),
    }
}

/// Fills every buffer of `specs`, buffer `i` from seed `base + i * stride`.
pub fn fill_all(specs: &[crate::suite::BufferSpec], base: u64, stride: u64) -> Vec<HostBuf> {
    specs
        .iter()
        .enumerate()
        .map(|(i, s)| fill(s.dtype, s.len, s.init, base.wrapping_add(i as u64 * stride)))
        .collect()
}

/// Sattolo's algorithm: a uniformly random permutation with exactly one cycle.
fn cycle(len: usize, rng: &mut fastrand::Rng) -> Vec<u32> {
    let mut p: Vec<u32> = (0..len as u32).collect();
    for i in (1..len).rev() {
        let j = rng.usize(..i);
        p.swap(i, j);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_visits_every_element_once() {
        let HostBuf::U32(p) = fill(DType::U32, 1000, Init::Cycle, 7) else { panic!() };
        let mut seen = vec![false; 1000];
        let mut cur = 0usize;
        for _ in 0..1000 {
            assert!(!seen[cur]);
            seen[cur] = true;
            cur = p[cur] as usize;
        }
        assert_eq!(cur, 0);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn uniform_is_never_all_zero_and_in_range() {
        let HostBuf::F32(v) = fill(DType::F32, 1000, Init::Uniform { lo: -1.0, hi: 1.0 }, 1) else {
            panic!()
        };
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        assert!(v.iter().filter(|x| **x != 0.0).count() > 990);
    }
}
