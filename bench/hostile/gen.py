#!/usr/bin/env python3
"""Write the hostile inputs of docs/validation.md (issue 34) to standard output.

    gen.py kernels N      a Kineto trace of N tiny kernel events (pipe it into gzip)
    gen.py name BYTES     a Kineto trace whose one event name is BYTES long
    gen.py chain N        a device file of N devices, each extending the one before
"""

import sys


def main():
    what, n = sys.argv[1], int(sys.argv[2])
    out = sys.stdout
    if what == "kernels":
        out.write('{"traceEvents":[')
        ev = '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":%d,"dur":1,"args":{}}'
        block = 10000
        for b in range(0, n, block):
            out.write(",".join(ev % (2 * i) for i in range(b, min(n, b + block))))
            if b + block < n:
                out.write(",")
        out.write("]}")
    elif what == "name":
        out.write('{"traceEvents":[{"ph":"X","cat":"kernel","pid":0,"tid":7,"ts":1,"dur":1,"name":"')
        chunk = "x" * (1 << 20)
        for _ in range(n >> 20):
            out.write(chunk)
        out.write('"}]}')
    elif what == "chain":
        for i in range(n):
            base = "h100-sxm" if i == 0 else f"chain-{i - 1}"
            out.write(f'[[device]]\nid = "chain-{i}"\nextends = "{base}"\naliases = ["link {i}"]\n\n')
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
