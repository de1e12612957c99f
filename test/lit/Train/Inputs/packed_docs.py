"""Packed documents for the tiny GPT (test/models/models.py, B = 2, T = 8).

    packed_docs.py make OUT.bin --eot E
    packed_docs.py npz OUT.bin OUT.npz --eot E --steps N
    packed_docs.py check OUT.bin LOG.csv --eot E --steps N --lr LR

`make` writes a raw uint16 token stream of documents (random tokens, each
document ended by E; lengths 1 to 9 tokens with the EOT, an empty document
among them). `check` is the oracle of `tcc run --pack-documents E`: it packs
the stream into rows exactly as docs/pad-skipping.md says (whole documents
in order, inputs without the EOT, targets the next token, a filler tail
when the next document does not fit), and trains PyTorch's model with SGD
on every document *on its own* (its own forward from position 0; the
batch's loss is the mean over all documents' targets), then compares its
per-step losses with the loss column of tcc's CSV log (relative 1e-5).
`npz` writes the packed batches themselves (idx, labels, position_ids), the
data `tcc run` takes without --pack-documents."""
import argparse
import csv
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "models"))

B, T = 2, 8


def make(a):
    rng = np.random.default_rng(3)
    lengths = [5, 9, 1, 3, 7, 2, 8, 4, 6, 9, 3, 5, 2, 7, 1, 4, 9, 6, 3, 8] * 3
    toks = []
    for n in lengths:  # n tokens with the EOT
        toks += list(rng.integers(1, a.eot, n - 1)) + [a.eot]
    np.array(toks, dtype=np.uint16).tofile(a.out)


def batches(stream, eot, steps):
    """Per step, the documents of each row (lists of token ids with EOT)."""
    docs, cur = [], []
    for t in stream:
        cur.append(int(t))
        if t == eot:
            docs.append(cur)
            cur = []
    it = iter(d for d in docs if len(d) > 1)
    pending = None
    out = []
    for _ in range(steps):
        rows = []
        for _ in range(B):
            row, left = [], T
            while True:
                d = pending if pending is not None else next(it)
                pending = None
                if len(d) - 1 > T:
                    raise SystemExit("a document longer than T: not in this oracle")
                if len(d) - 1 > left:
                    pending = d
                    break
                row.append(d)
                left -= len(d) - 1
                if left == 0:
                    break
            rows.append(row)
        out.append(rows)
    return out


def arrays(rows, eot):
    """One step's idx, labels, position_ids [B, T] from its rows."""
    x = np.full((B, T), eot, np.int64)
    y = np.full((B, T), -100, np.int64)
    pos = np.zeros((B, T), np.int64)
    for b, row in enumerate(rows):
        t = 0
        for d in row:
            n = len(d) - 1
            x[b, t:t + n], y[b, t:t + n] = d[:-1], d[1:]
            pos[b, t:t + n] = np.arange(n)
            t += n
        pos[b, t:] = np.arange(T - t)  # the filler: a segment of its own
    return x, y, pos


def write_npz(a):
    stream = np.fromfile(a.data, dtype=np.uint16)
    steps = [arrays(rows, a.eot) for rows in batches(stream, a.eot, a.steps)]
    np.savez(a.out, idx=np.concatenate([s[0] for s in steps]),
             labels=np.concatenate([s[1] for s in steps]),
             position_ids=np.concatenate([s[2] for s in steps]))


def check(a):
    import torch
    import torch.nn.functional as F
    import models

    torch.manual_seed(0)
    model, _, _ = models.build_gpt()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    stream = np.fromfile(a.data, dtype=np.uint16)
    want = []
    for rows in batches(stream, a.eot, a.steps):
        total, count = 0.0, 0
        for row in rows:
            for d in row:
                x = torch.tensor(d[:-1]).view(1, -1)
                y = torch.tensor(d[1:])
                logits = model(x)[0]
                total = total + F.cross_entropy(logits, y, reduction="sum")
                count += len(y)
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
c.add_argument("data")
c.add_argument("log")
c.add_argument("--eot", type=int, required=True)
c.add_argument("--steps", type=int, required=True)
c.add_argument("--lr", type=float, required=True)
a = p.parse_args()
{"make": make, "npz": write_npz, "check": check}[a.cmd](a)
