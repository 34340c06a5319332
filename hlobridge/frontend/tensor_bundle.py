"""TensorBundle, TensorFlow's V2 checkpoint format, read and written without TensorFlow.

A checkpoint `prefix` is `prefix.index` (an SSTable, sstable.py: key "" holds the
BundleHeaderProto, every other key a BundleEntryProto) and `prefix.data-NNNNN-of-MMMMM`
shards holding the raw tensor bytes that the entries point at (shard, offset, size, CRC32C).
A partitioned (sliced) tensor has an entry with its full shape and a list of slices, and
each slice is an entry of its own under a key that `slice_key` encodes.

Invariants:
- nothing is returned before its checksum has been verified (table blocks, each tensor's
  bytes, a string tensor's lengths); a bad file is a CheckpointError naming the file and
  the tensor, never a wrong value;
- numbers are little-endian, as TensorFlow writes them on every platform it runs on;
- a written bundle appears whole or not at all: the data and index go to temporary names
  and are renamed, data first, as TensorFlow's BundleWriter does.
"""

from __future__ import annotations

import math
import os
import re
import struct
import uuid
from pathlib import Path

import google_crc32c
import numpy as np

from .. import dtypes, limits
from ..errors import CheckpointError, HlobridgeError
from .proto import schema
from .proto.bundle_schema import BundleEntryProto, BundleHeaderProto, CheckpointState
from . import sstable

HEADER_KEY = b""


def data_filename(prefix, shard: int, num_shards: int) -> str:
    """The name of data shard `shard` of `num_shards`, as TensorFlow spells it."""
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def index_filename(prefix) -> str:
    """The bundle's index file."""
    return f"{prefix}.index"


# -- slices and their keys ----------------------------------------------------------------------


def _num_increasing(value: int) -> bytes:
    """OrderedCode::WriteNumIncreasing: a length byte, then the big-endian bytes."""
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([len(raw)]) + raw


def _signed_num_increasing(value: int) -> bytes:
    """OrderedCode::WriteSignedNumIncreasing: 7 payload bits per byte, the length in the
    leading (sign-flipped) header bits, so that byte order is numeric order."""
    x = ~value if value < 0 else value
    if x < 64:
        return bytes([(0x80 ^ value) & 0xFF])
    length = next(n for n in range(2, 11) if x < 1 << (7 * n - 1))
    buf = bytearray(value.to_bytes(10, "big", signed=True))[10 - length:]
    header = (0xFF << (8 - length)) & 0xFF if length <= 8 else 0xFF
    buf[0] ^= header
    if length > 8:
        buf[1] ^= (0xFF << (16 - length)) & 0xFF
    return bytes(buf)


def slice_key(name: str, extents: list[tuple[int, int]]) -> bytes:
    """checkpoint::EncodeTensorNameSlice: the key of one slice's entry; a length of -1 is a
    whole dimension."""
    escaped = re.sub(rb"[\x00\xff]", lambda m: m.group() + (b"\xff" if m.group() == b"\x00" else b"\x00"),
                     name.encode())
    out = _num_increasing(0) + escaped + b"\x00\x01" + _num_increasing(len(extents))
    for start, length in extents:
        out += _signed_num_increasing(start) + _signed_num_increasing(length)
    return out


def slice_extents(proto, shape: tuple) -> list[tuple[int, int]]:
    """TensorSliceProto -> [(start, length)] with -1 for a whole dimension."""
    extents = [(e.start, e.length if e.WhichOneof("has_length") else -1) for e in proto.extent]
    return extents + [(0, -1)] * (len(shape) - len(extents))


def slice_index(extents, shape) -> tuple:
    """NumPy index of a slice's extents ((start, length), length -1: to the end) in a tensor of `shape`."""
    return tuple(slice(s, None if n < 0 else s + n) for s, n in extents) if extents else \
        tuple(slice(None) for _ in shape)


def parse_shape_and_slice(spec: str) -> tuple[tuple, list[tuple[int, int]]]:
    """SaveV2/RestoreV2's "d0 d1 start,len:-" -> (full shape, extents); "" -> ((), [])."""
    parts = spec.split()
    if not parts:
        return (), []
    try:
        shape = tuple(int(d) for d in parts[:-1])
        extents = [(0, -1) if e == "-" else tuple(int(v) for v in e.split(","))
                   for e in parts[-1].split(":")]
    except ValueError:
        raise CheckpointError(f"bad shape_and_slice '{spec}': expected 'dims... start,length:-'") from None
    if len(extents) != len(shape) or any(len(e) != 2 for e in extents):
        raise CheckpointError(f"bad shape_and_slice '{spec}': one extent per dimension of {list(shape)}")
    return shape, extents


# -- tensor bytes ---------------------------------------------------------------------------------


def _encode_strings(values: np.ndarray) -> tuple[bytes, int]:
    """[varint64 lengths][masked CRC32C of the lengths as uint32s][bytes]; and the CRC32C
    TensorFlow stores in the entry: of the lengths as uint32s, that checksum, and the bytes."""
    items = [v if isinstance(v, bytes) else str(v).encode() for v in values.ravel()]
    crc = 0
    for item in items:
        crc = google_crc32c.extend(crc, struct.pack("<I", len(item)))
    length_crc = struct.pack("<I", sstable.mask_crc(crc))
    crc = google_crc32c.extend(crc, length_crc)
    body = b"".join(items)
    crc = google_crc32c.extend(crc, body)
    return b"".join(sstable.varint(len(i)) for i in items) + length_crc + body, crc


def _decode_strings(raw: bytes, count: int, where: str) -> tuple[np.ndarray, int]:
    lengths, pos = [], 0
    try:
        for _ in range(count):
            n, pos = sstable.read_varint(raw, pos)
            if n > len(raw):  # (also keeps it a uint32 for the checksum)
                raise CheckpointError(f"{where}: a string of {n} bytes in {len(raw)}: corrupt")
            lengths.append(n)
    except sstable.TableError:
        raise CheckpointError(f"{where}: string lengths run past the tensor's bytes: corrupt") from None
    crc = 0
    for n in lengths:
        crc = google_crc32c.extend(crc, struct.pack("<I", n))
    stored = raw[pos:pos + 4]
    if len(stored) != 4 or struct.unpack("<I", stored)[0] != sstable.mask_crc(crc):
        raise CheckpointError(f"{where}: checksum mismatch in the string lengths: corrupt")
    crc = google_crc32c.extend(crc, stored)
    pos += 4
    if pos + sum(lengths) != len(raw):
        raise CheckpointError(f"{where}: string lengths do not match the tensor's size: corrupt")
    out = np.empty(count, dtype=object)
    for i, n in enumerate(lengths):
        out[i] = bytes(raw[pos:pos + n])
        pos += n
    return out, google_crc32c.extend(crc, raw[len(raw) - sum(lengths):])


def encode_tensor(value: np.ndarray) -> tuple[bytes, int]:
    """(bytes as stored, the entry's masked CRC32C)."""
    if value.dtype == np.object_:
        data, crc = _encode_strings(value)
    else:
        data = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False).tobytes()
        crc = google_crc32c.value(data)
    return data, sstable.mask_crc(crc)


# -- reading --------------------------------------------------------------------------------------


class BundleReader:
    """The entries of one checkpoint, read from `prefix.index`; tensors read on demand."""

    def __init__(self, prefix):
        self.prefix = str(prefix)
        self.index_path = index_filename(self.prefix)
        try:
            data = Path(self.index_path).read_bytes()
        except OSError as e:
            raise CheckpointError(f"{self.index_path}: cannot read the checkpoint index: {e.strerror}") from None
        try:
            table = sstable.read_table(data)
        except sstable.TableError as e:
            raise CheckpointError(f"{self.index_path}: {e}") from None
        if not table or table[0][0] != HEADER_KEY:
            raise CheckpointError(f"{self.index_path}: no bundle header (key \"\"): not a TensorBundle index")
        self.header = self._parse(BundleHeaderProto, table[0][1], "the bundle header")
        if self.header.endianness != 0:
            raise CheckpointError(f"{self.index_path}: a big-endian bundle; hlobridge reads little-endian ones")
        self.entries = {k: v for k, v in table[1:]}
        self._parsed: dict[bytes, object] = {}

    def _parse(self, cls, raw: bytes, what: str):
        msg = cls()
        try:
            msg.ParseFromString(raw)
        except Exception:
            raise CheckpointError(f"{self.index_path}: {what} does not parse: corrupt") from None
        return msg

    def keys(self) -> list[str]:
        """Tensor names as TensorFlow wrote them (slice entries, keyed by \\x00..., excluded)."""
        return [k.decode("utf-8", "replace") for k in self.entries if not k.startswith(b"\x00")]

    def __contains__(self, key: str) -> bool:
        return key.encode() in self.entries

    def entry(self, key: str | bytes):
        """The BundleEntryProto of `key` (parsed once); a CheckpointError naming the file if absent."""
        raw_key = key if isinstance(key, bytes) else key.encode()
        if raw_key not in self._parsed:
            if raw_key not in self.entries:
                raise CheckpointError(f"{self.index_path}: no tensor '{key}' in the checkpoint")
            self._parsed[raw_key] = self._parse(BundleEntryProto, self.entries[raw_key],
                                                f"the entry of tensor '{key}'")
        return self._parsed[raw_key]

    def _where(self, key) -> str:
        return f"{self.index_path}: tensor '{key.decode('utf-8', 'replace') if isinstance(key, bytes) else key}'"

    def dtype_and_shape(self, key: str) -> tuple:
        """The tensor's dtype and full shape, without reading its data."""
        e = self.entry(key)
        try:
            dtype = dtypes.from_enum(e.dtype)
        except HlobridgeError as err:
            raise CheckpointError(f"{self._where(key)}: {err}") from None
        shape = tuple(d.size for d in e.shape.dim)
        if any(d < 0 for d in shape):
            raise CheckpointError(f"{self._where(key)}: shape {list(shape)} has a negative dimension: corrupt")
        return dtype, shape

    def read(self, key: str) -> np.ndarray:
        """The whole tensor, bit for bit as TensorFlow stored it (slices assembled). Every size
        the index gives is checked against the data file's length and limits.py before a byte
        is allocated: a corrupt entry is a CheckpointError, not a MemoryError."""
        entry = self.entry(key)
        dtype, shape = self.dtype_and_shape(key)
        limits.check_tensor_elements(math.prod(shape), self._where(key))
        if dtype in (dtypes.RESOURCE, dtypes.VARIANT):
            raise CheckpointError(f"{self._where(key)}: {dtype} tensors cannot be read")
        if not entry.slices:
            return self._read_entry(entry, key, dtype, shape)
        parts = [self._slice_part(key, proto, shape) for proto in entry.slices]
        covered = sum(math.prod(part_shape) for _, _, part_shape in parts)
        if covered != math.prod(shape):
            raise CheckpointError(f"{self._where(key)}: its slices cover {covered} of {math.prod(shape)} elements")
        out = np.zeros(shape, dtype=dtype) if dtype != np.object_ else np.full(shape, b"", dtype=object)
        for extents, part, part_shape in parts:
            out[slice_index(extents, shape)] = self._read_entry(part, f"{key} (slice {extents})", dtype, part_shape)
        return out

    def _slice_part(self, key: str, proto, shape: tuple):
        """(extents, entry, shape) of one slice of `key`, its extents checked against `shape`."""
        if len(proto.extent) > len(shape):
            raise CheckpointError(f"{self._where(key)}: a slice of {len(proto.extent)} extents for shape "
                                  f"{list(shape)}: corrupt")
        extents = slice_extents(proto, shape)
        region = tuple(d - s if n < 0 else n for (s, n), d in zip(extents, shape))
        if any(s < 0 or n < 0 or s + n > d for (s, _), n, d in zip(extents, region, shape)):
            raise CheckpointError(f"{self._where(key)}: slice extents {extents} do not fit its shape "
                                  f"{list(shape)}: corrupt")
        part_key = slice_key(key, extents)
        part = self.entry(part_key)
        part_shape = tuple(d.size for d in part.shape.dim)
        if region != part_shape:
            raise CheckpointError(f"{self._where(key)}: a slice of shape {list(part_shape)} does not fit its "
                                  f"extents {extents}: corrupt")
        return extents, part, part_shape

    def _read_entry(self, entry, key: str, dtype, shape: tuple) -> np.ndarray:
        n = self.header.num_shards
        if not 0 <= entry.shard_id < n:
            raise CheckpointError(f"{self._where(key)}: shard {entry.shard_id} of a bundle of {n}: corrupt")
        path = data_filename(self.prefix, entry.shard_id, n)
        where = f"{path}: tensor '{key}'"
        count = math.prod(shape)
        if entry.offset < 0 or entry.size < 0:
            raise CheckpointError(f"{where}: offset {entry.offset}, size {entry.size}: corrupt")
        if dtype in (dtypes.RESOURCE, dtypes.VARIANT):
            raise CheckpointError(f"{where}: {dtype} tensors cannot be read")
        if dtype == np.object_ and count > entry.size or \
                dtype != np.object_ and count * dtype.itemsize != entry.size:  # (a string takes >= 1 byte)
            raise CheckpointError(f"{where}: {entry.size} bytes for shape {list(shape)} of "
                                  f"{dtypes.name(dtype)}: corrupt")
        try:
            with open(path, "rb") as f:
                length = os.fstat(f.fileno()).st_size
                if entry.offset + entry.size > length:
                    raise CheckpointError(f"{where}: needs bytes {entry.offset}..{entry.offset + entry.size}, "
                                          f"the file ends at {length}: truncated")
                f.seek(entry.offset)
                raw = f.read(entry.size)
        except FileNotFoundError:
            raise CheckpointError(f"{path}: missing data file (shard {entry.shard_id} of {n}) holding "
                                  f"tensor '{key}'") from None
        except OSError as e:
            raise CheckpointError(f"{where}: cannot read: {e.strerror}") from None
        if len(raw) != entry.size:  # the file shrank while being read
            raise CheckpointError(f"{where}: needs bytes {entry.offset}..{entry.offset + entry.size}, the file "
                                  f"ends at {entry.offset + len(raw)}: truncated")
        if dtype == np.object_:
            value, crc = _decode_strings(raw, count, where)
        else:
            value, crc = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype), google_crc32c.value(raw)
        if sstable.mask_crc(crc) != entry.crc32c:
            raise CheckpointError(f"{where}: checksum mismatch: the data is corrupt")
        return value.reshape(shape)

    def read_all(self) -> dict[str, np.ndarray]:
        """Every tensor of the bundle by key (sliced ones assembled whole)."""
        return {k: self.read(k) for k in self.keys()}


def resolve_prefix(path) -> str:
    """A checkpoint prefix from a prefix, a directory with a `checkpoint` state file (its
    latest), or a SavedModel directory (its variables)."""
    p = Path(path)
    if p.is_dir():
        if (p / "variables" / "variables.index").exists():
            return str(p / "variables" / "variables")
        state_file = p / "checkpoint"
        if not state_file.exists():
            raise CheckpointError(f"{p}: a directory without a 'checkpoint' file or variables/; give the "
                                  f"checkpoint prefix (e.g. {p}/model.ckpt-3)")
        from google.protobuf import text_format
        state = CheckpointState()
        try:
            text_format.Parse(state_file.read_text(), state)
        except text_format.ParseError as e:
            raise CheckpointError(f"{state_file}: not a CheckpointState: {e}") from None
        latest = state.model_checkpoint_path
        return latest if os.path.isabs(latest) else str(p / latest)
    return str(path)


def read_checkpoint(path) -> dict[str, np.ndarray]:
    """{key as TensorFlow wrote it: array}, bit-exact, partitioned tensors assembled whole."""
    return BundleReader(resolve_prefix(path)).read_all()


# -- writing --------------------------------------------------------------------------------------


def _header(num_shards: int) -> bytes:
    h = BundleHeaderProto(num_shards=num_shards)
    h.version.producer = 1
    return h.SerializeToString()


def _replace(tmp: str, final: str) -> None:
    try:
        os.replace(tmp, final)
    except OSError as e:
        raise CheckpointError(f"{final}: cannot write: {e.strerror}") from None


def _temp_name(path: str) -> str:
    return f"{path}.tempstate{uuid.uuid4().int % 10**19}"


class BundleWriter:
    """Writes a one-shard bundle at `prefix`: `add` tensors (or slices), then `finish`."""

    def __init__(self, prefix):
        self.prefix = str(prefix)
        self.entries: dict[bytes, bytes] = {}
        self.chunks: list[bytes] = []
        self.offset = 0

    def _put(self, value: np.ndarray, entry) -> None:
        data, crc = encode_tensor(value)
        entry.shard_id, entry.offset, entry.size, entry.crc32c = 0, self.offset, len(data), crc
        self.chunks.append(data)
        self.offset += len(data)

    def add(self, key: str, value) -> None:
        """Add a whole tensor under `key` (written by `finish`)."""
        value = _as_array(value)
        entry = _entry_proto(value.dtype, value.shape)
        self._put(value, entry)
        self._set(key.encode(), entry)

    def add_slice(self, key: str, full_shape: tuple, extents: list[tuple[int, int]], value) -> None:
        """One slice of a partitioned tensor: the full tensor's entry lists its slices."""
        value = _as_array(value)
        raw_key = key.encode()
        full = self.entries.get(raw_key)
        full = BundleEntryProto.FromString(full) if full else _entry_proto(value.dtype, full_shape)
        proto = full.slices.add()
        for start, length in extents:
            e = proto.extent.add(start=start)
            if length >= 0:
                e.length = length
        part = _entry_proto(value.dtype, value.shape)
        self._put(value, part)
        self._set(slice_key(key, extents), part)
        self.entries[raw_key] = full.SerializeToString()

    def _set(self, raw_key: bytes, entry) -> None:
        if raw_key in self.entries:
            raise CheckpointError(f"{self.prefix}: tensor '{raw_key.decode('utf-8', 'replace')}' saved twice")
        self.entries[raw_key] = entry.SerializeToString()

    def finish(self) -> None:
        """Write the data file, then the index, each under a temporary name renamed into place."""
        Path(self.prefix).parent.mkdir(parents=True, exist_ok=True)
        data_path = data_filename(self.prefix, 0, 1)
        tmp = _temp_name(data_path)
        try:
            with open(tmp, "wb") as f:
                for chunk in self.chunks:
                    f.write(chunk)
        except OSError as e:
            raise CheckpointError(f"{data_path}: cannot write: {e.strerror}") from None
        _replace(tmp, data_path)
        write_index(self.prefix, self.entries, 1)


def write_index(prefix: str, entries: dict[bytes, bytes], num_shards: int) -> None:
    """Write the bundle's index (header and entries, sorted) atomically."""
    path = index_filename(prefix)
    table = sstable.write_table([(HEADER_KEY, _header(num_shards))] + sorted(entries.items()))
    tmp = _temp_name(path)
    try:
        Path(tmp).write_bytes(table)
    except OSError as e:
        raise CheckpointError(f"{path}: cannot write: {e.strerror}") from None
    _replace(tmp, path)


def _as_array(value) -> np.ndarray:
    value = np.asarray(value)
    if value.dtype.kind in "US":
        value = np.vectorize(lambda s: s.encode() if isinstance(s, str) else bytes(s), otypes=[object])(value) \
            if value.size else value.astype(object)
    return value


def _entry_proto(dtype, shape):
    entry = BundleEntryProto(dtype=dtypes.to_enum(dtype))
    entry.shape.CopyFrom(schema.TensorShapeProto(dim=[schema.TensorShapeProto.Dim(size=d) for d in shape]))
    return entry


def merge_bundles(prefixes: list[str], destination: str, delete_old_dirs: bool = True) -> None:
    """MergeV2Checkpoints: one bundle at `destination` whose shard i is bundle i's data, as
    TensorFlow's sharded Saver merges what each device wrote. The data files are renamed."""
    merged: dict[bytes, bytes] = {}
    readers = [BundleReader(p) for p in prefixes]
    n = sum(r.header.num_shards for r in readers)
    Path(destination).parent.mkdir(parents=True, exist_ok=True)
    shard = 0
    for reader in readers:
        for key, raw in reader.entries.items():
            if key in merged:
                raise CheckpointError(f"{reader.index_path}: tensor '{key.decode('utf-8', 'replace')}' is in "
                                      f"more than one of the bundles being merged")
            entry = BundleEntryProto.FromString(raw)
            if not entry.slices or entry.size:
                entry.shard_id += shard
            merged[key] = entry.SerializeToString()
        for i in range(reader.header.num_shards):
            _replace(data_filename(reader.prefix, i, reader.header.num_shards),
                     data_filename(destination, shard + i, n))
        shard += reader.header.num_shards
    write_index(destination, merged, n)
    for reader in readers:
        os.remove(reader.index_path)
        if delete_old_dirs:
            try:
                os.rmdir(Path(reader.prefix).parent)
            except OSError:
                pass  # not empty or already gone: TensorFlow also leaves it
