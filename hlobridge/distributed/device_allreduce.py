"""The GPU path (docs/distributed.md, "GPUs"): a bucket's mean all-reduce as a compiled
function whose buffers never leave the device, `stablehlo.all_reduce` on IREE's collective
channel.

How it runs (wired, compiled here; NOT run on a GPU: none was lent, and IREE's `local-*`
drivers answer "collectives not implemented"): the job is launched under OpenMPI
(`mpiexec -n N env LD_LIBRARY_PATH=$(python -m hlobridge.distributed.libmpi) python ...`, one
GPU per rank, iree_env.pin_gpu), the launcher's variables are kept (`init(iree_channels=True)`,
which checks that libmpi.so loads), so IREE's cuda device gets its MPI channel provider, which
bootstraps one NCCL communicator over the ranks. A data-parallel cuda Session's plan then runs
each bucket through this module (device_unit.DeviceAllReduce): the backward cluster's device
arrays in, the averaged ones out, device arrays again, for the optimizer's cluster; no host
round trip. Its replica group is the whole world and its channel handle 1, the default
channel IREE makes from the provider.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import dtypes

FUNCTION = "bucket_mean"


def _type(shape: Sequence[int], dtype) -> str:
    et = dtypes.mlir_name(np.dtype(dtype))
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{et}>"


def all_reduce_module(shapes: list[tuple], dtype, world_size: int) -> str:
    """StableHLO text: `@bucket_mean(g0, g1, ...)` -> each g averaged over `world_size` ranks.
    The bucket is flattened into one buffer and reduced by ONE single-operand
    `stablehlo.all_reduce` (one NCCL call per bucket, as the CPU path's one Iallreduce): IREE
    3.13's iree-compile crashes (signal 11) on a variadic all_reduce, for cuda and llvm-cpu."""
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    total = sum(sizes)
    types = [_type(s, dtype) for s in shapes]
    flat, scalar = _type((total,), dtype), _type((), dtype)
    groups = "[[" + ", ".join(map(str, range(world_size))) + "]]"
    args = ", ".join(f"%g{i}: {t}" for i, t in enumerate(types))
    lines = [f"func.func @{FUNCTION}({args}) -> ({', '.join(types)}) {{"]
    for i, (n, t) in enumerate(zip(sizes, types)):
        lines.append(f"  %f{i} = stablehlo.reshape %g{i} : ({t}) -> {_type((n,), dtype)}")
    pieces = ", ".join(f"%f{i}" for i in range(len(shapes)))
    piece_types = ", ".join(_type((n,), dtype) for n in sizes)
    lines += [f"  %flat = stablehlo.concatenate {pieces}, dim = 0 : ({piece_types}) -> {flat}",
              f"  %sum = \"stablehlo.all_reduce\"(%flat) ({{",
              f"  ^bb0(%a: {scalar}, %b: {scalar}):",
              f"    %s = stablehlo.add %a, %b : {scalar}",
              f"    stablehlo.return %s : {scalar}",
              f"  }}) {{replica_groups = dense<{groups}> : tensor<1x{world_size}xi64>,",
              f"      channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>}} : ({flat}) -> {flat}",
              f"  %n = stablehlo.constant dense<{float(world_size)}> : {flat}",
              f"  %mean = stablehlo.divide %sum, %n : {flat}"]
    at, results = 0, []
    for i, (n, shape, t) in enumerate(zip(sizes, shapes, types)):
        piece = _type((n,), dtype)
        lines.append(f"  %p{i} = stablehlo.slice %mean [{at}:{at + n}] : ({flat}) -> {piece}")
        lines.append(f"  %m{i} = stablehlo.reshape %p{i} : ({piece}) -> {t}")
        results.append(f"%m{i}")
        at += n
    lines.append(f"  return {', '.join(results)} : {', '.join(types)}")
    lines.append("}")
    return "module {\n" + "\n".join(lines) + "\n}\n"
