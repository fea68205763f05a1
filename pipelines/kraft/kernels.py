"""numba: metadata record values -> the JSON text of their fields, for the flat record types
(no nested structs, floats or bytes: every hot type - Topic, Partition, PartitionChange, Config,
Fence/Unfence, RemoveTopic, FeatureLevel, BrokerRegistrationChange, NoOp, ...), driven by op
tables compiled from the same field tables as :mod:`pipelines.kraft.decode` (:func:`compile_ops`).

The text is byte for byte what the Python decoder's fields give through
``json.JSONEncoder(separators=(",", ":"))``: fields in schema order, absent ones with their
default, ASCII only. A record the kernel does not take - not flat, an unknown apiKey or
version, a tag the table does not know, a non-ASCII string, or anything that does not decode -
gets status ``ST_PYTHON`` and no text: the Python decoder reads it (and names its error).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

import numpy as np
from numba import njit

from pipelines.kafka.kernels import _uvarint
from pipelines.kraft import messages as M

ST_OK, ST_PYTHON = 0, 1
O_KIND, O_ITEM, O_NULLABLE, O_TAG, O_NAME, O_NAME_LEN, O_DEF, O_DEF_LEN = range(8)
O_FIELDS = 8
_FLAT = (M.BOOL, M.INT8, M.INT16, M.UINT16, M.INT32, M.INT64, M.UUID, M.STRING)
WIDTH = np.zeros(16, dtype=np.int64)
for _k, _w in ((M.BOOL, 1), (M.INT8, 1), (M.INT16, 2), (M.UINT16, 2), (M.INT32, 4), (M.INT64, 8), (M.UUID, 16)):
    WIDTH[_k] = _w
B64URL = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8).copy()
MAX_KEY, MAX_VERSION = 64, 16
BOOL, INT8, INT16, UINT16, INT32, INT64, UUID, STRING, ARRAY = (M.BOOL, M.INT8, M.INT16, M.UINT16, M.INT32, M.INT64,
                                                              M.UUID, M.STRING, M.ARRAY)
TRUE, FALSE, NULL, INT64_MIN = (np.frombuffer(s, dtype=np.uint8).copy() for s in (b"true", b"false", b"null",
                                                                                   b"-9223372036854775808"))
HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8).copy()
SHORT_ESCAPE = np.zeros(32, dtype=np.uint8)
SHORT_ESCAPE[[8, 9, 10, 12, 13]] = np.frombuffer(b"btnfr", dtype=np.uint8)


@dataclass(frozen=True)
class Ops:
    prog: np.ndarray  # [apiKey, version, 3]: first op row, op count (-1: not taken), text bytes of the program
    ops: np.ndarray  # [rows, O_FIELDS]
    text: np.ndarray  # uint8: '"name":' and default JSON of every op
    max_fields: int


def _flat(layout: M.Layout) -> bool:
    specs = [*layout.fields, *layout.tagged.values()]
    return all(s.kind in _FLAT or (s.kind == M.ARRAY and s.item in _FLAT) for s in specs)


@cache
def compile_ops() -> Ops:
    """The op tables of every flat metadata record version the field tables know."""
    prog = np.full((MAX_KEY, MAX_VERSION, 3), -1, dtype=np.int64)
    rows: list[list[int]] = []
    text = bytearray()
    encode = json.JSONEncoder(separators=(",", ":")).encode
    widest = 1
    for api_key, msg in M.metadata_messages().items():
        for version in range(msg.max_version + 1):
            layout = M.metadata_layout(api_key, version)
            if layout is None or not _flat(layout) or api_key >= MAX_KEY or version >= MAX_VERSION:
                continue
            tag_of = {s.name: t for t, s in layout.tagged.items()}
            spec_of = {s.name: s for s in [*layout.fields, *layout.tagged.values()]}
            start, size = len(rows), 0
            for name, default in layout.template.items():
                if name not in spec_of:  # absent from this version: its default, as a tag never sent
                    spec = M.Spec(name, M.INT8, False)
                    tag = 1 << 40
                else:
                    spec = spec_of[name]
                    tag = tag_of.get(name, -1)
                key, dflt = encode(name).encode() + b":", encode(default).encode()
                rows.append([spec.kind, spec.item, int(spec.nullable), tag, len(text), len(key),
                             len(text) + len(key), len(dflt)])
                text += key + dflt
                size += len(key) + len(dflt) + 1
            prog[api_key, version] = (start, len(rows) - start, size + 2)
            widest = max(widest, len(rows) - start)
    ops = np.array(rows, dtype=np.int64).reshape(-1, O_FIELDS)
    return Ops(prog, ops, np.frombuffer(bytes(text), dtype=np.uint8).copy(), widest)


@njit(cache=True, nogil=True)
def _skip_string(b, p, end, nullable):
    n, p = _uvarint(b, p, end)
    if p < 0 or (n == 0 and nullable == 0):
        return -1
    q = p + max(n - 1, 0)
    return q if q <= end else -1


@njit(cache=True, nogil=True)
def _skip(b, p, end, kind, item, nullable):
    """Position after one field at p, or -1."""
    if kind == STRING:
        return _skip_string(b, p, end, nullable)
    if kind == ARRAY:
        n, p = _uvarint(b, p, end)
        if p < 0 or (n == 0 and nullable == 0):
            return -1
        if n == 0:
            return p
        if item == STRING:
            for _ in range(n - 1):
                p = _skip_string(b, p, end, 0)
                if p < 0:
                    return -1
            return p
        q = p + (n - 1) * WIDTH[item]
        return q if q <= end else -1
    q = p + WIDTH[kind]
    return q if q <= end else -1


@njit(cache=True, nogil=True, inline="always")
def _copy(src, out, o):
    out[o : o + src.shape[0]] = src
    return o + src.shape[0]


@njit(cache=True, nogil=True)
def _int(out, o, v):
    if v == -9223372036854775807 - 1:
        return _copy(INT64_MIN, out, o)
    if v < 0:
        out[o] = 45  # '-'
        o += 1
        v = -v
    start = o
    while True:
        out[o] = 48 + v % 10
        o += 1
        v //= 10
        if v == 0:
            break
    i, j = start, o - 1
    while i < j:
        out[i], out[j] = out[j], out[i]
        i += 1
        j -= 1
    return o


@njit(cache=True, nogil=True)
def _scalar(b, p, kind, out, o):
    """Write one scalar's JSON at o; returns the new o, or -1 (a string Python must write)."""
    if kind == BOOL:
        return _copy(TRUE if b[p] != 0 else FALSE, out, o)
    if kind == INT8:
        v = np.int64(b[p])
        return _int(out, o, v - 256 if v >= 128 else v)
    if kind == INT16 or kind == UINT16:
        v = (np.int64(b[p]) << 8) | np.int64(b[p + 1])
        return _int(out, o, v - 65536 if kind == INT16 and v >= 32768 else v)
    if kind == INT32:
        v = (np.int64(b[p]) << 24) | (np.int64(b[p + 1]) << 16) | (np.int64(b[p + 2]) << 8) | np.int64(b[p + 3])
        return _int(out, o, v - 4294967296 if v >= 2147483648 else v)
    if kind == INT64:
        v = np.int64(0)
        for k in range(8):
            v = (v << 8) | np.int64(b[p + k])
        return _int(out, o, v)
    if kind == UUID:
        out[o] = 34
        o += 1
        for g in range(6):  # 16 bytes: 5 groups of 3, then 1 byte -> 22 characters
            x = np.int64(b[p + 3 * g]) << 16
            if g < 5:
                x |= (np.int64(b[p + 3 * g + 1]) << 8) | np.int64(b[p + 3 * g + 2])
            out[o] = B64URL[(x >> 18) & 63]
            out[o + 1] = B64URL[(x >> 12) & 63]
            o += 2
            if g < 5:
                out[o] = B64URL[(x >> 6) & 63]
                out[o + 1] = B64URL[x & 63]
                o += 2
        out[o] = 34
        return o + 1
    # STRING
    n, p = _uvarint(b, p, p + 5)
    if n == 0:
        return _copy(NULL, out, o)
    out[o] = 34
    o += 1
    for k in range(p, p + n - 1):
        c = b[k]
        if c >= 128:
            return -1
        if c == 34 or c == 92:
            out[o] = 92
            out[o + 1] = c
            o += 2
        elif c < 32:  # as Python's json: \b \t \n \f \r, else \u00xx
            out[o] = 92
            if SHORT_ESCAPE[c] != 0:
                out[o + 1] = SHORT_ESCAPE[c]
                o += 2
            else:
                out[o + 1], out[o + 2], out[o + 3] = 117, 48, 48
                out[o + 4], out[o + 5] = HEX[c >> 4], HEX[c & 15]
                o += 6
        else:
            out[o] = c
            o += 1
    out[o] = 34
    return o + 1


@njit(cache=True, nogil=True)
def _field(b, p, end, kind, item, out, o):
    if kind != ARRAY:
        return _scalar(b, p, kind, out, o)
    n, p = _uvarint(b, p, end)
    if n == 0:
        return _copy(NULL, out, o)
    out[o] = 91  # '['
    o += 1
    for k in range(n - 1):
        if k > 0:
            out[o] = 44
            o += 1
        o = _scalar(b, p, item, out, o)
        if o < 0:
            return -1
        p = _skip_string(b, p, end, 0) if item == STRING else p + WIDTH[item]
    out[o] = 93
    return o + 1


@njit(cache=True, nogil=True)
def transcode(b, vpos, vlen, prog, ops, text, max_fields):
    """JSON text of each value (offsets int64[n+1], data uint8), apiKey, version, status."""
    n = vpos.shape[0]
    api = np.full(n, -1, dtype=np.int64)
    ver = np.full(n, -1, dtype=np.int64)
    status = np.full(n, ST_PYTHON, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    out = np.empty(max(1024, int(vlen.sum()) * 4), dtype=np.uint8)
    fpos = np.empty(max_fields, dtype=np.int64)
    o = 0
    for i in range(n):
        offsets[i + 1] = o
        if vlen[i] < 0:
            continue
        p, end = vpos[i], vpos[i] + vlen[i]
        frame, p = _uvarint(b, p, end)
        if p < 0 or frame != 1:
            continue
        a, p = _uvarint(b, p, end)
        if p < 0:
            continue
        v, p = _uvarint(b, p, end)
        if p < 0:
            continue
        api[i], ver[i] = a, v
        if a >= prog.shape[0] or v >= prog.shape[1] or prog[a, v, 1] < 0:
            continue
        start, cnt = prog[a, v, 0], prog[a, v, 1]
        ok = True
        for j in range(cnt):
            fpos[j] = -1
            if ops[start + j, O_TAG] == -1:
                fpos[j] = p
                p = _skip(b, p, end, ops[start + j, O_KIND], ops[start + j, O_ITEM], ops[start + j, O_NULLABLE])
                if p < 0:
                    ok = False
                    break
        if not ok:
            continue
        tags, p = _uvarint(b, p, end)
        for _ in range(tags if p >= 0 else 0):
            tag, p = _uvarint(b, p, end)
            if p < 0:
                break
            size, p = _uvarint(b, p, end)
            if p < 0:
                break
            found = -1
            for j in range(cnt):
                if ops[start + j, O_TAG] == tag:
                    found = j
            if found < 0:  # a tag the table does not know: Python keeps it
                p = -1
                break
            fpos[found] = p
            q = _skip(b, p, end, ops[start + found, O_KIND], ops[start + found, O_ITEM], ops[start + found, O_NULLABLE])
            if q != p + size:
                p = -1
                break
            p = q
        if p != end:
            continue
        need = o + prog[a, v, 2] + 8 * vlen[i] + 64
        if need > out.shape[0]:
            grown = np.empty(max(need, 2 * out.shape[0]), dtype=np.uint8)
            grown[:o] = out[:o]
            out = grown
        q = o
        out[q] = 123  # '{'
        q += 1
        for j in range(cnt):
            r = ops[start + j]
            if j > 0:
                out[q] = 44
                q += 1
            out[q : q + r[O_NAME_LEN]] = text[r[O_NAME] : r[O_NAME] + r[O_NAME_LEN]]
            q += r[O_NAME_LEN]
            if fpos[j] < 0:
                out[q : q + r[O_DEF_LEN]] = text[r[O_DEF] : r[O_DEF] + r[O_DEF_LEN]]
                q += r[O_DEF_LEN]
            else:
                q = _field(b, fpos[j], end, r[O_KIND], r[O_ITEM], out, q)
                if q < 0:
                    break
        if q < 0:
            continue
        out[q] = 125  # '}'
        o = q + 1
        offsets[i + 1] = o
        status[i] = ST_OK
    return offsets, out[:o], api, ver, status


@njit(cache=True, nogil=True)
def gather_lines(text, offsets, rows):
    """The texts ``text[offsets[r]:offsets[r + 1]]`` of ``rows``, each followed by a newline
    (JSON lines for Arrow's reader)."""
    size = 0
    for r in rows:
        size += offsets[r + 1] - offsets[r] + 1
    out = np.empty(size, dtype=np.uint8)
    o = 0
    for r in rows:
        a, b = offsets[r], offsets[r + 1]
        out[o : o + b - a] = text[a:b]
        o += b - a
        out[o] = 10
        o += 1
    return out
