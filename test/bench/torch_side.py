"""PyTorch's side of the benchmark: the eager and torch.compile baselines,
trained on the same batches with the same AdamW as tcc, and the measured
GEMM rate that MFU is taken against."""

import contextlib
import statistics
import time

import torch
import torch.nn.functional as F

import gpt_model


def setup_precision(a):
    """--tf32: fp32 matmuls (and convolutions) may run on TF32 tensor cores."""
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
        torch.backends.cudnn.allow_tf32 = bool(a.tf32)
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("high" if a.tf32 else "highest")


def autocast(a):
    if a.precision == "bf16":
        return torch.autocast(device_type=a.device, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def sync(a):
    if a.device == "cuda":
        torch.cuda.synchronize()


def make_optimizer(a, model):
    """torch.optim.AdamW; on CUDA its fused kernel where the installed torch
    has one (the fastest PyTorch AdamW), else the default (foreach)."""
    kw = dict(gpt_model.ADAMW)
    impl = "default"
    if a.device == "cuda":
        try:
            opt = torch.optim.AdamW(model.parameters(), fused=True, **kw)
            return opt, "fused"
        except (TypeError, RuntimeError):
            pass
    return torch.optim.AdamW(model.parameters(), **kw), impl


def train(a, c, tok, kind):
    """Trains a fresh model (same seed as tcc's weights) for warmup+steps
    steps. kind: eager | eager-ftz (CPU: flush subnormals, as tcc's CPU
    backend does) | compile (torch.compile of the model; the optimizer stays
    eager). -> dict(seconds, loss, peak_bytes, reserved_bytes, note)."""
    dev = torch.device(a.device)
    model = gpt_model.build(c, a.seed, attention=a.torch_attention).to(dev)
    model.train()
    opt, impl = make_optimizer(a, model)
    note = "AdamW %s, attention %s" % (impl, a.torch_attention)
    fwd = model
    if kind == "compile":
        if not hasattr(torch, "compile"):
            return None
        fwd = torch.compile(model, mode=a.compile_mode) if a.compile_mode else torch.compile(model)
        note += ", torch.compile mode=%s" % (a.compile_mode or "default")
    if a.precision == "bf16":
        note += ", autocast bf16"

    accum = getattr(a, "accum", 1)
    if accum > 1:
        note += ", %d micro-batches per step" % accum

    def step(xb, yb):
        # Gradient accumulation as PyTorch users write it: each micro-batch's
        # mean loss / accum, backward, then one optimizer step (every token
        # is a label here, so this is the mean over the step's tokens).
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for xm, ym in zip(xb.chunk(accum), yb.chunk(accum)):
            with autocast(a):
                logits = fwd(xm)
                loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(),
                                       ym.reshape(-1)) / accum
            loss.backward()
            total = total + loss.detach()
        opt.step()
        return total

    # The token stream on the device once; each step slices its batch, so
    # PyTorch, like tcc-run, trains on t[p..p+B*T) / t[p+1..p+B*T] (B: the
    # step's rows, accum micro-batches of c["batch"]).
    cs = gpt_model.global_batch(c, accum)
    batches = [gpt_model.batch(tok, cs, i) for i in range(min(a.warmup + a.steps,
                                                              (len(tok) - 1) // (cs["batch"] * cs["seq"])))]
    batches = [(torch.from_numpy(x).to(dev), torch.from_numpy(y).to(dev)) for x, y in batches]
    ftz = kind == "eager-ftz"
    if ftz:
        torch.set_flush_denormal(True)
    if a.device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    times, losses = [], []
    try:
        for i in range(a.warmup + a.steps):
            xb, yb = batches[i % len(batches)]
            sync(a)
            t0 = time.perf_counter()
            losses.append(step(xb, yb).item())  # .item() waits for the step
            times.append(time.perf_counter() - t0)
    finally:
        if ftz:
            torch.set_flush_denormal(False)
    peak = reserved = None
    if a.device == "cuda":
        peak = torch.cuda.max_memory_allocated()
        reserved = torch.cuda.max_memory_reserved()
    model = fwd = opt = batches = None  # free the device memory before the next run
    if a.device == "cuda":
        torch.cuda.empty_cache()
    return dict(seconds=times, loss=losses, peak_bytes=peak, reserved_bytes=reserved, note=note)


def train_ddp(a, c, data, kind, work):
    """train()'s baseline (the same kinds) as PyTorch DDP on a.ranks ranks
    (torch_ddp.py under mpirun), on the token shard `data`. -> train()'s
    dict: rank 0's step seconds, the global mean losses."""
    import json
    import os
    import socket
    import subprocess
    import sys
    import tcc_side
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    job = os.path.join(work, "ddp-%s.json" % kind)
    out = os.path.join(work, "ddp-%s-out.json" % kind)
    if os.path.exists(out):
        os.remove(out)
    keys = ("device", "precision", "tf32", "seed", "torch_attention", "compile_mode",
            "warmup", "steps")
    with open(job, "w") as f:
        json.dump(dict(args={k: getattr(a, k) for k in keys}, config=c, kind=kind,
                       tokens=data, out=out, port=port,
                       threads=tcc_side.rank_threads(a)), f)
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = tcc_side.mpirun(a) + [sys.executable, os.path.join(here, "torch_ddp.py"), job]
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        raise RuntimeError("exit %d: %s" % (r.returncode, " | ".join(r.stdout.strip().splitlines()[-4:])[-800:]))
    res = json.load(open(out))
    return dict(seconds=res["seconds"], loss=res["loss"], peak_bytes=None, reserved_bytes=None,
                note=res["note"])


def gemm_rate(a, n=None):
    """Measured dense GEMM rate (FLOP/s) of torch.matmul on this device in
    the run's precision: an n x n x n product (8192 on a GPU, 2048 on a CPU),
    bf16 for --precision bf16, fp32 otherwise (on TF32 with --tf32); the
    best of 3 timings of 10 products after warm-up."""
    dev = torch.device(a.device)
    n = n or (8192 if a.device == "cuda" else 1024)
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float32
    g = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(n, n, generator=g).to(dev, dtype)
    y = torch.randn(n, n, generator=g).to(dev, dtype)
    reps = 10 if a.device == "cuda" else 3
    for _ in range(3):
        torch.matmul(x, y)
    sync(a)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(reps):
            torch.matmul(x, y)
        sync(a)
        best = min(best, (time.perf_counter() - t0) / reps)
    del x, y
    label = "%s %dx%dx%d torch.matmul" % (
        "bf16" if dtype == torch.bfloat16 else ("fp32 (TF32 allowed)" if a.tf32 and a.device == "cuda" else "fp32"),
        n, n, n)
    return 2.0 * n ** 3 / best, label


def machine(a):
    import os
    import platform
    import subprocess
    parts = []
    if a.device == "cuda":
        p = torch.cuda.get_device_properties(0)
        drv = ""
        try:
            drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                 timeout=20).stdout.strip()
        except Exception:
            drv = "?"
        parts.append("%s (%d SMs, %.0f GiB), driver %s, CUDA %s (torch's)" % (
            p.name, p.multi_processor_count, p.total_memory / 2 ** 30, drv or "?", torch.version.cuda))
        try:
            nvcc = subprocess.run(["nvcc", "--version"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True).stdout
            rel = [l for l in nvcc.splitlines() if "release" in l]
            if rel:
                parts.append("nvcc " + rel[0].split("release")[1].split(",")[0].strip())
        except OSError:
            pass
    parts.append("%s, %d CPUs" % (platform.processor() or platform.machine(), os.cpu_count()))
    parts.append("torch %s (%d CPU threads)" % (torch.__version__, torch.get_num_threads()))
    if a.device == "cpu":
        parts.append("OPENBLAS_NUM_THREADS=%s" % os.environ.get("OPENBLAS_NUM_THREADS", "unset"))
    if hasattr(os, "getloadavg"):
        parts.append("load average %.1f when it ended" % os.getloadavg()[0])
    return ", ".join(parts)


def median(xs):
    return statistics.median(xs) if xs else float("nan")
