"""The benchmark's model, data and arithmetic, shared by both stages.

The GPT is test/models/models.py's TinyGPT (pre-LN, tied embeddings, causal
attention written out op by op so the ONNX graph has the pattern tcc raises
to tcc.attention, tanh GELU). Everything here is a pure function of the
configuration and the seed, so `--stage compile` on one machine and
`--stage run` on another build the same model and the same token stream.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import models  # noqa: E402

# AdamW of nanoGPT's GPT-2 runs; one set of numbers for tcc and PyTorch.
ADAMW = dict(lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)

# name -> model shape and the default run (batch, seq, steps, warm-up, init).
# gpt2-124m: GPT-2 small; the vocabulary 50257 padded to 50304 (a multiple
# of 64, as nanoGPT/llm.c do), tokens drawn from the real 50257.
CONFIGS = {
    "tiny": dict(layers=2, embd=128, heads=4, vocab=512, vocab_real=512,
                 seq=64, batch=8, steps=20, warmup=3, init="torch"),
    # The mid-size CPU model of issue 19: 4 layers, d=256, 4 heads, seq 128.
    "small": dict(layers=4, embd=256, heads=4, vocab=1024, vocab_real=1024,
                  seq=128, batch=8, steps=10, warmup=2, init="gpt2"),
    "gpt2-124m": dict(layers=12, embd=768, heads=12, vocab=50304, vocab_real=50257,
                      seq=1024, batch=8, steps=20, warmup=5, init="gpt2"),
}


def adamw_flag():
    return "adamw:lr=%g,beta1=%g,beta2=%g,eps=%g,weight_decay=%g" % (
        ADAMW["lr"], ADAMW["betas"][0], ADAMW["betas"][1], ADAMW["eps"],
        ADAMW["weight_decay"])


class SdpaAttention(models.CausalSelfAttention):
    """The same attention through F.scaled_dot_product_attention(is_causal)
    (flash/memory-efficient kernels on a GPU): the PyTorch baselines'
    default, since that is how one trains a GPT in PyTorch. Same
    parameters, same math."""

    def forward(self, x):
        B, T, C = x.size()
        hd = self.head_dim
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


def build(c, seed, attention="explicit"):
    """The model of config dict `c` (CONFIGS entry with overrides), on the
    CPU in float32, initialised from `seed`. attention: "explicit" (the
    exported op-by-op form) or "sdpa" (same parameters, fused attention)."""
    cfg = models.GPTConfig()
    cfg.vocab_size, cfg.block_size = c["vocab"], c["seq"]
    cfg.n_layer, cfg.n_head, cfg.n_embd = c["layers"], c["heads"], c["embd"]
    torch.manual_seed(seed)
    model = models.TinyGPT(cfg)
    if c["init"] == "gpt2":
        # GPT-2's initialisation (nanoGPT): N(0, 0.02), zero biases, the
        # residual projections scaled by 1/sqrt(2L). The loss starts near
        # ln(vocab) rather than at PyTorch's default-init ~20.
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("bias"):
                    p.zero_()
                elif p.dim() == 1:  # layer norm weights
                    p.fill_(1.0)
                else:
                    std = 0.02
                    if name.endswith("c_proj.weight"):
                        std /= math.sqrt(2 * c["layers"])
                    p.copy_(torch.randn(p.shape, generator=g) * std)
    if attention == "sdpa":
        if not hasattr(F, "scaled_dot_product_attention"):
            raise SystemExit("--torch-attention sdpa needs torch >= 2.0 (this is %s)"
                             % torch.__version__)
        for block in model.h:
            block.attn.__class__ = SdpaAttention
    return model


def n_params(c):
    """Trainable parameters (the tied lm_head counted once)."""
    L, d, V, T = c["layers"], c["embd"], c["vocab"], c["seq"]
    per_layer = 12 * d * d + 13 * d  # c_attn, attn c_proj, c_fc, mlp c_proj, 2 LN
    return V * d + T * d + L * per_layer + 2 * d


def flops_per_token(c):
    """Training FLOPs per token: 6*N + 12*L*T*d (PaLM appendix B / nanoGPT's
    estimate_mfu), N the parameters without the position embedding (it is a
    lookup, no matmul); the attention term counts QK^T and AV forward and
    backward over the full T x T, without crediting the causal mask."""
    N = n_params(c) - c["seq"] * c["embd"]
    return 6 * N + 12 * c["layers"] * c["seq"] * c["embd"]


def write_tokens(path, c, n_batches, seed):
    """A token shard as tcc-run reads a `.bin`: raw little-endian uint16 ids,
    n_batches*B*T + 1 of them, uniform in [0, vocab_real), from `seed`."""
    n = n_batches * c["batch"] * c["seq"] + 1
    tok = np.random.default_rng(seed).integers(0, c["vocab_real"], size=n, dtype=np.uint16)
    tok.astype("<u2").tofile(path)
    return tok


def read_tokens(path):
    """A shard write_tokens wrote."""
    return np.fromfile(path, dtype="<u2")


def global_batch(c, ranks):
    """The configuration whose batch is the global batch of `ranks`
    data-parallel ranks of c["batch"] rows each."""
    return dict(c, batch=ranks * c["batch"])


def batch(tok, c, i):
    """Step i's (tokens, labels), exactly what tcc-run feeds from the shard:
    t[p..p+B*T) and t[p+1..p+B*T] with p = (i mod batches) * B*T."""
    bt = c["batch"] * c["seq"]
    nb = (len(tok) - 1) // bt
    p = (i % nb) * bt
    x = tok[p:p + bt].astype(np.int64).reshape(c["batch"], c["seq"])
    y = tok[p + 1:p + bt + 1].astype(np.int64).reshape(c["batch"], c["seq"])
    return x, y
