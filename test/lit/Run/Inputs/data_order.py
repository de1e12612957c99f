#!/usr/bin/python3
"""The batches `tcc run --shuffle --seed S` reads, written out in order.

    data_order.py shuffle SEED STEPS B IN.npz OUT.npz
    data_order.py windows SEED STEPS B T OUT.npz SHARD.bin...
    data_order.py shards STEPS B T OUT.npz SHARD.bin...

Reimplements runtime/data/random.h from its description (SplitMix64,
Lemire's multiply-shift, Fisher-Yates from the end) in Python integers, so
training unshuffled on OUT.npz must give the very bytes of the shuffled run:
`shuffle` lists the STEPS*B samples of the epoch stream (epoch e read in
epochPermutation(SEED, e)); `windows` the [B, T] windows (idx, labels) of
random token windows; `shards` the windows of reading the shards in order,
moving on to the next shard where a batch would run past the end (llm.c).
Token files: raw uint16, or llm.c's 256-int32 header (20240520, 1, n).
"""

import sys

import numpy as np

M = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & M

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M
        return mix64(self.state)

    def below(self, n):
        return (self.next() * n) >> 64


def stream_at(seed, index):
    return SplitMix64(mix64(mix64(seed) ^ ((index + 0x632BE59BD9B4E019) & M)))


def epoch_permutation(seed, epoch, n):
    p = list(range(n))
    rng = stream_at(seed, epoch)
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        p[i], p[j] = p[j], p[i]
    return p


def read_tokens(path):
    raw = np.fromfile(path, "<u2")
    head = np.fromfile(path, "<i4", count=3) if raw.size >= 512 else []
    if len(head) == 3 and head[0] == 20240520:
        return raw[512:].astype(np.int64)
    return raw.astype(np.int64)


def main(argv):
    mode = argv[1]
    if mode == "shuffle":
        seed, steps, b = int(argv[2]), int(argv[3]), int(argv[4])
        with np.load(argv[5]) as z:
            arrays = dict(z.items())
        n = next(iter(arrays.values())).shape[0]
        order = []
        for g in range(steps * b):
            order.append(epoch_permutation(seed, g // n, n)[g % n])
        np.savez(argv[6], **{k: v[order] for k, v in arrays.items()})
        return 0
    if mode == "windows":
        seed, steps, b, t, out = int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]), argv[6]
        shards = [read_tokens(p) for p in argv[7:]]
        windows = sum(len(s) - t for s in shards)
        rows = []
        for k in range(steps):
            rng = stream_at(seed, k)
            for _ in range(b):
                w = rng.below(windows)
                i = 0
                while w >= len(shards[i]) - t:
                    w -= len(shards[i]) - t
                    i += 1
                rows.append(shards[i][w:w + t + 1])
    else:
        steps, b, t, out = int(argv[2]), int(argv[3]), int(argv[4]), argv[5]
        shards = [read_tokens(p) for p in argv[6:]]
        rows, i, pos = [], 0, 0
        for _ in range(steps):
            for r in range(b):
                rows.append(shards[i][pos + r * t:pos + r * t + t + 1])
            pos += b * t
            if pos + b * t + 1 > len(shards[i]):
                i, pos = (i + 1) % len(shards), 0
    rows = np.stack(rows)
    np.savez(out, idx=rows[:, :-1], labels=rows[:, 1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
