"""The nccl-tests all_reduce_perf sweeps among the gathered rows (tools/measurements/gathered_nccl_busbw.csv) curated
into src/repro/predict/busbw.csv, the rows repro.predict.collective fits each level's per-message time to.

A source is kept where it gives a sweep: at least four message sizes of one run (nccl-tests#44: two RTX 2080 Ti over an
NVLink bridge, one host: level ``intra``; nccl-tests#232: two hosts, one H100 each, RoCE: level ``inter``); a peak or a
maintainer's rule of thumb without sizes is not a curve and stays in links.yaml's rates. Bytes are per rank: the old
nccl-tests of #44 printed twice the per-rank bytes in its size column with ``-g 2`` (its count column x 4 bytes, and
its algbw = count x 4 / time, are per rank); #232's size column is per rank.

    python tools/measurements/curate_busbw.py   # rewrites src/repro/predict/busbw.csv
"""
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
OUT = HERE.parents[1] / "src" / "repro" / "predict" / "busbw.csv"
SWEEPS = {  # source -> (level, link as links.yaml names it or describes it, divisor of the printed size)
    "nccltests44": ("intra", "nvlink-bridge", 2),
    "nccltests232": ("inter", "RoCE, 4 NICs per host (rate not stated)", 1),
}

d = pd.read_csv(HERE / "gathered_nccl_busbw.csv", dtype=str, keep_default_na=False)
rows = []
for _, r in d.iterrows():
    if r["source"] not in SWEEPS or not r["message_bytes"].isdigit():
        continue
    level, link, div = SWEEPS[r["source"]]
    rows.append({"source": r["source"], "url": r["url"], "locator": r["locator"], "level": level, "link": link,
                 "gpus": int(r["gpus"]), "hosts": int(r["hosts"]), "bytes_per_rank": int(r["message_bytes"]) // div,
                 "busbw_gbyte_s": float(r["busbw_gbyte_s"])})
out = pd.DataFrame(rows).sort_values(["level", "bytes_per_rank"])
assert (out.groupby("source").size() >= 4).all()
out.to_csv(OUT, index=False)
print(f"{len(out)} rows -> {OUT}")
