#!/usr/bin/python3
"""Compare trained parameters (and loss curves) against a train_ref.py reference.

    /usr/bin/python3 test/models/compare_params.py DIR/reference.npz OTHER \\
        [--rtol 1e-5] [--atol 0] [--elementwise] [--exclude REGEX] \\
        [--tol REGEX=RTOL[:ATOL] ...] [--loss-rtol R] [--quiet]

OTHER is a .npz, a .safetensors file (tcc's DIR/step-N/params.safetensors), or
a directory holding params.safetensors.

Every array of the reference is a parameter that OTHER must hold with the same
shape, except the per-step series `loss`, `lr`, `grad_norm`, `tokens`, which
are compared only when OTHER has them too. Criteria (d = |other - ref|):
  tensors, default (normwise):  max(d) <= atol + rtol * max|ref|
  tensors, --elementwise:        d <= atol + rtol * |ref| for every element
  series, always elementwise:    d <= atol + loss_rtol * |ref|
NaN/Inf anywhere fails. One line per tensor (max abs error, max error relative
to max|ref|, max elementwise relative error); exit 0 if all pass, 1 on any
mismatch, 2 if a file cannot be read.
"""

import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

SERIES = ("loss", "lr", "grad_norm", "tokens")


def load(path):
    if os.path.isdir(path):
        path = os.path.join(path, "params.safetensors")
    if path.endswith(".safetensors"):
        arrays, _ = safetensors_np.read(path)
        return arrays
    with np.load(path) as z:
        return {n: z[n] for n in z.files}


def errors(ref, got):
    r = ref.astype(np.float64)
    g = got.astype(np.float64)
    d = np.abs(g - r)
    scale = float(np.abs(r).max()) if r.size else 0.0
    max_abs = float(d.max()) if d.size else 0.0
    norm_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    with np.errstate(divide="ignore", invalid="ignore"):
        er = np.where(d == 0, 0.0, d / np.abs(r))
    elem_rel = float(er.max()) if er.size else 0.0
    return d, r, max_abs, norm_rel, elem_rel


def tolerance(name, a):
    for rx, rtol, atol in a.tol:
        if re.search(rx, name):
            return rtol, atol
    return a.rtol, a.atol


def parse_tol(text):
    m = re.match(r"^(.*)=([^=:]+)(?::([^=:]+))?$", text)
    if not m:
        raise argparse.ArgumentTypeError("expected REGEX=RTOL[:ATOL], got '%s'" % text)
    return m.group(1), float(m.group(2)), float(m.group(3) or 0.0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("reference", help="reference.npz written by train_ref.py (or any .npz)")
    p.add_argument("other", help=".npz, .safetensors, or a directory with params.safetensors")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--atol", type=float, default=0.0)
    p.add_argument("--elementwise", action="store_true",
                   help="per-element relative tolerance instead of relative to max|ref|")
    p.add_argument("--exclude", default="", help="regex (re.search): parameters not compared")
    p.add_argument("--tol", type=parse_tol, action="append", default=[],
                   help="REGEX=RTOL[:ATOL]: tolerance for matching parameters (first match wins)")
    p.add_argument("--loss-rtol", type=float, default=None, help="rtol for the series (default --rtol)")
    p.add_argument("--quiet", action="store_true", help="print failures and the summary only")
    a = p.parse_args()
    loss_rtol = a.rtol if a.loss_rtol is None else a.loss_rtol

    try:
        ref = load(a.reference)
        got = load(a.other)
    except (OSError, ValueError, safetensors_np.FormatError) as e:
        print("compare_params: error: %s" % e, file=sys.stderr)
        return 2

    bad, n_checked = [], 0
    if not a.quiet:
        print("%-32s %-14s %10s %10s %10s" % ("tensor", "shape", "max_abs", "rel_max", "rel_elem"))
    for name, r in ref.items():
        series = name in SERIES
        if not series and a.exclude and re.search(a.exclude, name):
            continue
        if name not in got:
            if series:
                continue
            bad.append(name)
            print("%-32s %-14s missing in %s" % (name, list(r.shape), a.other))
            continue
        g = got[name]
        if g.shape != r.shape:
            bad.append(name)
            print("%-32s %-14s shape mismatch: other has %s" % (name, list(r.shape), list(g.shape)))
            continue
        n_checked += 1
        d, rr, max_abs, norm_rel, elem_rel = errors(r, g)
        finite = bool(np.isfinite(g.astype(np.float64)).all()) if g.dtype.kind == "f" else True
        if series:
            ok = finite and bool((d <= a.atol + loss_rtol * np.abs(rr)).all())
        else:
            rtol, atol = tolerance(name, a)
            if a.elementwise:
                ok = finite and bool((d <= atol + rtol * np.abs(rr)).all())
            else:
                ok = finite and max_abs <= atol + rtol * (float(np.abs(rr).max()) if rr.size else 0.0)
        if not ok:
            bad.append(name)
        if not ok or not a.quiet:
            print("%-32s %-14s %10.3e %10.3e %10.3e  %s%s" % (
                name, list(r.shape), max_abs, norm_rel, elem_rel,
                "ok" if ok else "MISMATCH", "" if finite else " (non-finite)"))
    extra = sorted(set(got) - set(ref))
    if extra and not a.quiet:
        print("not in the reference (ignored): %s" % ", ".join(extra))
    if bad:
        print("compare_params: %d of %d mismatch: %s" % (len(bad), len(ref), ", ".join(bad)))
        return 1
    print("compare_params: %d arrays match (%s, rtol %g, atol %g)" % (
        n_checked, "elementwise" if a.elementwise else "normwise", a.rtol, a.atol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
