"""Collectives: ops whose kernel talks to the other ranks of an MPI world
(hlobridge.distributed). They never compile: each is a unit of the plan between compiled
clusters (clustering reason `collective`), so a cluster that would span one splits there.

allreduce.py  `_HlobridgeAllReduce`, the bucketed gradient all-reduce data-parallel
              Sessions insert (hlobridge/distributed/data_parallel.py)
"""

from . import allreduce  # noqa: F401  (registration)
