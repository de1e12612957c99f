#!/usr/bin/python3
"""Minimal safetensors reader/writer on json + numpy (no safetensors package).

    /usr/bin/python3 test/models/safetensors_np.py IN.npz OUT.safetensors   # convert
    /usr/bin/python3 test/models/safetensors_np.py FILE.safetensors         # list

Format: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON
{name: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
optionally "__metadata__": {str: str}}, then the data; offsets are relative to
the first byte after the header, tensors are little-endian, row-major.
"""

import json
import struct
import sys

import numpy as np

DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?",
}
NAMES = {np.dtype(v).str: k for k, v in DTYPES.items() if k != "BF16"}


class FormatError(Exception):
    pass


def read(path):
    """-> ({name: np.ndarray}, metadata dict). BF16 is widened to float32."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise FormatError("%s: shorter than the 8-byte header length" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise FormatError("%s: header length %d runs past the end of the file" % (path, n))
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FormatError("%s: header is not JSON: %s" % (path, e))
    data = memoryview(blob)[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, info in header.items():
        try:
            dt, shape, (b, e) = info["dtype"], [int(s) for s in info["shape"]], info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise FormatError("%s: tensor '%s': bad entry %r" % (path, name, info))
        if dt not in DTYPES:
            raise FormatError("%s: tensor '%s': unsupported dtype %s" % (path, name, dt))
        item = np.dtype(DTYPES[dt]).itemsize
        count = int(np.prod(shape, dtype=np.int64))
        if not (0 <= b <= e <= len(data)) or e - b != count * item:
            raise FormatError("%s: tensor '%s': data_offsets [%d, %d] do not hold %s%s"
                              % (path, name, b, e, dt, shape))
        a = np.frombuffer(data[b:e], dtype=DTYPES[dt]).reshape(shape)
        if dt == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = a.copy()
    return out, meta


def write(path, arrays, metadata=None):
    """arrays: {name: np.ndarray}, written in the dict's order, 8-byte aligned."""
    header, chunks, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, a in arrays.items():
        a = np.asarray(a)
        le = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
        a = np.ascontiguousarray(a, dtype=le)
        if a.dtype.str not in NAMES:
            raise FormatError("tensor '%s': no safetensors dtype for %s" % (name, a.dtype))
        raw = a.tobytes()
        header[name] = {"dtype": NAMES[a.dtype.str], "shape": list(a.shape),
                        "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-(8 + len(h)) % 8)  # the format allows trailing spaces
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for c in chunks:
            f.write(c)


def main():
    if len(sys.argv) == 3:
        with np.load(sys.argv[1]) as z:
            write(sys.argv[2], {n: z[n] for n in z.files})
    elif len(sys.argv) == 2:
        arrays, meta = read(sys.argv[1])
        for n, a in arrays.items():
            print("%s: %s%s" % (n, a.dtype, list(a.shape)))
        if meta:
            print("__metadata__: %s" % json.dumps(meta))
    else:
        sys.exit(__doc__.strip().split("\n\n")[1])


if __name__ == "__main__":
    main()
