"""The shared graph algorithms: one closure, one ranked topological order."""

from hlobridge.analysis.graph_algorithms import ranked_topological_order, reachable


def test_reachable_follows_successors_once_each_and_includes_the_starts():
    edges = {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": ["a"], "e": ["a"]}
    calls = []

    def successors(k):
        calls.append(k)
        return edges[k]

    assert reachable(["a"], successors) == {"a", "b", "c", "d"}
    assert sorted(calls) == ["a", "b", "c", "d"]  # a cycle back to "a" is not expanded again
    assert reachable([], successors) == set()


def test_reachable_stops_where_successors_say_so():
    edges = {"x": ["y"], "y": ["z"], "z": []}
    assert reachable(["x"], lambda k: [] if k == "y" else edges[k]) == {"x", "y"}


def test_ranked_topological_order_takes_the_lowest_rank_among_the_ready():
    deps = {"load": [], "b": ["load"], "a": ["load"], "sum": ["a", "b"]}
    assert ranked_topological_order(deps, {"load": 0, "a": 1, "b": 2, "sum": 3}) == ["load", "a", "b", "sum"]
    assert ranked_topological_order(deps, {"load": 0, "a": 2, "b": 1, "sum": 3}) == ["load", "b", "a", "sum"]


def test_ranked_topological_order_leaves_out_keys_on_a_cycle():
    deps = {"a": [], "b": ["c"], "c": ["b"], "d": ["c"]}
    assert ranked_topological_order(deps, {k: i for i, k in enumerate(deps)}) == ["a"]
