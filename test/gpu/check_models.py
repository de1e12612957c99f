#!/usr/bin/env python3
"""The CUDA backend against PyTorch and the CPU backend on the test models.

    # here (LLVM/MLIR, nvcc, torch): references, artifacts, CPU-backend runs
    /usr/bin/python3 test/gpu/check_models.py prepare --out DIR [--tcc build/bin]
    # on the GPU machine (numpy only): tcc-run --backend cuda, compared
    python3 test/gpu/check_models.py check --dir DIR --tcc-run BIN/tcc-run

`prepare` writes, per case, PyTorch's trained parameters (test/models/
train_ref.py), the artifact compiled with CUDA kernels for sm_90, and the
CPU backend's checkpoint and loss log. `check` trains the same artifact on
the GPU with CUDA graphs (the default) and with TCC_CUDA_GRAPHS=0, and
prints one line per comparison:

  * cuda vs torch: parameters after N steps against PyTorch's
    (compare_params.py, normwise relative error);
  * cuda vs cpu: the same artifact on the CPU backend;
  * graphs == eager: bit-identical parameters with and without CUDA graphs;
  * remat == plain: with --memory-budget, bit-identical to the plan without;
  * conv (artifacts with conv steps): the conv library `tcc-run --profile`
    names, a second cuDNN run bit-identical to the first, and the run on
    tcc's own conv kernels (TCC_CUDNN=0) against the cuDNN one;
  * curve: 16-bit loss curves track fp32 window by window; the loss falls.

A checking program for the GPU bring-up (../shared/gpu-bringup.md step 3),
not a ctest: CI has no GPU. Exit 1 when any comparison fails.
"""

import argparse
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
MODELS = os.path.join(ROOT, "test", "models")
sys.path.insert(0, MODELS)
import safetensors_np  # noqa: E402

DOCS = os.path.join(ROOT, "test", "lit", "Train", "Inputs", "packed_docs.py")
CE = "cross_entropy(logits,labels)"
MSE = "mse(y,target)"
ADAMW_GPT = ("adamw:lr=1e-3,beta1=0.9,beta2=0.95,eps=1e-8,weight_decay=0.1",
             ["--grad-clip", "1.0", "--lr-schedule", "cosine:warmup=2,total=5,min=1e-4"])
ADAMW_MLP = ("adamw:lr=1e-2,beta1=0.9,beta2=0.95,eps=1e-8,weight_decay=0.1",
             ["--grad-clip", "0.5", "--lr-schedule", "cosine:warmup=2,total=5,min=1e-3"])
ADAMW_CNN = ("adamw:lr=1e-2,beta1=0.9,beta2=0.95,eps=1e-8,weight_decay=0.1", [])
SGD_PAD = ("sgd:lr=0.05,momentum=0.9,weight_decay=0.01", ["--grad-clip", "1.0"])
PADDED = ["8,1", "5,8", "1,1", "3,6", "8,8"]
TEXT = ("adamw:lr=1e-2,beta1=0.9,beta2=0.99,eps=1e-8,weight_decay=0.1",
        ["--no-decay", "bias$|ln_", "--grad-clip", "1.0",
         "--lr-schedule", "cosine:warmup=20,total=200,min=1e-4"])

# name: model, loss, (optimizer, flags), steps, accum, tolerances against
# PyTorch (default, per-name overrides as compare_params.py --tol), the
# 16-bit cases' precision, an optional memory budget (remat twin).
# The PyTorch tolerances are the CPU tests' (test/lit/Train/*.test) times 10:
# the GPU sums in another order (tiled GEMMs, block reductions).
CASES = [
    dict(name="mlp-adamw", model="mlp", loss=MSE, opt=ADAMW_MLP, steps=5, rtol=1e-4),
    # No clipping: at its "done when" budget the MLP's first weight gradient
    # is made in two row blocks (test/lit/Train/remat.test); is a block's
    # cuBLASLt GEMM bitwise the whole one's?
    dict(name="mlp-blocks", model="mlp", loss=MSE,
         opt=(ADAMW_MLP[0], ["--lr-schedule", "cosine:warmup=2,total=5,min=1e-3"]),
         steps=5, rtol=1e-4, budget="12900"),
    dict(name="gpt-adamw", model="gpt", loss=CE, opt=ADAMW_GPT, steps=5, rtol=1e-4,
         tol=["c_attn\\.bias=1e-1"], budget="490000"),
    dict(name="gpt-accum2", model="gpt", loss=CE, opt=ADAMW_GPT, steps=3, accum=2, rtol=1e-4,
         tol=["c_attn\\.bias=1e-1"]),
    # Pad-skipping (the default): packed tokens, varlen attention.
    dict(name="bert-adamw", model="bert", loss=CE, opt=ADAMW_GPT, steps=5, rtol=1e-4,
         tol=["key\\.bias=2e-1"]),
    # test/lit/Train/pad-skip.test's batches: one-token rows, a batch of two
    # one-token rows, one without padding; and the same with --pad-skip off.
    dict(name="bert-padded", model="bert", loss=CE, opt=SGD_PAD, steps=5, rtol=1e-4,
         padded=PADDED),
    dict(name="bert-padded-off", model="bert", loss=CE, opt=SGD_PAD, steps=5, rtol=1e-4,
         padded=PADDED, extra=["--pad-skip", "off"]),
    dict(name="cnn-adamw", model="cnn", loss=CE, opt=ADAMW_CNN, steps=3, rtol=1e-3),
    # Resize (F.interpolate): gathers and their gather_grad, fused kernels.
    dict(name="upsample-adamw", model="upsample", loss=CE, opt=ADAMW_CNN, steps=3, rtol=1e-4),
    # Packed documents (test/lit/Train/pack-documents.test): the losses
    # against PyTorch training each document on its own.
    dict(name="gpt-docs", model="gpt", loss=CE, opt=("sgd:lr=0.1", []), steps=3, rtol=1e-4,
         docs=63, extra=["--pack-documents"]),
    # 200 steps on the bundled text corpus (test/lit/Train/precision.test)
    dict(name="text-fp32", model="gpt", loss=CE, opt=TEXT, steps=200, text=True),
    dict(name="text-bf16", model="gpt", loss=CE, opt=TEXT, steps=200, text=True,
         precision="bf16", curve_rtol=1e-2),
    dict(name="text-fp16", model="gpt", loss=CE, opt=TEXT, steps=200, text=True,
         precision="fp16", curve_rtol=1e-2, extra=["--loss-scale-init", "1024"]),
]


# Inference artifacts (tcc compile MODEL.mlir without --loss) whose outputs
# the CUDA backend must give as the CPU backend does; inputs are generated
# on each machine (too large to carry), from index arithmetic alone.
INFERENCE = [
    # Column reductions, the CUDA block path among them (Inputs/columns.mlir)
    dict(name="columns", mlir="test/gpu/Inputs/columns.mlir", rtol=1e-6),
    # Row reductions, a warp or block a row (Inputs/rows.mlir)
    dict(name="rows", mlir="test/gpu/Inputs/rows.mlir", rtol=1e-6),
]


def inference_inputs(art):
    """Deterministic inputs of the inference artifact ART (any machine, any
    numpy): per element a value from a multiplicative hash of its index,
    in [-0.5, 0.5) times a per-row scale spanning 2^-4 to 2^4."""
    with open(os.path.join(art, "plan.json")) as f:
        fn = json.load(f)["functions"]
    fn = fn["forward"] if isinstance(fn, dict) else next(x for x in fn if x["name"] == "forward")
    out = {}
    for k, t in enumerate(fn["inputs"]):
        shape = t["shape"]
        n = int(np.prod(shape))
        i = np.arange(n, dtype=np.uint64) + np.uint64(1000003 * (k + 1))
        h = (i * np.uint64(2654435761)) % np.uint64(1 << 32)
        v = h.astype(np.float64) / float(1 << 32) - 0.5
        rows = np.arange(n, dtype=np.int64) // max(1, int(shape[-1]))
        v = v * np.exp2((rows % 9) - 4.0)
        out[t["name"]] = v.astype(np.float32).reshape(shape)
    return out


def sh(cmd, env=None, log=None, check=True):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if log is not None:
        log.write("$ %s\n%s" % (" ".join(cmd), r.stdout))
        log.flush()
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s" % (" ".join(cmd[:2]), r.returncode, r.stdout[-2000:]))
    return r


def run_args(c, d, art, ck, logcsv):
    data = os.path.join(d, "train.npz" if c.get("text") else "data.npz")
    return [art, "--data", data, "--steps", str(c["steps"]), "--checkpoint-dir", ck,
            "--log", logcsv, "--progress", "none", "--overwrite"]


def compile_flags(c):
    opt, flags = c["opt"]
    f = ["--loss", c["loss"], "--optimizer", opt] + flags
    if c.get("accum"):
        f += ["--accum", str(c["accum"])]
    if c.get("precision"):
        f += ["--precision", c["precision"]]
    return f + c.get("extra", [])


def prepare(a):
    py = sys.executable
    tcc = os.path.join(a.tcc, "tcc")
    tcc_run = os.path.join(a.tcc, "tcc-run")
    os.makedirs(a.out, exist_ok=True)
    log = open(os.path.join(a.out, "prepare.log"), "w")
    text_dir = os.path.join(a.out, "text")
    if not os.path.exists(os.path.join(text_dir, "train.npz")):
        sh([py, os.path.join(MODELS, "make_text_data.py"), "--out", text_dir], log=log)
    for c in CASES:
        d = os.path.join(a.out, c["name"])
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        opt, flags = c["opt"]
        if c.get("text"):
            sh([py, os.path.join(MODELS, "export.py"), "--model", c["model"], "--out", d], log=log)
            shutil.copy(os.path.join(text_dir, "train.npz"), d)
        elif c.get("docs"):
            sh([py, os.path.join(MODELS, "export.py"), "--model", c["model"], "--out", d], log=log)
            sh([py, DOCS, "make", os.path.join(d, "tokens.bin"), "--eot", str(c["docs"])], log=log)
            sh([py, DOCS, "npz", os.path.join(d, "tokens.bin"), os.path.join(d, "data.npz"),
                "--eot", str(c["docs"]), "--steps", str(c["steps"])], log=log)
        else:
            ref = [py, os.path.join(MODELS, "train_ref.py"), "--model", c["model"],
                   "--loss", c["loss"], "--optimizer", opt, "--steps", str(c["steps"]),
                   "--out", d] + flags
            if c.get("accum"):
                ref += ["--accum", str(c["accum"])]
            if c.get("padded"):
                npz = os.path.join(d, "padded.npz")
                sh([py, os.path.join(ROOT, "test", "lit", "Train", "Inputs",
                                     "padded_bert_data.py"), npz] + c["padded"], log=log)
                ref += ["--data-npz", npz]
            sh(ref, log=log)
        onnx = os.path.join(d, "model.onnx")
        sh([tcc, "compile", onnx] + compile_flags(c) + ["--cuda-arch", "sm_90", "-o",
                                                         os.path.join(d, "a.tcc")], log=log)
        if c.get("budget"):
            sh([tcc, "compile", onnx] + compile_flags(c) +
               ["--cuda-arch", "sm_90", "--memory-budget", c["budget"], "-o",
                os.path.join(d, "remat.tcc")], log=log)
        sh([tcc_run] + run_args(c, d, os.path.join(d, "a.tcc"), os.path.join(d, "ck-cpu"),
                                os.path.join(d, "cpu.csv")) + ["--backend", "cpu"], log=log)
        for f in ("model.onnx",):
            os.remove(os.path.join(d, f))
        print("prepared %s" % c["name"], flush=True)
    for c in INFERENCE:
        d = os.path.join(a.out, c["name"])
        if os.path.isdir(d):
            shutil.rmtree(d)
        os.makedirs(d)
        art = os.path.join(d, "a.tcc")
        sh([tcc, "compile", os.path.join(ROOT, c["mlir"]), "--cuda-arch", "sm_90", "-o", art],
           log=log)
        np.savez(os.path.join(d, "inputs.npz"), **inference_inputs(art))
        sh([tcc_run, art, "--inputs", os.path.join(d, "inputs.npz"), "--outputs",
            os.path.join(d, "cpu.npz"), "--backend", "cpu"], log=log)
        os.remove(os.path.join(d, "inputs.npz"))  # made again where it runs
        print("prepared %s" % c["name"], flush=True)
    with open(os.path.join(a.out, "cases.json"), "w") as f:
        json.dump(dict(training=CASES, inference=INFERENCE), f, indent=1)


def last_params(ck):
    steps = [s for s in os.listdir(ck) if s.startswith("step-")]
    s = max(steps, key=lambda x: int(x.split("-")[1]))
    return safetensors_np.read(os.path.join(ck, s, "params.safetensors"))[0]


def losses(path):
    with open(path) as f:
        return [float(r["loss"]) for r in csv.DictReader(f)]


class Table:
    def __init__(self, out):
        self.rows, self.failed, self.out = [], 0, out

    def add(self, case, what, measured, limit, ok, note=""):
        self.rows.append((case, what, measured, limit, "PASS" if ok else "FAIL", note))
        self.failed += 0 if ok else 1
        line = "%-10s %-22s %-12s %-10s %s %s" % self.rows[-1]
        print(line, flush=True)
        self.out.write(line + "\n")
        self.out.flush()


def tensor_errors(a, b):
    """{name: max|a-b| / max|b|} over b's tensors (normwise); NaN -> inf."""
    out = {}
    for k, ref in b.items():
        x = np.asarray(a[k], dtype=np.float64)
        r = np.asarray(ref, dtype=np.float64)
        out[k] = (math.inf if not np.all(np.isfinite(x)) else
                  float(np.max(np.abs(x - r))) / max(float(np.max(np.abs(r))), 1e-30))
    return out


def judge(errors, rtol, tols):
    """-> (worst error of the tensors under rtol, pass?) with tols the
    case's per-tensor overrides (compare_params.py --tol REGEX=RTOL)."""
    rules = [(re.compile(t.split("=")[0]), float(t.split("=")[1])) for t in tols]
    worst, ok = 0.0, True
    for k, e in errors.items():
        lim = next((r for rx, r in rules if rx.search(k)), None)
        if lim is None:
            worst = max(worst, e)
            lim = rtol
        ok = ok and e <= lim
    return worst, ok


def bitwise(a, b):
    diff = [k for k in b if np.asarray(a[k]).tobytes() != np.asarray(b[k]).tobytes()]
    return diff


def has_conv(art):
    """Whether artifact ART's plan has conv or conv_grad calls."""
    with open(os.path.join(art, "plan.json")) as f:
        fns = json.load(f)["functions"]
    fns = fns.values() if isinstance(fns, dict) else fns
    return any(st.get("kind") == "call" and st.get("op") in ("conv", "conv_grad")
               for fn in fns for st in fn["steps"])


def conv_line(out):
    """The `conv: ...` line of a tcc-run --profile output, or ""."""
    return next((l[len("conv: "):] for l in out.splitlines() if l.startswith("conv: ")), "")


def check_conv(a, c, d, art, cu, t, log):
    """cuDNN against tcc's own conv kernels on the conv artifact ART (cu: the
    cuDNN run's parameters), rows in table T."""
    name = c["name"]
    try:
        r = sh([a.tcc_run] + run_args(c, d, art, os.path.join(d, "ck-prof"),
                                      os.path.join(d, "prof.csv"))
               + ["--backend", "cuda", "--profile"], log=log)
        own = sh([a.tcc_run] + run_args(c, d, art, os.path.join(d, "ck-own"),
                                        os.path.join(d, "own.csv"))
                 + ["--backend", "cuda", "--profile"], env={"TCC_CUDNN": "0"}, log=log)
    except RuntimeError as e:
        t.add(name, "conv runs", "error", "-", False, str(e).splitlines()[-1][:120])
        return
    lib = conv_line(r.stdout)
    t.add(name, "conv library", lib[:12] or "none", "named", bool(lib), lib)
    own_lib = conv_line(own.stdout)
    t.add(name, "TCC_CUDNN=0", own_lib[:12] or "none", "tcc kernels",
          own_lib == "tcc kernels (TCC_CUDNN=0)", own_lib)
    if not lib.startswith("cuDNN"):
        return
    diff = bitwise(last_params(os.path.join(d, "ck-prof")), cu)
    t.add(name, "cuDNN run to run", "%d differ" % len(diff), "0", not diff, ",".join(diff[:3]))
    worst, ok = judge(tensor_errors(cu, last_params(os.path.join(d, "ck-own"))), c["rtol"],
                      c.get("tol", []))
    t.add(name, "cuDNN vs tcc conv kernels", "%.2e" % worst, "%g" % c["rtol"], ok)


def check(a):
    all_cases = json.load(open(os.path.join(a.dir, "cases.json")))
    cases, inference = all_cases["training"], all_cases["inference"]
    if a.only:
        cases = [c for c in cases if c["name"] in a.only.split(",")]
        inference = [c for c in inference if c["name"] in a.only.split(",")]
    out = open(os.path.join(a.log_dir or a.dir, "check_models.txt"), "w")
    log = open(os.path.join(a.log_dir or a.dir, "check_models.log"), "w")
    t = Table(out)
    py = sys.executable
    for c in cases:
        d = os.path.join(a.dir, c["name"])
        name = c["name"]
        art = os.path.join(d, "a.tcc")
        try:
            sh([a.tcc_run] + run_args(c, d, art, os.path.join(d, "ck-cuda"),
                                      os.path.join(d, "cuda.csv")) + ["--backend", "cuda"], log=log)
            sh([a.tcc_run] + run_args(c, d, art, os.path.join(d, "ck-eager"),
                                      os.path.join(d, "eager.csv")) + ["--backend", "cuda"],
               env={"TCC_CUDA_GRAPHS": "0"}, log=log)
        except RuntimeError as e:
            t.add(name, "tcc-run --backend cuda", "error", "-", False, str(e).splitlines()[-1][:120])
            continue
        cu = last_params(os.path.join(d, "ck-cuda"))
        cpu = last_params(os.path.join(d, "ck-cpu"))
        eager = last_params(os.path.join(d, "ck-eager"))
        diff = bitwise(cu, eager)
        t.add(name, "graphs == eager", "%d differ" % len(diff), "0", not diff,
              ",".join(diff[:3]))
        if has_conv(art):
            check_conv(a, c, d, art, cu, t, log)
        lc, lp = losses(os.path.join(d, "cuda.csv")), losses(os.path.join(d, "cpu.csv"))
        ok = all(math.isfinite(x) for x in lc)
        t.add(name, "finite losses", "%d steps" % len(lc), str(c["steps"]),
              ok and len(lc) == c["steps"])
        if c.get("docs"):
            r = sh([py, DOCS, "check", os.path.join(d, "data.npz"), os.path.join(d, "cuda.csv"),
                    "--steps", str(c["steps"]), "--lr",
                    c["opt"][0].split("lr=")[1]], log=log, check=False)
            t.add(name, "cuda losses vs torch per document", "exit %d" % r.returncode, "0",
                  r.returncode == 0, r.stdout.strip().splitlines()[-1][:80] if r.stdout else "")
            worst, ok = judge(tensor_errors(cu, cpu), c["rtol"], c.get("tol", []))
            t.add(name, "cuda vs cpu backend", "%.2e" % worst, "%g" % c["rtol"], ok)
        elif not c.get("text"):
            cmd = [py, os.path.join(MODELS, "compare_params.py"), os.path.join(d, "reference.npz"),
                   os.path.join(d, "ck-cuda", "step-%d" % c["steps"]), "--rtol", str(c["rtol"])]
            for tol in c.get("tol", []):
                cmd += ["--tol", tol]
            r = sh(cmd, log=log, check=False)
            ref = dict(np.load(os.path.join(d, "reference.npz")))
            ref = {k: v for k, v in ref.items() if k in cu}
            note = ("(others; %s)" % " ".join(c["tol"])) if c.get("tol") else ""
            worst, _ = judge(tensor_errors(cu, ref), c["rtol"], c.get("tol", []))
            t.add(name, "cuda vs torch", "%.2e" % worst, "%g" % c["rtol"],
                  r.returncode == 0, note)
            worst, ok = judge(tensor_errors(cu, cpu), c["rtol"], c.get("tol", []))
            t.add(name, "cuda vs cpu backend", "%.2e" % worst, "%g" % c["rtol"], ok, note)
        else:
            # The curve: window means of 20 steps against the CPU backend's
            # run of the same artifact; and the loss falls by a third.
            w = 20
            worst = max(abs(sum(lc[i:i + w]) - sum(lp[i:i + w])) / abs(sum(lp[i:i + w]))
                        for i in range(0, len(lp), w))
            tol = c.get("curve_rtol", 1e-3)
            t.add(name, "curve vs cpu backend", "%.2e" % worst, "%g" % tol, worst <= tol)
            first, last = sum(lc[:w]) / w, sum(lc[-w:]) / w
            t.add(name, "loss falls", "%.3f->%.3f" % (first, last), "< 2/3", last < first * 2 / 3)
            if c.get("precision"):
                fp32 = os.path.join(a.dir, "text-fp32", "cuda.csv")
                if os.path.exists(fp32):
                    l32 = losses(fp32)
                    worst = max(abs(sum(lc[i:i + w]) - sum(l32[i:i + w])) / abs(sum(l32[i:i + w]))
                                for i in range(0, len(l32), w))
                    t.add(name, "curve vs cuda fp32", "%.2e" % worst, "%g" % tol, worst <= tol)
        if c.get("budget"):
            try:
                sh([a.tcc_run] + run_args(c, d, os.path.join(d, "remat.tcc"),
                                          os.path.join(d, "ck-remat"), os.path.join(d, "remat.csv"))
                   + ["--backend", "cuda"], log=log)
                diff = bitwise(last_params(os.path.join(d, "ck-remat")), cu)
                t.add(name, "remat == plain (cuda)", "%d differ" % len(diff), "0", not diff)
            except RuntimeError as e:
                t.add(name, "remat run", "error", "-", False, str(e).splitlines()[-1][:120])
    for c in inference:
        d = os.path.join(a.dir, c["name"])
        art = os.path.join(d, "a.tcc")
        np.savez(os.path.join(d, "inputs.npz"), **inference_inputs(art))
        try:
            sh([a.tcc_run, art, "--inputs", os.path.join(d, "inputs.npz"), "--outputs",
                os.path.join(d, "cuda.npz"), "--backend", "cuda"], log=log)
        except RuntimeError as e:
            t.add(c["name"], "tcc-run --backend cuda", "error", "-", False,
                  str(e).splitlines()[-1][:120])
            continue
        cu, cpu = dict(np.load(os.path.join(d, "cuda.npz"))), dict(np.load(os.path.join(d, "cpu.npz")))
        for k in sorted(cpu):
            e = tensor_errors({k: cu[k]}, {k: cpu[k]})[k]
            same = cu[k].tobytes() == cpu[k].tobytes()
            t.add(c["name"], "%s vs cpu" % k, "%.2e" % e, "%g" % c["rtol"], e <= c["rtol"],
                  "bit-identical" if same else "not bit-identical")
    print("check_models: %d of %d comparisons failed" % (t.failed, len(t.rows)))
    return 1 if t.failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    q = sub.add_parser("prepare")
    q.add_argument("--out", required=True)
    q.add_argument("--tcc", default=os.path.join(ROOT, "build", "bin"))
    q = sub.add_parser("check")
    q.add_argument("--dir", required=True)
    q.add_argument("--tcc-run", required=True)
    q.add_argument("--only", default="", help="comma list of case names")
    q.add_argument("--log-dir", default="")
    a = p.parse_args()
    if a.cmd == "prepare":
        prepare(a)
        return 0
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
