"""tcc's side of the benchmark: compile (export, `tcc compile`, strip the
weights), re-create the weights on the run machine, run `tcc-run`, read its
log, its memory and its profile.

The compile stage needs the compiler (LLVM/MLIR); everything else needs the
runtime only (`tcc-run`, built with -DTCC_BUILD_COMPILER=OFF), so the run
stage works on a GPU machine without LLVM.
"""

import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import torch

import gpt_model


LOSS = "cross_entropy(logits,labels)"
META = "bench.json"


def dir_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def file_sizes(path):
    out = {}
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, path)] = os.path.getsize(p)
    return out


def compile_stage(a, c, work):
    """Export the model to ONNX and compile it into WORK/model.tcc; with
    a.strip_weights remove weights.safetensors afterwards (the run stage
    writes it again from the seed). Writes WORK/bench.json: the
    configuration, seed, compile time and file sizes."""
    from export import export_onnx  # onnx is needed here only

    os.makedirs(work, exist_ok=True)
    art = os.path.join(work, "model.tcc")
    model = gpt_model.build(c, a.seed)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        onnx_path = os.path.join(tmp, "model.onnx")
        t0 = time.perf_counter()
        idx = torch.zeros(c["batch"], c["seq"], dtype=torch.long)
        with torch.no_grad():
            export_onnx(model, {"idx": idx}, ["logits"], onnx_path)
        export_s = time.perf_counter() - t0
        onnx_bytes = os.path.getsize(onnx_path)
        del model
        cmd = [os.path.join(a.tcc, "tcc"), "compile", onnx_path, "--loss", LOSS,
               "--optimizer", gpt_model.adamw_flag()]
        if a.precision != "fp32":
            cmd += ["--precision=" + a.precision]
        if a.ranks > 1:
            cmd += ["--data-parallel"]
        if a.accum > 1:
            cmd += ["--accum", str(a.accum)]
        budget = None
        if a.memory_budget:
            budget = a.memory_budget
            if budget == "half-arena":
                budget = half_arena_budget(a, cmd, tmp)
            cmd += ["--memory-budget", str(budget)]
        if a.device == "cpu":
            cmd += ["--no-cuda"]
        elif a.cuda_arch != "default":
            cmd += ["--cuda-arch", a.cuda_arch]
        # The stage breakdown (stderr) goes into bench.json.
        cmd += ["--time", "-o", art]
        print("+ " + " ".join(cmd), flush=True)
        t0 = time.perf_counter()
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        compile_s = time.perf_counter() - t0
        sys.stdout.write(r.stdout)
        sys.stdout.write(r.stderr)
        if r.returncode != 0:
            raise SystemExit("tcc compile failed (exit %d) after %.1f s" % (r.returncode, compile_s))
    sizes = file_sizes(art)
    total = sum(sizes.values())
    weights = os.path.join(art, "weights.safetensors")
    stripped = False
    if a.strip_weights and os.path.exists(weights):
        os.remove(weights)
        stripped = True
    meta = dict(config=a.config, model=c, seed=a.seed, precision=a.precision,
                device=a.device, data_parallel=a.ranks > 1, accum=a.accum,
                memory_budget_flag=a.memory_budget, memory_budget=budget, compile_s=round(compile_s, 2), export_s=round(export_s, 2),
                onnx_bytes=onnx_bytes, artifact_files=sizes, artifact_bytes=total,
                artifact_bytes_without_weights=total - sizes.get("weights.safetensors", 0),
                weights_stripped=stripped, summary=r.stdout.strip(),
                compile_breakdown=r.stderr.strip(),
                command=" ".join(["tcc", "compile", "model.onnx"] + cmd[3:-2] + ["-o", "model.tcc"]))
    with open(os.path.join(work, META), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def read_plan_params(art):
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    plan = os.path.join(art, manifest.get("files", {}).get("plan", "plan.json"))
    with open(plan) as f:
        params = json.load(f)["params"]
    weights = manifest.get("files", {}).get("weights", "weights.safetensors")
    return params, os.path.join(art, weights)


def to_bf16_bits(a):
    """float32 -> bfloat16 bit patterns, round to nearest even (NaN kept)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(a)
    r[nan] = 0x7FC0
    return r


def write_weights(art, model):
    """The artifact's weights.safetensors from `model`'s parameters, under the
    names, shapes and dtypes of the artifact's plan (`params`). The file is
    replaced when it exists (an unstripped artifact gets the run machine's
    model, so tcc and PyTorch start from the same numbers)."""
    params, path = read_plan_params(art)
    mine = {n: p.detach().float().cpu().numpy() for n, p in model.named_parameters()}
    out = {}
    for p in params:
        name, dtype, shape = p["name"], p["dtype"], list(p["shape"])
        if name not in mine:
            raise SystemExit("%s: parameter '%s' of the plan is not a parameter of the "
                             "PyTorch model (has: %s...)" % (art, name, ", ".join(list(mine)[:5])))
        a = mine[name]
        if list(a.shape) != shape:
            raise SystemExit("%s: parameter '%s': plan shape %s, model %s"
                             % (art, name, shape, list(a.shape)))
        if dtype == "f32":
            out[name] = a
        elif dtype == "f16":
            out[name] = a.astype(np.float16)
        elif dtype == "bf16":
            out[name] = to_bf16_bits(a)  # the BF16 bits
        else:
            raise SystemExit("%s: parameter '%s' has dtype %s" % (art, name, dtype))
    extra = sorted(set(mine) - {p["name"] for p in params})
    if extra:
        print("note: model parameters not in the plan (frozen or folded?): %s" % extra)
    tags = {p["name"]: {"f32": "F32", "f16": "F16", "bf16": "BF16"}[p["dtype"]] for p in params}
    tmp = path + ".tmp"
    write_safetensors(tmp, out, tags)
    os.replace(tmp, path)
    reseal(art, path)
    return path


def reseal(art, path):
    """Records `path`'s new size and SHA-256 in the artifact manifest's
    integrity table (the runtime refuses a file that does not match it)."""
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    mpath = os.path.join(art, "manifest.json")
    with open(mpath) as f:
        manifest = json.load(f)
    rel = os.path.relpath(path, art)
    manifest.setdefault("integrity", {})[rel] = dict(bytes=os.path.getsize(path),
                                                     sha256=h.hexdigest())
    with open(mpath + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(mpath + ".tmp", mpath)


def write_safetensors(path, arrays, tags):
    """safetensors with an explicit dtype tag per tensor (BF16 arrays are
    their uint16 bit patterns), 8-byte aligned header, in `arrays`' order."""
    header, off = {}, 0
    for name, a in arrays.items():
        n = a.nbytes
        header[name] = {"dtype": tags[name], "shape": list(a.shape),
                        "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-(8 + len(h)) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for a in arrays.values():
            f.write(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False).tobytes())


class GpuMemoryPoller:
    """How far the device's memory in use rose above its level at the start
    while `tcc-run` ran: NVML (nvidia-ml-py) every 10 ms, else nvidia-smi
    every 100 ms. Counts what the process holds (CUDA context, cuBLASLt
    workspace, the session's buffers), unlike tcc_memory; it reads the
    whole device, so nothing else may run on it meanwhile (this program
    runs tcc before PyTorch touches the GPU)."""

    def __init__(self):
        self.peak = None
        self.how = None
        self._stop = threading.Event()
        self._read = None
        try:
            import pynvml
            pynvml.nvmlInit()
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
            self._read = lambda: pynvml.nvmlDeviceGetMemoryInfo(h).used
            self.how, self._dt = "NVML", 0.01
        except Exception:
            if shutil.which("nvidia-smi"):
                self._read = self._smi
                self.how, self._dt = "nvidia-smi", 0.1
        if self._read:
            try:
                self._base = self._read()
            except Exception:
                self._read = None

    @staticmethod
    def _smi():
        out = subprocess.run(["nvidia-smi", "--id=0", "--query-gpu=memory.used",
                              "--format=csv,noheader,nounits"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=10).stdout
        return int(out.strip().splitlines()[0]) * 2 ** 20

    def watch(self, proc):
        if self._read is None:
            return self

        def loop():
            while not self._stop.is_set() and proc.poll() is None:
                try:
                    self.peak = max(self.peak or 0, self._read() - self._base)
                except Exception:
                    pass
                time.sleep(self._dt)

        self._t = threading.Thread(target=loop, daemon=True)
        self._t.start()
        return self

    def stop(self):
        self._stop.set()
        if hasattr(self, "_t"):
            self._t.join()


def rank_threads(a):
    """CPU threads per data-parallel rank: the CPUs shared out."""
    return max(1, (os.cpu_count() or 1) // a.ranks)


def mpirun(a):
    """The launcher prefix of a run on a.ranks ranks (none for one):
    oversubscribing allowed (ranks may outnumber the cores Open MPI counts),
    and as root where the machine runs as root (CI, the GPU machines)."""
    if a.ranks == 1:
        return []
    cmd = ["mpirun", "-np", str(a.ranks), "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def run_tcc(a, c, art, data, work, env=None):
    """tcc-run ART --data DATA --steps warmup+steps --log; -> dict with the
    per-step seconds and losses of the log (all steps), the wall time and
    the peak process memory (cuda; None when NVML cannot see it). Each call
    replaces the log of the last (--overwrite)."""
    log = os.path.join(work, "tcc-log.csv")
    cmd = mpirun(a) + [os.path.join(a.tcc, "tcc-run"), art, "--data", data,
                       "--steps", str(a.warmup + a.steps), "--log", log, "--overwrite",
                       "--progress", "none", "--backend", a.device]
    extra = dict(env or {})
    if a.ranks > 1 and a.device == "cpu" and "TCC_CPU_THREADS" not in os.environ:
        extra["TCC_CPU_THREADS"] = str(rank_threads(a))
    if a.tf32:
        extra["TCC_CUDA_TF32"] = "1"
    env = dict(os.environ, **extra)
    print("+ " + "".join("%s=%s " % kv for kv in extra.items()) + " ".join(cmd), flush=True)
    poller = GpuMemoryPoller() if a.device == "cuda" else None  # reads the level before
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if poller:
        poller.watch(proc)
    out, _ = proc.communicate()
    wall = time.perf_counter() - t0
    if poller:
        poller.stop()
    if proc.returncode != 0:
        sys.stdout.write(out)
        last = " | ".join(out.strip().splitlines()[-4:])
        raise RuntimeError("exit %d: %s" % (proc.returncode, last[-800:]))
    with open(log) as f:
        rows = list(csv.DictReader(f))
    return dict(seconds=[float(r["seconds"]) for r in rows],
                loss=[float(r["loss"]) for r in rows], wall=wall,
                process_peak=poller.peak if poller else None,
                process_peak_how=poller.how if poller else None, output=out)


def half_arena_budget(a, cmd, tmp):
    """--memory-budget half-arena: compile CMD (the compile without a budget)
    without the CUDA fatbin, and return its session total minus half its
    arena, as `tcc-run inspect` counts them."""
    plain = os.path.join(tmp, "unbudgeted.tcc")
    r = subprocess.run(cmd + ["--no-cuda", "-o", plain], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.stdout.write(r.stdout)
        raise SystemExit("tcc compile without the budget failed (exit %d)" % r.returncode)
    _, mem = inspect(a, plain)
    if "total" not in mem or "arena" not in mem:
        raise SystemExit("tcc-run inspect %s: no session total or arena" % plain)
    budget = mem["total"] - mem["arena"] // 2
    print("half-arena: unbudgeted total %d bytes, arena %d: budget %d bytes"
          % (mem["total"], mem["arena"], budget), flush=True)
    return budget


def inspect(a, art):
    """`tcc-run inspect ART`: -> (text, {session memory row: bytes})."""
    r = subprocess.run([os.path.join(a.tcc, "tcc-run"), "inspect", art],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    mem = {}
    on = False
    for line in r.stdout.splitlines():
        if line.startswith("session memory"):
            on = True
            continue
        if on:
            m = re.match(r"\s+(\w[\w ]*?)\s+([\d,]+) bytes", line)
            if m:
                mem[m.group(1)] = int(m.group(2).replace(",", ""))
            elif line.strip():
                on = False
    return r.stdout, mem


def help_text(a):
    r = subprocess.run([os.path.join(a.tcc, "tcc-run"), "--help"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.stdout


def profile(a, art, data, work):
    """One profiled run, when tcc-run has --profile: -> its output (the top
    of the profile), or None when the flag does not exist."""
    if "--profile" not in help_text(a):
        return None
    cmd = [os.path.join(a.tcc, "tcc-run"), art, "--data", data, "--steps",
           str(a.warmup + 1), "--progress", "none", "--backend", a.device,
           "--profile-json", "profile.json"]
    extra = {"TCC_CUDA_TF32": "1"} if a.tf32 else {}
    print("+ " + "".join("%s=%s " % kv for kv in extra.items()) + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       cwd=work, env=dict(os.environ, **extra))
    if r.returncode != 0:
        return "tcc-run --profile failed (exit %d):\n%s" % (r.returncode, r.stdout[-3000:])
    return r.stdout


def median(xs):
    return statistics.median(xs) if xs else float("nan")
