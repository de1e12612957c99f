"""Sums a compile report's launches by layer prefix.

  layer_launches.py REPORT.html PREFIX...

Reads the "By model layer" table of `tcc compile --report` (each launch of
@train_step under the ONNX node it comes from) and prints, per PREFIX,
"PREFIX: N launches" with N the launches of every row whose layer is PREFIX
or lies under it (PREFIX/...). A transformer layer's prefix (/h.0) thus
counts its forward, backward and the gradients of its parameters; the
optimizer's updates belong to no node ("(whole model)").
"""
import html
import re
import sys


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    start = text.find("<h2>By model layer</h2>")
    if start < 0:
        sys.exit("layer_launches.py: no 'By model layer' section in " + sys.argv[1])
    table = text[start:text.index("</table>", start)]
    rows = re.findall(r'<tr><td>([^<]*)</td><td class="n">(\d+)</td>', table)
    if not rows:
        sys.exit("layer_launches.py: the 'By model layer' table has no rows")
    for prefix in sys.argv[2:]:
        n = sum(int(count) for layer, count in rows
                if html.unescape(layer) == prefix or html.unescape(layer).startswith(prefix + "/"))
        print(f"{prefix}: {n} launches")


if __name__ == "__main__":
    main()
