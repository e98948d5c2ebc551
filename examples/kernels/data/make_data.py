#!/usr/bin/env python3
"""Writes the fixed inputs and expected outputs of the `swiglu_files` example kernel
(examples/kernels/kernels.toml) with numpy: gate and up uniform in [-4, 4) from seed 7,
y = silu(gate) * up computed in float64 and stored as float32.

    cd examples/kernels/data && python3 make_data.py
"""
import numpy as np

rng = np.random.default_rng(7)
for n in (1024, 16384):
    gate = rng.uniform(-4, 4, n).astype(np.float32)
    up = rng.uniform(-4, 4, n).astype(np.float32)
    g = gate.astype(np.float64)
    y = (g / (1.0 + np.exp(-g)) * up.astype(np.float64)).astype(np.float32)
    np.save(f"gate_{n}.npy", gate)
    np.save(f"up_{n}.npy", up)
    np.save(f"y_{n}.npy", y)
