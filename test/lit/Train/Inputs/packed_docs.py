"""Packed documents for the tiny GPT (test/models/models.py, B = 2, T = 8).

    packed_docs.py make OUT.bin --eot E
    packed_docs.py npz OUT.bin OUT.npz --eot E --steps N
    packed_docs.py check OUT.npz LOG.csv --steps N --lr LR

`make` writes a raw uint16 token stream of documents (random tokens, each
document ended by E; lengths 1 to 9 tokens with the EOT, an empty document
among them). `npz` packs the stream's first N batches as
`tcc run --pack-documents E` does, by the rules of docs/pad-skipping.md
(test/models/pack_docs.py, written independently of the runtime), into
idx, labels and position_ids, the data `tcc run` also takes as .npz.
`check` is the oracle: PyTorch's model trained with SGD on every document
of those rows *on its own* (its own forward from position 0; the batch's
loss is the mean over all documents' targets), its per-step losses
compared with the loss column of tcc's CSV log (relative 1e-5)."""
import argparse
import csv
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "models"))
import pack_docs  # noqa: E402  (the packing rules, written once for the tests)

B, T = 2, 8


def make(a):
    rng = np.random.default_rng(3)
    lengths = [5, 9, 1, 3, 7, 2, 8, 4, 6, 9, 3, 5, 2, 7, 1, 4, 9, 6, 3, 8] * 3
    toks = []
    for n in lengths:  # n tokens with the EOT
        toks += list(rng.integers(1, a.eot, n - 1)) + [a.eot]
    np.array(toks, dtype=np.uint16).tofile(a.out)


def write_npz(a):
    pack_docs.pack(a.data, a.eot, B, T, a.steps, -100, a.out)


def check(a):
    import torch
    import torch.nn.functional as F
    import models

    torch.manual_seed(0)
    model, _, _ = models.build_gpt()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    z = np.load(a.npz)
    want = []
    for step in range(a.steps):
        rows = slice(step * B, (step + 1) * B)
        xs, ys, ps = z["idx"][rows], z["labels"][rows], z["position_ids"][rows]
        total, count = 0.0, 0
        for x, y, pos in zip(xs, ys, ps):
            starts = [t for t in range(T) if pos[t] == 0] + [T]
            for s0, s1 in zip(starts, starts[1:]):  # each document alone
                if (y[s0:s1] == -100).all():
                    continue  # filler
                logits = model(torch.tensor(x[s0:s1]).view(1, -1))[0]
                target = torch.tensor(y[s0:s1])
                total = total + F.cross_entropy(logits, target, reduction="sum",
                                                ignore_index=-100)
                count += int((target != -100).sum())
        loss = total / count
        want.append(loss.item())
        opt.zero_grad()
        loss.backward()
        opt.step()
    with open(a.log) as f:
        got = [float(r["loss"]) for r in csv.DictReader(f)]
    bad = [(i + 1, g, w) for i, (g, w) in enumerate(zip(got, want))
           if abs(g - w) > 1e-5 * abs(w)]
    if len(got) != len(want) or bad:
        sys.exit("packed documents: tcc's losses %s, PyTorch per document %s" % (got, want))
    print("packed documents: %d step losses equal PyTorch's per-document training "
          "within 1e-5" % len(want))


p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
sub = p.add_subparsers(dest="cmd", required=True)
m = sub.add_parser("make")
m.add_argument("out")
m.add_argument("--eot", type=int, required=True)
n = sub.add_parser("npz")
n.add_argument("data")
n.add_argument("out")
n.add_argument("--eot", type=int, required=True)
n.add_argument("--steps", type=int, required=True)
c = sub.add_parser("check")
c.add_argument("npz")
c.add_argument("log")
c.add_argument("--steps", type=int, required=True)
c.add_argument("--lr", type=float, required=True)
a = p.parse_args()
{"make": make, "npz": write_npz, "check": check}[a.cmd](a)
