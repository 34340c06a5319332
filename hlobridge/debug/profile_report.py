"""A Profile (profile.py) as the console reads it and as JSON.

The table starts with the step and each cluster (its launch time and share of the step, what
its dispatches took in the replay), how each cluster's binary was had (compiled: hlobridge's
lowering and passes against IREE's compile; or from a cache), then the longest rows: dispatches,
ops on reference kernels, each cluster's time outside its dispatches, Session.run's own. A dispatch shows
IREE's number and name (`#139 matmul_800x64x6272_f32`: what IREE says the kernel does) and
the TF nodes it came from with their op types, its root first.
"""

from __future__ import annotations

NODES_SHOWN = 3  # TF nodes named per row of the table; the JSON has them all


def _nodes_text(nodes, ops) -> str:
    shown = [f"{n} ({o})" for n, o in zip(nodes[:NODES_SHOWN], ops)]
    more = len(nodes) - NODES_SHOWN
    return ", ".join(shown) + (f", +{more} more" if more > 0 else "")


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f}%"


def format_table(prof, top: int) -> str:
    """The console report of `prof`: summary lines, then its `top` longest rows."""
    step = prof.step_ms
    kernels = prof.kernel_times()
    lines = [f"{prof.subject}: {step:.3f} ms (median of {len(prof.runs)} timed run(s), device "
             f"{prof.device or 'none'}); dispatches replayed {prof.iterations}x in iree-benchmark-module"]
    for c in prof.clusters:
        launch = prof.cluster_ms(c.name)
        nodes = f"{c.nodes} nodes, " if c.nodes else ""
        on = "" if c.backend == "iree" else f" on {c.backend}"
        text = (f"  {c.name}{on}: {launch:.3f} ms, {_pct(launch / step if step else None)} of the step, "
                f"{nodes}{len(c.dispatches)} dispatches: {c.dispatch_ms:.3f} ms replayed "
                f"(command buffers {c.replay_ms:.3f} ms{f', the call {c.call_ms:.3f} ms' if c.call_ms else ''})")
        scale = prof.replay_scale(c)
        notes = [c.note] if c.note else []
        if c.executor == "cpu":
            notes.append("on the calling thread (local-sync: a small cluster, HLOBRIDGE_FLAGS --small-cluster-flops)")
        if scale < 0.995:  # (what rounds to 1.00x is not worth a note)
            notes.append(f"the replay ran {1 / scale:.2f}x slower than the launch: its times scaled by {scale:.2f}")
        lines.append("; ".join([text, *notes]))
    lines += [f"  {_compile_text(e)}" for e in prof.compiles]
    host = [ms for _, ms, cluster in kernels.values() if cluster is None]
    if host:
        lines.append(f"  reference kernels: {len(host)} ops, {sum(host):.3f} ms, "
                     f"{_pct(sum(host) / step if step else None)} of the step")
    rows = prof.rows()
    shown = rows[:top]
    lines.append(f"top {len(shown)} of {len(rows)} rows (dispatches, reference-kernel ops, other time):")
    header = ("rank", "ms", "%step", "%clust", "cum%", "where", "dispatch / op", "TF nodes (ops)")
    table = [header]
    cumulative = 0.0
    for rank, r in enumerate(shown, 1):
        cumulative += r.ms
        share = r.ms / step if step else None
        where = r.cluster or ("host" if r.kind == "kernel" else "")
        table.append((str(rank), f"{r.ms:.3f}", _pct(share), _pct(r.cluster_share),
                      _pct(cumulative / step if step else None), where, r.label, _nodes_text(r.nodes, r.ops)))
    lines += _columns(table, right=5)
    nodes = prof.by_node()
    lines.append(f"top {min(top, len(nodes))} of {len(nodes)} TF nodes (each dispatch at its root node):")
    table = [("rank", "ms", "%step", "dispatches", "TF node (op)")]
    for rank, (node, op, ms, count) in enumerate(nodes[:top], 1):
        table.append((str(rank), f"{ms:.3f}", _pct(ms / step if step else None), str(count) if count else "host",
                      f"{node} ({op})"))
    lines += _columns(table, right=4)
    return "\n".join(lines)


def _compile_text(e) -> str:
    """One compile event (runtime/cluster_launch.CompileEvent): where its binary came from and
    what that took, hlobridge's part and IREE's."""
    shapes = ", ".join(e.input_texts()) if len(e.shapes) <= 3 else f"{len(e.shapes)} tensor inputs"
    shapes = shapes or "no tensor inputs"
    head = f"{e.cluster} ({shapes}): "
    if e.source == "compiled":
        backend = "IREE" if e.backend == "iree" else e.backend.upper()
        return (head + f"compiled in {e.seconds:.2f} s: hlobridge {e.lowering:.2f} s (lowering and its passes), "
                f"{backend} {e.iree:.2f} s")
    if e.source == "fallback":
        return head + f"did not compile ({e.seconds:.2f} s): its ops ran on reference kernels"
    return head + f"from the {e.source} cache in {e.seconds:.2f} s"


def _columns(table: list, right: int) -> list[str]:
    """Rows of cells aligned in columns: the first `right` right-aligned, the last left ragged."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    return ["  " + "  ".join([c.rjust(w) if i < right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
                             + [row[-1]]).rstrip() for row in table]


def profile_dict(prof, top: int | None) -> dict:
    """`prof` as plain data: the step, the clusters, and the rows (the `top` longest, or all)."""
    step = prof.step_ms
    rows = prof.rows()
    return {
        "subject": prof.subject, "step_ms": step, "steps": len(prof.runs), "device": prof.device, "replayed_calls": prof.iterations,
        "clusters": [{"name": c.name, "nodes": c.nodes, "launch_ms": prof.cluster_ms(c.name),
                      "replayed_dispatch_ms": c.dispatch_ms, "replayed_command_buffer_ms": c.replay_ms,
                      "replayed_call_ms": c.call_ms or None,
                      "replay_scale": prof.replay_scale(c), "dispatches": len(c.dispatches), "note": c.note,
                      "executor": c.executor or prof.device, "backend": c.backend}
                     for c in prof.clusters],
        "compiles": [{"cluster": e.cluster, "shapes": [[d, list(s)] for d, s in e.shapes], "source": e.source,
                      "seconds": e.seconds, "lowering_s": e.lowering, "iree_s": e.iree,
                      "backend": e.backend} for e in prof.compiles],
        "rows": [{"kind": r.kind, "ms": r.ms, "share_of_step": r.ms / step if step else None,
                  "share_of_cluster": r.cluster_share, "replayed_ms": r.replayed_ms, "cluster": r.cluster,
                  "label": r.label, "nodes": list(r.nodes), "ops": list(r.ops)}
                 for r in (rows if top is None else rows[:top])],
    }
