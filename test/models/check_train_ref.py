#!/usr/bin/python3
"""Self-test of train_ref.py against the semantics written in README.md.

    /usr/bin/python3 test/models/check_train_ref.py [--tmp DIR]

Checks, independently of train_ref.py's own code paths where possible:
  1. the optimizer recipes of README.md, in numpy float32 with explicit fused
     multiply-adds, reproduce torch 1.13's SGD/AdamW updates bit for bit;
  2. gradient accumulation: one step with --accum N equals one step on the
     concatenated N-micro-batch batch (token-weighted CE with ignore_index,
     MSE, and a graph's own loss), via SGD(lr=1) so params0 - params1 = grad;
  3. lr schedules against hand-computed values;
  4. --freeze leaves parameters bit-identical, --no-decay only drops the decay;
  5. --data-samples wrap-around order; mlp == mlp_loss and bert == bert_sce;
  6. reruns are byte-identical; compare_params reads .safetensors and fails
     on a perturbed tensor.
Prints one line per check; exits 1 if any fails.
"""

import argparse
import contextlib
import filecmp
import io
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_np  # noqa: E402
import train_ref  # noqa: E402
from models import MODELS  # noqa: E402

f32 = np.float32
FAILS = []


def check(name, ok, detail=""):
    print("%-4s %s%s" % ("ok" if ok else "FAIL", name, (": " + detail) if detail else ""))
    if not ok:
        FAILS.append(name)


def fma(a, b, c):
    """float32 fused multiply-add (exact product in double, one rounding...
    and a second one to float32, which is indistinguishable here)."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64)
            + np.asarray(c, np.float64)).astype(f32)


def run_ref(tmp, name, *args):
    out = os.path.join(tmp, name)
    with contextlib.redirect_stdout(io.StringIO()):
        train_ref.main(list(args) + ["--out", out])
    return out


def load(path):
    with np.load(path) as z:
        return {n: z[n] for n in z.files}


# -------------------------------------------------------------------- 1. optimizer


def check_optimizer_bits():
    n = 100003  # odd: vectorised body and scalar tail
    g0 = torch.Generator().manual_seed(0)
    p0 = torch.randn(n, generator=g0)
    grads = [torch.randn(n, generator=g0) * 0.01 for _ in range(5)]
    # AdamW
    lr, b1, b2, eps, wd = 1e-3, 0.9, 0.95, 1e-8, 0.1
    P = torch.nn.Parameter(p0.clone())
    opt = torch.optim.AdamW([P], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd, foreach=False)
    x, m, v = p0.numpy().copy(), np.zeros(n, f32), np.zeros(n, f32)
    bad = 0
    for t, g in enumerate(grads, 1):
        P.grad = g.clone()
        opt.step()
        g = g.numpy()
        x = x * f32(1 - lr * wd)
        m = fma(g, f32(1 - b1), m * f32(b1))
        v = fma(f32(1 - b2) * g, g, v * f32(b2))
        step_size = lr / (1 - b1 ** t)
        denom = np.sqrt(v) / f32(math.sqrt(1 - b2 ** t)) + f32(eps)
        x = x + (f32(-step_size) * m) / denom
        bad += int((x != P.detach().numpy()).sum())
    check("AdamW recipe bit-exact vs torch (5 steps, %d elements)" % n, bad == 0,
          "%d elements differ" % bad if bad else "")
    # SGD with momentum and (coupled) weight decay, plain and Nesterov
    lr, mom, wd = 0.05, 0.9, 0.01
    for nesterov in (False, True):
        P = torch.nn.Parameter(p0.clone())
        opt = torch.optim.SGD([P], lr=lr, momentum=mom, weight_decay=wd, nesterov=nesterov,
                              foreach=False)
        x, buf, bad = p0.numpy().copy(), None, 0
        for g in grads:
            P.grad = g.clone()
            opt.step()
            d = fma(x, f32(wd), g.numpy())
            buf = d.copy() if buf is None else buf * f32(mom) + d
            x = fma(fma(buf, f32(mom), d) if nesterov else buf, f32(-lr), x)
            bad += int((x != P.detach().numpy()).sum())
        check("SGD%s recipe bit-exact vs torch (5 steps, %d elements)"
              % (" nesterov" if nesterov else "", n), bad == 0,
              "%d elements differ" % bad if bad else "")
    # clip_grad_norm_
    gs = [torch.randn(50, generator=g0), torch.randn(7, 3, generator=g0)]
    ps = [torch.nn.Parameter(torch.zeros_like(g)) for g in gs]
    for p, g in zip(ps, gs):
        p.grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_(ps, 1.0)
    norm = np.sqrt(sum(float((g.double() ** 2).sum()) for g in gs))
    coef = min(1.0, 1.0 / (norm + 1e-6))
    err = max(float((p.grad.double() - g.double() * coef).abs().max()) for p, g in zip(ps, gs))
    check("clip_grad_norm_ = g * min(1, max_norm / (||g||_2 + 1e-6))",
          abs(float(total) - norm) < 1e-5 * norm and err < 1e-6, "err %.1e" % err)


# ------------------------------------------------------------ 2. accumulation


def big_batch_grad(model_name, data, rows, loss_kind, out_name, extra):
    """Gradient and loss of one batch made of all `rows`, by plain PyTorch."""
    torch.set_num_threads(1)
    model, inputs, output_names = MODELS[model_name]()
    model.train()
    feed = [torch.from_numpy(data[n][rows]) for n in inputs]
    out = model(*feed)
    outs = (out,) if isinstance(out, torch.Tensor) else tuple(out)
    y = outs[output_names.index(out_name)]
    if loss_kind == "cross_entropy":
        loss = F.cross_entropy(y.reshape(-1, y.shape[-1]), torch.from_numpy(data[extra][rows]).reshape(-1),
                               ignore_index=-100)
    elif loss_kind == "mse":
        loss = F.mse_loss(y, torch.from_numpy(data[extra][rows]))
    else:
        loss = y  # only valid when the graph's loss is a plain mean (MSE)
    loss.backward()
    return float(loss), {n: p.grad.numpy() for n, p in model.named_parameters()}


def check_accum(tmp):
    cases = [
        ("gpt", "cross_entropy(logits,labels)", 2, ("cross_entropy", "logits", "labels")),
        ("bert", "cross_entropy(logits,labels)", 3, ("cross_entropy", "logits", "labels")),
        ("mlp", "mse(y,target)", 2, ("mse", "y", "target")),
        ("mlp_loss", "loss", 2, ("output", "loss", None)),
    ]
    for model_name, loss, accum, (kind, out, extra) in cases:
        d = run_ref(tmp, "accum_%s" % model_name, "--model", model_name, "--loss", loss,
                    "--optimizer", "sgd:lr=1", "--accum", str(accum), "--steps", "1",
                    "--data-samples", "11")
        p0, p1, data = load(d + "/params0.npz"), load(d + "/reference.npz"), load(d + "/data.npz")
        B = MODELS[model_name]()[1][next(iter(MODELS[model_name]()[1]))].shape[0]
        ref_loss, grads = big_batch_grad(model_name, data, list(range(accum * B)), kind, out, extra)
        # Attention key biases have an exact gradient of 0 (softmax is shift
        # invariant), so theirs is rounding noise: skip gradient-free tensors.
        gmax = max(float(np.abs(g).max()) for g in grads.values())
        live = [n for n, g in grads.items() if np.abs(g).max() > 1e-5 * gmax]
        err = max(float(np.abs((p0[n] - p1[n]) - grads[n]).max() / np.abs(grads[n]).max())
                  for n in live)
        lerr = abs(float(p1["loss"][0]) - ref_loss) / abs(ref_loss)
        check("--accum %d %s %s == one batch of %d" % (accum, model_name, loss, accum * B),
              err < 1e-5 and lerr < 1e-6, "grad rel err %.1e, loss rel err %.1e (%d of %d tensors;"
              " gradient-free skipped)" % (err, lerr, len(live), len(grads)))


# --------------------------------------------------------------- 3. schedules


def check_schedules(tmp):
    d = run_ref(tmp, "sched_cos", "--model", "mlp", "--loss", "mse(y,target)",
                "--optimizer", "sgd:lr=0.1", "--lr-schedule", "cosine:warmup=2,total=6,min=0.01",
                "--steps", "8")
    lr = load(d + "/reference.npz")["lr"]
    want = [0.05, 0.1, 0.1, 0.01 + 0.5 * (1 + math.cos(math.pi / 4)) * 0.09, 0.055,
            0.01 + 0.5 * (1 + math.cos(3 * math.pi / 4)) * 0.09, 0.01, 0.01]
    check("cosine:warmup=2,total=6,min=0.01 lr", np.allclose(lr, want, rtol=1e-15, atol=0),
          " ".join("%.6g" % x for x in lr))
    d = run_ref(tmp, "sched_lin", "--model", "mlp", "--loss", "mse(y,target)",
                "--optimizer", "sgd:lr=0.1", "--lr-schedule", "linear:warmup=1,total=5", "--steps", "7")
    lr = load(d + "/reference.npz")["lr"]
    want = [0.1, 0.1, 0.075, 0.05, 0.025, 0.0, 0.0]
    check("linear:warmup=1,total=5 lr", np.allclose(lr, want, rtol=1e-15, atol=1e-18),
          " ".join("%.6g" % x for x in lr))


# ------------------------------------------------------- 4. freeze / no-decay


def check_freeze_nodecay(tmp):
    opt = "adamw:lr=1e-2,weight_decay=0.5"
    base = ["--model", "gpt", "--loss", "cross_entropy(logits,labels)", "--optimizer", opt, "--steps"]
    d = run_ref(tmp, "freeze", *base, "3", "--freeze", r"^wpe\.|ln_f\.", "--grad-clip", "0.5")
    p0, p1 = load(d + "/params0.npz"), load(d + "/reference.npz")
    frozen = [n for n in p0 if n.startswith("wpe.") or "ln_f." in n]
    check("--freeze: frozen params bit-identical, others move",
          all(np.array_equal(p0[n], p1[n]) for n in frozen)
          and all(not np.array_equal(p0[n], p1[n]) for n in p0 if n not in frozen),
          ", ".join(frozen))
    a = load(run_ref(tmp, "decay", *base, "1") + "/reference.npz")
    b = load(run_ref(tmp, "nodecay", *base, "1", "--no-decay", r"\.bias$") + "/reference.npz")
    same = all(np.array_equal(a[n], b[n]) for n in p0 if not n.endswith(".bias"))
    diff = all(not np.array_equal(a[n], b[n]) for n in p0 if n.endswith(".bias"))
    check("--no-decay: only matching params change after one step", same and diff)


# -------------------------------------------------------------- 5. data, variants


def check_data_and_variants(tmp):
    d = run_ref(tmp, "wrap", "--model", "gpt", "--loss", "cross_entropy(logits,labels)",
                "--optimizer", "sgd:lr=0", "--steps", "4", "--accum", "2", "--data-samples", "7")
    tokens = load(d + "/trace.npz")["tokens"]
    check("micro_batches wrap-around", train_ref.micro_batches(1, 2, 2, 7) == [[4, 5], [6, 0]]
          and train_ref.micro_batches(3, 2, 2, 7) == [[5, 6], [0, 1]] and list(tokens) == [32] * 4)
    for a_, b_, la, lb in [("mlp", "mlp_loss", "mse(y,target)", "loss"),
                           ("bert", "bert_sce", "cross_entropy(logits,labels)", "loss")]:
        opt = "adamw:lr=1e-2,weight_decay=0.1"
        ra = load(run_ref(tmp, "v_" + a_, "--model", a_, "--loss", la, "--optimizer", opt,
                          "--steps", "3", "--accum", "2") + "/reference.npz")
        rb = load(run_ref(tmp, "v_" + b_, "--model", b_, "--loss", lb, "--optimizer", opt,
                          "--steps", "3", "--accum", "2") + "/reference.npz")
        err = max(float(np.abs(ra[n] - rb[n]).max()) for n in ra)
        if a_ == "mlp":
            check("mlp mse(y,target) == mlp_loss loss (accum 2)", err < 1e-6, "max abs diff %.1e" % err)
            continue
        # bert_sce's own loss is a per-micro-batch mean; with accum > 1 the
        # micro-batches are weighted equally, not by token count: differs ...
        check("bert CE (token-weighted) != bert_sce own loss (equal weights) at accum 2",
              err > 1e-6, "max abs diff %.1e" % err)
        # ... unless weighted by their label counts.
        rc = load(run_ref(tmp, "v_bert_sce_w", "--model", b_, "--loss", lb, "--optimizer", opt,
                          "--steps", "3", "--accum", "2", "--output-loss-weight", "labels")
                  + "/reference.npz")
        live = [n for n in ra if "key.bias" not in n]  # gradient-free: rounding noise
        err = max(float(np.abs(ra[n] - rc[n]).max() / np.abs(ra[n]).max()) for n in live)
        check("bert CE == bert_sce own loss with --output-loss-weight labels (accum 2)",
              err < 1e-5, "max rel diff %.1e" % err)


# ------------------------------------------------- 6. determinism, comparison


def check_determinism_and_compare(tmp):
    args = ["--model", "bert", "--loss", "cross_entropy(logits,labels)", "--optimizer",
            "adamw:lr=1e-3,beta1=0.9,beta2=0.95,weight_decay=0.1", "--grad-clip", "1.0",
            "--lr-schedule", "cosine:warmup=1,total=4,min=1e-4", "--steps", "4", "--accum", "2"]
    d1, d2 = run_ref(tmp, "det1", *args), run_ref(tmp, "det2", *args)
    files = sorted(os.listdir(d1))
    same = all(filecmp.cmp(os.path.join(d1, f), os.path.join(d2, f), shallow=False) for f in files)
    check("two runs write identical bytes", same, " ".join(files))
    ref = load(d1 + "/reference.npz")
    params = {n: a for n, a in ref.items() if n not in ("loss", "lr")}
    st = os.path.join(tmp, "params.safetensors")
    safetensors_np.write(st, params)
    cmp = [sys.executable, os.path.join(HERE, "compare_params.py"), d1 + "/reference.npz", st, "--quiet"]
    ok = subprocess.run(cmp, stdout=subprocess.DEVNULL).returncode == 0
    w = params["layer.0.fc1.weight"] = params["layer.0.fc1.weight"].copy()
    w.flat[np.abs(w).argmax()] *= 1 + 1e-4  # 1e-4 of max|ref| > rtol 1e-5
    safetensors_np.write(st, params)
    bad = subprocess.run(cmp, stdout=subprocess.DEVNULL).returncode == 1
    check("compare_params: .safetensors round trip passes, 1e-4 perturbation fails", ok and bad)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tmp", default="", help="work directory (default: a fresh temporary one)")
    a = p.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as t:
        tmp = a.tmp or t
        check_optimizer_bits()
        check_accum(tmp)
        check_schedules(tmp)
        check_freeze_nodecay(tmp)
        check_data_and_variants(tmp)
        check_determinism_and_compare(tmp)
    if FAILS:
        print("check_train_ref: %d check(s) failed" % len(FAILS))
        sys.exit(1)
    print("check_train_ref: all checks passed")


if __name__ == "__main__":
    main()
