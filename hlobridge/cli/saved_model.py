"""hlobridge-compile and hlobridge-explain of a SavedModel directory: --signature and --tags,
and what each tool works on (a frozen signature; the Session's plan for it)."""

from __future__ import annotations

from ..frontend.graph import Graph
from ..frontend.saved_model import DEFAULT_SIGNATURE, DEFAULT_TAGS, is_saved_model  # noqa: F401  (for the CLIs)
from ..runtime.saved_model import LoadedSavedModel, freeze_signature, load_saved_model


def add_cli_arguments(parser) -> None:
    """--signature and --tags, for hlobridge-compile and hlobridge-explain."""
    parser.add_argument("--signature", default=None,
                        help=f"for a SavedModel directory: the signature (default {DEFAULT_SIGNATURE})")
    parser.add_argument("--tags", default=None,
                        help=f"for a SavedModel directory: its MetaGraph's tags, comma-separated "
                             f"(default {','.join(DEFAULT_TAGS)})")


def _cli_model(args) -> LoadedSavedModel:
    tags = None if args.tags is None else [t.strip() for t in args.tags.split(",") if t.strip()]
    return load_saved_model(args.graph, args.signature, tags, jit="off", cache_dir=False)


def compile_target(args, io: dict) -> tuple[Graph, dict]:
    """hlobridge-compile of a SavedModel: the frozen signature, its inputs and outputs named by
    the SignatureDef's keys in the compiled module (`pooled_output`, not `pooled_output:0`,
    as TF's signature returns them); --input-shape takes a key or the tensor name."""
    model = _cli_model(args)
    graph, inputs, outputs = freeze_signature(model)
    alias = {}
    for io_, name in zip(model._inputs, inputs):
        alias.update({io_.key: name, io_.tensor: name, io_.tensor.split(":")[0]: name})
    shapes = {alias.get(k, k): v for k, v in (io.get("input_shapes") or {}).items()}
    keys = {}
    if not io.get("inputs") and not io.get("outputs"):  # (--inputs/--outputs name tensors: theirs)
        keys = {**{name: io_.key for io_, name in zip(model._inputs, inputs)},
                **{name: io_.key for io_, name in zip(model._outputs, outputs)}}
    return graph, {"inputs": io.get("inputs") or inputs, "outputs": io.get("outputs") or outputs,
                   "input_shapes": shapes, "names": keys}


def explain_target(args) -> tuple[Graph, list[str], list[str]]:
    """hlobridge-explain of a SavedModel: the Session's graph, fetching the signature's outputs
    and feeding its inputs (the plan `load_saved_model(...).run` uses)."""
    model = _cli_model(args)
    return model.session.graph, [io.tensor for io in model._outputs], [io.tensor for io in model._inputs]
