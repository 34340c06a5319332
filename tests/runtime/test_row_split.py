"""A large inference cluster's batch run as row parts, one per CPU (runtime/row_split.py): split
only where every op keeps the rows of the batch apart, each part a module of its own rows, the
outputs joined back; the numbers are the unsplit call's; on its first calls the Session times
the parts against the pool and keeps the faster. The thresholds are lowered here
(HLOBRIDGE_FLAGS --row-split-flops=0, and --small-cluster-flops=0 so that the small test
clusters are on the pool, where splitting applies), and but for the trial's own tests the
parts are kept without a trial (--no-row-split-trial), so that every call runs as parts."""

import os
import select
import signal
import threading
import time

import numpy as np
import pytest

from hlobridge.compile.cache import clear_memory_cache
from hlobridge.frontend.graph_builder import GraphBuilder
from hlobridge.runtime import cluster_launch, row_parts, row_split
from hlobridge.runtime.row_split import SplitTrial, part_sizes
from hlobridge.runtime.session import Session
from tests.corpus import Case

W = np.random.default_rng(5).standard_normal((16, 8)).astype(np.float32)
SPLIT_ON_TRIAL = "--small-cluster-flops=0 --row-split-flops=0"
SPLIT = SPLIT_ON_TRIAL + " --no-row-split-trial"


@pytest.fixture
def hlobridge_flags(monkeypatch, flag_values):
    """flag_values (conftest.py), with two CPUs to split over whatever the machine has."""
    monkeypatch.setattr(row_parts, "usable_cpus", lambda: [0, 1])
    return flag_values


def splits(sess: Session) -> list:
    """The row parts of each compiled signature (None: run whole)."""
    found = []
    for plan in sess._plans.values():
        for unit in plan.units:
            for exe in getattr(unit, "executables", {}).values():
                found.append(None if exe.rows is None else exe.rows.sizes)
    return found


def dense_graph(mix_rows: bool):
    """tanh(relu(x @ W) * 2 + 1) per row; with `mix_rows`, minus its mean over the batch (rows
    see each other). Four ops that work: a cluster in auto mode."""
    b = GraphBuilder()
    x = b.placeholder("x", np.float32, (None, 16))
    y = b.op("Relu", [b.op("MatMul", [x, b.const("w", W)], T=np.float32)], T=np.float32)
    y = b.op("AddV2", [b.op("Mul", [y, b.const("two", np.float32(2))], T=np.float32), b.const("one", np.float32(1))],
             T=np.float32)
    y = b.op("Tanh", [y], T=np.float32)
    if mix_rows:
        mean = b.op("Mean", [y, b.const("axis", np.array([0], np.int32))], T=np.float32, keep_dims=True)
        y = b.op("Sub", [y, mean], T=np.float32)
    b.op("Identity", [y], name="y", T=np.float32)
    return b.graph()


def dense_expected(x: np.ndarray, mix_rows: bool) -> np.ndarray:
    y = np.tanh(np.maximum(x @ W, 0) * 2 + 1)
    return y - y.mean(axis=0, keepdims=True) if mix_rows else y


def run_dense(seed: int, batch: int, mix_rows: bool = False) -> Session:
    """A new Session of dense_graph, run once on `batch` random rows and checked against NumPy."""
    x = np.random.default_rng(seed).standard_normal((batch, 16)).astype(np.float32)
    sess = Session(dense_graph(mix_rows))
    np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), dense_expected(x, mix_rows), rtol=1e-5, atol=1e-5)
    return sess


def test_part_sizes_differ_by_at_most_one_row():
    assert part_sizes(2, 2) == [1, 1]
    assert part_sizes(5, 2) == [3, 2]
    assert part_sizes(8, 3) == [3, 3, 2]
    assert part_sizes(1, 2) == [1]  # never an empty part


def test_cnn_batch_is_split_and_matches_tensorflow(hlobridge_flags, shared_graphs):
    case = Case.load(shared_graphs / "cnn_infer_bn")
    run = case.meta["runs"][0]
    feeds = {k: case.array(v) for k, v in run["feeds"].items()}
    fetches = list(run["expected"])
    hlobridge_flags(SPLIT)
    split = Session(case.graph_path)
    got = split.run(fetches, feeds)
    assert splits(split) == [[2, 2]]  # batch 4 on two CPUs
    for name, value in zip(fetches, got):
        expected = case.array(run["expected"][name])
        assert value.shape == expected.shape
        np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-5)
    hlobridge_flags(SPLIT + " --no-row-split")
    whole = Session(case.graph_path)
    for a, b in zip(got, whole.run(fetches, feeds)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert splits(whole) == [None]
    again = split.run(fetches, feeds)  # the warm call, the same numbers
    for a, b in zip(got, again):
        np.testing.assert_array_equal(a, b)
        assert b.flags.writeable and not np.shares_memory(a, b)  # the user's own arrays


def test_cnn_odd_batch_with_a_row_cut_in_two_matches_the_whole_call(hlobridge_flags, shared_graphs):
    """TensorFlow's small CNN at batch 5 (its batch 4 and the first image again): two parts of
    2 rows and the fifth row in halves, cut after a batch norm (analysis/layer_cut.py), gives
    the numbers of the whole call and, for the rows TF ran, TF's."""
    case = Case.load(shared_graphs / "cnn_infer_bn")
    run = case.meta["runs"][0]
    (name, key), = run["feeds"].items()
    x = case.array(key)
    feeds = {name: np.concatenate([x, x[:1]])}
    fetches = list(run["expected"])
    hlobridge_flags(SPLIT)
    split = Session(case.graph_path)
    got = split.run(fetches, feeds)
    assert splits(split) == [[2, 2]] and piped(split) == [True]
    hlobridge_flags(SPLIT + " --no-row-split")
    whole = Session(case.graph_path).run(fetches, feeds)
    for fetch, a, b in zip(fetches, got, whole):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a[:4], case.array(run["expected"][fetch]), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(a[4], a[0], rtol=1e-5, atol=1e-6)  # the cut row is the first image


def test_the_caller_keeps_its_cpu_and_the_workers_of_the_others_take_the_parts(monkeypatch):
    pool = row_split._Workers([0, 1])
    monkeypatch.setattr(row_split, "current_cpu", lambda: 1)
    assert pool.around_caller() == ([pool.inbox_of[0]], {1})
    monkeypatch.setattr(row_split, "current_cpu", lambda: None)  # not known: the first CPU
    assert pool.around_caller() == ([pool.inbox_of[1]], {0})
    monkeypatch.setattr(row_split, "current_cpu", lambda: 5)  # outside this process's CPUs
    assert pool.around_caller() == ([pool.inbox_of[1]], {0})


def test_one_row_parts_share_one_module_of_weights_packed_at_compile_time(hlobridge_flags, monkeypatch):
    """Batch 2 on two CPUs: one binary of one row, its constant weights packed into the module
    (data_tiling="ahead"), loaded once and shared by the two parts' VM contexts; batch 4's
    2-row parts pack theirs at load, a copy per context (row_parts.RowParts.build)."""
    built, loads = [], []

    def build(self, args, background, options=None):
        built.append((args[0].shape[0], (options or self.compile_options()).data_tiling))
        return real_build(self, args, background, options)

    class Recorded(row_parts.LoadedModule):
        def __init__(self, vmfb, device="cpu", vm_module=None):
            super().__init__(vmfb, device, vm_module)
            loads.append((self, vm_module))
    real_build = cluster_launch.ClusterLaunch._build
    monkeypatch.setattr(cluster_launch.ClusterLaunch, "_build", build)
    monkeypatch.setattr(row_parts, "LoadedModule", Recorded)
    hlobridge_flags(SPLIT)
    run_dense(15, 2)  # checked against NumPy
    assert (1, "ahead") in built
    (first, shared), (second, given) = loads[-2:]
    assert shared is None and given is first.vm_module  # one module, two contexts
    assert first.functions["main"]._straight._vm_context is not second.functions["main"]._straight._vm_context
    built.clear()
    run_dense(16, 4)
    assert (2, "on") in built and all(tiling != "ahead" for _, tiling in built)


def piped(sess: Session) -> list:
    """Whether each split signature runs its odd batch's last row in two halves."""
    return [exe.rows.piped is not None for plan in sess._plans.values() for unit in plan.units
            for exe in getattr(unit, "executables", {}).values() if exe is not None and exe.rows is not None]


def test_an_odd_batch_splits_into_equal_parts_and_a_row_cut_in_two(hlobridge_flags):
    """Batch 5 on two CPUs: 2 + 2 rows, and the fifth row's first half (the MatMul, half the
    work) on the calling thread before its rows, its second half on the worker after its rows."""
    hlobridge_flags(SPLIT)
    sess = run_dense(0, 5)  # checked against NumPy
    assert splits(sess) == [[2, 2]] and piped(sess) == [True]
    for batch in (3, 7):  # another signature each, the same way
        x = np.random.default_rng(batch).standard_normal((batch, 16)).astype(np.float32)
        np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), dense_expected(x, False), rtol=1e-5, atol=1e-5)
    assert splits(sess) == [[2, 2], [1, 1], [3, 3]] and piped(sess) == [True] * 3
    hlobridge_flags(SPLIT + " --no-row-cut")
    assert splits(run_dense(0, 5)) == [[3, 2]]


def test_a_cut_row_with_no_other_cpu_left_runs_whole_on_the_caller(hlobridge_flags, monkeypatch):
    """The process's CPUs narrowed after the split was made (no worker of another CPU): the
    calling thread runs both parts and both halves, and every row comes back."""
    hlobridge_flags(SPLIT)
    sess = run_dense(10, 5)
    assert piped(sess) == [True]

    class NoOtherCpu:
        def around_caller(self):
            return [], None
    monkeypatch.setattr(row_split, "workers", NoOtherCpu)
    x = np.random.default_rng(11).standard_normal((5, 16)).astype(np.float32)
    np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), dense_expected(x, False), rtol=1e-5, atol=1e-5)


def test_a_cut_that_cannot_be_made_leaves_the_odd_row_in_a_part(hlobridge_flags, monkeypatch, caplog):
    """The cut is an optimization: a half that fails to be made, even by a bug, leaves 3 + 2
    parts and the right numbers, with a warning in the log."""
    def broken(*args, **kwargs):
        raise RuntimeError("a bug in making a half")
    monkeypatch.setattr(row_parts, "Cluster", broken)
    hlobridge_flags(SPLIT)
    assert splits(run_dense(9, 5)) == [[3, 2]]  # checked against NumPy
    assert "a bug in making a half" in caplog.text


@pytest.mark.parametrize("half", ["first", "second"])
def test_a_failing_half_of_the_cut_row_raises_and_the_next_call_runs(hlobridge_flags, half):
    """A half that fails (an IREE error in it: here its invoke made to raise) fails the call
    with that error, on the calling thread's half or the worker's; the worker waits for no cut
    that will not come, and the next call runs."""
    hlobridge_flags(SPLIT)
    sess = run_dense(7, 5)
    (rows,) = [exe.rows for plan in sess._plans.values() for unit in plan.units
               for exe in unit.executables.values()]
    call = getattr(rows.piped, half)

    def failing(prepared):
        raise RuntimeError(f"the {half} half failed")
    call.invoke = failing
    x = np.random.default_rng(8).standard_normal((5, 16)).astype(np.float32)
    with pytest.raises(Exception, match=f"the {half} half failed"):
        sess.run("y:0", {"x:0": x})
    del call.invoke  # the class's own again
    np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), dense_expected(x, False), rtol=1e-5, atol=1e-5)


def test_the_trial_alternates_the_two_ways_and_keeps_the_faster():
    """Parts first, then the pool, in turn; the warm-up calls are not timed; the parts are kept
    where their median is at most the pool's."""
    for parts_s, pool_s, keep in ((2.0, 1.0, False), (1.0, 2.0, True), (1.0, 1.0, True)):
        trial, picks, kept = SplitTrial(warmup=1, calls=3), [], None
        while kept is None:
            picks.append(trial.pick())
            warm_up = len(picks) <= 2  # the first call of each way, slow (it wakes the threads)
            kept = trial.record(picks[-1], 100.0 if warm_up else parts_s if picks[-1] else pool_s)
        assert picks == [True, False] * 4 and kept is keep
        assert trial.seconds == {True: [parts_s] * 3, False: [pool_s] * 3}


@pytest.mark.parametrize("slower", ["parts", "pool"])
def test_the_first_calls_time_the_parts_against_the_pool_and_keep_the_faster(hlobridge_flags, monkeypatch,
                                                                             slower):
    """The trial on a Session: the way made slower (by 20 ms a call) is dropped after the trial's
    calls, every call's numbers right, and the calls after it run the way kept."""
    def slowed(call):
        def slow_call(*args):
            time.sleep(0.02)
            return call(*args)
        return slow_call
    if slower == "parts":
        monkeypatch.setattr(row_split.RowSplit, "call", slowed(row_split.RowSplit.call))
    else:
        call = cluster_launch.Executable._call

        def slow_pool(self, args, what, as_parts):
            return (call if as_parts else slowed(call))(self, args, what, as_parts)
        monkeypatch.setattr(cluster_launch.Executable, "_call", slow_pool)
    hlobridge_flags(SPLIT_ON_TRIAL)
    sess = run_dense(12, 4)  # the first call: parts, checked against NumPy
    (exe,) = [exe for plan in sess._plans.values() for unit in plan.units for exe in unit.executables.values()]
    assert exe.trial is not None and exe.rows.sizes == [2, 2]
    x = np.random.default_rng(13).standard_normal((4, 16)).astype(np.float32)
    for _ in range(2 * (row_split.TRIAL_WARMUP + row_split.TRIAL_CALLS)):
        np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), dense_expected(x, False), rtol=1e-5, atol=1e-5)
    assert exe.trial is None and (exe.rows is None) == (slower == "parts")


def test_a_cluster_that_mixes_rows_runs_whole(hlobridge_flags):
    hlobridge_flags(SPLIT)
    assert splits(run_dense(1, 4, mix_rows=True)) == [None]


def test_batch_one_and_small_clusters_run_whole(hlobridge_flags):
    hlobridge_flags(SPLIT)
    assert splits(run_dense(2, 1)) == [None]
    hlobridge_flags("--small-cluster-flops=0")  # the default threshold: this cluster is far below it
    assert splits(run_dense(2, 4)) == [None]


def test_the_parts_compile_beside_the_whole_module(hlobridge_flags, monkeypatch):
    """A signature that splits starts its parts' compiles once the whole module is lowered
    (row_parts.RowParts.start), not once it is compiled: here the whole module's compile waits
    until a part's has begun, which it could not if they came one after the other."""
    clear_memory_cache()
    monkeypatch.setattr(cluster_launch, "COMPILE_THREADS", 2)
    part_began = threading.Event()
    real_backend_of = cluster_launch.backend_of

    class Watched:
        def __init__(self, backend):
            self.backend = backend

        def __getattr__(self, name):
            return getattr(self.backend, name)

        def compile(self, text, options, *rest):
            if "tensor<3x16xf32>" in text:  # a part of 3 rows
                part_began.set()
            elif "tensor<6x16xf32>" in text:  # the whole batch of 6
                assert part_began.wait(30), "the parts began compiling only after the whole module"
            return self.backend.compile(text, options, *rest)
    monkeypatch.setattr(cluster_launch, "backend_of", lambda options: Watched(real_backend_of(options)))
    hlobridge_flags(SPLIT)
    x = np.random.default_rng(21).standard_normal((6, 16)).astype(np.float32)
    sess = Session(dense_graph(mix_rows=False), cache_dir=False)
    np.testing.assert_allclose(sess.run("y:0", {"x:0": x}), dense_expected(x, False), rtol=1e-5, atol=1e-5)
    assert part_began.is_set() and splits(sess) == [[3, 3]]


def test_a_cluster_with_more_constants_than_the_cache_runs_whole(hlobridge_flags, monkeypatch):
    """Each part reads every constant: above MAX_SPLIT_WEIGHT_BYTES (here lowered below W's 512
    bytes) the parts would read them from memory once each, so the call stays whole."""
    monkeypatch.setattr(row_parts, "MAX_SPLIT_WEIGHT_BYTES", W.nbytes - 1)
    hlobridge_flags(SPLIT)
    assert splits(run_dense(3, 4)) == [None]


def test_a_forked_child_splits_with_threads_of_its_own(hlobridge_flags):
    """Threads do not survive fork: a child that reused its parent's workers would wait forever
    for their answers."""
    hlobridge_flags(SPLIT)
    x = np.random.default_rng(4).standard_normal((4, 16)).astype(np.float32)
    sess = Session(dense_graph(mix_rows=False))
    sess.run("y:0", {"x:0": x})  # the parent's workers exist now
    assert splits(sess) == [[2, 2]]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one split call, then out without pytest's teardown
        ok = np.allclose(sess.run("y:0", {"x:0": x}), dense_expected(x, False), rtol=1e-5, atol=1e-5)
        os.write(write, b"ok" if ok else b"wrong")
        os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 60)
    answer = os.read(read, 8) if ready else b"hung"
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert answer == b"ok"
