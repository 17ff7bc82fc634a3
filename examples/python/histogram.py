"""A distributed histogram: every task draws its share of samples, bins
them, and WRITEs its counts straight into rank 0's memory, which adds
them up and plots the result.

    sss run -n 4 python3 examples/python/histogram.py [SAMPLES_PER_TASK] [OUT.png]
"""

import sys

import numpy as np

import sss

BINS = 64
LO, HI = -4.0, 4.0

t = sss.Task()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
out = sys.argv[2] if len(sys.argv) > 2 else "histogram.png"

# Rank 0's segment: one row of counts per task, then an arrival counter.
seg = t.alloc(8 * BINS * t.size + 8)
infos = t.exchange(seg)
root = infos[0]

rng = np.random.default_rng(seed=t.rank)
samples = rng.normal(loc=0.0, scale=1.0, size=n)
counts, edges = np.histogram(samples, bins=BINS, range=(LO, HI))
t.write(root, 8 * BINS * t.rank, counts.astype(np.uint64).tobytes(),
        notify=root, notify_offset=8 * BINS * t.size)
t.quiet()

if t.rank == 0:
    t.wait_at_least(seg, 8 * BINS * t.size, t.size)
    rows = np.frombuffer(seg, dtype=np.uint64, count=BINS * t.size).reshape(t.size, BINS)
    total = rows.sum(axis=0)
    inside = int(total.sum())
    print(f"histogram: {t.size} tasks, {n * t.size} samples, {inside} inside "
          f"[{LO}, {HI}), peak bin {int(total.argmax())} of {BINS}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    centers = (edges[:-1] + edges[1:]) / 2
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(centers, total, width=edges[1] - edges[0])
    ax.set_xlabel("value")
    ax.set_ylabel("samples")
    ax.set_title(f"{n * t.size} normal samples from {t.size} SSS tasks")
    fig.tight_layout()
    fig.savefig(out)
    print(f"histogram: wrote {out}")
t.barrier()
