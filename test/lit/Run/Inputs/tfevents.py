#!/usr/bin/python3
"""Read TensorBoard event files with the standard library only, written from
the format's specification rather than from tcc's writer.

    tfevents.py DIR [--log LOG.csv]

TFRecord (tensorflow/core/lib/io/record_writer.cc): each record is uint64
length, uint32 masked CRC-32C of the 8 length bytes, the data, uint32 masked
CRC-32C of the data, little-endian; mask(c) = ((c >> 15) | (c << 17)) +
0xa282ead8 mod 2^32. The data is an Event (tensorflow/core/util/event.proto):
wall_time = 1 (double), step = 2 (int64), file_version = 3 (string),
summary = 5 (Summary: repeated Value value = 1; Value: tag = 1 (string),
simple_value = 2 (float)).

Checks every CRC, that the first event is file_version "brain.Event:2" and
prints one line per scalar: "TAG STEP VALUE" (sorted by tag, then step).
With --log, also checks train/loss, train/lr, eval/loss and (when the CSV
has them) train/grad_norm, eval/accuracy and train/loss_scale against the
CSV's loss, lr, eval_loss, grad_norm, eval_accuracy and loss_scale columns
(same steps, values within 1e-6 relative, inf and NaN where the CSV has
them) and prints "log: ok".
"""

import csv
import math
import os
import struct
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    """(field number, wire type, value) of a protobuf message."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        elif wire == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wire)
        yield num, wire, v


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        header = data[i:i + 8]
        (length,) = struct.unpack("<Q", header)
        (lcrc,) = struct.unpack("<I", data[i + 8:i + 12])
        if lcrc != masked(header):
            raise ValueError("%s: bad length CRC at %d" % (path, i))
        body = data[i + 12:i + 12 + length]
        (dcrc,) = struct.unpack("<I", data[i + 12 + length:i + 16 + length])
        if dcrc != masked(body) or len(body) != length:
            raise ValueError("%s: bad data CRC at %d" % (path, i))
        yield body
        i += 16 + length


def main(argv):
    d = argv[1]
    files = sorted(f for f in os.listdir(d) if "tfevents" in f)
    scalars = {}
    for name in files:
        for n, body in enumerate(records(os.path.join(d, name))):
            ev = {num: v for num, _, v in fields(body) if num != 5}
            if n == 0:
                assert ev.get(3) == b"brain.Event:2", ev
                continue
            step = ev.get(2, 0)
            for num, _, summary in fields(body):
                if num != 5:
                    continue
                for _, _, value in fields(summary):
                    vf = {k: v for k, _, v in fields(value)}
                    tag = vf[1].decode()
                    (x,) = struct.unpack("<f", vf[2])
                    scalars.setdefault(tag, []).append((step, x))
    for tag in sorted(scalars):
        for step, x in scalars[tag]:
            print("%s %d %.9g" % (tag, step, x))
    if len(argv) > 3 and argv[2] == "--log":
        with open(argv[3]) as f:
            rows = list(csv.DictReader(f))
        f32 = lambda s: struct.unpack("<f", struct.pack("<f", float(s)))[0]
        want = {"train/loss": [(int(r["step"]), f32(r["loss"])) for r in rows],
                "train/lr": [(int(r["step"]), f32(r["lr"])) for r in rows],
                "eval/loss": [(int(r["step"]), f32(r["eval_loss"]))
                              for r in rows if r.get("eval_loss")]}
        for tag, column in (("train/grad_norm", "grad_norm"),
                            ("eval/accuracy", "eval_accuracy"),
                            ("train/loss_scale", "loss_scale")):
            if rows and column in rows[0]:
                want[tag] = [(int(r["step"]), f32(r[column]))
                             for r in rows if r[column]]
        # An overflowing step's grad_norm is inf or NaN in both.
        same = lambda x, y: (x == y or abs(x - y) <= 1e-6 * abs(y)
                             or (math.isnan(x) and math.isnan(y)))
        close = lambda a, b: a[0] == b[0] and same(a[1], b[1])
        for tag, expected in want.items():
            got = scalars.get(tag, [])
            if len(got) != len(expected) or not all(map(close, got, expected)):
                print("log: %s differs: %s vs %s" % (tag, scalars.get(tag), expected))
                return 1
        print("log: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
