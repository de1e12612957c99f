#!/usr/bin/python3
"""check_plot.py CURVES.html LOG.csv: maps every <polyline class="series">
of `tcc plot` back through its chart's axes (data-x0/x1/y0/y1, plot area
x 70..700, y 30..255 with y up) and compares the points with the log's
column of the same name (within the 0.1-pixel rounding of the SVG).
Prints "NAME: N points ok" per series; exits 1 on a mismatch."""
import csv
import re
import sys

html = open(sys.argv[1]).read()
rows = list(csv.DictReader(open(sys.argv[2])))
left, width, top, height = 70.0, 630.0, 30.0, 225.0
ok = True
for svg in re.findall(r"<svg [^>]*class=\"chart\"[^>]*>.*?</svg>", html, re.S):
    head = re.match(r"<svg [^>]*>", svg).group(0)
    ax = {k: float(v) for k, v in re.findall(r'data-(x0|x1|y0|y1)="([^"]+)"', head)}
    for name, pts in re.findall(r'<polyline class="series" data-name="([^"]+)"[^>]*points="([^"]*)"', svg):
        want = [(float(r["step"]), float(r[name])) for r in rows if r.get(name)]
        got = [tuple(map(float, p.split(","))) for p in pts.split()]
        back = [(ax["x0"] + (x - left) / width * (ax["x1"] - ax["x0"]),
                 ax["y0"] + (top + height - y) / height * (ax["y1"] - ax["y0"])) for x, y in got]
        tol_x = 0.06 / width * (ax["x1"] - ax["x0"])
        tol_y = 0.06 / height * (ax["y1"] - ax["y0"])
        good = len(back) == len(want) and all(
            abs(a[0] - b[0]) <= tol_x and abs(a[1] - b[1]) <= tol_y for a, b in zip(back, want))
        print("%s: %d points %s" % (name, len(got), "ok" if good else "MISMATCH %s vs %s" % (back[:3], want[:3])))
        ok &= good
sys.exit(0 if ok else 1)
