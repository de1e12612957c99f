#!/usr/bin/python3
"""Train-step benchmark: tcc against PyTorch eager and torch.compile on a GPT.

    gpt_bench.py [--config tiny|small|gpt2-124m] [--device cpu|cuda]
                 [--precision fp32|bf16] [--tf32] [--batch B] [--seq T]
                 [--steps N] [--warmup W] [--baselines eager,compile] [--ranks N]
                 [--accum N]
                 [--stage all|compile|run] [--work DIR] [--tcc BUILD/bin]
                 [--cuda-arch sm_90|default|LIST]
                 [--write-docs [FILE]]

Defines the GPT in PyTorch (test/models/models.py: pre-LN, tied embeddings,
causal attention, tanh GELU) with a seed, exports it to ONNX, compiles its
training step with `tcc compile` (cross-entropy, AdamW) and trains it with
`tcc-run --backend DEVICE` for warmup+steps steps on a random uint16 token
shard; in the same run PyTorch eager and torch.compile train the same model
(same seed, same batches, same precision, same AdamW). Prints one table:
median step time, tokens/s, peak memory, MFU against the GEMM rate measured
in the same run, and tcc's speed-up over each baseline.

Two machines (a GPU machine has no LLVM/MLIR, so it cannot run `tcc
compile`; only 64 MiB travel to it):

    # here: export + compile into build-bench/gpt2-124m-fp32-b8-t1024/,
    # the ~500 MB weights file removed from the artifact
    gpt_bench.py --config gpt2-124m --stage compile --tcc build/bin
    # on the GPU machine (test/bench/gpu_bench.sh does this): the same model
    # from the same seed, written as the artifact's weights, then tcc-run
    # --backend cuda and the PyTorch baselines
    gpt_bench.py --config gpt2-124m --stage run --tcc build-cuda/bin

`--stage all` (the default) does both in one process: the CPU benchmark
`OPENBLAS_NUM_THREADS=1 test/bench/gpt_bench.py` (tiny config) runs so.

Data parallel (`--ranks N`, N > 1; needs Open MPI's mpirun): the artifact is
compiled `--data-parallel` and run as `mpirun -np N tcc-run` (MPI between
CPU ranks, NCCL between GPUs, one GPU per rank), each rank on `--batch` rows
of the global batch of N x batch, as tcc-run's data-parallel mode reads
them; the baselines are PyTorch DDP under the same mpirun
(test/bench/torch_ddp.py: gloo on the CPU, NCCL on GPUs), each rank on the
same rows. On a CPU each rank of either side gets CPUs / N threads. Step
times are rank 0's; tokens/s count the global batch.

A program, not a test: it asserts nothing about speed.
"""

import argparse
import datetime
import gc
import json
import os
import re
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import gpt_model  # noqa: E402
import tcc_side  # noqa: E402
import torch_side  # noqa: E402

GIB = 2.0 ** 30


def flops(x):
    return "%.1f TFLOP/s" % (x / 1e12) if x >= 1e12 else "%.1f GFLOP/s" % (x / 1e9)


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    p.add_argument("--config", choices=sorted(gpt_model.CONFIGS), default="tiny")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="tcc-run --backend and PyTorch's device (default: cpu for tiny and small, "
                        "cuda for gpt2-124m)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: `tcc compile --precision bf16`, PyTorch under "
                        "torch.autocast(bfloat16); MFU against the bf16 GEMM rate")
    p.add_argument("--tf32", action="store_true",
                   help="fp32 GEMMs may use TF32 (PyTorch: allow_tf32 / "
                        "set_float32_matmul_precision('high'); tcc has no such switch yet)")
    for k in ("batch", "seq", "steps", "warmup"):
        p.add_argument("--" + k, type=int, default=None, help="default: the config's")
    p.add_argument("--seed", type=int, default=1234, help="model and token seed")
    p.add_argument("--accum", type=int, default=1,
                   help="micro-batches per step: tcc compiled --accum N, PyTorch's loop "
                        "backward()s N micro-batches of --batch rows before one opt.step()")
    p.add_argument("--memory-budget", default=None, metavar="SIZE|half-arena",
                   help="tcc compile --memory-budget SIZE; half-arena: the unbudgeted plan's "
                        "total minus half its arena (issue 16's 'half the activation memory'), "
                        "measured by compiling without the budget first")
    p.add_argument("--ranks", type=int, default=1,
                   help="data-parallel ranks (mpirun -np N): tcc compiled --data-parallel, "
                        "the baselines as PyTorch DDP; --batch is per rank")
    p.add_argument("--baselines", default=None,
                   help="comma list of eager, eager-ftz (CPU: flush subnormals), compile "
                        "(default: eager,eager-ftz,compile on cpu, eager,compile on cuda)")
    p.add_argument("--torch-attention", choices=["explicit", "sdpa"], default=None,
                   help="the baselines' attention: the exported op-by-op form, or "
                        "F.scaled_dot_product_attention (default: sdpa where torch has it)")
    p.add_argument("--compile-mode", default=None,
                   help="torch.compile mode (default, reduce-overhead, max-autotune)")
    p.add_argument("--stage", choices=["all", "compile", "run"], default="all")
    p.add_argument("--work", default=None,
                   help="the stage directory (default: build-bench/CONFIG-PRECISION-bB-tT; "
                        "a temporary one for --stage all)")
    p.add_argument("--keep-weights", action="store_true",
                   help="--stage compile: keep weights.safetensors in the artifact")
    p.add_argument("--cuda-arch", default=None,
                   help="tcc compile --cuda-arch: the GPU code the fatbin holds (default "
                        "sm_90, the H100 this benchmark targets; tcc's own default "
                        "sm_80,sm_90,compute_90 with --cuda-arch default)")
    p.add_argument("--tcc", default=os.environ.get("TCC_BIN", os.path.join(ROOT, "build", "bin")),
                   help="directory with tcc (compile) and tcc-run (run); default $TCC_BIN or build/bin")
    p.add_argument("--no-profile", action="store_true", help="skip the tcc-run --profile step")
    p.add_argument("--write-docs", nargs="?", const=os.path.join(ROOT, "docs", "benchmarks.md"),
                   default="", metavar="FILE",
                   help="add this run's section to FILE (default docs/benchmarks.md), "
                        "replacing one of the same date, config, device and precision")
    p.add_argument("--merge-section", metavar="SECTION.md", default="",
                   help="only add SECTION.md (what a run wrote as section.md, e.g. on the "
                        "GPU machine) to --write-docs's FILE, and exit")
    a = p.parse_args(argv)
    a.argv = argv
    return a


def resolve(a):
    c = dict(gpt_model.CONFIGS[a.config])
    for k in ("batch", "seq", "steps", "warmup"):
        if getattr(a, k) is not None:
            c[k] = getattr(a, k)
    a.steps, a.warmup = c["steps"], c["warmup"]
    if a.ranks < 1:
        raise SystemExit("--ranks: expected a number of ranks >= 1, got %d" % a.ranks)
    if a.accum < 1:
        raise SystemExit("--accum: expected a number of micro-batches >= 1, got %d" % a.accum)
    if a.accum > 1 and a.ranks > 1:
        raise SystemExit("--accum %d with --ranks %d: not measured together yet (PyTorch DDP "
                         "would need no_sync on all but the last micro-batch)" % (a.accum, a.ranks))
    if a.ranks > 1:
        import shutil
        if not shutil.which("mpirun"):
            raise SystemExit("--ranks %d: mpirun not found (install Open MPI: openmpi-bin)" % a.ranks)
    if a.device is None:
        a.device = "cuda" if a.config == "gpt2-124m" else "cpu"
    if a.baselines is None:
        a.baselines = "eager,eager-ftz,compile" if a.device == "cpu" else "eager,compile"
    a.baselines = [b for b in a.baselines.split(",") if b]
    for b in a.baselines:
        if b not in ("eager", "eager-ftz", "compile"):
            raise SystemExit("--baselines: unknown '%s' (eager, eager-ftz, compile)" % b)
    if a.torch_attention is None:
        import torch.nn.functional as F
        a.torch_attention = "sdpa" if hasattr(F, "scaled_dot_product_attention") else "explicit"
    if a.work is None and a.stage != "all":
        a.work = os.path.join(ROOT, "build-bench", "%s-%s-b%d-t%d%s" % (
            a.config, a.precision, c["batch"], c["seq"],
            "-r%d" % a.ranks if a.ranks > 1 else "") + ("-a%d" % a.accum if a.accum > 1 else "")
            + ("-m%s" % a.memory_budget if a.memory_budget else ""))
    if a.work is not None:
        a.work = os.path.abspath(a.work)  # the profile runs in it
    a.strip_weights = a.stage == "compile" and not a.keep_weights
    if a.cuda_arch is None:
        a.cuda_arch = "sm_90"
    a.tcc = os.path.abspath(a.tcc)  # the profile runs in the work directory
    return c


def mib(n):
    return "%.1f MiB" % (n / 2.0 ** 20)


# ---------------------------------------------------------------- run stage


def run_stage(a, c, work, meta):
    import torch
    torch_side.setup_precision(a)
    art = os.path.join(work, "model.tcc")
    res = dict(rows=[], notes=[], meta=meta)

    # The same model as the compile stage's, from the seed, as the artifact's
    # weights: tcc and PyTorch start from the same numbers.
    model = gpt_model.build(c, a.seed)
    tcc_side.write_weights(art, model)
    del model
    data = os.path.join(work, "tokens.bin")
    tok = gpt_model.write_tokens(data, gpt_model.global_batch(c, a.ranks * a.accum),
                                 a.warmup + a.steps, a.seed)

    # tcc first, before this process touches the GPU. A failing tcc-run is
    # reported (and on CUDA tried once more without CUDA graphs); the
    # baselines still run.
    inspect_text, mem = tcc_side.inspect(a, art)
    res["inspect"] = inspect_text
    t = None
    try:
        t = tcc_side.run_tcc(a, c, art, data, work)
    except RuntimeError as e:
        res["notes"].append("tcc-run failed: %s" % e)
        if a.device == "cuda":
            try:
                t = tcc_side.run_tcc(a, c, art, data, work, env={"TCC_CUDA_GRAPHS": "0"})
                res["notes"].append("tcc ran with TCC_CUDA_GRAPHS=0 (kernels launched one by one)")
            except RuntimeError as e2:
                res["notes"].append("tcc-run with TCC_CUDA_GRAPHS=0 failed too: %s" % e2)
    res["profile"] = None if (a.no_profile or t is None) else tcc_side.profile(a, art, data, work)

    tokens = a.ranks * a.accum * c["batch"] * c["seq"]
    fpt = gpt_model.flops_per_token(c)
    rate, rate_label = torch_side.gemm_rate(a)
    res["gemm"] = (rate, rate_label)

    def row(name, seconds, losses, peak, peak_note):
        m = tcc_side.median(seconds[a.warmup:])
        res["rows"].append(dict(name=name, median_s=m, tokens_s=tokens / m,
                                mfu=fpt * tokens / m / rate, peak=peak, peak_note=peak_note,
                                first_loss=losses[0] if losses else None,
                                last_loss=losses[-1] if losses else None,
                                seconds=seconds))

    if t is not None:
        note = ""
        if a.device == "cuda":
            note = ("without the cuBLASLt workspace and the CUDA context; with them the device "
                    "memory in use rose by %s while tcc-run ran (%s)" % (
                        "%.2f GiB" % (t["process_peak"] / GIB) if t["process_peak"] else "?",
                        t["process_peak_how"] or "no NVML or nvidia-smi reading"))
        row("tcc (%s runtime%s)" % ("CPU" if a.device == "cpu" else "CUDA",
                                    ", %d ranks" % a.ranks if a.ranks > 1 else ""),
            t["seconds"], t["loss"], mem.get("total"), note)
        res["rows"][-1]["tcc"] = True

    dev = "CPU" if a.device == "cpu" else "GPU"
    ddp = " DDP x%d" % a.ranks if a.ranks > 1 else ""
    names = {"eager": "PyTorch eager%s (%s)" % (ddp, dev),
             "eager-ftz": "PyTorch eager%s (%s), flush denormals" % (ddp, dev),
             "compile": "torch.compile%s (%s)" % (ddp, dev)}
    for b in a.baselines:
        if b == "eager-ftz" and a.device != "cpu":
            continue
        try:
            r = (torch_side.train_ddp(a, c, data, b, work) if a.ranks > 1
                 else torch_side.train(a, c, tok, b))
        except Exception as e:  # a baseline that fails is reported, not fatal
            res["notes"].append("%s failed: %s: %s" % (names[b], type(e).__name__,
                                                       str(e).splitlines()[0][:300] if str(e) else ""))
            e = None
            gc.collect()
            if a.device == "cuda":
                torch.cuda.empty_cache()
            continue
        if r is None:
            res["notes"].append("%s: not available in torch %s" % (names[b], torch.__version__))
            continue
        pn = ""
        if r["reserved_bytes"]:
            pn = "max_memory_allocated; reserved %.2f GiB" % (r["reserved_bytes"] / GIB)
        row(names[b], r["seconds"], r["loss"], r["peak_bytes"], pn)
        res["rows"][-1]["note"] = r["note"]
    # Same weights, same batches: the first losses must agree.
    rows = res["rows"]
    if len(rows) > 1 and rows[0].get("tcc"):
        l0, l1 = rows[0]["first_loss"], rows[1]["first_loss"]
        rel = abs(l0 - l1) / max(abs(l1), 1e-30)
        if rel > (1e-4 if a.precision == "fp32" and not a.tf32 else 2e-2):
            res["notes"].append("WARNING: tcc's step-1 loss %.6f differs from %s's %.6f (rel %.1e): "
                                "the weights or the data did not line up, or a numerics bug"
                                % (l0, rows[1]["name"], l1, rel))
    res["machine"] = torch_side.machine(a)
    return res


def fmt_table(a, c, res):
    rows = res["rows"]
    tcc_m = rows[0]["median_s"] if rows and rows[0].get("tcc") else None
    lines = ["| | median step (ms) | tokens/s | peak memory (GiB) | MFU | tcc speed-up over it |",
             "|---|---|---|---|---|---|"]
    if tcc_m is None:
        lines.append("| tcc | failed (see below) | | | | |")
    for r in rows:
        lines.append("| %s | %.2f | %.0f | %s | %.1f%% | %s |" % (
            r["name"], r["median_s"] * 1e3, r["tokens_s"],
            "%.2f" % (r["peak"] / GIB) if r["peak"] else "-",
            100 * r["mfu"], "%.2f" % (r["median_s"] / tcc_m) if tcc_m else "-"))
    return lines


def flavour(opts):
    """The compile options beside config, precision and shape, as words."""
    return "".join([", data parallel" if opts["data_parallel"] else "",
                    ", --accum %d" % opts["accum"] if opts["accum"] > 1 else "",
                    ", --memory-budget %s" % opts["memory_budget"] if opts["memory_budget"] else ""])


def report(a, c, res):
    """-> (head, table, tail): lists of lines; head and tail are items
    (printed as lines, a bullet list in the docs)."""
    rows = res["rows"]
    meta = res["meta"]
    rate, rate_label = res["gemm"]
    fpt = gpt_model.flops_per_token(c)
    prec = a.precision + (" (TF32 allowed in PyTorch)" if a.tf32 else "")
    compiled = meta["command"]
    if "compile_machine" in meta:
        compiled += "` on %s" % meta["compile_machine"]
    else:
        compiled += "`"
    head = [
        "Model: GPT %s, %d layers, d=%d, %d heads, seq %d, vocab %d (tokens < %d), batch %d%s "
        "(%d tokens/step); %s; AdamW lr=%g betas=%s eps=%g wd=%g; %d timed steps after %d "
        "warm-up; seed %d"
        % (a.config, c["layers"], c["embd"], c["heads"], c["seq"], c["vocab"], c["vocab_real"],
           c["batch"], (" per rank on %d data-parallel ranks" % a.ranks if a.ranks > 1 else "")
           + (" per micro-batch, %d micro-batches per step" % a.accum if a.accum > 1 else ""),
           a.ranks * a.accum * c["batch"] * c["seq"], prec, gpt_model.ADAMW["lr"],
           gpt_model.ADAMW["betas"], gpt_model.ADAMW["eps"], gpt_model.ADAMW["weight_decay"],
           a.steps, a.warmup, a.seed),
        "Machine: %s" % res["machine"],
        "tcc compile: %.1f s (ONNX export %.1f s), `%s; artifact %s without weights "
        "(weights %s)" % (
            meta["compile_s"], meta["export_s"], compiled,
            mib(meta["artifact_bytes_without_weights"]),
            mib(meta["artifact_files"].get("weights.safetensors", 0))),
        "MFU = (6*N + 12*L*T*d) * tokens/s / GEMM rate = %.4g FLOP/token * tokens/s / %s "
        "(N = %d parameters without wpe; GEMM rate measured in this run: %s)"
        % (fpt, flops(rate), gpt_model.n_params(c) - c["seq"] * c["embd"], rate_label),
    ]
    table = fmt_table(a, c, res)
    tail = ["tcc speed-up = the baseline's median step / tcc's = tcc's tokens/s / the "
            "baseline's (> 1: tcc is faster)"]
    if rows:
        tail.append("Loss at step 1 and step %d (same initial weights, same batches): " % (a.warmup + a.steps)
                    + "; ".join("%s %.6f, %.6f" % (r["name"], r["first_loss"], r["last_loss"])
                                for r in rows if r["first_loss"] is not None))
    if a.device == "cuda":
        tail.append("Peak memory: tcc = the session's bytes as `tcc-run inspect` (tcc_memory) "
                    "counts them: parameters, optimizer state, arena, inputs, constants%s; "
                    "PyTorch = torch.cuda.max_memory_allocated" % (
                        ("; " + rows[0]["peak_note"]) if rows and rows[0].get("tcc") else ""))
    else:
        tail.append("Peak memory: tcc = the session's bytes as `tcc-run inspect` (tcc_memory) "
                    "counts them; PyTorch's is not measured on the CPU")
    for r in rows[1:]:
        if r.get("note") or r.get("peak_note"):
            tail.append("%s: %s" % (r["name"], "; ".join(x for x in (r.get("note"), r.get("peak_note")) if x)))
    tail += res["notes"]
    if not a.tf32 and a.device == "cuda" and a.precision == "fp32":
        tail.append("TF32 off on both sides (plain fp32 GEMMs)")
    elif a.tf32:
        tail.append("--tf32: fp32 GEMMs on TF32 on both sides (PyTorch allow_tf32, "
                    "tcc TCC_CUDA_TF32=1)")
    if res.get("profile") is None and not a.no_profile and rows and rows[0].get("tcc"):
        tail.append("tcc-run has no --profile (yet): no profile")
    return head, table, [t for t in tail if t]


def profile_block(res, n=40):
    prof = res.get("profile")
    if not prof:
        return []
    lines = prof.strip().splitlines()
    top = lines[:n] + (["... (%d more lines)" % (len(lines) - n)] if len(lines) > n else [])
    return ["", "tcc-run --profile (top):", "", "```"] + top + ["```"]


def text_report(head, table, tail, res):
    return "\n".join(head + [""] + table + [""] + tail + profile_block(res))


def section(a, c, res, head, table, tail):
    cmd = "test/bench/gpt_bench.py " + " ".join(shlex.quote(x) for x in a.argv)
    title = "### %s: %s, %s, %s%s%s" % (datetime.date.today().isoformat(), a.config, a.device,
                                        a.precision, " tf32" if a.tf32 else "",
                                        ", %d ranks" % a.ranks if a.ranks > 1 else "")
    out = [title, "", "- Command: `%s`" % cmd] + ["- " + h for h in head]
    out += [""] + table + [""] + ["- " + t for t in tail] + profile_block(res)
    return "\n".join(out) + "\n"


def merge_section(path, text):
    """Adds `text` (starting with a '### ' title) to the file, replacing a
    section with the same title; a new one goes at the end of the "## Runs"
    section (made at the end of the file when there is none)."""
    title = text.splitlines()[0]
    old = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    lines = old.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.rstrip("\n") == title), None)
    if start is None:
        runs = next((i for i, l in enumerate(lines) if l.rstrip("\n") == "## Runs"), None)
        if runs is None:
            new = old.rstrip("\n") + "\n\n## Runs\n\n" + text
        else:
            end = next((j for j in range(runs + 1, len(lines))
                        if re.match(r"#{1,2} ", lines[j])), len(lines))
            head = "".join(lines[:end]).rstrip("\n") + "\n\n"
            tail = "".join(lines[end:])
            new = head + text + ("\n" + tail if tail else "")
    else:
        end = next((j for j in range(start + 1, len(lines))
                    if re.match(r"#{1,3} ", lines[j])), len(lines))
        new = "".join(lines[:start]) + text + ("\n" if end < len(lines) else "") + "".join(lines[end:])
    with open(path, "w") as f:
        f.write(new)


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    if a.merge_section:
        target = a.write_docs or os.path.join(ROOT, "docs", "benchmarks.md")
        merge_section(target, open(a.merge_section).read())
        print("added %s to %s" % (a.merge_section, target))
        return
    c = resolve(a)
    import tempfile
    tmp = None
    work = a.work
    if work is None:
        tmp = tempfile.TemporaryDirectory()
        work = tmp.name
    try:
        if a.stage in ("all", "compile"):
            import platform
            meta = tcc_side.compile_stage(a, c, work)
            meta["compile_machine"] = "%s, %d CPUs" % (platform.processor() or platform.machine(),
                                                       os.cpu_count())
            with open(os.path.join(work, tcc_side.META), "w") as f:
                json.dump(meta, f, indent=1)
            print("compiled %s in %.1f s (export %.1f s); artifact %s, %s without weights%s"
                  % (os.path.join(work, "model.tcc"), meta["compile_s"], meta["export_s"],
                     mib(meta["artifact_bytes"]), mib(meta["artifact_bytes_without_weights"]),
                     "; weights.safetensors removed" if meta["weights_stripped"] else ""))
            for f, n in sorted(meta["artifact_files"].items()):
                print("  %-28s %s" % (f, mib(n)))
            if a.stage == "compile":
                return
        else:
            with open(os.path.join(work, tcc_side.META)) as f:
                meta = json.load(f)
            want = dict(config=a.config, precision=a.precision, data_parallel=a.ranks > 1,
                        accum=a.accum, memory_budget=a.memory_budget)
            got = dict(config=meta["config"], precision=meta["precision"],
                       data_parallel=meta.get("data_parallel", False), accum=meta.get("accum", 1),
                       memory_budget=meta.get("memory_budget_flag"))
            if want != got or any(meta["model"][k] != c[k] for k in ("batch", "seq", "layers", "embd", "vocab")):
                raise SystemExit("%s was compiled for %s %s (batch %d, seq %d%s), not %s %s (batch %d, "
                                 "seq %d%s)"
                                 % (work, meta["config"], meta["precision"], meta["model"]["batch"],
                                    meta["model"]["seq"],
                                    flavour(got), a.config, a.precision, c["batch"], c["seq"],
                                    flavour(want)))
            if meta["seed"] != a.seed:
                print("note: compiled with seed %d, running with --seed %d (only names and shapes "
                      "come from the compile)" % (meta["seed"], a.seed))
        res = run_stage(a, c, work, meta)
        head, table, tail = report(a, c, res)
        print(text_report(head, table, tail, res))
        text = section(a, c, res, head, table, tail)
        with open(os.path.join(work, "section.md"), "w") as f:
            f.write(text)
        with open(os.path.join(work, "result.json"), "w") as f:
            json.dump(dict(rows=res["rows"], notes=res["notes"], machine=res["machine"],
                           gemm=res["gemm"], meta=meta, profile=res["profile"],
                           inspect=res["inspect"], args=a.argv), f, indent=1)
        if a.write_docs:
            merge_section(a.write_docs, text)
            print("wrote the section to %s" % a.write_docs)
    finally:
        if tmp:
            tmp.cleanup()


if __name__ == "__main__":
    main()
