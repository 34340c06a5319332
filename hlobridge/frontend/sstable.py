"""The SSTable format of a TensorBundle's `.index` file (LevelDB's table format, as
tensorflow/core/lib/io/table_builder.cc writes it), read and written.

Layout: data blocks, a metaindex block, an index block, then a 48-byte footer
(metaindex handle, index handle, zero padding to 40 bytes, magic 0xdb4775248b80fb57).
A block handle is (offset, size) as two varint64s. A block is a run of entries
(shared key prefix length, unshared length, value length as varint32s, the unshared key
bytes, the value), an array of uint32 restart offsets (entries there have no shared
prefix) and their count; on disk each block is followed by a 5-byte trailer: its
compression type (0: none; TensorFlow writes bundles uncompressed) and the masked CRC32C
of the block and that type byte.

Invariants: every block's checksum is verified before a byte of it is used; a key is
never read past its block's entries; what `write_table` produces reads back with TF's
table reader (keys must be given sorted, as TensorFlow requires).
"""

from __future__ import annotations

import struct

import google_crc32c

MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
TRAILER_SIZE = 5
RESTART_INTERVAL = 16
BLOCK_SIZE = 256 * 1024  # TensorBundle's table option (the index rarely needs a second block)


class TableError(ValueError):
    """The bytes are not a well-formed table; the message says where (the caller adds the file)."""


def mask_crc(crc: int) -> int:
    """LevelDB's masked CRC32C: stored checksums are rotated and offset, so that a CRC of
    data that itself contains CRCs does not collide with them."""
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """LevelDB's masked CRC32C of `data` (what block trailers and bundle entries store)."""
    return mask_crc(google_crc32c.value(data))


def varint(value: int) -> bytes:
    """`value` as a protobuf/LevelDB varint (7 bits a byte, low bits first)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varint(data, pos: int, end: int | None = None) -> tuple[int, int]:
    """(value, position after it); TableError if it runs past `end` or is over 64 bits."""
    end = len(data) if end is None else end
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise TableError("a varint runs past its block")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


# -- reading ------------------------------------------------------------------------------------


def _block(data: bytes, handle: tuple[int, int], what: str) -> bytes:
    offset, size = handle
    if offset + size + TRAILER_SIZE > len(data):
        raise TableError(f"the {what} block (offset {offset}, {size} bytes) runs past the end of the file "
                         f"({len(data)} bytes): truncated")
    contents = data[offset:offset + size]
    kind = data[offset + size]
    (stored,) = struct.unpack_from("<I", data, offset + size + 1)
    if mask_crc(google_crc32c.extend(google_crc32c.value(contents), bytes([kind]))) != stored:
        raise TableError(f"checksum mismatch in the {what} block at offset {offset}: corrupt")
    if kind != 0:
        raise TableError(f"the {what} block is compressed (type {kind}); TensorFlow writes bundle "
                         f"indexes uncompressed and hlobridge reads only those")
    return contents


def _entries(block: bytes, what: str):
    """(key, value) pairs of one block, prefix-decompressed."""
    if len(block) < 4:
        raise TableError(f"the {what} block is too short to hold its restart count")
    (n_restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    limit = len(block) - 4 - 4 * n_restarts
    if n_restarts == 0 or limit < 0:
        raise TableError(f"the {what} block has a bad restart count ({n_restarts})")
    restarts = set(struct.unpack_from(f"<{n_restarts}I", block, limit))
    if any(r >= limit for r in restarts) and limit:
        raise TableError(f"the {what} block has a restart point past its entries")
    pos, key = 0, b""
    while pos < limit:
        start = pos
        shared, pos = read_varint(block, pos, limit)
        unshared, pos = read_varint(block, pos, limit)
        size, pos = read_varint(block, pos, limit)
        if shared > len(key) or pos + unshared + size > limit or (start in restarts and shared):
            raise TableError(f"a bad entry at offset {start} of the {what} block")
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        yield key, block[pos:pos + size]
        pos += size


def _handle(data: bytes, pos: int = 0) -> tuple[tuple[int, int], int]:
    offset, pos = read_varint(data, pos)
    size, pos = read_varint(data, pos)
    return (offset, size), pos


def read_table(data: bytes) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of the table, in key order. TableError on any damage."""
    if len(data) < FOOTER_SIZE:
        raise TableError(f"{len(data)} bytes is shorter than a table footer: truncated or not an index")
    footer = data[-FOOTER_SIZE:]
    if struct.unpack_from("<Q", footer, 40)[0] != MAGIC:
        raise TableError("no table magic number at the end: truncated or not a TensorBundle index")
    _, pos = _handle(footer)  # the metaindex: TensorFlow writes no filter, nothing to read
    index_handle, _ = _handle(footer, pos)
    out = []
    for _, value in _entries(_block(data, index_handle, "index"), "index"):
        handle, _ = _handle(value)
        out.extend(_entries(_block(data, handle, "data"), "data"))
    if any(a[0] >= b[0] for a, b in zip(out, out[1:])):
        raise TableError("keys are not in increasing order: corrupt")
    return out


# -- writing ------------------------------------------------------------------------------------


class _BlockBuilder:
    def __init__(self):
        self.buf = bytearray()
        self.restarts = [0]
        self.count = 0
        self.last = b""

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.count < RESTART_INTERVAL:
            while shared < min(len(key), len(self.last)) and key[shared] == self.last[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buf))
            self.count = 0
        self.buf += varint(shared) + varint(len(key) - shared) + varint(len(value))
        self.buf += key[shared:] + value
        self.last = key
        self.count += 1

    def finish(self) -> bytes:
        return bytes(self.buf) + struct.pack(f"<{len(self.restarts)}I", *self.restarts) + \
            struct.pack("<I", len(self.restarts))

    def __len__(self) -> int:
        return len(self.buf)


def _write_block(out: bytearray, contents: bytes) -> bytes:
    """Append a block and its trailer; return its encoded handle."""
    handle = varint(len(out)) + varint(len(contents))
    out += contents + b"\0" + struct.pack("<I", mask_crc(google_crc32c.extend(google_crc32c.value(contents), b"\0")))
    return handle


def write_table(entries) -> bytes:
    """Table bytes for (key, value) pairs given in strictly increasing key order. Each index
    entry's key is its block's last key (a valid separator: >= every key of the block and <
    every key of the next)."""
    out = bytearray()
    index = _BlockBuilder()
    block = _BlockBuilder()
    last = None
    for key, value in entries:
        if last is not None and key <= last:
            raise ValueError(f"table keys must increase: {key!r} after {last!r}")
        block.add(key, value)
        last = key
        if len(block) >= BLOCK_SIZE:
            index.add(last, _write_block(out, block.finish()))
            block = _BlockBuilder()
    if block.count or not index.count:
        index.add(last if last is not None else b"", _write_block(out, block.finish()))
    meta_handle = _write_block(out, _BlockBuilder().finish())
    index_handle = _write_block(out, index.finish())
    footer = meta_handle + index_handle
    return bytes(out) + footer + b"\0" * (40 - len(footer)) + struct.pack("<Q", MAGIC)
