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

/// Elements per independently seeded block of [`fill`]: blocks are filled in parallel,
/// each from its own generator, so the contents depend on the seed only (not on the
/// number of threads).
const BLOCK: usize = 1 << 16;

/// Fills a buffer of `dtype` and `len` per `init` from a seeded generator.
pub fn fill(dtype: DType, len: usize, init: Init, seed: u64) -> HostBuf {
    use rayon::prelude::*;
    /// `len` elements, block `b` from generator `seed ^ mix(b)`.
    fn blocks<T: Send + Default + Clone>(
        len: usize,
        seed: u64,
        f: impl Fn(&mut fastrand::Rng) -> T + Sync,
    ) -> Vec<T> {
        let mut v = vec![T::default(); len];
        v.par_chunks_mut(BLOCK).enumerate().for_each(|(b, out)| {
            let mut rng = fastrand::Rng::with_seed(block_seed(seed, b));
            for o in out {
                *o = f(&mut rng);
            }
        });
        v
    }
    match (init, dtype) {
        (Init::Uniform { lo, hi }, DType::F32) => {
            HostBuf::F32(blocks(len, seed, |r| (lo + (hi - lo) * r.f64()) as f32))
        }
        (Init::Uniform { lo, hi }, DType::F64) => {
            HostBuf::F64(blocks(len, seed, |r| lo + (hi - lo) * r.f64()))
        }
        (Init::Uniform { lo, hi }, DType::F16) => HostBuf::U16(blocks(len, seed, |r| {
            half::f16::from_f64(lo + (hi - lo) * r.f64()).to_bits()
        })),
        (Init::Uniform { lo, hi }, DType::Bf16) => HostBuf::U16(blocks(len, seed, |r| {
            half::bf16::from_f64(lo + (hi - lo) * r.f64()).to_bits()
        })),
        (Init::Int { lo, hi }, DType::I8) => {
            HostBuf::I8(blocks(len, seed, |r| r.i64(lo..=hi) as i8))
        }
        (Init::Int { lo, hi }, DType::U8) => {
            HostBuf::U8(blocks(len, seed, |r| r.i64(lo..=hi) as u8))
        }
        (Init::Int { lo, hi }, DType::U32) => {
            HostBuf::U32(blocks(len, seed, |r| r.i64(lo..=hi) as u32))
        }
        (Init::Cycle, _) => HostBuf::U32(cycle(len, &mut fastrand::Rng::with_seed(seed))),
        (Init::Poison, DType::F32) => HostBuf::F32(blocks(len, seed, |_| f32::NAN)),
        (Init::Poison, DType::F64) => HostBuf::F64(blocks(len, seed, |_| f64::NAN)),
        (Init::Poison, DType::F16 | DType::Bf16) => HostBuf::U16(blocks(len, seed, |_| 0x7E00)),
        (Init::Poison, DType::U32) => HostBuf::U32(blocks(len, seed, |_| u32::MAX)),
        (Init::Poison, DType::U8) => HostBuf::U8(blocks(len, seed, |_| 0xA5)),
        (Init::Poison, DType::I8) => HostBuf::I8(blocks(len, seed, |_| -91)),
        (_, DType::U8) => HostBuf::U8(blocks(len, seed, |r| r.u8(..))),
        (_, DType::I8) => HostBuf::I8(blocks(len, seed, |r| r.i8(..))),
        (_, DType::U32) => HostBuf::U32(blocks(len, seed, |r| r.u32(..))),
        (_, DType::F16 | DType::Bf16) => HostBuf::U16(blocks(len, seed, |r| r.u16(..))),
        (_, DType::F32) => HostBuf::F32(blocks(len, seed, |r| r.f32() + 0.5)),
        (_, DType::F64) => HostBuf::F64(blocks(len, seed, |r| r.f64() + 0.5)),
    }
}

/// The seed of block `b` (SplitMix64's finaliser of `seed + b`).
fn block_seed(seed: u64, b: usize) -> u64 {
    let mut z = seed.wrapping_add((b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
    fn contents_depend_on_the_seed_only() {
        let a = fill(DType::F32, 3 * BLOCK + 5, Init::Uniform { lo: 0.0, hi: 1.0 }, 9);
        let b = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| fill(DType::F32, 3 * BLOCK + 5, Init::Uniform { lo: 0.0, hi: 1.0 }, 9));
        assert_eq!(a, b);
        let HostBuf::F32(v) = a else { panic!() };
        // Blocks differ from one another (independent generators).
        assert_ne!(v[..16], v[BLOCK..BLOCK + 16]);
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
