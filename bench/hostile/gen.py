#!/usr/bin/env python3
"""Write the hostile inputs of docs/validation.md (issue 34) to standard output.

    gen.py kernels N      a Kineto trace of N tiny kernel events (pipe it into gzip)
    gen.py name BYTES     a Kineto trace whose one event name is BYTES long
    gen.py chain N        a device file of N devices, each extending the one before
    gen.py syncs N        a Kineto trace of one kernel, then N stream synchronisations
                          that each wait for it (one critical-path node with N edges out)
"""

import sys


def main():
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        sys.exit(__doc__)
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
    elif what == "syncs":
        out.write('{"traceEvents":[')
        out.write('{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":5,'
                  '"args":{"External id":1}},')
        out.write('{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,'
                  '"ts":1,"dur":2,"args":{"correlation":1,"External id":1}},')
        out.write('{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":10,'
                  '"args":{"correlation":1,"stream":7,"device":0,"External id":1}}')
        call = ('{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,'
                '"ts":%d,"dur":2,"args":{"correlation":%d}}')
        sync = ('{"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":7,"ts":%d,'
                '"dur":1,"args":{"correlation":%d,"stream":7,"device":0}}')
        for i in range(n):
            t, c = 30 + 5 * i, 2 + i
            out.write("," + call % (t, c) + "," + sync % (t, c))
        out.write("]}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
