#!/usr/bin/python3
"""exit_code.py CODE COMMAND [ARGS...]: runs COMMAND (its output passes
through) and exits 0 if its exit status is CODE, else 1 with one line."""

import subprocess
import sys

want = int(sys.argv[1])
sys.stdout.flush()
got = subprocess.call(sys.argv[2:])
if got != want:
    print("exit_code.py: %s exited with %d, expected %d" % (sys.argv[2], got, want))
    sys.exit(1)
