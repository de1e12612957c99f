#!/usr/bin/python3
"""check_png.py CURVES.png LOG.csv: decodes `tcc plot -o CURVES.png` with
PIL and checks it against the log. The image is 720 wide and 300 high per
chart; its tEXt "tcc:charts" gives each chart's title, top edge and axis
ranges (x0 x1 y0 y1, as the SVG's data-*). For each series drawn (loss,
eval_loss, lr, throughput, grad_norm, eval_accuracy in their SVG colours)
every (step, value) of the log, mapped through its chart's axes onto the
plot area (x 70..700, y 30..255 below the chart's top, y up), must have a
pixel of the series' colour within 2 pixels, and the legend row (14 to 16
pixels above the plot area) its 12x3 swatch. Prints "TITLE: NAME N points ok"
per series; exits 1 on a mismatch."""
import csv
import sys

from PIL import Image

COLORS = {"loss": (0x1f, 0x77, 0xb4), "eval_loss": (0xd6, 0x27, 0x28),
          "lr": (0x2c, 0xa0, 0x2c), "throughput": (0x94, 0x67, 0xbd),
          "grad_norm": (0xff, 0x7f, 0x0e), "eval_accuracy": (0x17, 0xbe, 0xcf)}
SERIES = {"Loss": ["loss", "eval_loss"], "Learning rate": ["lr"],
          "Throughput": ["throughput"], "Gradient norm": ["grad_norm"],
          "Eval accuracy": ["eval_accuracy"]}

img = Image.open(sys.argv[1])
rows = list(csv.DictReader(open(sys.argv[2])))
charts = [line.split("|") for line in img.text["tcc:charts"].splitlines()]
print("png: %dx%d %s, %d charts" % (img.width, img.height, img.mode, len(charts)))
ok = img.mode == "RGB" and img.size == (720, 300 * len(charts))
px = img.load()
left, width, top, height = 70.0, 630.0, 30.0, 225.0


def near(x, y, color):
    return any(px[i, j] == color
               for i in range(max(int(round(x)) - 2, 0), min(int(round(x)) + 3, img.width))
               for j in range(max(int(round(y)) - 2, 0), min(int(round(y)) + 3, img.height)))


for title, y_top, x0, x1, y0, y1 in charts:
    y_top, x0, x1, y0, y1 = int(y_top), float(x0), float(x1), float(y0), float(y1)
    for name in SERIES.get(title, []):
        want = [(float(r["step"]), float(r[name])) for r in rows if r.get(name)]
        if not want:
            continue
        color = COLORS[name]
        missing = [(s, v) for s, v in want
                   if not near(left + (s - x0) / (x1 - x0) * width,
                               y_top + top + height - (v - y0) / (y1 - y0) * height, color)]
        swatch = sum(px[i, j] == color for i in range(70, 700)
                     for j in range(y_top + 14, y_top + 17))
        good = not missing and swatch >= 30
        print("%s: %s %d points %s" % (title, name, len(want),
                                       "ok" if good else "MISMATCH: %s; swatch %d" % (missing[:3], swatch)))
        ok &= good
sys.exit(0 if ok else 1)
