"""Graph plumbing, control flow and state: the ops whose job is the graph's structure, its
variables and its checkpoints rather than arithmetic (importing this registers them all).

  basic              Const, Placeholder(WithDefault), Identity(N), StopGradient, Snapshot,
                     EnsureShape, NoOp, CheckNumerics, ControlTrigger, FakeParam, ...
  flow               If, Case, While (and their Stateless forms), Assert, Switch, Merge (and Ref*)
  loop_bounds        which While loops are counted (their trip count known at the start; no ops)
  state              VarHandleOp, ReadVariableOp, Assign*VariableOp, VariableV2, Assign(Add/Sub),
                     the optimizers' Apply* / ResourceApply*, the stateful RandomUniform,
                     RandomStandardNormal, TruncatedNormal, RandomUniformInt
  variable_indexing  ResourceGather, ResourceScatter{Add,Sub,Mul,Div,Min,Max,Update},
                     ResourceScatterNd{Add,Sub,Update}
  checkpoint         SaveV2, RestoreV2, MergeV2Checkpoints, ShardedFilename, StringJoin,
                     StaticRegexFullMatch (a Saver's subgraph)
"""

from . import basic, checkpoint, flow, state, variable_indexing  # noqa: F401  (registration)
