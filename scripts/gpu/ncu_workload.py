"""A small PyTorch workload for Nsight Compute captures (scripts/gpu-capture.sh): a bf16
GEMM, a layer norm, a softmax and scaled-dot-product attention, each launched twice
inside an NVTX range named `profile` (ncu --nvtx --nvtx-include "profile/"), on random
data made before the range.

    python3 scripts/gpu/ncu_workload.py
"""
import torch
import torch.nn.functional as F


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    x = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, device=dev, dtype=torch.bfloat16)
    q = torch.randn(8, 16, 1024, 128, device=dev, dtype=torch.bfloat16)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profile")
    for _ in range(2):
        c = a @ b
        y = F.layer_norm(x, (4096,), w, w)
        s = torch.softmax(x, dim=-1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    print("checksums", float(c.float().sum()), float(y.float().sum()),
          float(s.float().sum()), float(o.float().sum()))


if __name__ == "__main__":
    main()
