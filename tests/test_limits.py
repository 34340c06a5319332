"""Size limits are checked before anything is allocated, name the node and the size, and can be
raised in HLOBRIDGE_FLAGS."""

import subprocess
import sys

import numpy as np
import pytest

from hlobridge import ResourceLimitError, flags
from hlobridge.analysis.shape_inference import infer_specs
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.frontend.graphdef import parse_text
from hlobridge.frontend.load import load_graph

HUGE_SPLAT = """
node { name: "big" op: "Const"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT
    tensor_shape { dim { size: 1048576 } dim { size: 1048576 } } float_val: 1.0 } } } }
"""


@pytest.fixture
def fresh_flags():
    flags.from_environment.cache_clear()
    yield
    flags.from_environment.cache_clear()


def _fill(dims):
    b = GraphBuilder()
    b.op("Fill", [b.const("dims", np.array(dims, np.int64)), b.const("v", np.float32(0))], name="fill",
         T=np.dtype(np.float32), index_type=np.dtype(np.int64))
    return b.graph()


def test_a_splat_constant_of_a_huge_shape_is_refused_before_decoding(fresh_flags):
    with pytest.raises(ResourceLimitError, match=r"node 'big' attr 'value': a constant of 4,398,046,511,104 bytes"):
        load_graph(parse_text(HUGE_SPLAT))


def test_a_fill_of_2_to_the_40_elements_is_an_error_naming_the_node(fresh_flags):
    with pytest.raises(ResourceLimitError, match=r"node 'fill' \(Fill\) output 0: a tensor of 1,099,511,627,776 elements"):
        infer_specs(_fill([2 ** 20, 2 ** 20]))


def test_hlobridge_flags_raise_the_limits(fresh_flags, monkeypatch):
    monkeypatch.setenv("HLOBRIDGE_FLAGS", "--max-tensor-elements=2**41")
    flags.from_environment.cache_clear()
    specs = infer_specs(_fill([2 ** 20, 2 ** 20]))  # allowed now; nothing is allocated by inference
    assert [s.shape for s in specs.values()][-1] == (2 ** 20, 2 ** 20)
    monkeypatch.setenv("HLOBRIDGE_FLAGS", "--max-tensor-elements=1000")
    flags.from_environment.cache_clear()
    with pytest.raises(ResourceLimitError, match="over the limit of 1,000"):
        infer_specs(_fill([40, 40]))


def test_hlobridge_compile_answers_at_once_with_one_line(tmp_path):
    (tmp_path / "g.pbtxt").write_text(HUGE_SPLAT)
    bindir = __import__("pathlib").Path(sys.executable).parent
    proc = subprocess.run([bindir / "hlobridge-compile", tmp_path / "g.pbtxt", "-o", tmp_path / "m.vmfb"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "over the limit" in proc.stderr and "Traceback" not in proc.stderr
