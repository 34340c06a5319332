"""A stand-in for benchmarks/gpu_iree_variants.py in gpu_check's smoke test: one IREE variant
that compiles on the CPU (hlobridge's own fusion)."""


def variants():
    return [("hlobridge-fusion", {"fusion": "hlobridge"})]
