"""Reads the "session memory" table of `tcc inspect` output (stdin).

  session_memory.py budget          prints total - arena // 2: the issue's
                                    "done when" budget (the unbudgeted total
                                    minus half the unbudgeted arena)
  session_memory.py fits BUDGET     exits 1 unless total <= BUDGET; prints
                                    "total T <= BUDGET"
  session_memory.py accum ONE.txt   stdin is an --accum N artifact's table,
                                    ONE.txt the same model's at --accum 1:
                                    exits 1 unless the arena is at most one
                                    micro-batch's plus the parameters' bytes
                                    (the running gradient sums); prints
                                    "arena A <= A1 + P"
"""
import re
import sys


def table(text):
    rows = {}
    for m in re.finditer(r"^  (arena|parameters|working copies|optimizer|inputs|constants|total)\s+([\d,]+) bytes$",
                         text, re.M):
        rows[m.group(1)] = int(m.group(2).replace(",", ""))
    if "total" not in rows or "arena" not in rows:
        sys.exit("session_memory.py: no session memory table in the input")
    return rows


def main():
    rows = table(sys.stdin.read())
    if sys.argv[1:] == ["budget"]:
        print(rows["total"] - rows["arena"] // 2)
    elif len(sys.argv) == 3 and sys.argv[1] == "fits":
        budget = int(sys.argv[2])
        ok = rows["total"] <= budget
        print(f"total {rows['total']} {'<=' if ok else '>'} {budget}")
        sys.exit(0 if ok else 1)
    elif len(sys.argv) == 3 and sys.argv[1] == "accum":
        with open(sys.argv[2]) as f:
            one = table(f.read())
        limit = one["arena"] + rows["parameters"]
        ok = rows["arena"] <= limit
        print(f"arena {rows['arena']} {'<=' if ok else '>'} {one['arena']} + {rows['parameters']}")
        sys.exit(0 if ok else 1)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
