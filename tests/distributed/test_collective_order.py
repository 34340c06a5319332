"""Ranks whose plans would issue different collectives are refused before running."""

from tests.distributed.mpi import launch


def test_ranks_with_different_collectives_are_refused_before_running(shared_graphs, tmp_path):
    done = launch(["tests.distributed.order_worker", str(shared_graphs / "seed_linreg_resource"), str(tmp_path)],
                  env={"HLOBRIDGE_COLLECTIVE_TIMEOUT": "60"}, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    for rank in (0, 1):
        message = (tmp_path / f"rank{rank}.error").read_text()
        assert "refused before running: ranks would issue collectives in different orders" in message, message
        assert "collective #1 is 'hlobridge_data_parallel/allreduce_0 _HlobridgeAllReduce" in message, message
        assert message.endswith("unchanged=True"), message
