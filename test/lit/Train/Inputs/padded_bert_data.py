"""Padded batches for the tiny BERT (test/models/models.py, T = 8) with
chosen sequence lengths: `padded_bert_data.py OUT.npz L0,L1 L2,L3 ...`
writes one batch of two rows per argument, each row of length L (1..8)
attended and the rest padded (input_ids 0, attention_mask 0). Labels are
-100 except at about half of the attended positions (at least one per
batch), as a masked-LM collator writes them. `--label-padding` also labels
one padded position (what pad-skipping refuses: PyTorch would count it)."""
import argparse

import numpy as np

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("out")
p.add_argument("batches", nargs="+", help="L0,L1: the two rows' lengths")
p.add_argument("--label-padding", action="store_true")
a = p.parse_args()

T, V = 8, 64
rng = np.random.default_rng(5)
lengths = [int(n) for b in a.batches for n in b.split(",")]
K = len(lengths)
mask = (np.arange(T)[None, :] < np.array(lengths)[:, None]).astype(np.int64)
ids = rng.integers(2, V, size=(K, T)).astype(np.int64) * mask
labels = np.where((rng.random((K, T)) < 0.5) & (mask == 1),
                  rng.integers(0, V, size=(K, T)), -100).astype(np.int64)
for b in range(0, K, 2):  # every batch counts at least one label
    if (labels[b:b + 2] == -100).all():
        labels[b, 0] = 1
if a.label_padding:
    row = int(np.argmin(lengths))
    labels[row, T - 1] = 3
np.savez(a.out, input_ids=ids, attention_mask=mask, labels=labels)
