#!/usr/bin/python3
"""Train-step benchmark: tcc against PyTorch on one GPT-2-style model.

    gpt_bench.py [--layers L --embd D --heads H --seq T --vocab V --batch B]
                 [--steps N] [--warmup W] [--tcc BUILD/bin] [--write-docs FILE]

Defines the GPT in PyTorch (test/models/models.py, tied embeddings, causal
attention, tanh GELU, pre-LN), exports it to ONNX, compiles it with
`tcc compile -o` (cross-entropy, AdamW) and trains it with `tcc-run` for N
steps on random tokens; in the same run PyTorch eager trains the same model
with the same batch and optimizer (and `torch.compile` where the installed
torch has it). Prints one table: median step time, tokens/s, ratios
tcc / baseline. With --write-docs it appends the table, the machine and the
command to FILE (docs/benchmarks.md).

A program, not a test: it asserts nothing about speed.
"""

import argparse
import csv
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import models  # noqa: E402
from export import export_onnx  # noqa: E402

ADAMW = dict(lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)


def build(a):
    cfg = models.GPTConfig()
    cfg.vocab_size, cfg.block_size = a.vocab, a.seq
    cfg.n_layer, cfg.n_head, cfg.n_embd = a.layers, a.heads, a.embd
    torch.manual_seed(0)
    return models.TinyGPT(cfg)


def batches(a, n):
    g = np.random.default_rng(0)
    tok = g.integers(0, a.vocab, size=(n * a.batch, a.seq + 1), dtype=np.int64)
    return tok[:, :-1], tok[:, 1:]


def torch_steps(model, x, y, a, step_fn_wrap=None):
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)

    def step(xb, yb):
        opt.zero_grad(set_to_none=True)
        logits = model(xb)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), yb.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    fn = step_fn_wrap(step) if step_fn_wrap else step
    times = []
    n = a.warmup + a.steps
    for i in range(n):
        xb = torch.from_numpy(x[(i % (len(x) // a.batch)) * a.batch:][:a.batch])
        yb = torch.from_numpy(y[(i % (len(y) // a.batch)) * a.batch:][:a.batch])
        t0 = time.perf_counter()
        fn(xb, yb).item()
        times.append(time.perf_counter() - t0)
    return times[a.warmup:]


def tcc_steps(a, model, x, y, work):
    onnx_path = os.path.join(work, "model.onnx")
    idx = torch.zeros(a.batch, a.seq, dtype=torch.long)
    export_onnx(model, {"idx": idx}, ["logits"], onnx_path)
    data = os.path.join(work, "data.npz")
    np.savez(data, idx=x, labels=y)
    art = os.path.join(work, "model.tcc")
    opt = "adamw:lr=%g,beta1=%g,beta2=%g,eps=%g,weight_decay=%g" % (
        ADAMW["lr"], ADAMW["betas"][0], ADAMW["betas"][1], ADAMW["eps"], ADAMW["weight_decay"])
    t0 = time.perf_counter()
    subprocess.run([os.path.join(a.tcc, "tcc"), "compile", onnx_path,
                    "--loss", "cross_entropy(logits,labels)", "--optimizer", opt,
                    "--no-cuda", "-o", art], check=True, stdout=subprocess.DEVNULL)
    compile_s = time.perf_counter() - t0
    log = os.path.join(work, "log.csv")
    subprocess.run([os.path.join(a.tcc, "tcc-run"), art, "--data", data,
                    "--steps", str(a.warmup + a.steps), "--log", log,
                    "--progress", "none"], check=True, stderr=subprocess.DEVNULL)
    with open(log) as f:
        rows = list(csv.DictReader(f))
    return [float(r["seconds"]) for r in rows][a.warmup:], compile_s


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--tcc", default=os.path.join(HERE, "..", "..", "build", "bin"))
    p.add_argument("--write-docs", default="")
    a = p.parse_args()

    x, y = batches(a, 4)
    results = []
    with tempfile.TemporaryDirectory() as work:
        t, compile_s = tcc_steps(a, build(a), x, y, work)
        results.append(("tcc (CPU runtime)", t))
    results.append(("PyTorch eager (CPU)", torch_steps(build(a), x, y, a)))
    # tcc's CPU backend flushes subnormals; PyTorch can too, on request.
    torch.set_flush_denormal(True)
    results.append(("PyTorch eager, flush denormals",
                    torch_steps(build(a), x, y, a)))
    torch.set_flush_denormal(False)
    if hasattr(torch, "compile"):
        results.append(("torch.compile (CPU)",
                        torch_steps(build(a), x, y, a, step_fn_wrap=torch.compile)))

    tokens = a.batch * a.seq
    tcc_median = statistics.median(results[0][1])
    lines = ["| | median step (ms) | tokens/s | tcc speed-up over it |", "|---|---|---|---|"]
    for name, times in results:
        m = statistics.median(times)
        lines.append("| %s | %.2f | %.0f | %.2f |" % (name, m * 1e3, tokens / m, m / tcc_median))
    cfg = ("GPT: %d layers, d=%d, %d heads, seq %d, vocab %d, batch %d; AdamW; "
           "%d timed steps after %d warm-up" % (a.layers, a.embd, a.heads, a.seq,
                                                a.vocab, a.batch, a.steps, a.warmup))
    machine = "%s, %d CPUs, torch %s (%d threads), OPENBLAS_NUM_THREADS=%s" % (
        platform.processor() or platform.machine(), os.cpu_count(), torch.__version__,
        torch.get_num_threads(), os.environ.get("OPENBLAS_NUM_THREADS", "unset"))
    text = "\n".join([cfg, "tcc compile: %.1f s" % compile_s, machine, ""] + lines)
    print(text)
    if a.write_docs:
        with open(a.write_docs, "a") as f:
            f.write("\n### %s\n\nCommand: `%s`\n\n%s\n" % (
                datetime.date.today().isoformat(),
                " ".join(["test/bench/gpt_bench.py"] + sys.argv[1:]), text))


if __name__ == "__main__":
    main()
