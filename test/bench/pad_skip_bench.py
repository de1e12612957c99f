#!/usr/bin/python3
"""Pad-skipping benchmark: one training step of a BERT-style encoder on a
padded batch at 0%, 25%, 50% and 75% padding: tcc with pad-skipping (the
default, --pad-skip=auto) and without (--pad-skip=off), and PyTorch eager on
the padded batch, in one run.

    pad_skip_bench.py [--tcc BUILD/bin] [--steps N] [--batch B] [--seq T]
                      [--hidden C] [--layers L] [--paddings 0,25,50,75]
                      [--device cpu|cuda] [--precision fp32|bf16]
                      [--stage all|compile|run]
                      [--work DIR]

The model is test/models' TinyBERT (post-LN encoder, separate q/k/v, exact
GELU, HF's additive -10000 mask, an MLM head) at the given size, exported to
ONNX once; the loss is cross-entropy over the labelled tokens (-100 at
padding and at unlabelled tokens, as a masked-LM collator writes them);
AdamW. Each padding level gets its own data: every row's length is drawn
around T * (1 - padding), so rows differ, and the measured share of padded
tokens is printed. tcc trains one artifact per --pad-skip for N steps on the
CPU (`tcc run`; its CSV log's per-step seconds, median of the last 80%);
PyTorch trains the same model with torch.optim.AdamW on the same batches.
Printed: ms per step, tcc's pad-skip/off ratio (the issue's "done when":
<= 0.65 at 50%), tcc vs PyTorch, the valid tokens per second, and the
largest relative difference of the per-step losses between pad-skip and
off (the same weights and batches: rounding only). Whether the
installed torch has a variable-length attention for training on the CPU is
printed too (it has none today; that row says so).

On a GPU (`--device cuda`) the same in two stages, as gpt_bench.py: the
GPU machine has no LLVM/MLIR, so `--stage compile` (here) exports and
compiles both artifacts for sm_90 and removes their weights, and `--stage
run` (there, `--tcc` naming a folder with `tcc-run`) writes the weights
again from the seed, trains with `tcc-run --backend cuda`, and PyTorch
eager trains on the GPU (autocast off, fp32; TF32 as tcc, i.e. off).

Run it with the project's environment, `.venv/bin/python` (or Debian's
python3 with torch 1.13), and OPENBLAS_NUM_THREADS=1: tcc's CPU backend then
splits GEMMs over its own pool, where OpenBLAS's threads would compete with
the pool's inside attention (steadier numbers for both settings). A
program, not a test: it asserts nothing about speed.
"""

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
MODELS_DIR = os.path.join(ROOT, "test", "models")
sys.path.insert(0, MODELS_DIR)

ADAMW = "adamw:lr=1e-4,beta1=0.9,beta2=0.999,eps=1e-8,weight_decay=0.01"
LOSS = "cross_entropy(logits,labels)"


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("pad_skip_bench: %s failed:\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p


def build_model(a):
    import torch
    import models
    cfg = models.BertConfig()
    cfg.vocab_size, cfg.max_position = a.vocab, a.seq
    cfg.n_layer, cfg.n_head, cfg.hidden = a.layers, a.heads, a.hidden
    cfg.intermediate = 4 * a.hidden
    torch.manual_seed(0)
    return models.TinyBERT(cfg)


def make_batches(a, padding, steps):
    """steps batches: ids, mask, labels as numpy int64 [steps * B, T]."""
    import numpy as np
    rng = np.random.default_rng(int(padding * 100) + 1)
    K, T = steps * a.batch, a.seq
    mean = T * (1 - padding / 100.0)
    spread = min(mean - 1, T - mean, T / 8)
    lengths = np.clip(np.rint(rng.uniform(mean - spread, mean + spread, K)), 1, T)
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.int64)
    ids = rng.integers(2, a.vocab, (K, T)) * mask
    picked = (rng.random((K, T)) < 0.15) & (mask == 1)
    picked[:, 0] = True  # every row has a label
    labels = np.where(picked, rng.integers(0, a.vocab, (K, T)), -100)
    return ids.astype(np.int64), mask, labels.astype(np.int64)


def compile_art(a, onnx_path, pad_skip, work):
    art = os.path.join(work, "bert-%s.tcc" % pad_skip)
    if a.stage == "compile" and os.path.isdir(art):
        shutil.rmtree(art)  # --stage compile always compiles (bundle.sh asks when HEAD moved)
    if not os.path.isdir(art):
        target = ["--no-cuda"] if a.device == "cpu" else ["--cuda-arch", "sm_90"]
        run([os.path.join(a.tcc, "tcc"), "compile", onnx_path, "--loss", LOSS,
             "--optimizer", ADAMW, "--pad-skip", pad_skip, "--precision", a.precision,
             "-o", art] + target)
    return art


def tcc_ms(a, art, data, pad_skip, work):
    log = os.path.join(work, "%s-%s.csv" % (os.path.basename(data), pad_skip))
    if os.path.exists(log):
        os.remove(log)
    run([os.path.join(a.tcc, "tcc-run"), art, "--data", data, "--steps", str(a.steps),
         "--log", log, "--progress", "none", "--backend", a.device])
    with open(log) as f:
        rows = list(csv.DictReader(f))
    seconds = [float(r["seconds"]) for r in rows]
    return 1e3 * statistics.median(seconds[len(seconds) // 5:]), [float(r["loss"]) for r in rows]


def torch_ms(a, model, batches):
    import torch
    import torch.nn.functional as F
    dev = torch.device(a.device)
    model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999),
                            eps=1e-8, weight_decay=0.01)
    ids, mask, labels = (torch.from_numpy(x).to(dev) for x in batches)
    times = []
    for s in range(a.steps):
        rows = slice(s * a.batch, (s + 1) * a.batch)
        if a.device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            out = model(ids[rows], mask[rows])
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]).float(),
                                   labels[rows].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if a.device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    model.cpu()
    return 1e3 * statistics.median(times[len(times) // 5:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tcc", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--paddings", default="0,25,50,75")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="tcc compile --precision; PyTorch autocasts to bf16 likewise")
    p.add_argument("--stage", choices=["all", "compile", "run"], default="all",
                   help="compile: export and compile (here); run: train (the GPU machine)")
    p.add_argument("--work", default="")
    a = p.parse_args()
    a.work = a.work or os.path.join(ROOT, "build-bench", "pad-skip" + (
        "" if a.device == "cpu" else "-" + a.device) + (
        "" if a.precision == "fp32" else "-" + a.precision))
    import numpy as np
    import torch

    torch.set_flush_denormal(True)  # as tcc's CPU backend does while a step runs
    os.makedirs(a.work, exist_ok=True)
    model = build_model(a)
    params0 = {k: v.clone() for k, v in model.state_dict().items()}
    arts = {}
    if a.stage != "run":
        from export import export_onnx
        onnx_path = os.path.join(a.work, "model.onnx")
        example = {"input_ids": torch.zeros(a.batch, a.seq, dtype=torch.long),
                   "attention_mask": torch.ones(a.batch, a.seq, dtype=torch.long)}
        export_onnx(model, example, ["logits"], onnx_path)
        for mode in ("auto", "off"):
            arts[mode] = compile_art(a, onnx_path, mode, a.work)
            if a.stage == "compile":
                os.remove(os.path.join(arts[mode], "weights.safetensors"))
        os.remove(onnx_path)
        if a.stage == "compile":
            print("compiled %s (weights removed; --stage run writes them again)" %
                  ", ".join(arts.values()))
            return
    else:
        sys.path.insert(0, HERE)
        import tcc_side
        for mode in ("auto", "off"):
            arts[mode] = os.path.join(a.work, "bert-%s.tcc" % mode)
            tcc_side.write_weights(arts[mode], model)
    varlen = hasattr(torch.nn.attention, "varlen") if hasattr(torch.nn, "attention") else False
    where = (torch.cuda.get_device_name() if a.device == "cuda"
             else "%d threads" % torch.get_num_threads())
    print("BERT-style encoder: batch %d x seq %d, hidden %d, %d heads, %d layers, vocab %d; "
          "AdamW; %s; %d steps; torch %s, %s %s" % (
              a.batch, a.seq, a.hidden, a.heads, a.layers, a.vocab, a.precision,
              a.steps, torch.__version__, a.device, where))
    print()
    loss_notes = []
    print("| padding | tcc pad-skip (ms) | tcc off (ms) | pad-skip / off | PyTorch eager (ms) "
          "| tcc pad-skip vs eager | valid tokens/s (tcc pad-skip) |")
    print("|---|---|---|---|---|---|---|")
    for level in [int(x) for x in a.paddings.split(",")]:
        ids, mask, labels = make_batches(a, level, a.steps)
        data = os.path.join(a.work, "pad%d.npz" % level)
        np.savez(data, input_ids=ids, attention_mask=mask, labels=labels)
        share = 100.0 * (1 - mask.mean())
        on, loss_on = tcc_ms(a, arts["auto"], data, "auto", a.work)
        off, loss_off = tcc_ms(a, arts["off"], data, "off", a.work)
        # Same weights, same batches: pad-skipping must not change the loss.
        worst = max(abs(x - y) / abs(y) for x, y in zip(loss_on, loss_off))
        loss_notes.append("%d%%: %.2e" % (level, worst))
        model.load_state_dict(params0)
        eager = torch_ms(a, model, (ids, mask, labels))
        valid = mask.sum() / a.steps
        print("| %d%% (measured %.1f%%) | %.2f | %.2f | %.2f | %.2f | %.2fx | %.0f |" % (
            level, share, on, off, on / off, eager, eager / on, valid / (on / 1e3)))
        sys.stdout.flush()
    print()
    print("Largest relative difference of the per-step losses, pad-skip vs off: " +
          ", ".join(loss_notes))
    if a.device != "cpu":
        return
    print()
    print("PyTorch variable-length attention for CPU training: %s" % (
        "torch.nn.attention.varlen present (not measured here)" if varlen else
        "none in this torch (nested tensors and varlen attention are CUDA / inference paths)"))


if __name__ == "__main__":
    main()
