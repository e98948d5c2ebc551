#!/usr/bin/env python3
"""Reference of the SwiGLU example kernel for `rooftop bench --spec`:
y[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)), in float64.

rooftop runs this command with the inputs written as .npy files in $ROOFTOP_INPUTS
(one per input buffer, named after it, plus case.json describing the case) and reads
one .npy per output buffer from $ROOFTOP_OUTPUTS (docs/spec.md, "References").

Plain Python (no numpy needed): .npy is a short header (a Python dict literal) and the
raw elements. With numpy, the same is `g = np.load(...); np.save(..., y)`.
"""
import ast
import json
import math
import os
import struct


def load_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", f"{path}: not a .npy file"
    if data[6] == 1:
        (hlen,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    code = {"<f4": "f", "<f8": "d"}[header["descr"]]
    n = 1
    for d in header["shape"]:
        n *= d
    return list(struct.unpack(f"<{n}{code}", data[start + hlen:]))


def save_npy(path, values):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack(f"<{len(values)}d", *values))


def main():
    ins, outs = os.environ["ROOFTOP_INPUTS"], os.environ["ROOFTOP_OUTPUTS"]
    case = json.load(open(os.path.join(ins, "case.json")))
    names = [b["name"] for b in case["inputs"]]
    gate = load_npy(os.path.join(ins, "gate.npy"))
    up = load_npy(os.path.join(ins, "up.npy"))
    assert names == ["gate", "up"], names
    y = [g / (1.0 + math.exp(-g)) * u for g, u in zip(gate, up)]
    save_npy(os.path.join(outs, "y.npy"), y)


if __name__ == "__main__":
    main()
