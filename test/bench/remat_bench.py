#!/usr/bin/python3
"""Rematerialisation benchmark: tcc's training step under --memory-budget,
from "everything kept" down to the smallest session tcc plans, beside
PyTorch eager with and without torch.utils.checkpoint on each block.

    remat_bench.py [--tcc BUILD/bin] [--models mlp,gpt,gpt:bf16,gpt:accum2,bert]
                   [--steps N] [--work DIR]

For each test model of test/models (train_ref.py writes model.onnx and
data.npz), as test/lit/Train/remat.test compiles it (`gpt:bf16` with
--precision bf16, `gpt:accum2` with --accum 2), it compiles the AdamW step
without a budget, then at budgets
total - arena/4, total - arena/2 (the issue's "done when" budget) and at
the smallest total tcc reaches (taken from the error a lower budget gives),
trains each artifact for N steps on the CPU (`tcc run`, its CSV log's
per-step seconds) and prints one table: planned session and arena bytes,
recomputed ops, extra FLOPs per step, the median step time and its change
against the unbudgeted step. PyTorch (same model, same batch, AdamW) trains
for N steps with and without checkpointing each transformer block in the
same run. Run it with OPENBLAS_NUM_THREADS=1 for steadier CPU numbers.

A program, not a test: it asserts nothing about speed.
"""

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
MODELS_DIR = os.path.join(ROOT, "test", "models")

LOSS = {"mlp": "mse(y,target)", "gpt": "cross_entropy(logits,labels)",
        "bert": "cross_entropy(logits,labels)"}
ADAMW = "adamw:lr=1e-3,beta1=0.9,beta2=0.95,eps=1e-8,weight_decay=0.1"


def run(cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit("remat_bench: %s failed:\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p


def session(tcc, artifact):
    text = run([os.path.join(tcc, "tcc"), "inspect", artifact]).stdout
    rows = dict((m.group(1), int(m.group(2).replace(",", ""))) for m in re.finditer(
        r"^  (arena|total)\s+([\d,]+) bytes$", text, re.M))
    return rows["total"], rows["arena"]


# The compile flags of a variant (`gpt:bf16`).
VARIANT = {"": [], "bf16": ["--precision", "bf16"], "accum2": ["--accum", "2"]}


def compile_step(tcc, model_dir, name, variant, out, budget=None):
    cmd = [os.path.join(tcc, "tcc"), "compile", os.path.join(model_dir, "model.onnx"),
           "--loss", LOSS[name], "--optimizer", ADAMW, "--no-cuda", "-o", out] + VARIANT[variant]
    if budget is not None:
        cmd += ["--memory-budget", str(budget)]
    return run(cmd, check=False)


def step_ms(tcc, artifact, data, steps, log):
    # --overwrite: a second run of the benchmark replaces the first's logs.
    run([os.path.join(tcc, "tcc"), "run", artifact, "--data", data, "--steps",
         str(steps), "--log", log, "--overwrite"])
    with open(log) as f:
        seconds = [float(r["seconds"]) for r in csv.DictReader(f)]
    return 1e3 * statistics.median(seconds[len(seconds) // 5:])


def torch_ms(name, steps, checkpointed):
    import torch
    import torch.nn.functional as F
    import torch.utils.checkpoint as cp
    sys.path.insert(0, MODELS_DIR)
    import models
    torch.manual_seed(0)
    torch.set_num_threads(1)
    # tcc's CPU backend flushes subnormals while a step runs; so does this.
    torch.set_flush_denormal(True)
    model, inputs, _ = models.MODELS[name]()
    model.train()
    blocks = getattr(model, "h", None) or getattr(model, "layer", None)
    if checkpointed and blocks is not None:
        for block in blocks:
            forward = block.forward
            block.forward = (lambda f: lambda *a: cp.checkpoint(f, *a, use_reentrant=False))(forward)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.1)
    args = [inputs[k] for k in inputs]
    out = model(*args)
    if name == "mlp":
        target = torch.randn_like(out)
    else:
        target = torch.randint(0, out.shape[-1], out.shape[:-1])
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        out = model(*args)
        if name == "mlp":
            loss = F.mse_loss(out, target)
        else:
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times[len(times) // 5:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tcc", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--models", default="mlp,gpt,gpt:bf16,gpt:accum2,bert")
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--work", default=os.path.join(ROOT, "build-bench", "remat"))
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print("| model | budget | planned session | arena | recomputed | extra FLOPs | step (ms) | vs unbudgeted |")
    print("|---|---|---|---|---|---|---|---|")
    for entry in a.models.split(","):
        name, _, variant = entry.partition(":")
        d = os.path.join(a.work, name)
        if not os.path.exists(os.path.join(d, "data.npz")):
            run([sys.executable, os.path.join(MODELS_DIR, "train_ref.py"), "--model", name,
                 "--loss", LOSS[name], "--optimizer", "adamw:lr=1e-3", "--steps", "1",
                 "--out", d])
        data = os.path.join(d, "data.npz")
        d = os.path.join(a.work, entry.replace(":", "-"))
        os.makedirs(d, exist_ok=True)
        base = os.path.join(d, "none.tcc")
        compile_step(a.tcc, os.path.dirname(data), name, variant, base)
        total, arena = session(a.tcc, base)
        base_ms = step_ms(a.tcc, base, data, a.steps, os.path.join(d, "none.csv"))
        print("| %s | none | %d | %d | 0 | 0 | %.3f | |" % (entry, total, arena, base_ms))
        budgets = [("total - arena/4", total - arena // 4), ("total - arena/2", total - arena // 2),
                   ("minimum", 1)]
        for label, budget in budgets:
            out = os.path.join(d, "b%d.tcc" % budget)
            r = compile_step(a.tcc, os.path.dirname(data), name, variant, out, budget)
            if r.returncode != 0:
                m = re.search(r"smallest session tcc plans is (\d+) bytes", r.stderr)
                if not m:
                    sys.exit("remat_bench: " + r.stderr)
                if label != "minimum":
                    print("| %s | %s = %d | below the minimum %s | | | | | |" % (
                        entry, label, budget, m.group(1)))
                    continue
                budget = int(m.group(1))
                out = os.path.join(d, "b%d.tcc" % budget)
                r = compile_step(a.tcc, os.path.dirname(data), name, variant, out, budget)
            line = r.stdout.strip().splitlines()[-1]
            m = re.search(r"(\d+) ops recomputed, \+(\d+) FLOPs per step \(\+([\d.]+)%\)", line)
            ops, extra, pct = m.groups() if m else ("0", "0", "0.00")
            t, ar = session(a.tcc, out)
            ms = step_ms(a.tcc, out, data, a.steps, out + ".csv")
            print("| %s | %s = %d | %d | %d | %s | %s (+%s%%) | %.3f | %+.1f%% |" % (
                entry, label, budget, t, ar, ops, extra, pct, ms, 100.0 * (ms / base_ms - 1)))
        if name != "mlp" and not variant:
            plain = torch_ms(name, a.steps, False)
            ckpt = torch_ms(name, a.steps, True)
            print("| %s | PyTorch eager / checkpoint each block | | | | | %.3f / %.3f | %+.1f%% |" % (
                name, plain, ckpt, 100.0 * (ckpt / plain - 1)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
