"""PyTorch profiler (Kineto) traces of one small transformer training step, for
tests/fixtures/ (scripts/gpu-capture.sh). Random weights and data, no downloads.

    python3 scripts/gpu/kineto_capture.py MODE OUTDIR

MODE: eager (record_shapes, profile_memory and with_stack on), compiled (torch.compile,
Triton kernels), graph (the whole step captured in a torch.cuda.CUDAGraph and replayed).
Writes OUTDIR/MODE.trace.json.gz (the trace of the profiled steps), OUTDIR/MODE.key_averages.txt
(prof.key_averages().table()) and OUTDIR/MODE.kernels.csv: per GPU kernel name, its
launches and total device time in microseconds as key_averages printed them.
"""
import csv
import gzip
import os
import shutil
import sys

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

D, HEADS, LAYERS, BATCH, SEQ, VOCAB = 512, 8, 4, 8, 256, 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        layer = nn.TransformerEncoderLayer(D, HEADS, 4 * D, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.body = nn.TransformerEncoder(layer, LAYERS)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, tokens):
        mask = nn.Transformer.generate_square_subsequent_mask(SEQ, device=tokens.device)
        return self.head(self.body(self.emb(tokens), mask=mask, is_causal=True))


def main(mode, outdir):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = Model().to(dev)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), device=dev)
    target = torch.randint(0, VOCAB, (BATCH, SEQ), device=dev)
    loss_fn = nn.CrossEntropyLoss()

    if mode == "graph":
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                    loss = loss_fn(model(tokens).flatten(0, 1), target.flatten())
                loss.backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            # Autocast's weight-cast cache must be off inside a capture.
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
                static_loss = loss_fn(model(tokens).flatten(0, 1), target.flatten())
            static_loss.backward()
            opt.step()

        def step():
            graph.replay()
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        fwd = torch.compile(model) if mode == "compiled" else model

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn(fwd(tokens).flatten(0, 1), target.flatten())
            loss.backward()
            opt.step()

    for _ in range(3):  # warm-up (and, when compiled, compilation)
        step()
    torch.cuda.synchronize()

    eager = mode == "eager"
    # No schedule: a schedule's cycle end clears the events before export.
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=eager, profile_memory=eager, with_stack=eager) as prof:
        for _ in range(2):
            step()
            torch.cuda.synchronize()

    os.makedirs(outdir, exist_ok=True)
    raw = os.path.join(outdir, f"{mode}.trace.json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(raw + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)
    ka = prof.key_averages()
    with open(os.path.join(outdir, f"{mode}.key_averages.txt"), "w") as f:
        f.write(ka.table(sort_by="self_device_time_total", row_limit=-1, max_name_column_width=120))
    with open(os.path.join(outdir, f"{mode}.kernels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "count", "self_device_time_total_us"])
        for e in ka:
            if str(e.device_type).endswith("CUDA") and e.self_device_time_total > 0:
                w.writerow([e.key, e.count, f"{e.self_device_time_total:.3f}"])
    print(mode, "ok:", len(ka), "key_averages rows")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
