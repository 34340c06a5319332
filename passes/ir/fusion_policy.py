"""Which ops fuse into one dispatch: the decisions, on a plain-Python graph of a function body.

The rules follow XLA's fusion passes, limited to what IREE 3.13's llvm-cpu code generation
accepts inside one `flow.dispatch.region`, and to what ran at least as fast as IREE's own
dispatch formation (measured per dispatch on the corpus; the numbers are in the rules below and in
docs/performance.md's "Fusion modes"):

0. Dot epilogues (XLA's output fusion) first: a dot grows forward over the elementwise ops
   of its shape that read it (bias add, ReLU, an optimizer update), with their producers,
   before producer fusion can pull them into a reduction downstream. A dot whose
   StableHLO-to-linalg lowering reshapes (more than one free or contracting dimension on an
   operand) cannot tile with an epilogue inside a region; IREE's own dispatch formation
   propagates the reshape and can, so such a dot and its epilogue stay outside regions. So
   does a dot whose epilogue reads it through a reshape (a product computed transposed and
   laid out back, as ops/nn/conv.py computes a first layer).
1. Producer fusion (XLA's instruction fusion): walking consumers in reverse order, each
   elementwise op, reduction, reduce_window, dot or convolution not yet in a group roots
   one. Loop groups and reductions pull in their "loop" producers: elementwise ops, and the
   cheap ones (broadcasts, iotas, reshapes, transposes, slices, reverses, scalar and i1
   arithmetic), which are copied into every group that reads them, as XLA duplicates cheap
   producers. An elementwise producer with readers outside the group joins it as an extra
   output (producer-consumer multi-output fusion), except into a column reduction.
   Dots, convolutions and reduce_windows take no producers.
2. Reduction epilogues: a reduction takes the loop groups that consume its result in its
   output's iteration space (the mean's divide).
4. Sibling multi-output fusion: independent reductions of the same dims and shape that read
   a common value merge, to be combined into one variadic reduce (fusion.py).

3. Softmax: max, exp(x - max) with its sum, and the divide become one region, the pattern
   IREE itself forms into one dispatch (and runs at IREE's speed). Longer chains of row
   reductions are not fused: mnist's log-softmax cross-entropy took 60 us as one region on
   llvm-cpu where its parts took 15 (and a plain 512x1000 softmax is 1.0 ms as one dispatch,
   IREE's or ours, against 0.6 in three).

Two groups merge only if no path leads from one to the other through a third unit: a
region is atomic, so such a merge would be a cycle. Each group records its ops, its root
(the op whose iteration space it runs in) and its kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hlobridge.analysis.graph_algorithms import reachable

# Op kinds (fusion.py classifies StableHLO ops into these).
ELEMENTWISE = "elementwise"
CHEAP = "cheap"  # broadcasts, slices, transposes, scalar and i1 arithmetic: copied into each reader
REDUCE = "reduce"
WINDOW = "window"  # reduce_window
CONTRACTION = "contraction"  # dot_general, convolution
OUTSIDE = "outside"  # constants, pads, concatenates, control flow, scatter, ...: IREE forms them

LOOP_KINDS = frozenset({ELEMENTWISE, CHEAP})
GROUPABLE = LOOP_KINDS | {REDUCE, WINDOW, CONTRACTION}
# Group kinds that take producers, and the producer kinds each takes.
# A reduce_window takes none: with its ReLU producer, cnn_train's max pool ran 2.2 ms instead
# of 0.8 (IREE 3.13 llvm-cpu, per-dispatch benchmark).
TAKES_PRODUCERS = {"loop": LOOP_KINDS, REDUCE: LOOP_KINDS}


@dataclass
class Node:
    """One top-level op of a function body."""

    index: int
    name: str  # "stablehlo.add"
    kind: str
    shape: tuple  # of result 0 (the iteration space of loop ops)
    operands: list[int] = field(default_factory=list)  # producers in this body, in order
    args: list[int] = field(default_factory=list)  # function arguments read
    users: list[int] = field(default_factory=list)  # consumers in this body (the return excluded)
    output: bool = False  # returned by the function
    combiner: str = ""  # REDUCE: the body's ops ("stablehlo.maximum")
    # REDUCE: (input shape, reduced dims); CONTRACTION: whether IREE tiles it with an epilogue;
    # broadcast_in_dim: its broadcast_dimensions
    detail: object = None


@dataclass
class Group:
    """One planned dispatch region: its ops (indices into the body), its root and kind, and the
    sibling reductions to combine into one variadic reduce."""

    id: int
    root: int
    kind: str  # "loop" or the root's kind
    ops: set[int] = field(default_factory=set)
    # sibling reductions to combine into one variadic reduce (IREE fails to distribute two
    # reduce ops side by side in a region, but runs a variadic reduce as one dispatch)
    variadic: list[list[int]] = field(default_factory=list)

    def sorted_ops(self) -> list[int]:
        """The group's op indices in body order, the order fusion.py moves them into a region."""
        return sorted(self.ops)


class _Planner:
    """Cheap ops are not units of their own: each group that reads one gets a copy, so in
    the unit graph an op reading a cheap op reads that op's operands. A cheap op that
    something outside any group reads (the return, a pad, a dot) also stays outside for
    that reader, and IREE forms it (a transpose into a dot, a broadcast returned)."""

    def __init__(self, nodes: list[Node]):
        self.nodes = nodes
        self.groups: dict[int, Group] = {}
        self.owner: dict[int, int] = {}  # non-cheap op -> its group id
        self.holders: dict[int, set[int]] = {}  # cheap op -> ids of the groups holding a copy

    def eff_users(self, op: int) -> list[int]:
        """The readers of op's result, looking through cheap ops that are not materialised
        (copied into their readers) to the ops that read them."""
        out = []
        for u in self.nodes[op].users:
            if self.nodes[u].kind == CHEAP and u not in self.owner:
                out += self.eff_users(u)
            else:
                out.append(u)
        return out

    # -- groups and units ---------------------------------------------------------------------
    def new_group(self, root: int) -> Group:
        node = self.nodes[root]
        g = Group(len(self.groups), root, "loop" if node.kind in LOOP_KINDS else node.kind, set())
        self.groups[g.id] = g
        self.add(g, root)
        self.owner[root] = g.id
        return g

    def add(self, g: Group, op: int) -> None:
        g.ops.add(op)
        if self.nodes[op].kind == CHEAP:
            self.holders.setdefault(op, set()).add(g.id)
        else:
            self.owner[op] = g.id

    def merge(self, into: Group, other: Group) -> None:
        for op in other.ops:
            if self.nodes[op].kind == CHEAP:
                self.holders[op].discard(other.id)
            self.add(into, op)
            if self.owner.get(op) == other.id:
                self.owner[op] = into.id
        del self.groups[other.id]

    def unit(self, op: int):
        return ("g", self.owner[op]) if op in self.owner else ("op", op)

    def unit_ops(self, unit) -> list[int]:
        if unit[0] == "op":
            return [unit[1]]
        g = self.groups[unit[1]]
        return [op for op in g.ops if self.nodes[op].kind != CHEAP]

    def successors(self, unit) -> set:
        out = {self.unit(u) for op in self.unit_ops(unit) for u in self.eff_users(op)}
        out.discard(unit)
        return out

    def creates_cycle(self, a, b) -> bool:
        """Merging units a and b is a cycle iff one reaches the other through a third unit."""
        return self._reaches(a, b, direct=False) or self._reaches(b, a, direct=False)

    def independent(self, a, b) -> bool:
        """Neither unit reads the other's results, directly or through others."""
        return not (self._reaches(a, b, direct=True) or self._reaches(b, a, direct=True))

    def _reaches(self, x, y, direct: bool) -> bool:
        both = {x, y}
        seen, stack = set(), list(self.successors(x) - (set() if direct else both))
        while stack:
            u = stack.pop()
            if u == y:
                return True
            if u in seen or u in both:
                continue
            seen.add(u)
            stack.extend(self.successors(u))
        return False

    # -- 1. producer fusion -------------------------------------------------------------------
    def producer_fusion(self) -> None:
        for node in reversed(self.nodes):
            i = node.index
            if node.kind in GROUPABLE and node.kind != CHEAP and i not in self.owner:
                g = self.new_group(i)
                self.pull_producers(g, [i])

    def reshapes_result(self, ops: set) -> bool:
        """Whether a reshape in `ops` reads a reduction or dot in `ops`: IREE 3.13 cannot
        distribute a region with an expand_shape after its root (tf2_function_graph's
        keepdims sum, a rank-4 dot's internal collapse)."""
        return any(self.nodes[o].name == "stablehlo.reshape" and any(
            p in ops and self.nodes[p].kind in (REDUCE, CONTRACTION) for p in self.nodes[o].operands)
            for o in ops)

    def ancestors(self, op: int) -> set[int]:
        """Every op `op` reads, directly or through others."""
        return reachable(self.nodes[op].operands, lambda p: self.nodes[p].operands)

    def pull_producers(self, g: Group, frontier: list[int], takes=None, avoid=frozenset()) -> None:
        takes = TAKES_PRODUCERS.get(g.kind, frozenset()) if takes is None else takes
        while frontier:
            op = frontier.pop()
            for p in self.nodes[op].operands:
                pn = self.nodes[p]
                if pn.kind not in takes or p in g.ops or p in self.owner or p in avoid:
                    continue
                if pn.kind != CHEAP and any(u not in g.ops for u in self.eff_users(p)):
                    # an extra output: IREE distributes elementwise ones only, and a column
                    # reduction writing one ran 2.3 ms where IREE's two dispatches took 1.0
                    # (cnn_train's bias gradient)
                    if pn.kind != ELEMENTWISE or not self.row_reduction(g) \
                            or self.creates_cycle(("op", p), ("g", g.id)):
                        continue
                self.add(g, p)
                frontier.append(p)

    def row_reduction(self, g: Group) -> bool:
        """Loop groups, and reductions over the trailing dims (rows in memory)."""
        if g.kind != REDUCE:
            return True
        in_shape, dims = self.nodes[g.root].detail
        return sorted(dims) == list(range(len(in_shape) - len(dims), len(in_shape)))

    # -- 0. dot epilogues, before anything else claims them ------------------------------------
    def dot_epilogues(self) -> None:
        """Each dot that tiles with an epilogue grows forward over the elementwise ops of its
        shape that read it (and what they read: a bias broadcast, Adam's moments), before
        producer fusion can pull them into a reduction downstream."""
        for n in self.nodes:
            if n.kind != CONTRACTION or not n.detail or n.index in self.owner:
                continue
            g = self.new_group(n.index)
            shape = squeezed(n.shape)
            feeds_dot = self.ancestors(n.index)  # IREE tiles a matmul, not its operands
            grown = True
            while grown:
                grown = False
                for op in sorted(o for o in g.ops if self.nodes[o].kind != CHEAP):
                    for u in self.nodes[op].users:  # direct readers: no reshape in between
                        un = self.nodes[u]
                        if un.kind == ELEMENTWISE and u not in self.owner and squeezed(un.shape) == shape \
                                and not self.reshapes_result(g.ops | set(un.operands)) \
                                and not self.creates_cycle(("op", u), ("g", g.id)):
                            self.add(g, u)
                            self.pull_producers(g, [u], takes=LOOP_KINDS, avoid=feeds_dot)
                            grown = True

    # -- 2. reduction epilogues (and leaving reshaping dots to IREE) ---------------------------
    def leave_to_iree(self, g: Group, consumers: list[Group]) -> None:
        """A dot IREE lowers through a reshape, or whose epilogue reads it through one: IREE's
        own dispatch formation propagates the reshape and fuses the epilogue, which a region
        cannot; so the dot and those loop consumers stay outside regions."""
        for c in [g] + consumers:
            for op in c.ops:
                if self.owner.get(op) == c.id:
                    del self.owner[op]
                if op in self.holders:
                    self.holders[op].discard(c.id)
            del self.groups[c.id]

    def consumer_groups(self, g: Group) -> list[Group]:
        ids = {self.owner[u] for op in self.unit_ops(("g", g.id)) for u in self.eff_users(op)
               if u in self.owner} - {g.id}
        return [self.groups[i] for i in sorted(ids)]

    def epilogue_fusion(self) -> None:
        for gid in sorted(self.groups, key=lambda i: self.groups[i].root):
            g = self.groups.get(gid)
            if g is None or g.kind not in (REDUCE, CONTRACTION):
                continue
            shape = self.nodes[g.root].shape
            if g.kind == CONTRACTION and not self.nodes[g.root].detail:
                self.leave_to_iree(g, [c for c in self.consumer_groups(g)
                                       if c.kind == "loop" and self.nodes[c.root].shape == shape])
                continue
            if g.kind == CONTRACTION and len(g.ops) == 1:
                # An epilogue behind a reshape (a product computed transposed and laid out back,
                # ops/nn/conv.py's first layers): IREE fuses it into the matmul; a region cannot.
                behind = [c for c in self.consumer_groups(g) if c.kind == "loop" and self.reshapes_result(g.ops | c.ops)]
                if behind:
                    self.leave_to_iree(g, behind)
                    continue
            while True:
                fits = [c for c in self.consumer_groups(g)
                        if c.kind == "loop" and squeezed(self.nodes[c.root].shape) == squeezed(shape)
                        and not self.reshapes_result(g.ops | c.ops)
                        and not self.creates_cycle(("g", g.id), ("g", c.id))]
                if not fits:
                    break
                self.merge(g, fits[0])

    # -- 3. softmax ---------------------------------------------------------------------------
    def softmax(self) -> None:
        """max, then exp(x - max) and its sum, then the divide: one region, as IREE forms a
        softmax itself (same speed on llvm-cpu; longer row chains, such as mnist's
        log-softmax cross-entropy, ran 4x slower as one region than in parts)."""
        for gid in sorted(self.groups, key=lambda i: self.groups[i].root):
            g = self.groups.get(gid)
            if g is None or g.kind != REDUCE or self.nodes[g.root].combiner != "stablehlo.maximum":
                continue
            for total in self.consumer_groups(g):
                if total.kind != REDUCE or self.nodes[total.root].combiner != "stablehlo.add" \
                        or not self.continues_rows(g, total):
                    continue
                both = Group(-1, g.root, REDUCE, g.ops | total.ops)
                divides = [c for c in self.consumer_groups(total) if c.kind == "loop"
                           and self.nodes[c.root].name == "stablehlo.divide" and self.continues_rows(both, c)]
                if len(divides) != 1:
                    continue
                ops = both.ops | divides[0].ops
                if self.leaving(ops) == {divides[0].root} and not self.reshapes_result(ops) \
                        and not self.creates_cycle(("g", g.id), ("g", total.id)):
                    self.merge(g, total)
                    if not self.creates_cycle(("g", g.id), ("g", divides[0].id)):
                        self.merge(g, divides[0])
                    break

    def leaving(self, ops: set) -> set:
        """The ops of `ops` whose results are read outside it (the region's outputs)."""
        return {op for op in ops if self.nodes[op].kind != CHEAP and (
            self.nodes[op].output or any(u not in ops for u in self.eff_users(op)))}

    def normalize(self) -> None:
        """A reduction takes the elementwise work of its input's shape that reads its result
        broadcast back along the kept dims (exp(x) * 1/sum), as IREE fuses such a consumer
        into the reduction's dispatch: only into a group with one reduction, and only work
        whose intermediate values nobody else reads (mnist's log-softmax, whose values feed
        three more reductions, took 110 us so where IREE's dispatches took 10)."""
        for gid in sorted(self.groups, key=lambda i: self.groups[i].root):
            g = self.groups.get(gid)
            if g is None or g.kind != REDUCE or sum(self.nodes[o].kind == REDUCE for o in g.ops) != 1:
                continue
            fits = [c for c in self.consumer_groups(g) if c.kind == "loop" and self.reads_result(g, c)
                    and self.continues_rows(g, c)
                    and self.leaving(g.ops | c.ops) <= {c.root}
                    and not self.reshapes_result(g.ops | c.ops)
                    and not self.creates_cycle(("g", g.id), ("g", c.id))]
            if fits:
                self.merge(g, fits[0])

    def reads_result(self, g: Group, c: Group) -> bool:
        """Some op of c reads one of g's reductions (a sibling reader of g's producers is not
        g's epilogue: fusing it only makes the region write more)."""
        return any(self.nodes[p].kind == REDUCE and p in g.ops
                   for op in c.ops for p in self.nodes[op].operands)

    def continues_rows(self, g: Group, c: Group) -> bool:
        """c works on the rows g reduces (a reduction of the same dims of the same shape, or
        elementwise work of that shape) and reads g only as whole rows: g's reductions
        broadcast back along the kept dims, or g's values of the row shape."""
        in_shape, dims = self.nodes[g.root].detail
        kept = [d for d in range(len(in_shape)) if d not in dims]
        if not kept:
            return False  # a full reduction: chaining it would run everything in one workgroup
        rc = self.nodes[c.root]
        if not (c.kind == REDUCE and rc.detail == (in_shape, dims)
                or c.kind == "loop" and rc.shape == in_shape):
            return False
        rows = squeezed(in_shape[k] for k in kept)
        kept_dims = [k for k in kept if in_shape[k] != 1]
        for op in c.ops:
            n = self.nodes[op]
            for p in n.operands:
                pn = self.nodes[p]
                if n.name == "stablehlo.broadcast_in_dim" and n.shape == in_shape \
                        and squeezed(pn.shape) == rows and (p in g.ops or p in c.ops):
                    # a per-row value broadcast back: along the kept dims only
                    if [d for d, size in zip(n.detail, pn.shape) if size != 1] != kept_dims:
                        return False
                    continue
                if p not in g.ops or pn.kind == CHEAP:
                    continue
                if n.shape == in_shape and pn.shape == in_shape and pn.kind == ELEMENTWISE:
                    continue  # a value of the rows themselves (exp(x - max))
                return False
        return True

    # -- 4. siblings --------------------------------------------------------------------------
    def sibling_fusion(self) -> None:
        merged = True
        while merged:
            merged = False
            readers: dict = {}  # a value's source -> ids of the groups reading it
            for g in sorted(self.groups.values(), key=lambda g: g.root):
                if g.kind != REDUCE:
                    continue
                for op in g.ops:
                    n = self.nodes[op]
                    sources = [("arg", a) for a in n.args] + [
                        ("op", p) for p in n.operands
                        if p not in g.ops and self.nodes[p].kind not in (CHEAP,)
                        and self.nodes[p].name != "stablehlo.constant"]
                    for s in sources:
                        ids = readers.setdefault(s, [])
                        if g.id not in ids:
                            ids.append(g.id)
            for ids in readers.values():
                for i, a in enumerate(ids):
                    for b in ids[i + 1:]:
                        if self.same_space(a, b) and self.independent(("g", a), ("g", b)):
                            ga, gb = self.groups[a], self.groups[b]
                            combined = self.variadic_of(ga) + self.variadic_of(gb)
                            self.merge(ga, gb)
                            ga.variadic = [v for v in ga.variadic if v[0] not in combined] + [sorted(combined)]
                            merged = True
                            break
                    if merged:
                        break
                if merged:
                    break

    @staticmethod
    def variadic_of(g: Group) -> list[int]:
        """The reductions g's root is combined with (itself included)."""
        return next((v for v in g.variadic if g.root in v), [g.root])

    def same_space(self, a: int, b: int) -> bool:
        ga, gb = self.groups[a], self.groups[b]
        if ga.kind != gb.kind:
            return False
        ra, rb = self.nodes[ga.root], self.nodes[gb.root]
        # reductions with their producers only: one with an epilogue keeps its dispatch
        plain = all(all(op in self.variadic_of(g) or self.nodes[op].kind != REDUCE
                        and op < max(self.variadic_of(g)) for op in g.ops) for g in (ga, gb))
        return ga.kind == REDUCE and ra.detail is not None and ra.detail == rb.detail and plain


def plan(nodes: list[Node], *, epilogues=True, softmax=True, siblings=True) -> list[Group]:
    """Fusion groups for a function body (`nodes` in block order, index = position). A
    broadcast may be in several groups (each gets a copy); no other op is in two."""
    p = _Planner(nodes)
    if epilogues:
        p.dot_epilogues()
    p.producer_fusion()
    if epilogues:
        p.epilogue_fusion()
    if softmax:
        p.softmax()
        p.normalize()
    if siblings:
        p.sibling_fusion()
    return sorted(p.groups.values(), key=lambda g: min(g.ops))


def squeezed(shape) -> tuple:
    """A shape without its unit dims: [5, 1] and [5] hold the same values in the same order."""
    return tuple(d for d in shape if d != 1)


def singletons(nodes: list[Node]) -> list[Group]:
    """One group per groupable op: no fusion at all (reshapes stay metadata to IREE)."""
    return [Group(i, n.index, "loop" if n.kind in LOOP_KINDS else n.kind, {n.index})
            for i, n in enumerate(n for n in nodes
                                  if n.kind in GROUPABLE and n.name != "stablehlo.reshape")]
