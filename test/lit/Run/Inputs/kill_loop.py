#!/usr/bin/python3
"""SIGKILL a training run at random moments; the latest checkpoint must load.

    kill_loop.py --dir CK [--rounds 8] [--max-delay 0.4] -- COMMAND ARGS...

COMMAND is a `tcc run`/`tcc-run` command line that checkpoints into CK every
step and would run long. Each round starts it (with --resume once CK holds a
checkpoint, which it must announce as "resuming from CK/step-N" for the N
checked last), waits until it has printed its first line, sleeps a random
0..max-delay seconds and kills it with SIGKILL. Then the newest complete
checkpoint of CK must load (ckpt.py's check: state.json parses, safetensors
files complete) and be at least as new as the last one. At the end one more
run resumes and finishes normally, and no temp directory of the killed saves
is left. Prints one line per round; exit 1 on any failure.
"""

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckpt  # noqa: E402


def fail(msg):
    print("kill_loop.py: FAIL: " + msg)
    sys.exit(1)


def first_line(path, proc, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(path) as f:
            text = f.read()
        if "\n" in text:
            return text.split("\n", 1)[0]
        if proc.poll() is not None:
            fail("exited with %d before printing a line: %r" % (proc.returncode, text))
        time.sleep(0.005)
    fail("no output within %g s" % timeout)


def expect_resume(line, root, n):
    want = r"resuming from .*%s[/\\]step-%d \(step %d\)$" % (re.escape(os.path.basename(root)), n, n)
    if not re.match(want, line):
        fail("expected 'resuming from ...step-%d', got %r" % (n, line))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--max-delay", type=float, default=0.4)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("command", nargs="+")
    a = p.parse_args()
    seed = a.seed if a.seed is not None else int(time.time() * 1000) % 100000
    rng = random.Random(seed)
    print("seed %d" % seed)
    last = None
    out = tempfile.NamedTemporaryFile(prefix="kill_loop", suffix=".out", delete=False).name
    try:
        for r in range(a.rounds):
            cmd = list(a.command) + (["--resume"] if last is not None else [])
            with open(out, "w") as f:
                proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
            line = first_line(out, proc)
            if last is not None:
                expect_resume(line, a.dir, last)
            delay = rng.uniform(0, a.max_delay)
            time.sleep(delay)
            if proc.poll() is not None:
                fail("round %d: exited by itself with %d:\n%s" % (r, proc.returncode, open(out).read()))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            try:
                n = ckpt.check(a.dir)
            except ckpt.Bad as e:
                fail("round %d (killed after %.3f s): %s" % (r, delay, e))
            if n is None or (last is not None and n < last):
                fail("round %d: latest checkpoint %s after step-%s" % (r, n, last))
            print("round %d: killed after %.3f s, latest step-%d loads" % (r, delay, n))
            last = n
        # One more run that ends by itself: it resumes from the last one and
        # clears the temp directories of the killed saves.
        cmd = list(a.command)
        steps = cmd.index("--steps")
        cmd[steps + 1] = str(last + 2)
        res = subprocess.run(cmd + ["--resume"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             universal_newlines=True)
        if res.returncode != 0:
            fail("final run exited with %d:\n%s" % (res.returncode, res.stdout))
        expect_resume(res.stdout.split("\n", 1)[0], a.dir, last)
        if ckpt.check(a.dir) != last + 2:
            fail("final run did not reach step-%d" % (last + 2))
        temps = [e for e in os.listdir(a.dir) if re.match(r"\.step-\d+\.(tmp|old)-", e)]
        if temps:
            fail("temp directories left: %s" % temps)
        print("final run: step-%d" % (last + 2))
        # A kill while --keep-checkpoints deletes an old step directory file
        # by file leaves it incomplete: ignored by a resume, but not removed
        # by later prunes either (they list complete checkpoints only).
        complete = {os.path.basename(p) for _, p in ckpt.complete_steps(a.dir)}
        partial = sorted(e for e in os.listdir(a.dir)
                         if re.fullmatch(r"step-\d+", e) and e not in complete)
        if partial:
            print("note: incomplete step directories left: %s" % " ".join(partial))
    finally:
        os.unlink(out)


if __name__ == "__main__":
    main()
