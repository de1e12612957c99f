"""The packed-documents test's model, data and reference batches.

  pack_docs.py model B T OUT.mlir     a bigram-plus-position model (tcc
      dialect) with int64 [B, T] batch inputs idx and position_ids: logits =
      wte[idx] + wpe[position_ids] over a vocabulary of 16
  pack_docs.py data OUT.bin           uint16 documents of 1..14 tokens ended
      by token 0, with a few empty ones and one longer than two rows of 6
  pack_docs.py pack IN.bin EOT B T N IGNORE OUT.npz
      the first N batches `tcc run --pack-documents EOT` cuts from IN.bin,
      written independently of the runtime's code from its rules
      (docs/user-guide.md), as idx, labels and position_ids [N*B, T]
"""
import sys

import numpy as np

V = 16


def model(b, t, out):
    r = np.random.RandomState(0)
    dense = lambda a: "[" + ", ".join(
        "[" + ", ".join("%.6f" % v for v in row) + "]" for row in a) + "]"
    wte, wpe = r.randn(V, V) * 0.5, r.randn(t, V) * 0.5
    open(out, "w").write(f"""tcc.param @wte = dense<{dense(wte)}> : tensor<{V}x{V}xf32>
tcc.param @wpe = dense<{dense(wpe)}> : tensor<{t}x{V}xf32>
func.func @forward(%idx: tensor<{b}x{t}xi64> {{tcc.name = "idx"}}, %pos: tensor<{b}x{t}xi64> {{tcc.name = "position_ids"}}) -> (tensor<{b}x{t}x{V}xf32> {{tcc.name = "logits"}}) {{
  %wte = tcc.get_param @wte : tensor<{V}x{V}xf32>
  %wpe = tcc.get_param @wpe : tensor<{t}x{V}xf32>
  %e = tcc.embedding %wte, %idx : (tensor<{V}x{V}xf32>, tensor<{b}x{t}xi64>) -> tensor<{b}x{t}x{V}xf32>
  %p = tcc.embedding %wpe, %pos : (tensor<{t}x{V}xf32>, tensor<{b}x{t}xi64>) -> tensor<{b}x{t}x{V}xf32>
  %l = tcc.add %e, %p : (tensor<{b}x{t}x{V}xf32>, tensor<{b}x{t}x{V}xf32>) -> tensor<{b}x{t}x{V}xf32>
  return %l : tensor<{b}x{t}x{V}xf32>
}}
""")


def data(out):
    r = np.random.RandomState(1)
    toks = []
    for i in range(60):
        n = 17 if i == 7 else int(r.randint(0, 8))  # 0: an empty document
        toks += list(r.randint(1, V, size=n)) + [0]
    toks += [5, 9]  # a last document without its end-of-text token
    np.array(toks, dtype="<u2").tofile(out)


def pack(path, eot, b, t, n, ignore, out):
    s = np.fromfile(path, "<u2").astype(np.int64)
    # The documents in stream order: (start, positions); they end at an eot
    # or at the stream's last token.
    docs, start = [], 0
    for i in range(len(s)):
        if s[i] == eot or i == len(s) - 1:
            docs.append((start, i - start))
            start = i + 1
    rows = []
    d, skip = 0, 0  # the next document, and its positions already trained
    while len(rows) < n * b:
        x, y, ids = [], [], []
        while len(x) < t:
            begin, p = docs[d]
            begin, p = begin + skip, p - skip
            if p == 0:
                d, skip = (d + 1) % len(docs), 0
                continue
            if p > t - len(x) and (p <= t or x):
                break
            m = min(p, t)
            x += list(s[begin:begin + m])
            y += list(s[begin + 1:begin + m + 1])
            ids += list(range(m))
            if m < p:
                skip += m
            else:
                d, skip = (d + 1) % len(docs), 0
        fill = t - len(x)
        rows.append((x + [eot] * fill, y + [ignore] * fill,
                     ids + list(range(fill))))
    np.savez(out, idx=np.array([r[0] for r in rows], np.int64),
             labels=np.array([r[1] for r in rows], np.int64),
             position_ids=np.array([r[2] for r in rows], np.int64))


if __name__ == "__main__":
    if sys.argv[1] == "model":
        model(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "data":
        data(sys.argv[2])
    else:
        eot, b, t, n, ignore = map(int, sys.argv[3:8])
        pack(sys.argv[2], eot, b, t, n, ignore, sys.argv[8])
