//! A fast non-cryptographic hasher for the reader's maps (the keys come from one file
//! and are not chosen by an attacker who gains anything from collisions: a crafted
//! trace could only make its own reading slower). The multiply-rotate step is
//! rustc's FxHasher.

use std::hash::{BuildHasherDefault, Hasher};

/// FxHash over 8-byte words.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Fx(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl Fx {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }
}

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.add(i as u64);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`Fx`].
pub(crate) type FxMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<Fx>>;
/// A `HashSet` with [`Fx`].
pub(crate) type FxSet<K> = std::collections::HashSet<K, BuildHasherDefault<Fx>>;
