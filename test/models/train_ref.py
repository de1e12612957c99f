#!/usr/bin/python3
"""PyTorch reference for `tcc train`: same model, data and flags, N steps.

    /usr/bin/python3 test/models/train_ref.py --model gpt \\
        --loss 'cross_entropy(logits,labels)' \\
        --optimizer adamw:lr=1e-3,beta1=0.9,beta2=0.95,eps=1e-8,weight_decay=0.1 \\
        --grad-clip 1.0 --lr-schedule cosine:warmup=2,total=5,min=1e-4 \\
        --accum 1 --steps 5 --out DIR \\
        [--data-samples K | --data-npz FILE] [--no-decay REGEX] [--freeze REGEX]

writes
    DIR/model.onnx       the graph tcc trains, exported exactly as export.py does
    DIR/data.npz         training data: graph inputs + labels/target, leading axis = samples
    DIR/params0.npz      parameters before training, named as the ONNX initializers
    DIR/reference.npz    parameters after --steps steps, plus loss f32[steps]
                         (each step's loss, before its update) and lr f64[steps]
    DIR/trace.npz        loss, lr, grad_norm f32[steps] (what clip_grad_norm_
                         returns: the global L2 norm before clipping),
                         tokens i64[steps] (labels counted by the loss)
    DIR/optim_state.npz  optimizer state after training (see README.md)
    DIR/train_args.json  the flags, and the matching `tcc train` argument list
    DIR/step-N/params.npz  with --save-every K: parameters after N steps (N = K, 2K, ...)

The flag semantics (and the exact formulas) are in test/models/README.md.
Deterministic: fixed seeds, one torch thread, fixed zip timestamps, so rerunning
a command rewrites identical bytes.
"""

import argparse
import json
import math
import os
import re
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import (EXPORTERS, batch_norm_buffers, export_onnx, onnx_names,  # noqa: E402
                    save_npz, sync_batch_norm_buffers)
from models import MODELS, mlm_labels  # noqa: E402

IGNORE_INDEX = -100
DATA_SEED = 1234
MASK_ID = 1  # MLM data: 0 = padding, 1 = [MASK], real tokens are 2..V-1
DEFAULT_SAMPLES = 7  # not a multiple of any batch size: wrap-around gets exercised


class UsageError(Exception):
    pass


# ----------------------------------------------------------------- flag parsing


def _parse_kv(text, what):
    """'name:k=v,k=v' -> (name, {k: v})."""
    name, _, rest = text.partition(":")
    kv = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        k, eq, v = item.partition("=")
        if not eq:
            raise UsageError("%s: expected key=value, got '%s'" % (what, item))
        kv[k.strip()] = v.strip()
    return name.strip(), kv


def _floats(kv, allowed, what):
    unknown = sorted(set(kv) - set(allowed))
    if unknown:
        raise UsageError("%s: unknown key(s) %s (allowed: %s)"
                         % (what, ", ".join(unknown), ", ".join(allowed)))
    try:
        return {k: float({"true": "1", "false": "0"}.get(v, v)) for k, v in kv.items()}
    except ValueError as e:
        raise UsageError("%s: %s" % (what, e))


# PyTorch's defaults (torch.optim.SGD / torch.optim.AdamW); SGD has none for lr.
OPTIMIZER_KEYS = {
    "sgd": {"lr": None, "momentum": 0.0, "weight_decay": 0.0, "nesterov": 0.0},
    "adamw": {"lr": 1e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "weight_decay": 1e-2},
}


def parse_optimizer(text):
    name, kv = _parse_kv(text, "--optimizer")
    if name not in OPTIMIZER_KEYS:
        raise UsageError("--optimizer: unknown optimizer '%s' (sgd, adamw)" % name)
    cfg = dict(OPTIMIZER_KEYS[name])
    cfg.update(_floats(kv, list(cfg), "--optimizer " + name))
    if cfg["lr"] is None:
        raise UsageError("--optimizer sgd: lr is required")
    if name == "sgd":
        if cfg["nesterov"] not in (0.0, 1.0):
            raise UsageError("--optimizer sgd: nesterov must be 0 or 1")
        cfg["nesterov"] = bool(cfg["nesterov"])
        if cfg["nesterov"] and cfg["momentum"] <= 0:
            raise UsageError("--optimizer sgd: nesterov needs momentum > 0")
    cfg["name"] = name
    return cfg


def parse_schedule(text):
    name, kv = _parse_kv(text, "--lr-schedule")
    keys = {"constant": [], "cosine": ["warmup", "total", "min"],
            "linear": ["warmup", "total"]}
    if name not in keys:
        raise UsageError("--lr-schedule: unknown schedule '%s' (constant, cosine, linear)" % name)
    v = _floats(kv, keys[name], "--lr-schedule " + name)
    if name == "constant":
        return {"name": name}
    if "total" not in v:
        raise UsageError("--lr-schedule %s: total is required" % name)
    sched = {"name": name, "warmup": int(v.get("warmup", 0)), "total": int(v["total"]),
             "min": v.get("min", 0.0)}
    if sched["warmup"] != v.get("warmup", 0) or sched["total"] != v["total"]:
        raise UsageError("--lr-schedule: warmup and total are step counts (integers)")
    return sched


def lr_at(sched, lr, it):
    """nanoGPT's get_lr(it); `it` counts optimizer steps from 0. Python floats
    (IEEE double), evaluated in exactly this order."""
    if sched["name"] == "constant":
        return lr
    W, N, M = sched["warmup"], sched["total"], sched["min"]
    if it < W:
        return lr * (it + 1) / W
    if it >= N:
        return M if sched["name"] == "cosine" else 0.0
    r = (it - W) / (N - W)
    if sched["name"] == "cosine":
        return M + 0.5 * (1.0 + math.cos(math.pi * r)) * (lr - M)
    return max(0.0, lr * (1.0 - r))


_LOSS_RE = re.compile(r"^\s*(cross_entropy|mse)\s*\(\s*([^,()\s]+)\s*,\s*([^,()\s]+)\s*\)\s*$")


def parse_loss(text, output_names):
    """-> ("cross_entropy" | "mse", output, new input name) or ("output", name, None)."""
    m = _LOSS_RE.match(text)
    if m:
        kind, out, extra = m.groups()
    elif re.match(r"^[^(),\s]+$", text):
        kind, out, extra = "output", text, None
    else:
        raise UsageError("--loss: expected cross_entropy(OUT,LABELS), mse(OUT,TARGET) or an output name, got '%s'" % text)
    if out not in output_names:
        raise UsageError("--loss: the graph has no output '%s' (outputs: %s)" % (out, ", ".join(output_names)))
    return kind, out, extra


# ------------------------------------------------------------------------ data


def _gen(offset=0):
    return torch.Generator().manual_seed(DATA_SEED + offset)


def make_data(model_name, model, inputs, out_shape, loss, K):
    """Deterministic synthetic training data, K samples.

    `inputs`: the builder's example inputs (their shapes minus the batch axis
    are the per-sample shapes). `out_shape`: shape of the loss's graph output.
    A model and its loss-outputting variant (mlp/mlp_loss, bert/bert_sce) get
    identical data, so their trained parameters can be compared.
    """
    kind, _, extra = loss
    g = _gen()
    data = {}
    if model_name.startswith("gpt"):
        T = inputs["idx"].shape[1]
        V = model.cfg.vocab_size
        stream = torch.randint(0, V, (K * T + 1,), generator=g)
        data["idx"] = stream[:-1].view(K, T)
        if kind == "cross_entropy":
            data[extra] = stream[1:].view(K, T)  # next token
    elif model_name in ("bert", "bert_sce"):
        T = inputs["input_ids"].shape[1]
        V = model.cfg.vocab_size
        ids = torch.randint(2, V, (K, T), generator=g)
        lengths = torch.randint(T // 2, T + 1, (K,), generator=g)
        mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
        ids[mask == 0] = 0
        labels = mlm_labels(ids, mask, g)
        ids[labels != IGNORE_INDEX] = MASK_ID  # labelled positions are [MASK]ed
        data["input_ids"], data["attention_mask"] = ids, mask
        if model_name == "bert_sce":
            data["labels"] = labels
        elif kind == "cross_entropy":
            data[extra] = labels
    elif model_name == "hf_gpt2":
        T = inputs["input_ids"].shape[1]
        V = model.m.config.vocab_size
        stream = torch.randint(0, V, (K * T + 1,), generator=g)
        data["input_ids"] = stream[:-1].view(K, T)
        if kind == "cross_entropy":
            data[extra] = stream[1:].view(K, T)
    elif model_name in ("hf_gpt2_padded", "hf_opt_padded", "hf_qwen2", "hf_mistral",
                        "hf_gemma", "hf_phi", "hf_neox", "hf_bloom"):
        # Right-padded rows of 2..T tokens; a token's label is the next one,
        # -100 where there is none (the last token and the padding).
        T = inputs["input_ids"].shape[1]
        V = model.m.config.vocab_size
        stream = torch.randint(1, V, (K, T + 1), generator=g)
        lengths = torch.randint(2, T + 1, (K,), generator=g)
        mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
        data["input_ids"], data["attention_mask"] = stream[:, :T] * mask, mask
        if kind == "cross_entropy":
            labels = stream[:, 1:].clone()
            labels[torch.arange(T)[None, :] + 1 >= lengths[:, None]] = IGNORE_INDEX
            data[extra] = labels
    elif model_name in ("hf_bert", "hf_roberta", "hf_gpt2_cls", "hf_llama_cls"):
        T = inputs["input_ids"].shape[1]
        V = model.m.config.vocab_size
        pad = model.m.config.pad_token_id
        ids = torch.randint(pad + 1, V, (K, T), generator=g)
        lengths = torch.randint(T // 2, T + 1, (K,), generator=g)
        mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
        ids[mask == 0] = pad
        data["input_ids"], data["attention_mask"] = ids, mask
    elif model_name in ("mlp", "mlp_loss"):
        data["x"] = torch.randn((K,) + tuple(inputs["x"].shape[1:]), generator=g)
        target = torch.randn((K, model.fc2.out_features), generator=g)
        if model_name == "mlp_loss":
            data["target"] = target
        elif kind == "mse":
            data[extra] = target
    elif model_name in ("cnn", "resnet18", "acts", "norms", "einsum", "cumsum", "stats",
                        "slice_assign",
                        "deconv", "rnn"):
        data["x"] = torch.randn((K,) + tuple(inputs["x"].shape[1:]), generator=g)
    elif model_name == "upsample":  # labels: the generic ones below
        data["x"] = torch.randn((K,) + tuple(inputs["x"].shape[1:]), generator=g)
    elif model_name == "hf_vit":  # images; labels: the generic ones below
        shape = tuple(inputs["pixel_values"].shape[1:])
        data["pixel_values"] = torch.randn((K,) + shape, generator=g)
    else:
        raise UsageError("no data generator for model '%s'; pass --data-npz" % model_name)
    # Generic targets for loss/model combinations not covered above.
    if kind == "cross_entropy" and extra not in data:
        data[extra] = torch.randint(0, out_shape[-1], (K,) + tuple(out_shape[1:-1]), generator=_gen(1))
    if kind == "mse" and extra not in data:
        data[extra] = torch.randn((K,) + tuple(out_shape[1:]), generator=_gen(1))
    return {n: t.numpy() for n, t in data.items()}


def check_data(data, inputs, out_shape, loss):
    """Every graph input and the loss's labels/target, with the right per-sample
    shape and dtype; returns the sample count."""
    kind, _, extra = loss
    want = {n: (tuple(t.shape[1:]), t.numpy().dtype) for n, t in inputs.items()}
    if kind == "cross_entropy":
        want[extra] = (tuple(out_shape[1:-1]), np.dtype(np.int64))
    elif kind == "mse":
        want[extra] = (tuple(out_shape[1:]), np.dtype(np.float32))
    K = None
    for n, (shape, dtype) in want.items():
        if n not in data:
            raise UsageError("data: no array '%s' (has: %s)" % (n, ", ".join(sorted(data))))
        a = data[n]
        if tuple(a.shape[1:]) != shape or a.dtype != dtype:
            raise UsageError("data: '%s' is %s%s, expected %s[K,%s]" % (
                n, a.dtype, list(a.shape), dtype, ",".join(map(str, shape))))
        if K is not None and a.shape[0] != K:
            raise UsageError("data: arrays have different sample counts (%d, %d)" % (K, a.shape[0]))
        K = a.shape[0]
    if not K:
        raise UsageError("data: no samples")
    return K


# --------------------------------------------------------------------- training


def micro_batches(step, accum, B, K):
    """Sample indices of each micro-batch of optimizer step `step` (from 0):
    sample (step*accum*B + m*B + b) mod K for micro-batch m, row b."""
    base = step * accum * B
    return [[(base + m * B + b) % K for b in range(B)] for m in range(accum)]


def build_optimizer(cfg, groups):
    # foreach=False: the per-tensor loops (_single_tensor_sgd/_adamw) whose op
    # order README.md spells out. maximize/amsgrad/dampening: defaults.
    if cfg["name"] == "sgd":
        return torch.optim.SGD(groups, lr=cfg["lr"], momentum=cfg["momentum"],
                               dampening=0.0, weight_decay=cfg["weight_decay"],
                               nesterov=cfg["nesterov"], foreach=False)
    return torch.optim.AdamW(groups, lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]),
                             eps=cfg["eps"], weight_decay=cfg["weight_decay"],
                             amsgrad=False, foreach=False)


def train(a):
    torch.set_num_threads(1)
    model, inputs, output_names = MODELS[a.model]()
    input_names = list(inputs)
    B = inputs[input_names[0]].shape[0]
    loss = parse_loss(a.loss, output_names)
    kind, out_name, extra = loss
    opt_cfg = parse_optimizer(a.optimizer)
    sched = parse_schedule(a.lr_schedule)
    if a.accum < 1 or a.steps < 0:
        raise UsageError("--accum must be >= 1 and --steps >= 0")
    with torch.no_grad():
        outs = model(*[inputs[n] for n in input_names])
    outs = (outs,) if isinstance(outs, torch.Tensor) else tuple(outs)
    out_shape = tuple(outs[output_names.index(out_name)].shape)
    if a.output_loss_weight == "labels" and (kind != "output" or "labels" not in inputs):
        raise UsageError("--output-loss-weight labels needs --loss OUTPUT and a graph input 'labels'")
    if kind == "output" and out_shape != ():
        raise UsageError("--loss %s: output is %s, not a scalar" % (out_name, list(out_shape)))

    if a.fresh_norms:
        # As freshly constructed: every LayerNorm weight 1 and bias 0, the
        # values an eval-mode export merges into Identity copies.
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.weight.fill_(1.0)
                    m.bias.zero_()
    os.makedirs(a.out, exist_ok=True)
    onnx_path = os.path.join(a.out, "model.onnx")
    export_onnx(model, inputs, output_names, onnx_path,
                eval_mode=a.eval_mode_export, exporter=a.exporter)
    # Parameters by the names the ONNX graph gives them (and tcc's checkpoints).
    import onnx
    renamed = onnx_names(model, {t.name for t in onnx.load(onnx_path, load_external_data=False).graph.initializer})

    sync_batch_norm_buffers(model, onnx_path)

    # Data.
    if a.data_npz:
        with np.load(a.data_npz) as z:
            data = {n: z[n] for n in z.files}
        if os.path.abspath(a.data_npz) != os.path.abspath(os.path.join(a.out, "data.npz")):
            shutil.copyfile(a.data_npz, os.path.join(a.out, "data.npz"))
    else:
        data = make_data(a.model, model, inputs, out_shape, loss, a.data_samples or DEFAULT_SAMPLES)
        save_npz(os.path.join(a.out, "data.npz"), data)
    K = check_data(data, inputs, out_shape, loss)
    dtype = torch.float64 if a.dtype == "float64" else torch.float32

    # A tied weight once, by its first name or the one the ONNX graph uses.
    params = {renamed.get(n, n): p for n, p in model.named_parameters()}
    save_npz(os.path.join(a.out, "params0.npz"), {n: p.detach().numpy() for n, p in params.items()})
    model = model.to(dtype).train()
    params = {renamed.get(n, n): p for n, p in model.named_parameters()}

    # --freeze: no gradient, so no update, no weight decay, not in the clip norm.
    for n, p in params.items():
        if a.freeze and re.search(a.freeze, n):
            p.requires_grad_(False)
    trainable = [(n, p) for n, p in params.items() if p.requires_grad]
    if not trainable:
        raise UsageError("--freeze '%s' matches every parameter" % a.freeze)
    decay = [p for n, p in trainable if not (a.no_decay and re.search(a.no_decay, n))]
    no_decay = [p for n, p in trainable if a.no_decay and re.search(a.no_decay, n)]
    groups = [{"params": decay, "weight_decay": opt_cfg["weight_decay"]},
              {"params": no_decay, "weight_decay": 0.0}]
    opt = build_optimizer(opt_cfg, [g for g in groups if g["params"]])
    grads_of = [p for _, p in trainable]

    tensors = {n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in data.items()}
    for n, t in tensors.items():
        if t.is_floating_point():
            tensors[n] = t.to(dtype)

    losses, lrs, norms, tokens = [], [], [], []
    t0 = time.perf_counter()
    for it in range(a.steps):
        lr = lr_at(sched, opt_cfg["lr"], it)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        mbs = micro_batches(it, a.accum, B, K)
        if kind == "cross_entropy":
            n_tok = sum(int((tensors[extra][mb] != IGNORE_INDEX).sum()) for mb in mbs)
        elif kind == "mse":
            n_tok = sum(tensors[extra][mb].numel() for mb in mbs)
        elif a.output_loss_weight == "labels":
            n_tok = sum(int((tensors["labels"][mb] != IGNORE_INDEX).sum()) for mb in mbs)
        else:
            n_tok = 0
        step_loss = torch.zeros((), dtype=dtype)
        for mb in mbs:
            feed = [tensors[n][mb] for n in input_names]
            res = model(*feed)
            res = (res,) if isinstance(res, torch.Tensor) else tuple(res)
            out = res[output_names.index(out_name)]
            if kind == "cross_entropy":
                V = out.shape[-1]
                lab = tensors[extra][mb]
                if a.accum == 1:
                    l = F.cross_entropy(out.reshape(-1, V), lab.reshape(-1), ignore_index=IGNORE_INDEX)
                else:  # mean over the non-ignored labels of all micro-batches
                    l = F.cross_entropy(out.reshape(-1, V), lab.reshape(-1),
                                        ignore_index=IGNORE_INDEX, reduction="sum") / n_tok
            elif kind == "mse":
                l = F.mse_loss(out, tensors[extra][mb])
                if a.accum > 1:
                    l = l / a.accum
            elif a.output_loss_weight == "labels":  # weight = the micro-batch's label count
                n_mb = int((tensors["labels"][mb] != IGNORE_INDEX).sum())
                l = out if a.accum == 1 else out * (n_mb / n_tok)
            else:  # the graph's own (mean) loss: micro-batches weighted equally
                l = out if a.accum == 1 else out / a.accum
            l.backward()  # .grad accumulates (sums) over micro-batches
            step_loss += l.detach()
        # clip_grad_norm_ returns the total norm before clipping; without
        # --grad-clip, max_norm=inf scales every gradient by exactly 1.
        gn = torch.nn.utils.clip_grad_norm_(grads_of, a.grad_clip or float("inf"))
        opt.step()
        losses.append(step_loss.item())
        lrs.append(lr)
        norms.append(float(gn))
        tokens.append(n_tok)
        if a.save_every and (it + 1) % a.save_every == 0:
            d = os.path.join(a.out, "step-%d" % (it + 1))
            os.makedirs(d, exist_ok=True)
            save_npz(os.path.join(d, "params.npz"), {n: p.detach().numpy() for n, p in params.items()})
    elapsed = time.perf_counter() - t0

    np_dtype = np.float64 if dtype == torch.float64 else np.float32
    ref = {n: p.detach().numpy() for n, p in params.items()}
    buffers = batch_norm_buffers(model)
    ref.update({n: b.detach().numpy() for n, b in buffers.items()})
    assert "loss" not in ref and "lr" not in ref
    ref["loss"] = np.array(losses, dtype=np_dtype)
    ref["lr"] = np.array(lrs, dtype=np.float64)
    save_npz(os.path.join(a.out, "reference.npz"), ref)
    save_npz(os.path.join(a.out, "trace.npz"), {
        "loss": ref["loss"], "lr": ref["lr"],
        "grad_norm": np.array(norms, dtype=np_dtype),
        "tokens": np.array(tokens, dtype=np.int64)})
    save_npz(os.path.join(a.out, "optim_state.npz"), optim_state(opt, trainable))
    if buffers and kind == "cross_entropy":
        save_npz(os.path.join(a.out, "eval.npz"),
                 {"loss": eval_loss(model, tensors, input_names, extra, B, K)})

    tcc_args = ["--loss", a.loss, "--optimizer", a.optimizer, "--lr-schedule", a.lr_schedule,
                "--accum", str(a.accum), "--steps", str(a.steps)]
    if a.grad_clip:
        tcc_args += ["--grad-clip", repr(a.grad_clip)]
    if a.freeze:
        tcc_args += ["--freeze", a.freeze]
    if a.no_decay:
        tcc_args += ["--no-decay", a.no_decay]
    with open(os.path.join(a.out, "train_args.json"), "w") as f:
        json.dump({"model": a.model, "batch": B, "samples": K, "dtype": a.dtype,
                   "optimizer": opt_cfg, "lr_schedule": sched,
                   "trainable": [n for n, _ in trainable],
                   "no_decay": [n for n, p in trainable if any(p is q for q in no_decay)],
                   "tcc_train_args": tcc_args}, f, indent=1, sort_keys=True)
        f.write("\n")
    if losses:
        print("train_ref: %s, %d steps x %d x %d samples, loss %.6f -> %.6f, %.2f s"
              % (a.model, a.steps, a.accum, B, losses[0], losses[-1], elapsed))


def eval_loss(model, tensors, input_names, labels, B, K):
    """model.eval()'s mean cross-entropy over the full batches of the data,
    as `tcc train --eval-data` computes it (every batch has B samples)."""
    model.eval()
    losses = []
    with torch.no_grad():
        for start in range(0, K - B + 1, B):
            rows = slice(start, start + B)
            out = model(*[tensors[n][rows] for n in input_names])
            V = out.shape[-1]
            losses.append(F.cross_entropy(out.reshape(-1, V), tensors[labels][rows].reshape(-1),
                                          ignore_index=IGNORE_INDEX))
    model.train()
    return np.array(torch.stack(losses).mean().item(), dtype=np.float32)


def optim_state(opt, trainable):
    """`exp_avg.NAME`, `exp_avg_sq.NAME` (AdamW) or `momentum_buffer.NAME`
    (SGD with momentum), and `step` (AdamW's per-parameter step count)."""
    out = {}
    for n, p in trainable:
        st = opt.state.get(p, {})
        for key in ("exp_avg", "exp_avg_sq", "momentum_buffer"):
            if st.get(key) is not None:
                out["%s.%s" % (key, n)] = st[key].detach().numpy()
        if "step" in st and "step" not in out:
            out["step"] = np.array(int(st["step"].item()), dtype=np.int64)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--loss", required=True,
                   help="cross_entropy(OUT,LABELS) | mse(OUT,TARGET) | OUTPUT (a scalar graph output)")
    p.add_argument("--optimizer", required=True,
                   help="sgd:lr=,momentum=,weight_decay=,nesterov=0|1 | adamw:lr=,beta1=,beta2=,eps=,weight_decay=")
    p.add_argument("--grad-clip", type=float, default=0.0, help="max global L2 norm (0: off)")
    p.add_argument("--lr-schedule", default="constant",
                   help="constant | cosine:warmup=W,total=N,min=M | linear:warmup=W,total=N")
    p.add_argument("--freeze", default="", help="regex (re.search on the name): no updates")
    p.add_argument("--no-decay", default="", help="regex (re.search on the name): weight_decay 0")
    p.add_argument("--accum", type=int, default=1, help="micro-batches per optimizer step")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--fresh-norms", action="store_true",
                   help="LayerNorm weights 1 and biases 0 before export and training")
    p.add_argument("--exporter", default="torchscript", choices=EXPORTERS,
                   help="which torch.onnx.export path writes model.onnx (see export.py)")
    p.add_argument("--eval-mode-export", action="store_true",
                   help="export with training=EVAL (torch.onnx.export's default), "
                        "which merges parameters equal by value into Identity copies")
    p.add_argument("--out", required=True, help="output directory (created)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--data-samples", type=int, default=0,
                   help="synthetic data: number of samples K (default %d)" % DEFAULT_SAMPLES)
    g.add_argument("--data-npz", default="", help="train on this .npz instead (copied to DIR/data.npz)")
    p.add_argument("--output-loss-weight", default="equal", choices=["equal", "labels"],
                   help="--loss OUTPUT with --accum > 1: micro-batch losses weighted equally (mean), "
                        "or by their count of labels != -100 in the input 'labels'")
    p.add_argument("--save-every", type=int, default=0, help="write DIR/step-N/params.npz every N steps")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"],
                   help="training precision (float64 only to gauge float32 rounding drift)")
    a = p.parse_args(argv)
    try:
        train(a)
    except UsageError as e:
        print("train_ref: error: %s" % e, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
