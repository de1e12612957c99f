#!/usr/bin/python3
"""Interrupt a training run as Ctrl-C or a scheduler's SIGTERM would.

    interrupt.py --dir CK --after N [--signal INT|TERM] [--twice]
                 [--reference REF] -- COMMAND ARGS...

COMMAND is a `tcc run`/`tcc-run` command line with --progress lines that
checkpoints into CK and would run long. It starts with SIGINT and SIGTERM at
their default actions (as from a terminal, whatever this process inherited);
once it has printed `step N/...` it gets the signal. Then prints `exit CODE`
(or `killed by SIGNAME`), the run's stderr, and `latest step-M` for the
newest complete checkpoint of CK (ckpt.py's check: it must load), or
`no checkpoint`.

--twice: stop the run (SIGSTOP), send SIGINT and SIGTERM, let it go on: the
second signal must end it at once.
--rank R: COMMAND is `mpirun ... tcc run ...`; the signal goes to rank R's
process alone (the descendant of COMMAND whose environment says
OMPI_COMM_WORLD_RANK=R), as a scheduler's signal to one node would.
--reference REF: resume the interrupted run to step M+2 (printing its
output), run the same command uninterrupted to M+2 into REF, and compare
the two step-(M+2) checkpoints byte for byte ("same as uninterrupted").
Exit 1 with one line on any failure.
"""

import argparse
import filecmp
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ckpt  # noqa: E402


def fail(msg):
    print("interrupt.py: FAIL: " + msg)
    sys.exit(1)


def default_signals():
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


def rank_process(root, rank):
    """The pid of MPI rank `rank` among the descendants of `root`."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    todo, want = [root], b"OMPI_COMM_WORLD_RANK=%d" % rank
    while todo:
        pid = todo.pop()
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                if want in f.read().split(b"\0"):
                    return pid
        except OSError:
            pass
        todo.extend(children.get(pid, []))
    fail("no process of rank %d under %d" % (rank, root))


def with_steps(cmd, steps):
    cmd = list(cmd)
    cmd[cmd.index("--steps") + 1] = str(steps)
    return cmd


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--after", type=int, required=True)
    p.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    p.add_argument("--twice", action="store_true")
    p.add_argument("--rank", type=int)
    p.add_argument("--reference")
    p.add_argument("command", nargs="+")
    a = p.parse_args()

    err_path = os.path.join(os.path.dirname(os.path.abspath(a.dir)), "interrupt.err")
    with open(err_path, "w") as err:
        proc = subprocess.Popen(a.command, stdout=subprocess.PIPE, stderr=err,
                                universal_newlines=True, preexec_fn=default_signals)
        want = "step %d/" % a.after
        for line in proc.stdout:
            if line.startswith(want):
                break
        else:
            proc.wait()
            with open(err_path) as f:
                fail("the run ended before printing %r: %s" % (want, f.read().strip()))
        if a.twice:
            proc.send_signal(signal.SIGSTOP)
            proc.send_signal(signal.SIGINT)
            proc.send_signal(signal.SIGTERM)
            proc.send_signal(signal.SIGCONT)
        elif a.rank is not None:
            os.kill(rank_process(proc.pid, a.rank), getattr(signal, "SIG" + a.signal))
        else:
            proc.send_signal(getattr(signal, "SIG" + a.signal))
        proc.stdout.read()
        code = proc.wait()
    print("killed by %s" % signal.Signals(-code).name if code < 0 else "exit %d" % code)
    with open(err_path) as f:
        sys.stdout.write(f.read())
    try:
        latest = ckpt.check(a.dir)
    except ckpt.Bad as e:
        fail(str(e))
    print("no checkpoint" if latest is None else "latest step-%d" % latest)
    if a.reference is None:
        return
    if latest is None or latest < a.after:
        fail("expected a checkpoint at step %d or later" % a.after)
    end = latest + 2
    resumed = subprocess.run(with_steps(a.command, end) + ["--resume"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, universal_newlines=True)
    sys.stdout.write(resumed.stdout)
    ref = with_steps(a.command, end)
    ref[ref.index("--checkpoint-dir") + 1] = a.reference
    if resumed.returncode or subprocess.run(ref, stdout=subprocess.DEVNULL).returncode:
        fail("the resumed or the reference run failed")
    step = "step-%d" % end
    files = sorted(os.listdir(os.path.join(a.reference, step)))
    _, differ, errors = filecmp.cmpfiles(os.path.join(a.dir, step), os.path.join(a.reference, step),
                                         files, shallow=False)
    if differ or errors:
        fail("%s differs from the uninterrupted run's: %s" % (step, differ + errors))
    print("%s same as uninterrupted" % step)


if __name__ == "__main__":
    main()
