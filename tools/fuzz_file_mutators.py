"""Mutants of what users load besides GraphDefs (tools/fuzz_loaders.py runs them): SavedModels and
TensorBundle checkpoints, mutated at the protobuf level (saved_model.pb, the index's header and
entries), at the SSTable level (block contents with their checksums fixed, footer handles) and
as raw bytes (flips, truncation, deleted files); and command lines for the CLIs, with odd,
negative, huge, empty and wrong-typed values.

Mutant `index` of run `seed` is a function of (seed, index) alone: `make_file_mutant` and
`make_cli_case` seed a `random.Random` with both.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

from fuzz_mutators import ROOT

DATA = ROOT / "tests" / "data" / "saved_models"
# the seeds: tests/data/saved_models/NAME/saved_model, and NAME/ckpt/NAME.* (TensorFlow wrote both)
SAVED_MODELS = ["module", "tf1_builder", "keras_export", "mutable_tables"]
CHECKPOINTS = ["sliced", "sharded", "dtypes"]
SAVED_MODEL_TARGETS = ("load", "session", "compile", "read_checkpoint")
CHECKPOINT_TARGETS = ("read_checkpoint", "restore")


@dataclass
class FileMutant:
    """A seed's files with some replaced (bytes) or deleted (None), and the targets to run."""

    seed: int
    index: int
    name: str  # the seed's name
    kind: str  # "saved_model" | "checkpoint"
    files: dict  # relative path -> bytes (None: deleted)
    prefix: str  # the checkpoint prefix relative to the mutant's folder ("" for a SavedModel)
    targets: tuple
    mutations: list = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.seed}_{self.index}"

    def describe(self) -> str:
        return f"{self.name}: " + "; ".join(self.mutations)

    def write(self, folder: Path) -> Path:
        """The mutant's files under `folder`; returns the path the targets load."""
        for rel, data in self.files.items():
            if data is not None:
                (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                (folder / rel).write_bytes(data)
        return folder / self.prefix if self.prefix else folder


def _seed_files(name: str, kind: str) -> tuple[dict, str]:
    """(relative path -> bytes, checkpoint prefix) of a seed: a SavedModel's folder, or a checkpoint's."""
    if kind == "checkpoint":
        folder = DATA / name / "ckpt"
        return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}, name
    root = DATA / name / "saved_model"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}, ""


# -- protobuf: any field of any message, set to an odd value ---------------------------------
ODD_INTS = [-1, 0, 1, 2, 7, 2 ** 31 - 1, -2 ** 31, 2 ** 32, 2 ** 40, 2 ** 62, 2 ** 63 - 1, -2 ** 63]
ODD_FLOATS = [float("nan"), float("inf"), -1e30, 0.0, -0.0]
ODD_STRINGS = ["", "x", "x:7", "nope:0", "^a", "a" * 300, "\u00e9\u0000", "save/Const:0", "variables/variables",
               "../../etc/passwd", "serving_default", "/nonexistent"]


def _repeated(fd) -> bool:
    """(protobuf 6 drops FieldDescriptor.label)"""
    return fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == fd.LABEL_REPEATED


def _leaves(msg, out: list, depth: int = 0) -> list:
    """(message, field, key-or-index-or-None) for every set field, depth-first."""
    from google.protobuf.descriptor import FieldDescriptor as F
    if depth > 40:
        return out
    for fd, value in msg.ListFields():
        is_map = fd.type == F.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry
        if is_map:
            for k in list(value):
                out.append((msg, fd, ("map", k)))
                v = value[k]
                if hasattr(v, "ListFields"):
                    _leaves(v, out, depth + 1)
        elif _repeated(fd):
            for i in range(len(value)):
                out.append((msg, fd, i))
                if fd.type == F.TYPE_MESSAGE:
                    _leaves(value[i], out, depth + 1)
        else:
            out.append((msg, fd, None))
            if fd.type == F.TYPE_MESSAGE:
                _leaves(value, out, depth + 1)
    return out


def _odd_value(rng: random.Random, fd, current):
    from google.protobuf.descriptor import FieldDescriptor as F
    t = fd.type
    if t == F.TYPE_BOOL:
        return not current
    if t in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
        return rng.choice(ODD_FLOATS)
    if t == F.TYPE_STRING:
        return rng.choice(ODD_STRINGS)
    if t == F.TYPE_BYTES:
        return rng.choice([b"", b"\xff" * rng.randint(1, 64), bytes(rng.randrange(256) for _ in range(16))])
    if t == F.TYPE_ENUM:
        return rng.choice([0, 1, 7, 19, 21, 99, 101, 2 ** 31 - 1, -1])
    value = rng.choice(ODD_INTS + [current + 1, current - 1, current * 2, rng.randint(-10, 10 ** 6)])
    return value


def mutate_proto(rng: random.Random, msg) -> str:
    """One change to a random set field of `msg` (in place); what was changed, as text."""
    leaves = _leaves(msg, [])
    if not leaves:
        return "nothing to mutate"
    for _ in range(20):
        parent, fd, where = rng.choice(leaves)
        container = getattr(parent, fd.name)
        try:
            if isinstance(where, tuple):  # a map entry: drop it, or copy it under a new key
                key = where[1]
                if rng.random() < 0.5:
                    del container[key]
                    return f"{fd.full_name}: deleted key {key!r}"
                new = key + "_x" if isinstance(key, str) else key + 1
                if hasattr(container[key], "CopyFrom"):
                    container[new].CopyFrom(container[key])
                else:
                    container[new] = container[key]
                return f"{fd.full_name}: copied key {key!r} to {new!r}"
            if where is not None:  # a repeated element: delete, duplicate or change it
                action = rng.choice(["delete", "duplicate", "change"])
                if action == "delete":
                    del container[where]
                    return f"{fd.full_name}[{where}]: deleted"
                if action == "duplicate":
                    if hasattr(container[where], "CopyFrom"):
                        container.add().CopyFrom(container[where])
                    else:
                        container.append(container[where])
                    return f"{fd.full_name}[{where}]: duplicated"
                if hasattr(container[where], "ListFields"):
                    continue
                value = _odd_value(rng, fd, container[where])
                container[where] = value
                return f"{fd.full_name}[{where}] = {value!r}"[:200]
            if hasattr(container, "ListFields"):
                if rng.random() < 0.3:
                    parent.ClearField(fd.name)
                    return f"{fd.full_name}: cleared"
                continue
            value = _odd_value(rng, fd, container)
            setattr(parent, fd.name, value)
            return f"{fd.full_name} = {value!r}"[:200]
        except (ValueError, TypeError, IndexError, KeyError):
            continue
    return "no valid change found"


# -- file mutations ---------------------------------------------------------------------------
def _bytes_mutation(rng: random.Random, files: dict, rel: str) -> str:
    data = files[rel]
    kind = rng.choice(["flip", "truncate", "append", "zero", "delete"] if data else ["append", "delete"])
    if kind == "delete":
        files[rel] = None
        return f"{rel}: deleted"
    if kind == "truncate":
        n = rng.choice([0, 1, len(data) // 2, len(data) - 1, rng.randrange(len(data))])
        files[rel] = data[:n]
        return f"{rel}: truncated to {n} of {len(data)} bytes"
    if kind == "append":
        files[rel] = data + bytes(rng.randrange(256) for _ in range(rng.choice([1, 7, 100])))
        return f"{rel}: junk appended"
    buf = bytearray(data)
    at = rng.randrange(len(buf))
    if kind == "zero":
        n = rng.randint(1, 64)
        buf[at:at + n] = bytes(len(buf[at:at + n]))
        files[rel] = bytes(buf)
        return f"{rel}: zeroed {n} bytes at {at}"
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        at = rng.randrange(len(buf))
        buf[at] ^= 1 << rng.randrange(8)
    files[rel] = bytes(buf)
    return f"{rel}: bits flipped near {at}"


def _saved_model_proto(rng: random.Random, files: dict) -> str:
    from hlobridge.frontend.proto.saved_model_schema import SavedModel
    saved = SavedModel()
    saved.ParseFromString(files["saved_model.pb"])
    meta = saved.meta_graphs[0]
    # half the time aim at what a SavedModel adds to a GraphDef: signatures, objects, saver, collections
    roots = [saved] + [getattr(meta, f) for f in ("signature_def", "object_graph_def", "saver_def",
                                                  "collection_def", "asset_file_def")
                       if f in ("signature_def", "collection_def", "asset_file_def") or meta.HasField(f)]
    variables = [n for n in meta.graph_def.node if n.op in ("VarHandleOp", "VariableV2", "RestoreV2", "SaveV2")]
    roots += variables
    root = saved if rng.random() < 0.4 else rng.choice(roots)
    if not hasattr(root, "ListFields"):  # a map (signature_def, collection_def) or a repeated field
        items = list(root.values()) if hasattr(root, "values") else list(root)
        if not items:
            root = saved
        else:
            root = rng.choice(items)
    what = mutate_proto(rng, root)
    files["saved_model.pb"] = saved.SerializeToString()
    return f"saved_model.pb: {what}"


def _index_entry(rng: random.Random, files: dict, rel: str) -> str:
    """An index's header or a tensor's entry changed at the protobuf level, the table rewritten whole."""
    from hlobridge.frontend import sstable
    from hlobridge.frontend.proto.bundle_schema import BundleEntryProto, BundleHeaderProto
    try:
        table = sstable.read_table(files[rel])
    except sstable.TableError:
        return _bytes_mutation(rng, files, rel)
    i = rng.randrange(len(table))
    key, value = table[i]
    msg = BundleHeaderProto() if key == b"" else BundleEntryProto()
    msg.ParseFromString(value)
    if key and rng.random() < 0.5:  # the fields a reader sizes things by
        field_name = rng.choice(["dtype", "shard_id", "offset", "size", "crc32c", "shape", "slices"])
        if field_name == "shape":
            del msg.shape.dim[:]
            for _ in range(rng.randint(0, 4)):
                msg.shape.dim.add(size=rng.choice([0, 1, 3, -1, 2 ** 20, 2 ** 32, 2 ** 40, 2 ** 62]))
        elif field_name == "slices":
            s = msg.slices.add()
            for _ in range(rng.randint(0, 3)):
                e = s.extent.add(start=rng.choice([0, 1, -1, 2 ** 40]))
                if rng.random() < 0.7:
                    e.length = rng.choice([0, 1, 2, -1, 2 ** 40])
        else:
            value_ = rng.choice(ODD_INTS) if field_name != "dtype" else rng.choice([0, 1, 3, 7, 9, 20, 21, 99, 101])
            try:
                setattr(msg, field_name, value_)
            except ValueError:
                setattr(msg, field_name, 1)
        what = f"{field_name} set"
    else:
        what = mutate_proto(rng, msg)
    if rng.random() < 0.1 and key:  # a key renamed (may break the order: a table error)
        key = key + b"_" if rng.random() < 0.5 else key[:-1]
    table[i] = (key, msg.SerializeToString())
    table.sort(key=lambda kv: kv[0])
    try:
        files[rel] = sstable.write_table(_dedup(table))
    except ValueError:
        return f"{rel}: entry {key!r}: rewrite failed"
    return f"{rel}: entry {key[:40]!r}: {what}"[:240]


def _dedup(table):
    out, seen = [], set()
    for k, v in table:
        if k not in seen:
            seen.add(k)
            out.append((k, v))
    return out


def _index_block(rng: random.Random, files: dict, rel: str) -> str:
    """Bytes inside a table block changed and its checksum fixed (so the block parser sees them),
    or the footer's block handles rewritten."""
    from hlobridge.frontend import sstable
    data = bytearray(files[rel])
    if len(data) < sstable.FOOTER_SIZE + 8:
        return _bytes_mutation(rng, files, rel)
    if rng.random() < 0.3:  # footer handles: odd offsets and sizes
        handle = sstable.varint(rng.choice([0, 1, 2 ** 20, 2 ** 40, 2 ** 63])) + \
            sstable.varint(rng.choice([0, 4, 2 ** 31, 2 ** 62]))
        meta, pos = sstable._handle(bytes(data[-sstable.FOOTER_SIZE:]))
        footer = sstable.varint(meta[0]) + sstable.varint(meta[1]) + handle
        footer += b"\0" * (40 - len(footer)) if len(footer) <= 40 else b""
        data[-sstable.FOOTER_SIZE:] = footer[:40] + struct.pack("<Q", sstable.MAGIC)
        files[rel] = bytes(data)
        return f"{rel}: footer index handle rewritten"
    # the first block (data): flip bytes or set the restart count, then fix its trailer's CRC
    meta, pos = sstable._handle(bytes(data[-sstable.FOOTER_SIZE:]))
    index_handle, _ = sstable._handle(bytes(data[-sstable.FOOTER_SIZE:]), pos)
    handles = [index_handle]
    try:
        for _, value in sstable._entries(sstable._block(bytes(data), index_handle, "index"), "index"):
            handles.append(sstable._handle(value)[0])
    except sstable.TableError:
        pass
    offset, size = rng.choice(handles)
    if size == 0 or offset + size + 5 > len(data):
        return _bytes_mutation(rng, files, rel)
    block = bytearray(data[offset:offset + size])
    if rng.random() < 0.3 and size >= 4:
        block[-4:] = struct.pack("<I", rng.choice([0, 1, 2 ** 20, 2 ** 31, 2 ** 32 - 1]))
        what = "restart count"
    else:
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(size)
            block[at] = rng.choice([0x00, 0xFF, 0x80, 0x7F, block[at] ^ (1 << rng.randrange(8))])
        what = "bytes"
    data[offset:offset + size] = block
    import google_crc32c
    crc = sstable.mask_crc(google_crc32c.extend(google_crc32c.value(bytes(block)), bytes([data[offset + size]])))
    data[offset + size + 1:offset + size + 5] = struct.pack("<I", crc)
    files[rel] = bytes(data)
    return f"{rel}: block at {offset} ({size} bytes): {what} changed, CRC fixed"


def make_file_mutant(seed: int, index: int) -> FileMutant:
    """Mutant `index` of run `seed`: a SavedModel (2 in 3) or a checkpoint, one to three mutations."""
    rng = random.Random(f"files:{seed}:{index}")
    if rng.random() < 2 / 3:
        name, kind, targets = rng.choice(SAVED_MODELS), "saved_model", SAVED_MODEL_TARGETS
    else:
        name, kind, targets = rng.choice(CHECKPOINTS), "checkpoint", CHECKPOINT_TARGETS
    files, prefix = _seed_files(name, kind)
    m = FileMutant(seed, index, name, kind, dict(files), prefix, (rng.choice(targets),))
    index_files = [r for r in files if r.endswith(".index")]
    data_files = [r for r in files if ".data-" in r]
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        live = [r for r, d in m.files.items() if d is not None]
        choice = rng.random()
        if kind == "saved_model" and choice < 0.4 and m.files.get("saved_model.pb"):
            try:
                m.mutations.append(_saved_model_proto(rng, m.files))
                continue
            except Exception:  # noqa: BLE001  (a pb already broken by an earlier mutation)
                pass
        live_index = [r for r in index_files if m.files.get(r)]
        try:
            if choice < 0.7 and live_index:
                rel = rng.choice(live_index)
                m.mutations.append(_index_entry(rng, m.files, rel) if rng.random() < 0.6 else
                                   _index_block(rng, m.files, rel))
            elif live:
                pool = [r for r in data_files if m.files.get(r) is not None] or live
                rel = rng.choice(pool if rng.random() < 0.6 else live)
                m.mutations.append(_bytes_mutation(rng, m.files, rel))
        except Exception as e:  # noqa: BLE001  (an index an earlier mutation broke: the next one)
            m.mutations.append(f"(a mutation found nothing to parse: {type(e).__name__})")
    return m


# -- command lines ----------------------------------------------------------------------------
SHAPES = ["x=", "=4,3", "x", "x=-1,3", "x=4,3,", "x=1e3,3", "x=99999999999999999999,3", "x=0,3", "x=4x3",
          "nope=4,3", "x:0=4,3", "x:7=4,3", "x=4,3=2", "x=()", "x=scalar", "x=\u0663,3", "x= 4 , 3", "x=4,3",
          "x=2,3", "x=4,-0", "x=4,3,2,1,5,6,7,8", "x=2147483648,1", "x=0,0", "tokens=2", "features=2,4",
          "x=4;3", "x=0x10,3", "x=4,3\x00"]
NAMES = ["", ",", "x", "x:0", "x:1", "y:7", "y:-1", "nope", "y:99999999999999999999", "mul", "y,y", "x,y", ":0",
         "^y", "y:0:0", "y", "mul:0,y:0", "x:0,x:0", " y ", "w", "w:0"]
SIGNATURES = ["", "nope", "serving_default", "__saved_model_init_op", "\x00", "predict"]
IREE_FLAGS = ["", "--", "--nonsense", "--iree-llvmcpu-target-cpu=", "-o=/tmp/x", "--iree-opt-level=O9",
              "--iree-hal-target-device=nope", "x" * 5000, "--iree-llvmcpu-target-cpu=host", "--mlir-print-ir-after-all=2"]
ENV_FLAGS = ["--max-tensor-elements=-5", "--max-tensor-elements=abc", "--max-constant-bytes=0",
             "--max-loop-iterations=1e99", "--dump-to=/proc/x", "--unknown-flag", "--small-cluster-flops=-1",
             "--dump-pass=(", "", "--no-compile-ahead=1", "--max-tensor-elements", "--max-tensor-elements=1",
             "--max-constant-bytes=99999999999999999999999", "'--dump-to", "--dump-to="]
OUTPUTS = ["", "-", "/nonexistent/m.vmfb", "{tmp}", "/proc/x.vmfb", "{tmp}/m.vmfb", "/dev/null", "/dev/full",
           "{tmp}/sub/m.vmfb", "{tmp}/m.mlir"]
GRAPHS = ["{graph}"] * 14 + ["{saved_model}"] * 3 + ["/nonexistent.pbtxt", "{tmp}", "/dev/null", "{empty}", ""]
OTHER = [["--target", "bogus"], ["--target", "cuda"], ["--cpu", ""], ["--cpu", "nope-cpu"], ["--cpu-triple", "mips"],
         ["--cpu-triple", ""], ["--precision", "f8"], ["--precision", "bf16"], ["--fusion", "none"],
         ["--stats", "/proc/s.json"], ["--stats", "{tmp}"], ["--dump-to", "/proc/d"], ["--dump-pass", "("],
         ["--cuda-arch", "sm_abc"], ["--data-tiling", "maybe"], ["--tags", ""], ["--tags", "train"], ["--emit", "stablehlo"],
         ["--emit", "stablehlo"], ["--emit", "stablehlo"], ["--emit", "mlir"]]
TOOLS = ["compile"] * 6 + ["explain", "opt"]


@dataclass
class CliCase:
    seed: int
    index: int
    tool: str
    argv: list
    env_flags: str | None

    @property
    def id(self) -> str:
        return f"{self.seed}_{self.index}"

    def describe(self) -> str:
        env = f"HLOBRIDGE_FLAGS={self.env_flags!r} " if self.env_flags is not None else ""
        return env + f"hlobridge-{self.tool} " + " ".join(repr(a) if " " in a or not a else a for a in self.argv)


def make_cli_case(seed: int, index: int) -> CliCase:
    """Command line `index` of run `seed`: a graph argument and one to three odd options; most emit
    StableHLO (fast), 1 in 8 compile a vmfb (so the IREE flags and -o's writing are reached)."""
    rng = random.Random(f"cli:{seed}:{index}")
    tool = rng.choice(TOOLS)
    argv = [rng.choice(GRAPHS)]
    opts = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        what = rng.choice(["shape", "inputs", "outputs", "o", "signature", "iree", "other", "shape"])
        if what == "shape":
            opts += ["--input-shape", rng.choice(SHAPES)]
        elif what in ("inputs", "outputs"):
            opts += [f"--{what}", rng.choice(NAMES)]
        elif what == "o":
            opts += ["-o", rng.choice(OUTPUTS)]
        elif what == "signature":
            opts += ["--signature", rng.choice(SIGNATURES)]
        elif what == "iree":
            opts += [f"--iree-flag={rng.choice(IREE_FLAGS)}"]  # (as a user passes a value that starts with -)
        else:
            opts += rng.choice(OTHER)
    if tool == "compile":
        if "-o" not in opts and rng.random() < 0.9:
            opts += ["-o", "{tmp}/m.vmfb"]
        if "--emit" not in " ".join(opts) and rng.random() < 3 / 4:
            opts += ["--emit", "stablehlo"]
        if "--input-shape" not in opts and rng.random() < 0.7:
            opts += ["--input-shape", "x=4,3"]
    elif tool == "explain":  # explain takes no -o, --iree-flag, --emit, --target: argparse says so
        pass
    env = rng.choice(ENV_FLAGS) if rng.random() < 0.25 else None
    return CliCase(seed, index, tool, argv + opts, env)
