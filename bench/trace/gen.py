#!/usr/bin/env python3
"""Scale a real Kineto trace to a target size for benchmarks.

Replicates the events of a fixture trace N times. Copy k shifts every timestamp by k
times the trace's span (plus 1 ms) and adds k * ID_STRIDE to every id-like value
(`External id`, `correlation`, flow `id`, `Ev Idx`, `Python id`, ...), so that copies
never link to each other. Top-level members other than `traceEvents` are written once.

Events are written one per line, two-space indented, as libkineto writes them (its
events are a few lines each; the byte count per event is about the same). `--layout
python` writes the whole file on one line as Python's `json.dump` does by default
(`}, {` between events), `--layout minified` as `json.dump(..., separators=(",", ":"))`
does: traces people re-save after editing them.

    gen.py FIXTURE OUT --target-mb 1000 [--gzip] [--layout kineto|python|minified]
"""

import argparse
import gzip
import json
import sys

ID_STRIDE = 10_000_000
ID_ARGS = ("External id", "external id", "correlation", "Ev Idx", "Python id",
           "Python parent id", "Record function id", "Sequence number")


def load(path):
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("fixture")
    ap.add_argument("out")
    ap.add_argument("--target-mb", type=float, required=True,
                    help="approximate size of the written JSON, in MB (10^6 bytes)")
    ap.add_argument("--gzip", action="store_true", help="write gzip (level 1)")
    ap.add_argument("--layout", choices=("kineto", "python", "minified"), default="kineto",
                    help="how the JSON is laid out (default: kineto, one event per line)")
    a = ap.parse_args()
    # (what opens the file, what follows a member name, what separates events)
    opening, colon, sep, closing = {
        "kineto": ("{\n", ": ", ",\n  ", "\n  ]\n}\n"),
        "python": ("{", ": ", ", ", "]}"),
        "minified": ("{", ":", ",", "]}"),
    }[a.layout]
    dumps = (lambda v: json.dumps(v, separators=(",", ":"))) if a.layout == "minified" else json.dumps

    trace = load(a.fixture)
    events = trace["traceEvents"]
    stamped = [e for e in events if isinstance(e.get("ts"), (int, float))]
    start = min(e["ts"] for e in stamped)
    end = max(e["ts"] + (e.get("dur") or 0) for e in stamped
              if isinstance(e.get("dur", 0), (int, float)))
    period = round(end - start + 1000.0)

    # Metadata events (`M`) once; everything else per copy.
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    one_copy = sum(len(dumps(e)) + len(sep) for e in body)
    copies = max(1, round(a.target_mb * 1e6 / one_copy))

    opener = (lambda p: gzip.open(p, "wt", compresslevel=1)) if a.gzip else (lambda p: open(p, "w"))
    with opener(a.out) as out:
        out.write(opening)
        for k, v in trace.items():
            if k != "traceEvents":
                member = f"{dumps(k)}{colon}{dumps(v)}"
                out.write(f"  {member},\n" if a.layout == "kineto" else member + sep)
        out.write(f'  "traceEvents": [\n  ' if a.layout == "kineto" else f'"traceEvents"{colon}[')
        first = True
        for e in meta:
            out.write(("" if first else sep) + dumps(e))
            first = False
        for c in range(copies):
            shift = c * period
            ids = c * ID_STRIDE
            for e in body:
                e2 = dict(e)
                if isinstance(e2.get("ts"), (int, float)):
                    e2["ts"] = round(e2["ts"] + shift, 3)
                if "id" in e2 and isinstance(e2["id"], int):
                    e2["id"] += ids
                args = e2.get("args")
                if isinstance(args, dict):
                    args = dict(args)
                    for key in ID_ARGS:
                        if isinstance(args.get(key), int) and args[key] > 0:
                            args[key] += ids
                    e2["args"] = args
                out.write(("" if first else sep) + dumps(e2))
                first = False
        out.write(closing)
    print(f"{a.out}: {copies} copies of {len(body)} events", file=sys.stderr)


if __name__ == "__main__":
    main()
