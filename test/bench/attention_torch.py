#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention at attention_bench's shape, in
its output format: the baseline beside tcc's kernels in one run.

    attention_torch.py [B H T D]     (default 8 12 1024 64)

Causal, bf16 and f32 (TF32 off), inputs uniform in [-1, 1); the median of
20 timed forward calls and of 20 backward calls (autograd of the sum of
out * dout) after 3 warm-up ones, CUDA events.
"""
import sys

import torch
import torch.nn.functional as F


def median_ms(fn):
    for _ in range(3):
        fn()
    times = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def main():
    B, H, T, D = (int(a) for a in sys.argv[1:5]) if len(sys.argv) == 5 else (8, 12, 1024, 64)
    if not torch.cuda.is_available():
        print("attention_torch: no CUDA device: skipped")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    flops_fwd = 2.0 * 2.0 * B * H * T * T * D / 2.0
    flops_bwd = 2.5 * flops_fwd
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float32, "f32")):
        g = torch.Generator(device="cuda").manual_seed(0)
        q, k, v, dout = (torch.rand(B, H, T, D, device="cuda", generator=g, dtype=dtype) * 2 - 1
                         for _ in range(4))
        for t in (q, k, v):
            t.requires_grad_(True)
        fwd = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def bwd():
            torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)

        b = median_ms(bwd)
        print("attention %s B=%d H=%d T=%d D=%d causal: forward %.3f ms (%.1f TFLOP/s), "
              "backward %.3f ms (%.1f TFLOP/s) [PyTorch sdpa]"
              % (name, B, H, T, D, fwd, flops_fwd / fwd / 1e9, b, flops_bwd / b / 1e9))


if __name__ == "__main__":
    main()
