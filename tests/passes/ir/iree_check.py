"""Running StableHLO on IREE and applying hlobridge's IR passes to it: what the pass tests
compare (a rewrite must compute what IREE computes)."""

import numpy as np
from iree.compiler import compile_str, ir

import iree.runtime as rt
from hlobridge.passes.ir import pipeline


def run_iree(text: str, name: str, *args):
    """Function `name` of the module `text`, compiled by IREE for this CPU, run on `args`."""
    vmfb = compile_str(text, input_type="stablehlo", target_backends=["llvm-cpu"],
                       extra_args=["--iree-llvmcpu-target-cpu=host"])
    module = rt.load_vm_flatbuffer(vmfb, driver="local-sync")
    out = module[name](*args)
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]


def apply_passes(text: str, passes: str) -> str:
    """The module `text` after the named passes ("a,b") of passes/ir/pipeline.py."""
    with ir.Context():
        module = ir.Module.parse(text)
        pipeline.run(module, [pipeline.lookup(p) for p in passes.split(",")])
        return module.operation.get_asm()
