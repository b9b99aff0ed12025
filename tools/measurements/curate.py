"""The gathered published measurements (tools/measurements/gathered_*.csv, numbers with their locators, read from
the stored corpus for issue 48) curated into src/repro/predict/measurements_extra.csv (the package's Point schema).

A row is kept only where the model can be given what it needs: the method, the GPU, the links and the batch stated,
a model whose parameter count is known; every dropped row is counted with its reason on stderr. Links are mapped to
links.yaml (an NVLink bridge joins a pair: a ring over more GPUs crosses PCIe). The split alternates within a
source (the package's train/test convention); repro.predict.loso ignores it (each source, and each origin's sources together, is held out whole).

    python tools/measurements/curate.py > /dev/null   # rewrites src/repro/predict/measurements_extra.csv
"""
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
OUT = HERE.parents[1] / "src" / "repro" / "predict" / "measurements_extra.csv"

d = pd.concat([pd.read_csv(HERE / f"gathered_{f}.csv", dtype=str, keep_default_na=False)
               for f in ("vendor_lab", "papers_repos", "issue_threads", "lab_repos")], ignore_index=True)
MODELS = {"resnet50": "resnet50", "resnet152": "resnet152", "resnet-152": "resnet152", "inception3": "inception_v3",
          "inception-v3": "inception_v3", "vgg16": "vgg16", "alexnet": "alexnet"}
SOURCES = {  # source -> (framework, method) as modelled
    "lambda_tf": ("tensorflow", "ring"), "lambda_pt_v1": ("pytorch", "ddp"), "lambda_pt_v2": ("pytorch", "ddp"),
    "mxnet_p2_2017": ("mxnet", "ps_sync"), "tfbench359": ("tensorflow", "ring"), "mxnet8289": ("mxnet", "ring"),
    "csc_puhti": ("pytorch", "ddp"), "tensorpack_bench": ("tensorflow", None),  # None: the row's own method
}
ROW_METHODS = {"ring": "ring", "ps_host": "ps_sync"}  # ps_host: one parameter server on the host's CPU
HOST_PS_SWITCH = {"tensorpack_bench": "2"}  # GPUs per PCIe switch of a host-PS source (the DGX-1, as inferred)
def intra(r):
    gpu, link = r["gpu"], r["intra_link"]
    if link == "nvswitch":
        for key, name in (("V100", "nvswitch-v100"), ("A100", "nvswitch-a100"), ("H100", "nvswitch-h100"),
                          ("H200", "nvswitch-h100")):
            if key in gpu:
                return name
        return None  # B200: NVLink 5, not in links.yaml
    if link == "nvlink-bridge":  # a bridge joins pairs: a ring over more than two GPUs crosses PCIe
        return "nvlink-bridge" if int(r["workers"]) == 2 else "pcie3"
    if link == "nvlink2":
        return "nvlink-v100"
    return link if link in ("pcie3", "pcie4", "pcie5", "nvlink-p100") else None

out, dropped = [], {}
for _, r in d.iterrows():
    src = r["source"]
    why = None
    if src not in SOURCES:
        why = "source not modelled (method, GPU, link or batch not stated, or a model without a known parameter count)"
    elif SOURCES[src][1] is None and r["method"] not in ROW_METHODS:
        why = "method not modelled"
    elif r["model"] not in MODELS:
        why = "model without a known parameter count"
    elif intra(r) is None:
        why = "link unknown or not in links.yaml"
    elif not r["batch"].strip().isdigit():
        why = "batch not stated"
    if why:
        dropped[(src, why)] = dropped.get((src, why), 0) + 1
        continue
    fw, method = SOURCES[src]
    host_ps = method is None and r["method"] == "ps_host"
    method = method or ROW_METHODS[r["method"]]
    gph = int(r["gpus_per_host"] or 1)
    n = int(r["workers"])
    hosts = -(-n // gph)
    inter = "none" if hosts == 1 else (r["inter_link"] if r["inter_link"] in ("20gbe", "200gb-ib") else None)
    if hosts > 1 and inter is None:
        dropped[(src, "inter link unknown")] = dropped.get((src, "inter link unknown"), 0) + 1
        continue
    il = intra(r) if gph > 1 else "none"
    row = {"source": src, "locator": r["locator"], "url": r["url"], "framework": fw, "method": method,
           "ps": "1" if host_ps else (str(hosts) if method == "ps_sync" else ""),
           "ps_placement": "host" if host_ps else ("workers" if method == "ps_sync" else "none"),
           "gpu": r["gpu"], "gpus_per_host": str(gph), "gpus_per_switch": HOST_PS_SWITCH[src] if host_ps else "", "intra_link": il,
           "inter_link": inter, "pull": "" if host_ps else ("after-update" if method == "ps_sync" else "with-forward"), "model": MODELS[r["model"]],
           "parameters": "",
           "batch": r["batch"], "data": r["data"] if r["data"] in ("synthetic", "real") else "", "workers": str(n),
           "images_per_s": r["images_per_s"], "efficiency": r["efficiency"] if not r["images_per_s"] else "",
           "single_images_per_s": r["single_images_per_s"], "reading": "table",
           "precision": "mixed" if r["precision"] in ("mixed", "fp16") else "fp32",
           "framework_version": r["framework_version"], "note": r["note"]}
    if "bar label" in r["note"].lower() or "read from" in r["note"].lower():
        row["reading"] = "figure-approx"
    out.append(row)
df = pd.DataFrame(out)
# GeForce RTX 30/40 cards over PCIe have no peer-to-peer access (the driver disables it: tinygrad/open-gpu-kernel-
# modules#17, 8 RTX 4090); an NVLink bridge gives a pair of them peer access over the bridge
geforce = df["gpu"].str.contains(r"RTX (?:30|40)\d0", regex=True) & df["intra_link"].str.startswith("pcie")
df["peer_to_peer"] = ["false" if g else "" for g in geforce]
# ids and a train/test split alternating within each source (the package's convention)
df["id"] = [f"{s}-{i + 1:03d}" for s, i in zip(df["source"], df.groupby("source").cumcount())]
df["split"] = ["train" if i % 2 == 0 else "test" for i in df.groupby("source").cumcount()]
print(df.groupby("source").size().to_dict(), "N>1:", (df.workers.astype(int) > 1).sum(), file=sys.stderr)
for k, v in sorted(dropped.items()):
    print("dropped", v, k, file=sys.stderr)
cols = list(pd.read_csv(OUT.with_name("measurements.csv"), nrows=0).columns)
cols = [c for c in cols if c != "note"] + ["precision", "peer_to_peer", "framework_version", "note"]
df.reindex(columns=cols).fillna("").to_csv(OUT, index=False)
