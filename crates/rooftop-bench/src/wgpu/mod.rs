//! wgpu backend (feature `wgpu`).
