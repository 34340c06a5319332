"""benchmarks/compile_ahead.py: a row starts the graph cold both ways, compiles each tower's
binary once per start (one binary for towers alike), and leaves the process's flags as they were."""

from benchmarks import compile_ahead as bench
from hlobridge import flags


def test_a_row_of_towers_alike_compiles_one_binary_either_way():
    row = bench.measure(2, 2, 16, alike=True, repeat=1)
    assert row["clusters"] == "2" and row["compiles"] == "1"
    lazy, ahead = float(row["one at a time s"]), float(row["side by side s"])
    assert lazy > 0 and ahead > 0
    assert flags.from_environment().compile_ahead


def test_towers_of_their_own_compile_one_binary_each():
    graph, fetch, feeds = bench.towers(2, 2, 16, alike=False)
    for ahead in (True, False):
        _, events = bench.cold_start(graph, fetch, feeds, ahead)
        assert [e.source for e in events] == ["compiled", "compiled"]
        second_began_early = events[1].started < events[0].started + events[0].seconds
        assert second_began_early == ahead  # side by side: before the first was done
