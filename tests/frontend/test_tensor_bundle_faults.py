"""A process killed while writing a checkpoint leaves nothing a later run trusts: the data file
and the index are written under temporary names and renamed, as TensorFlow's BundleWriter does."""

import subprocess
import sys
import textwrap

import numpy as np

from hlobridge import read_checkpoint

KILLED_WHILE_SAVING = textwrap.dedent("""
    import builtins, os, signal, sys
    import numpy as np
    from hlobridge.frontend import tensor_bundle

    prefix = sys.argv[1]
    first = tensor_bundle.BundleWriter(prefix)
    first.add("w", np.arange(6, dtype=np.float32))
    first.finish()

    real_open = builtins.open

    class Dying:
        def __init__(self, f): self.f = f
        def __enter__(self): return self
        def __exit__(self, *a): pass
        def write(self, data):
            self.f.write(data[: len(data) // 2]); self.f.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    tensor_bundle.open = lambda path, mode="r", *a: Dying(real_open(path, mode, *a)) if "w" in mode else real_open(path, mode, *a)
    second = tensor_bundle.BundleWriter(prefix)
    second.add("w", np.full(1000, 7, dtype=np.float32))
    second.finish()
""")


def test_a_save_killed_midway_leaves_the_previous_checkpoint_whole(tmp_path):
    prefix = tmp_path / "model.ckpt"
    proc = subprocess.run([sys.executable, "-c", KILLED_WHILE_SAVING, str(prefix)], capture_output=True)
    assert proc.returncode == -9, proc.stderr.decode()[-500:]
    assert any(".tempstate" in p.name for p in tmp_path.iterdir())  # the half-written file, under its temp name
    values = read_checkpoint(prefix)
    np.testing.assert_array_equal(values["w"], np.arange(6, dtype=np.float32))
