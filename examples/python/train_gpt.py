"""Train a small GPT from Python with tcc, then generate with PyTorch.

    .venv/bin/python examples/python/train_gpt.py [--steps 300]

1. the whole-step API: model + loss + torch optimizer compiled into one tcc
   training step (tcc.torch.compile_train_step);
2. the same model under torch.compile(backend="tcc") in an ordinary PyTorch
   loop (loss.backward(), optimizer.step());
3. the trained weights back in the nn.Module, which generates text; the
   session's checkpoint exported to ONNX for onnxruntime.
The guide: docs/python.md.
"""

import argparse
import math
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import tcc
import tcc.torch

TEXT = "tcc compiles training steps ahead of time. " * 20
VOCAB = sorted(set(TEXT))
B, T = 8, 16


class Block(nn.Module):
    """Pre-LN transformer block, attention written out op by op."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(d, dim=2)
        q, k, v = (a.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for a in (q, k, v))
        att = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, d=48, heads=2, layers=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def batches(data, gen):
    while True:
        start = torch.randint(0, len(data) - T - 1, (B,), generator=gen)
        x = torch.stack([data[s:s + T] for s in start])
        y = torch.stack([data[s + 1:s + T + 1] for s in start])
        yield x, y


@torch.no_grad()
def generate(model, prompt, n):
    idx = torch.tensor([[VOCAB.index(c) for c in prompt]])
    for _ in range(n):
        logits = model(idx[:, -T:])
        idx = torch.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    return "".join(VOCAB[i] for i in idx[0])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300)
    steps = p.parse_args().steps
    torch.manual_seed(0)
    data = torch.tensor([VOCAB.index(c) for c in TEXT])
    gen = torch.Generator().manual_seed(0)
    model = GPT(len(VOCAB))

    # 1. The whole step in tcc: forward, loss, backward and AdamW.
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    example, _ = next(batches(data, gen))
    step = tcc.torch.compile_train_step(model, nn.CrossEntropyLoss(), opt, (example,),
                                        grad_clip=1.0)
    feed = batches(data, gen)
    losses = [step(*next(feed)) for _ in range(steps)]
    print(f"compile_train_step: loss {losses[0]:.3f} -> {losses[-1]:.3f} "
          f"in {steps} steps")
    step.sync()  # the trained weights, back in `model`
    print("generated:", repr(generate(model, "tcc comp", 40)))

    with tempfile.TemporaryDirectory() as out:
        ckpt = step.session.save_checkpoint(os.path.join(out, "ckpt"))
        onnx_path = os.path.join(out, "gpt.onnx")
        tcc.export(ckpt, onnx_path, model=step.artifact.source)
        import onnxruntime
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only
        ort_logits, = onnxruntime.InferenceSession(onnx_path, options).run(
            None, {"idx": example.numpy()})
    err = np.abs(ort_logits - model(example).detach().numpy()).max()
    print(f"exported to ONNX: onnxruntime's logits within {err:.1e} of PyTorch's")
    step.close()

    # 2. torch.compile: PyTorch's loop and optimizer, tcc's forward and backward.
    model2 = GPT(len(VOCAB))
    compiled = torch.compile(model2, backend="tcc", dynamic=False)
    opt2 = torch.optim.AdamW(model2.parameters(), lr=3e-3, weight_decay=0.0)
    for i in range(20):
        x, y = next(feed)
        opt2.zero_grad()
        loss = F.cross_entropy(compiled(x).view(-1, len(VOCAB)), y.view(-1))
        loss.backward()
        opt2.step()
        if i in (0, 19):
            print(f"torch.compile(backend='tcc'): step {i + 1} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
