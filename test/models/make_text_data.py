#!/usr/bin/python3
"""Character-level token data from a small text corpus, for loss-curve tests.

    /usr/bin/python3 test/models/make_text_data.py --out DIR \\
        [--corpus test/models/data/tiny_corpus.txt] [--block 8] [--val-frac 0.1]

writes
    DIR/train.bin, DIR/val.bin  nanoGPT layout: the token ids as raw
                                little-endian uint16, no header (the first
                                (1 - val_frac) of the text, then the rest)
    DIR/vocab.json              {"vocab_size": n, "itos": [char of id 0, 1, ...]}
    DIR/train.npz, DIR/val.npz  `idx` i64[S, block] and `labels` i64[S, block]:
                                non-overlapping windows, labels = next token
                                (labels[s, t] = tokens[s*block + t + 1]), samples
                                shuffled with a fixed seed

The vocabulary is the sorted set of characters in the corpus; it must fit the
tiny GPT's 64-entry embedding. The .npz files are what
`train_ref.py --model gpt --data-npz DIR/train.npz` and `tcc train --data`
consume; `block` must equal the T the GPT graph was exported with (8).
Deterministic: rerunning rewrites identical bytes.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import save_npz  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_VOCAB = 64  # models.GPTConfig.vocab_size
SHUFFLE_SEED = 0


def windows(tokens, block, seed):
    n = (len(tokens) - 1) // block
    t = tokens.astype(np.int64)
    idx = t[: n * block].reshape(n, block)
    labels = t[1: n * block + 1].reshape(n, block)
    perm = np.random.RandomState(seed).permutation(n)  # legacy stream: stable across numpy versions
    return {"idx": idx[perm], "labels": labels[perm]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=os.path.join(HERE, "data", "tiny_corpus.txt"))
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--block", type=int, default=8, help="sample length T (default 8, the GPT graph's T)")
    p.add_argument("--val-frac", type=float, default=0.1)
    a = p.parse_args()

    with open(a.corpus, encoding="utf-8") as f:
        text = f.read()
    itos = sorted(set(text))
    if len(itos) > MAX_VOCAB:
        sys.exit("make_text_data: %d distinct characters, the GPT's vocabulary holds %d"
                 % (len(itos), MAX_VOCAB))
    stoi = {c: i for i, c in enumerate(itos)}
    tokens = np.array([stoi[c] for c in text], dtype="<u2")
    n_train = int(len(tokens) * (1.0 - a.val_frac))
    splits = {"train": tokens[:n_train], "val": tokens[n_train:]}

    os.makedirs(a.out, exist_ok=True)
    for name, toks in splits.items():
        toks.tofile(os.path.join(a.out, name + ".bin"))
        save_npz(os.path.join(a.out, name + ".npz"), windows(toks, a.block, SHUFFLE_SEED))
    with open(os.path.join(a.out, "vocab.json"), "w") as f:
        json.dump({"vocab_size": len(itos), "itos": itos}, f, indent=0)
        f.write("\n")
    print("make_text_data: %d chars, vocab %d, train %d tokens (%d samples of %d), val %d tokens"
          % (len(text), len(itos), len(splits["train"]), (len(splits["train"]) - 1) // a.block,
             a.block, len(splits["val"])))


if __name__ == "__main__":
    main()
