"""The Chakra execution-trace file (``.et``) on the wire: protobuf messages read and written in pure Python.

A ``.et`` file (MLCommons Chakra, schema ``et_def.proto``, package ``ChakraProtoMsg``) is a sequence of
length-delimited protobuf messages: a varint byte count, then that many bytes of one message; the first
is a ``GlobalMetadata`` (a version string and attributes), every later one a ``Node``. Chakra's own
tools may gzip the file; a file that starts with gzip's magic bytes is decompressed first.

Only the fields codesign reads or writes are named here, by the field numbers of the published schema
(fields it does not know are skipped, as protobuf readers must). Codesign carries its own codec rather
than depending on ``protobuf`` and the ``mlc-chakra`` package: the schema is small and stable, and
reading and writing it needs nothing beyond Python, so the importer installs with codesign and its tests
run everywhere (docs/chakra.md, "Why no dependency"). ``tests/test_chakra.py`` checks this codec against
Chakra's own ``et_def_pb2`` when ``mlc-chakra`` and ``protobuf`` are importable.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

#: ``NodeType`` of et_def.proto.
NODE_TYPES = {0: "INVALID_NODE", 1: "METADATA_NODE", 2: "MEM_LOAD_NODE", 3: "MEM_STORE_NODE", 4: "COMP_NODE",
              5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE"}
NODE_TYPE_IDS = {v: k for k, v in NODE_TYPES.items()}
#: ``CollectiveCommType`` of et_def.proto.
COMM_TYPES = {0: "ALL_REDUCE", 1: "REDUCE", 2: "ALL_GATHER", 3: "GATHER", 4: "SCATTER", 5: "BROADCAST",
              6: "ALL_TO_ALL", 7: "REDUCE_SCATTER", 8: "REDUCE_SCATTER_BLOCK", 9: "BARRIER"}
COMM_TYPE_IDS = {v: k for k, v in COMM_TYPES.items()}

# AttributeProto's oneof ``value``: field number -> (name, scalar kind); the list fields (even numbers from 4)
# are messages whose field 1 repeats the scalar. Kinds: how the scalar sits on the wire.
_ATTR_FIELDS: dict[int, tuple[str, str]] = {
    3: ("double_val", "double"), 4: ("double_list", "double"), 5: ("float_val", "float"),
    6: ("float_list", "float"), 7: ("int32_val", "int"), 8: ("int32_list", "int"), 9: ("int64_val", "int"),
    10: ("int64_list", "int"), 11: ("uint32_val", "uint"), 12: ("uint32_list", "uint"),
    13: ("uint64_val", "uint"), 14: ("uint64_list", "uint"), 15: ("sint32_val", "sint"),
    16: ("sint32_list", "sint"), 17: ("sint64_val", "sint"), 18: ("sint64_list", "sint"),
    19: ("fixed32_val", "fixed32"), 20: ("fixed32_list", "fixed32"), 21: ("fixed64_val", "fixed64"),
    22: ("fixed64_list", "fixed64"), 23: ("sfixed32_val", "sfixed32"), 24: ("sfixed32_list", "sfixed32"),
    25: ("sfixed64_val", "sfixed64"), 26: ("sfixed64_list", "sfixed64"), 27: ("bool_val", "bool"),
    28: ("bool_list", "bool"), 29: ("string_val", "string"), 30: ("string_list", "string"),
    31: ("bytes_val", "bytes"), 32: ("bytes_list", "bytes")}
ATTR_FIELD_OF = {name: num for num, (name, _) in _ATTR_FIELDS.items()}
_FIXED = {"double": "<d", "float": "<f", "fixed32": "<I", "fixed64": "<Q", "sfixed32": "<i", "sfixed64": "<q"}
#: The most messages a file may hold: a bound on work for a corrupt length, far above a real trace's nodes.
MAX_MESSAGES = 1_000_000
#: The most bytes a trace may have, read as it is or inflated from gzip (our bound on work, checked before any
#: message is decoded): decoding and the import rules take 2-5 s per MiB on a loaded machine (BENCHMARKS.md,
#: "Bounds on input work"), so a 0.5 MB gzipped file inflating to near the former 512 MiB took 148 s and 9.8 GB.
#: 8 MiB hold some 200,000 nodes.
MAX_TRACE_BYTES = 8 * 2**20


class WireError(ValueError):
    """The bytes are not a Chakra trace; the message says where (message index, byte offset) and why."""


class TraceTooLarge(WireError):
    """The bytes may be a trace, but more of one than codesign decodes (MAX_TRACE_BYTES, MAX_MESSAGES)."""


@dataclass(frozen=True)
class Attr:
    """One ``AttributeProto``: its name, which oneof field holds the value (``int64_val``, ``bool_list``, ...)
    and the value (a Python int, float, bool, str or bytes, or a list of them for a ``*_list`` field)."""

    name: str
    kind: str
    value: Any


@dataclass(frozen=True)
class Node:
    """One ``Node`` message: the fields codesign reads and writes (times in whole microseconds, as the
    schema has them)."""

    id: int
    name: str = ""
    type: int = 0
    ctrl_deps: tuple[int, ...] = ()
    data_deps: tuple[int, ...] = ()
    start_time_micros: int = 0
    duration_micros: int = 0
    attrs: tuple[Attr, ...] = field(default_factory=tuple)

    def attr(self, name: str) -> Attr | None:
        """The attribute ``name`` (the first, if a producer wrote it twice), or None."""
        return next((a for a in self.attrs if a.name == name), None)


@dataclass(frozen=True)
class Trace:
    """A whole ``.et`` file: the metadata's version and attributes, then the nodes in file order."""

    version: str
    metadata: tuple[Attr, ...]
    nodes: tuple[Node, ...]


# ---------------------------------------------------------------- reading

class _Reader:
    def __init__(self, data: bytes, where: str) -> None:
        self.data = data
        self.pos = 0
        self.where = where

    def fail(self, why: str) -> WireError:
        return WireError(f"{self.where}, byte {self.pos}: {why}")

    def varint(self) -> int:
        result = shift = 0
        while True:
            if self.pos >= len(self.data):
                raise self.fail("truncated varint")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift >= 70:
                raise self.fail("varint longer than 10 bytes")

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"a field of {n} bytes runs past the end of its message")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def fields(self) -> list[tuple[int, int, Any]]:
        """(field number, wire type, raw value) of every field: an int for varints, bytes otherwise."""
        out = []
        while self.pos < len(self.data):
            key = self.varint()
            num, wt = key >> 3, key & 7
            if num == 0:
                raise self.fail("field number 0")
            if wt == 0:
                out.append((num, wt, self.varint()))
            elif wt == 1:
                out.append((num, wt, self.take(8)))
            elif wt == 2:
                out.append((num, wt, self.take(self.varint())))
            elif wt == 5:
                out.append((num, wt, self.take(4)))
            else:
                raise self.fail(f"wire type {wt} (groups are not used by the schema)")
        return out


def _signed64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _scalar(kind: str, wt: int, raw: Any, where: str) -> Any:
    if kind in _FIXED:
        size = struct.calcsize(_FIXED[kind])
        if wt not in (1, 5) or len(raw) != size:
            raise WireError(f"{where}: expected a {size}-byte {kind}")
        return struct.unpack(_FIXED[kind], raw)[0]
    if kind in ("string", "bytes"):
        if wt != 2:
            raise WireError(f"{where}: expected a length-delimited {kind}")
        if kind == "bytes":
            return bytes(raw)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise WireError(f"{where}: a string that is not UTF-8") from None
    if wt != 0:
        raise WireError(f"{where}: expected a varint {kind}")
    if kind == "int":
        return _signed64(raw)
    if kind == "sint":
        return (raw >> 1) ^ -(raw & 1)
    if kind == "bool":
        return raw != 0
    return raw  # uint


def _list(kind: str, raw: bytes, where: str) -> list[Any]:
    """A ``*List`` message: field 1 repeated, packed (one length-delimited run) or one field per value."""
    out: list[Any] = []
    for num, wt, val in _Reader(raw, where).fields():
        if num != 1:
            continue
        if wt == 2 and kind not in ("string", "bytes"):  # packed run of scalars
            r = _Reader(val, where)
            if kind in _FIXED:
                size = struct.calcsize(_FIXED[kind])
                if len(val) % size:
                    raise WireError(f"{where}: a packed {kind} list of {len(val)} bytes")
                out.extend(struct.unpack(f"<{len(val) // size}{_FIXED[kind][1]}", val))
            else:
                while r.pos < len(val):
                    out.append(_scalar(kind, 0, r.varint(), where))
        else:
            out.append(_scalar(kind, wt, val, where))
    return out


def _attr(raw: bytes, where: str) -> Attr:
    name, kind, value = "", "", None
    for num, wt, val in _Reader(raw, where).fields():
        if num == 1:
            name = _scalar("string", wt, val, where)
        elif num in _ATTR_FIELDS:
            kind, scalar = _ATTR_FIELDS[num]
            value = _list(scalar, val, f"{where} {kind}") if kind.endswith("_list") else _scalar(
                scalar, wt, val, f"{where} {kind}")
    return Attr(name, kind, value)


def _uints(wt: int, raw: Any, where: str) -> list[int]:
    """A repeated uint64 field: packed (length-delimited) or one varint."""
    if wt == 0:
        return [raw]
    if wt != 2:
        raise WireError(f"{where}: expected varints")
    r = _Reader(raw, where)
    out = []
    while r.pos < len(raw):
        out.append(r.varint())
    return out


def _node(raw: bytes, where: str) -> Node:
    f: dict[str, Any] = {"ctrl_deps": [], "data_deps": [], "attrs": []}
    for num, wt, val in _Reader(raw, where).fields():
        if num == 1:
            f["id"] = _scalar("uint", wt, val, f"{where} id")
        elif num == 2:
            f["name"] = _scalar("string", wt, val, f"{where} name")
        elif num == 3:
            f["type"] = _scalar("uint", wt, val, f"{where} type")
        elif num in (4, 5):
            f["ctrl_deps" if num == 4 else "data_deps"].extend(_uints(wt, val, where))
        elif num == 6:
            f["start_time_micros"] = _scalar("uint", wt, val, f"{where} start_time_micros")
        elif num == 7:
            f["duration_micros"] = _scalar("uint", wt, val, f"{where} duration_micros")
        elif num == 10:
            if wt != 2:
                raise WireError(f"{where}: attr is not a message")
            f["attrs"].append(_attr(val, f"{where} attr"))
    f["id"] = f.get("id", 0)
    return Node(**{**f, "ctrl_deps": tuple(f["ctrl_deps"]), "data_deps": tuple(f["data_deps"]),
                   "attrs": tuple(f["attrs"])})


def decode(data: bytes) -> Trace:
    """A whole ``.et`` file's bytes (gzipped or not) as a Trace. Raises WireError on malformed bytes."""
    if data[:2] == b"\x1f\x8b":
        z = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip framing
        try:
            data = z.decompress(data, MAX_TRACE_BYTES + 1)
        except zlib.error as e:
            raise WireError(f"gzip: {e}") from None
        if len(data) > MAX_TRACE_BYTES:
            raise TraceTooLarge(f"gzipped, it inflates to over the {MAX_TRACE_BYTES // 2**20} MiB a trace may have")
    elif len(data) > MAX_TRACE_BYTES:
        raise TraceTooLarge(f"{len(data) / 2**20:.1f} MiB is over the {MAX_TRACE_BYTES // 2**20} MiB a trace may have")
    r = _Reader(data, "message 0")
    version, meta, nodes = "", (), []
    count = 0
    while r.pos < len(data):
        r.where = f"message {count}"
        body = r.take(r.varint())
        where = "the global metadata" if count == 0 else f"node message {count}"
        if count == 0:
            for num, wt, val in _Reader(body, where).fields():
                if num == 1:
                    version = _scalar("string", wt, val, f"{where} version")
                elif num == 2 and wt == 2:
                    meta += (_attr(val, f"{where} attr"),)
        else:
            nodes.append(_node(body, where))
        count += 1
        if count > MAX_MESSAGES:
            raise TraceTooLarge(f"more than {MAX_MESSAGES:,} messages, the most a trace may have")
    if count == 0:
        raise WireError("empty: expected a global metadata message and nodes")
    return Trace(version, meta, tuple(nodes))


# ---------------------------------------------------------------- writing

def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1  # negative ints as their 64-bit two's complement, as protobuf writes int32/int64
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(num: int, wt: int) -> bytes:
    return _varint(num << 3 | wt)


def _len_field(num: int, payload: bytes) -> bytes:
    return _key(num, 2) + _varint(len(payload)) + payload


def _enc_scalar(kind: str, v: Any) -> tuple[int, bytes]:
    """(wire type, bytes) of one scalar of ``kind``."""
    if kind in _FIXED:
        return (1 if struct.calcsize(_FIXED[kind]) == 8 else 5), struct.pack(_FIXED[kind], v)
    if kind == "string":
        b = v.encode("utf-8")
        return 2, _varint(len(b)) + b
    if kind == "bytes":
        return 2, _varint(len(v)) + bytes(v)
    if kind == "sint":
        return 0, _varint((v << 1) ^ (v >> 63))
    return 0, _varint(int(v))


def encode_attr(a: Attr) -> bytes:
    num = ATTR_FIELD_OF[a.kind]
    scalar = _ATTR_FIELDS[num][1]
    out = _len_field(1, a.name.encode("utf-8"))
    if a.kind.endswith("_list"):
        if scalar in ("string", "bytes"):
            body = b"".join(_key(1, 2) + _enc_scalar(scalar, x)[1] for x in a.value)
        else:  # packed, as proto3 writes repeated scalars
            body = _len_field(1, b"".join(_enc_scalar(scalar, x)[1] for x in a.value)) if a.value else b""
        return out + _len_field(num, body)
    wt, b = _enc_scalar(scalar, a.value)
    return out + _key(num, wt) + b


def encode_node(n: Node) -> bytes:
    out = _key(1, 0) + _varint(n.id)
    if n.name:
        out += _len_field(2, n.name.encode("utf-8"))
    if n.type:
        out += _key(3, 0) + _varint(n.type)
    for num, deps in ((4, n.ctrl_deps), (5, n.data_deps)):
        if deps:
            out += _len_field(num, b"".join(_varint(d) for d in deps))
    if n.start_time_micros:
        out += _key(6, 0) + _varint(n.start_time_micros)
    if n.duration_micros:
        out += _key(7, 0) + _varint(n.duration_micros)
    for a in n.attrs:
        out += _len_field(10, encode_attr(a))
    return out


def encode(trace: Trace) -> bytes:
    """The bytes of a ``.et`` file (not gzipped): the metadata message, then each node, length-delimited."""
    meta = (_len_field(1, trace.version.encode("utf-8")) if trace.version else b"") + b"".join(
        _len_field(2, encode_attr(a)) for a in trace.metadata)
    out = [_varint(len(meta)), meta]
    for n in trace.nodes:
        b = encode_node(n)
        out += [_varint(len(b)), b]
    return b"".join(out)
