"""A process killed while writing a checkpoint leaves nothing a later run trusts: the data file
and the index are written under temporary names and renamed, as TensorFlow's BundleWriter does."""

import subprocess
import sys
import textwrap

import numpy as np

from hlobridge import read_checkpoint
from tests.conftest import ROOT

KILLED_WHILE_SAVING = textwrap.dedent("""
    import builtins, sys
    import numpy as np
    from hlobridge.frontend import tensor_bundle
    from tests.kill_midway import DyingFile

    prefix = sys.argv[1]
    first = tensor_bundle.BundleWriter(prefix)
    first.add("w", np.arange(6, dtype=np.float32))
    first.finish()

    real_open = builtins.open
    tensor_bundle.open = lambda path, mode="r", *a: (DyingFile(real_open(path, mode, *a)) if "w" in mode
                                                    else real_open(path, mode, *a))
    second = tensor_bundle.BundleWriter(prefix)
    second.add("w", np.full(1000, 7, dtype=np.float32))
    second.finish()
""")


def test_a_save_killed_midway_leaves_the_previous_checkpoint_whole(tmp_path):
    prefix = tmp_path / "model.ckpt"
    proc = subprocess.run([sys.executable, "-c", KILLED_WHILE_SAVING, str(prefix)], capture_output=True, cwd=ROOT)
    assert proc.returncode == -9, proc.stderr.decode()[-500:]
    assert any(".tempstate" in p.name for p in tmp_path.iterdir())  # the half-written file, under its temp name
    values = read_checkpoint(prefix)
    np.testing.assert_array_equal(values["w"], np.arange(6, dtype=np.float32))
