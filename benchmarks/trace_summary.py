"""What a profiler trace's GPU time goes to: the kernels of each stream of a ``jax.profiler`` trace, by total time.

Reads ``.xplane.pb`` (or ``.xplane.pb.gz``) files as ``benchmarks/stacked_step.py --trace`` writes them (the
campaign's bench gzips them into ``$OUT``) and prints, per GPU stream, its events, span and busy time and its
kernels by total time; then the whole trace's kernels grouped into kinds (matrix products, convolutions' data
movement, reductions, element-wise fusions, copies and memsets) with their share of the busy time. Needs the
XPlane protocol buffer (TensorFlow's ``tsl.profiler.protobuf``, in this project's ``.venv``). A report, not a
test.

    .venv/bin/python benchmarks/trace_summary.py FILE.xplane.pb.gz [...] [--top 12] [--out summary.txt]
"""

from __future__ import annotations

import argparse
import gzip
import re
from collections import defaultdict
from pathlib import Path

KINDS = [  # first match wins: (kind, pattern on the kernel's name)
    ("matrix products (GEMM, dot fusions)", r"gemm|dot|xmma|cutlass|implicit_gemm"),
    ("convolution layout and im2col (transposes, concatenations, slices)",
     r"concatenate|transpose|tensorTransform|nhwcSlice|slice|pad|copy_fusion"),
    ("reductions and pooling (reduce, reduce-window, select/scatter)", r"reduce|scatter|select|window"),
    ("copies and memsets", r"memcpy|memset"),
    ("element-wise fusions (activations, updates, dropout, loss)", r"fusion|loop_|input_|wrapped_"),
]


def _planes(path: Path):
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    space = xplane_pb2.XSpace()
    space.ParseFromString(raw)
    return [p for p in space.planes if p.name.startswith("/device:GPU")]


def kind_of(name: str) -> str:
    for kind, pattern in KINDS:
        if re.search(pattern, name, re.IGNORECASE):
            return kind
    return "other"


def summarize(path: Path, top: int) -> list[str]:
    out, kinds, busy_all = [f"== {path.name}"], defaultdict(float), 0.0
    for plane in _planes(path):
        names = {k: v.name for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            if not line.name.startswith("Stream") or not line.events:
                continue
            per = defaultdict(lambda: [0.0, 0])
            start = min(e.offset_ps for e in line.events)
            end = max(e.offset_ps + e.duration_ps for e in line.events)
            for e in line.events:
                name = names.get(e.metadata_id, "?")
                per[name][0] += e.duration_ps / 1e9
                per[name][1] += 1
                kinds[kind_of(name)] += e.duration_ps / 1e9
            busy = sum(v[0] for v in per.values())
            busy_all += busy
            out.append(f" line '{line.name}': {len(line.events)} events, span {(end - start) / 1e9:.2f} ms, "
                       f"busy {busy:.2f} ms")
            for name, (ms, n) in sorted(per.items(), key=lambda kv: -kv[1][0])[:top]:
                out.append(f"    {ms:8.3f} ms {n:6d}x {name[:110]}")
    out.append(f" by kind (share of {busy_all:.2f} ms busy):")
    for kind, ms in sorted(kinds.items(), key=lambda kv: -kv[1]):
        out.append(f"    {ms:8.3f} ms {100 * ms / busy_all if busy_all else 0:5.1f} %  {kind}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--top", type=int, default=12, help="kernels shown per stream")
    ap.add_argument("--out", type=Path, default=None, help="also write the summary here")
    args = ap.parse_args()
    lines = [line for f in args.files for line in summarize(f, args.top)]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
