#!/usr/bin/env python3
"""Per-thread timeline of a run from `perf` samples: which threads were on a CPU in each
time bucket, and what they ran. Shows where a 2-core run leaves a core idle (a serial
phase, a tail of the parse, an inflate ahead of the parse).

    perf record -F 20000 -e cpu-clock -g -o /tmp/p.data \
        target/release/rooftop trace F --format json -o /dev/null
    perf script -i /tmp/p.data -F tid,time,ip,sym | bench/timeline/timeline.py [BUCKET_MS] [TOP]

Prints, per bucket of BUCKET_MS milliseconds (default 2) from the first sample, the
samples per thread id (at -F 20000 a busy thread gives 20 per ms), then the TOP
(default 3) most sampled (thread, function) pairs: the innermost rooftop function on
the stack, or the leaf (libc, kernel) when none is.
"""

import collections
import re
import sys


def main():
    bucket_ms = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    samples = []
    cur = None
    for line in sys.stdin:
        if not line.strip():
            cur = None
            continue
        # Stack lines start with a tab; a sample's line with its thread id, which
        # `perf script` right-aligns (a short id starts with blanks).
        if not line.startswith("\t"):
            tid, t = line.split()[:2]
            cur = [tid, float(t.rstrip(":")), []]
            samples.append(cur)
        elif cur is not None:
            parts = line.strip().split(" ", 1)
            cur[2].append(parts[1] if len(parts) > 1 else "?")
    if not samples:
        sys.exit("no samples on stdin (perf script -F tid,time,ip,sym)")
    t0 = min(s[1] for s in samples)

    def label(stack):
        for f in stack:
            if re.search(r"rooftop_(ingest|core|report|tables|bench|jobs)|rooftop::", f):
                return f[:80]
        return (stack[0] if stack else "?")[:80]

    buckets = collections.defaultdict(collections.Counter)
    for tid, t, stack in samples:
        buckets[int((t - t0) * 1000 / bucket_ms)][(tid, label(stack))] += 1
    for k in sorted(buckets):
        per_thread = collections.Counter()
        for (tid, _), n in buckets[k].items():
            per_thread[tid] += n
        print(f"{k * bucket_ms:7.1f} ms  " + "  ".join(f"{t}:{n}" for t, n in sorted(per_thread.items())))
        for (tid, fn), n in buckets[k].most_common(top):
            print(f"           {tid} {n:4d} {fn}")


if __name__ == "__main__":
    main()
