//! Readers of profiler outputs: PyTorch/Kineto traces (and later rocprof, ncu, nsys).
