#!/usr/bin/python3
"""Check a headless-Chromium screenshot of the tiny GPT's compile report.

    check_screenshot.py PAGE.png WIDTH HEIGHT

The page rendered (not a blank or error page): the PNG has the window's
size, and the memory timeline drew its buffers in the legend's colours —
the layers in the first two palette colours cover large areas —
and the arena line (#cc0000) is drawn across the plot.
"""
import sys

from PIL import Image

path, width, height = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
image = Image.open(path).convert("RGB")
assert image.size == (width, height), f"size {image.size}, expected {(width, height)}"
counts = {}
for count, colour in image.getcolors(maxcolors=1 << 20):
    counts[colour] = count


def pixels(hex_colour, tolerance=0):
    """Pixels of this colour, each channel within `tolerance` (antialiased
    thin lines are never exactly their colour)."""
    rgb = tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    if not tolerance:
        return counts.get(rgb, 0)
    return sum(n for c, n in counts.items()
               if all(abs(a - b) <= tolerance for a, b in zip(c, rgb)))


white = pixels("#ffffff")
assert white < 0.95 * width * height, f"page is blank: {white} white pixels"
for colour, least, tolerance in (("#4e79a7", 5000, 0), ("#f28e2b", 5000, 0),
                                 ("#cc0000", 150, 60)):
    got = pixels(colour, tolerance)
    assert got >= least, f"{colour}: {got} pixels, expected at least {least}"
    print(f"{colour}: {got} pixels")
print("screenshot ok")
