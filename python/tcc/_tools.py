"""Where the tcc binaries are, and running them."""

import os
import subprocess

from . import _paths
from ._errors import TccError


def binary(name):
    """The path of tcc's binary `name` ("tcc", "tcc-run"): the build tree's
    bin/ for a package in a build tree, tcc/bin/ for an installed one."""
    bin_dir = _paths.BIN_DIR or os.path.join(os.path.dirname(__file__), "bin")
    path = os.path.join(bin_dir, name)
    if not os.access(path, os.X_OK):
        raise TccError(f"tcc: the '{name}' binary is not at {path} "
                       "(build it: cmake --build build)")
    return path


def run(name, args):
    """Runs binary `name` with `args`; its subprocess.CompletedProcess (text
    stdout and stderr). A non-zero exit raises TccError with the binary's
    error output (its one-line message)."""
    result = subprocess.run([binary(name), *map(str, args)], capture_output=True,
                            text=True)
    if result.returncode != 0:
        message = result.stderr.strip() or result.stdout.strip()
        raise TccError(message or f"{name} exited with {result.returncode}")
    return result
