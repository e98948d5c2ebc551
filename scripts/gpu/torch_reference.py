"""PyTorch's own copy and bf16 GEMM on this GPU, timed with CUDA events: the yardstick
for `rooftop bench --backend cuda` in scripts/gpu-validate.sh.

    python3 scripts/gpu/torch_reference.py OUT.json

copy: y.copy_(x) on 2^25 fp32 elements (rooftop's `copy` default), bytes read + written
over the time. gemm: torch.matmul on random bf16 8192x8192 operands, 2*8192^3 FLOP over
the time. softmax / layer_norm over 4096 x 4096 fp32 (rooftop's norm default shape),
bytes read + written. Each: median of 30 event-timed runs after 10 warm-ups; results are
checked before timing (copy exact, matmul against fp32, softmax rows sum to 1).
"""
import json
import statistics
import sys

import torch


def median_s(fn, warmup=10, reps=30):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times), min(times), max(times)


def main(out):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cuda": torch.version.cuda, "method": "CUDA events, median of 30 after 10 warm-ups"}

    n = 1 << 25
    x = torch.randn(n, device=dev)
    y = torch.full_like(x, float("nan"))
    y.copy_(x)
    assert torch.equal(x, y), "copy check failed"
    t, lo, hi = median_s(lambda: y.copy_(x))
    res["copy_elements"] = n
    res["copy_bytes"] = 2 * 4 * n
    res["copy_s"] = t
    res["copy_gbs"] = 2 * 4 * n / t / 1e9
    res["copy_spread_s"] = [lo, hi]

    m = 8192
    a = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    b = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    c = torch.matmul(a, b)
    ref = torch.matmul(a[:256].float(), b.float())
    err = (c[:256].float() - ref).norm() / ref.norm()
    assert err < 1e-2, f"gemm check failed: relative error {err}"
    t, lo, hi = median_s(lambda: torch.matmul(a, b))
    res["gemm_shape"] = [m, m, m]
    res["gemm_s"] = t
    res["gemm_bf16_tflops"] = 2 * m**3 / t / 1e12
    res["gemm_rel_err"] = float(err)
    res["gemm_spread_s"] = [lo, hi]
    # rooftop's cuBLASLt probe writes fp32 (its check needs it): the same product with an
    # fp32 result, where this torch has it (torch.mm out_dtype).
    try:
        c32 = torch.mm(a, b, out_dtype=torch.float32)
        err32 = (c32[:256] - ref).norm() / ref.norm()
        assert err32 < 1e-2, f"fp32-output gemm check failed: {err32}"
        t, _, _ = median_s(lambda: torch.mm(a, b, out_dtype=torch.float32))
        res["gemm_bf16_fp32out_tflops"] = 2 * m**3 / t / 1e12
    except (TypeError, RuntimeError) as e:
        res["gemm_bf16_fp32out_tflops"] = None
        res["gemm_bf16_fp32out_why"] = str(e)[:200]

    r = torch.randn(4096, 4096, device=dev)
    s = torch.softmax(r, dim=-1)
    assert torch.allclose(s.sum(-1), torch.ones(4096, device=dev), atol=1e-4)
    t, _, _ = median_s(lambda: torch.softmax(r, dim=-1))
    res["softmax_4096x4096_gbs"] = 2 * 4 * r.numel() / t / 1e9
    w, bias = torch.randn(4096, device=dev), torch.randn(4096, device=dev)
    t, _, _ = median_s(lambda: torch.nn.functional.layer_norm(r, (4096,), w, bias))
    res["layer_norm_4096x4096_gbs"] = 2 * 4 * r.numel() / t / 1e9
    json.dump(res, open(out, "w"), indent=2)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main(sys.argv[1])
