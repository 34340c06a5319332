"""Sets of op names that several stages ask about, spelled once.

The Session, the compiler, clustering, shape inference and the dispatch statistics all need
to know which ops are graph inputs; before this module each wrote its own tuple, and they
disagreed on `PlaceholderWithDefault`.
"""

from __future__ import annotations

# Ops that must be fed: running one without a feed is an error.
PLACEHOLDERS = frozenset({"Placeholder", "PlaceholderV2"})
# Ops whose value comes from outside the graph (a feed, or the default when none is given).
# They are never constant-folded and never compiled into a cluster.
GRAPH_INPUTS = PLACEHOLDERS | {"PlaceholderWithDefault"}
# Ops that see dead inputs instead of dying with them (TF's executor: Merge forwards whichever
# input is alive).
DEADNESS_AWARE = frozenset({"Merge", "RefMerge"})
# Ops that talk to the other ranks (ops/collective/): never compiled, never folded; each is a
# unit of the plan between clusters, issued in the same order on every rank.
COLLECTIVES = frozenset({
    "_HlobridgeAllReduce", "CollectiveReduce", "CollectiveReduceV2", "CollectiveReduceV3",
    "CollectiveGather", "CollectiveGatherV2", "CollectiveBcastSend", "CollectiveBcastSendV2",
    "CollectiveBcastRecv", "CollectiveBcastRecvV2", "CollectiveReduceScatterV2", "CollectiveAllToAllV2",
    "CollectiveAllToAllV3", "NcclAllReduce", "NcclReduce", "NcclBroadcast"})


class _Dead:
    """The value on the untaken side of a Switch (see runtime.interpreter for deadness)."""

    def __repr__(self) -> str:
        return "DEAD"


DEAD = _Dead()
