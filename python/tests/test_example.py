"""examples/python/train_gpt.py (the program docs/python.md walks through)
runs and its model learns the corpus."""

import os
import re
import subprocess
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
from train_gpt import TEXT  # noqa: E402


def test_train_gpt_example():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python",
                                                     "train_gpt.py")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    first, last = map(float, re.search(r"loss ([\d.]+) -> ([\d.]+) in 300 steps",
                                       lines[0]).groups())
    assert first > 2.5 and last < 0.1
    generated = re.fullmatch(r"generated: '(.*)'", lines[1]).group(1)
    assert generated.startswith("tcc comp") and generated in TEXT
    err = float(re.search(r"within (\S+) of PyTorch's", lines[2]).group(1))
    assert err < 1e-4
    start, end = (float(re.search(r"loss ([\d.]+)$", line).group(1)) for line in lines[3:5])
    assert end < start / 2
