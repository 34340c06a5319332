"""Collectives: ops whose kernel talks to the other ranks of an MPI world
(hlobridge.distributed). They never compile: each is a unit of the plan between compiled
clusters (clustering reason `collective`), so a cluster that would span one splits there.

allreduce.py       `_HlobridgeAllReduce`, the bucketed gradient all-reduce data-parallel
                   Sessions insert (hlobridge/distributed/data_parallel.py)
tf_collectives.py  TensorFlow's CollectiveReduce/Gather/Bcast (V1, V2), ReduceScatterV2,
                   AllToAllV2, AssignGroupV2 (tf.distribute's MultiWorkerMirroredStrategy);
                   NcclAllReduce refused
"""

from . import allreduce, tf_collectives  # noqa: F401  (registration)
