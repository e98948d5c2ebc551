//! Runtime-dispatched SIMD helpers for the CPU kernels (being written).
