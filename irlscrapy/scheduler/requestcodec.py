"""Requests and discovered links as bytes for the scheduler's disk queues, without pickle.

Grammar (integers big-endian; every payload is one record of :mod:`irlscrapy.storage.recordfile`,
whose length and CRC catch truncation, so this codec checks kinds and versions only)::

    payload := kind: u8, version: u8 = 1, body
    kind    := "L" LINK | "J" REQUEST_JSON | "P" REQUEST_PICKLE
    LINK    := depth: u32, cb: u16, ref: u32, callback: cb-1 bytes, referer: ref-1 bytes,
               url: the rest                  (a length field of 0 means None; all UTF-8)
    REQUEST_JSON   := url_len: u32, url: url_len bytes UTF-8, fields: ASCII JSON object
    REQUEST_PICKLE := url_len: u32, url: url_len bytes UTF-8, fields: pickle protocol 5

``fields`` is :meth:`scrapy.Request.to_dict` without ``url`` (which sits in front so that
:func:`payload_url` is cheap); callback and errback are spider method names, ``_class``
names a Request subclass. In JSON, ``headers`` is ``[[name, [value, ...]], ...]`` with
bytes as latin-1 strings, and other values JSON cannot carry are one-key objects::

    {"$b": ascii text}  bytes that are ASCII     {"$B": base64}  other bytes
    {"$t": [...]} tuple   {"$s": [...]} set   {"$f": [...]} frozenset
    {"$d": [[key, value], ...]}  dict whose keys are not all str, or that looks like a tag

A request whose meta, cb_kwargs or cookies hold anything else (an arbitrary object,
a str subclass, a cycle) is stored as REQUEST_PICKLE, for that request only; callers
count them with :func:`uses_pickle`. Pickles are only ever read from our own JOBDIR.

Choice of encoding, measured with timeit on Python 3.11 (encode + decode of ``to_dict``
output): for a typical request (GET; Referer and Accept-Language; meta with depth,
download_slot, a float, None), bytes as latin-1 text, as base64, or as ASCII-else-base64
cost the same (1.00 : 1.01 : 1.05, ~15 us, 417 bytes). A 4 KiB binary body makes a 17.0 kB
record as latin-1 in ASCII JSON, 8.7 kB as latin-1 in raw UTF-8, 5.7 kB as base64 (1.18x
the time of the first); pickle 4.4 kB. Chosen: ASCII JSON, bytes as ASCII text else
base64: readable for textual bodies, compact for binary ones, no lone-surrogate trouble.
Pickle of the same dict is 4.2x faster (marshal 4.5x, but its format changes between
Python versions), yet ``to_dict`` and ``request_from_dict`` dominate: a whole
encode_request + decode_request of the typical request is 1.4-1.6x the pickle-based one
(48-56 vs 34-36 us, over runs). :func:`encode_link` takes 0.35 us, 0.19-0.21x
``json.dumps`` of the same four fields; :func:`payload_url` under 1 us.
"""

from __future__ import annotations

import base64
import json
import pickle
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from scrapy import Request, Spider
from scrapy.utils.request import request_from_dict

from irlscrapy.exceptions import RequestCodecError

FORMAT_VERSION: Final = 1  # DO NOT CHANGE: stored in every payload
LINK: Final = 0x4C  # "L"  DO NOT CHANGE
REQUEST_JSON: Final = 0x4A  # "J"  DO NOT CHANGE
REQUEST_PICKLE: Final = 0x50  # "P"  DO NOT CHANGE
PICKLE_PROTOCOL: Final = 5  # DO NOT CHANGE
_KIND_NAMES: Final = {LINK: "LINK", REQUEST_JSON: "REQUEST_JSON", REQUEST_PICKLE: "REQUEST_PICKLE"}
_LINK_HEAD = struct.Struct(">BBIHI")  # DO NOT CHANGE: kind, version, depth, cb, ref
_REQUEST_HEAD = struct.Struct(">BBI")  # DO NOT CHANGE: kind, version, url_len
_TAGS: Final = frozenset({"$b", "$B", "$t", "$s", "$f", "$d"})
_ENCODER = json.JSONEncoder(separators=(",", ":"))  # ensure_ascii: the output is ASCII


@dataclass(frozen=True, slots=True)
class LinkRecord:
    """A URL discovered as a plain string; it becomes a Request when it leaves the frontier."""

    url: str
    depth: int  # depth of the new page
    callback: str | None  # spider method name; None: the spider's parse
    referer: str | None  # value of the Referer header to send; None: none


class _Unrepresentable(Exception):
    pass


def _tag(v: Any) -> Any:
    t = type(v)
    if t is str or t is int or t is float or t is bool or v is None:
        return v
    if t is bytes:
        return {"$b": v.decode("ascii")} if v.isascii() else {"$B": base64.b64encode(v).decode()}
    if t is list:
        return [_tag(x) for x in v]
    if t is dict:
        if all(type(k) is str for k in v) and not (len(v) == 1 and next(iter(v)) in _TAGS):
            return {k: _tag(x) for k, x in v.items()}
        return {"$d": [[_tag(k), _tag(x)] for k, x in v.items()]}
    if t is tuple:
        return {"$t": [_tag(x) for x in v]}
    if t is set or t is frozenset:
        return {"$s" if t is set else "$f": [_tag(x) for x in v]}
    raise _Unrepresentable(t)


def _untag(d: dict[str, Any]) -> Any:
    if len(d) != 1 or (key := next(iter(d))) not in _TAGS:
        return d
    v = d[key]
    if key == "$b":
        return v.encode("ascii")
    if key == "$B":
        return base64.b64decode(v, validate=True)
    if key == "$d":
        return {k: x for k, x in v}
    return {"$t": tuple, "$s": set, "$f": frozenset}[key](v)


_DECODER = json.JSONDecoder(object_hook=_untag)


def encode_request(request: Request, spider: Spider | None) -> bytes:
    """Return a REQUEST_JSON payload, or REQUEST_PICKLE if JSON cannot carry a value."""
    try:
        fields = request.to_dict(spider=spider)
    except ValueError as exc:  # Scrapy's _find_method: a callback that is no spider method
        raise RequestCodecError(
            f"cannot store the request to {request.url}: {exc}; callbacks and errbacks are "
            "stored by name, so make them methods of the spider (or keep the request in memory)"
        ) from exc
    url = fields.pop("url").encode()
    try:
        doc = {k: _tag(v) for k, v in fields.items() if k != "headers"}
        doc["headers"] = [
            [name.decode("latin-1"), [value.decode("latin-1") for value in values]]
            for name, values in fields["headers"].items()
        ]
        body, kind = _ENCODER.encode(doc).encode("ascii"), REQUEST_JSON
    except (_Unrepresentable, RecursionError, ValueError):  # ValueError: int too long for str
        body, kind = _pickle(fields, request.url), REQUEST_PICKLE
    return _REQUEST_HEAD.pack(kind, FORMAT_VERSION, len(url)) + url + body


def _pickle(fields: dict[str, Any], url: str) -> bytes:
    try:
        return pickle.dumps(fields, PICKLE_PROTOCOL)
    except Exception as exc:
        where = "an attribute"
        for attr in ("meta", "cb_kwargs", "cookies", "flags"):
            value = fields.get(attr)
            items = value.items() if isinstance(value, dict) else enumerate(value or ())
            for key, item in items:
                try:
                    pickle.dumps(item, PICKLE_PROTOCOL)
                except Exception:
                    where = f"{attr}[{key!r}] (a {type(item).__qualname__})"
                    break
            else:
                continue
            break
        raise RequestCodecError(
            f"cannot store the request to {url}: {where} can be stored neither as JSON nor by "
            f"pickle ({exc}); put plain data there (str, numbers, bytes, lists, dicts) and "
            "rebuild the object in the callback, or keep the request in memory"
        ) from exc


def encode_link(url: str, depth: int, callback: str | None, referer: str | None) -> bytes:
    """Return a LINK payload: the compact record of a URL discovered as a string."""
    try:
        cb = b"" if callback is None else callback.encode()
        ref = b"" if referer is None else referer.encode()
        cb_len = 0 if callback is None else len(cb) + 1
        ref_len = 0 if referer is None else len(ref) + 1
        return (
            _LINK_HEAD.pack(LINK, FORMAT_VERSION, depth, cb_len, ref_len) + cb + ref + url.encode()
        )
    except (struct.error, UnicodeEncodeError) as exc:
        raise RequestCodecError(
            f"cannot store the link {url!r} (depth {depth}, callback {callback!r}): {exc}; "
            "depth must fit 0..2**32-1, the callback name 65534 bytes, all text valid UTF-8"
        ) from exc


def encode_links(
    urls: Sequence[str],
    depth: int,
    callback: str | None,
    referers: Sequence[str | None],
    prefix: bytes = b"",
) -> list[bytes]:
    """``prefix + encode_link(url, depth, callback, referer)`` of each URL and its
    Referer: the head is packed once per distinct Referer (a page's links share a few)."""
    heads: dict[str | None, bytes] = {}
    out = []
    for url, referer in zip(urls, referers, strict=True):
        try:
            head = heads.get(referer)
            if head is None:
                head = heads[referer] = prefix + encode_link("", depth, callback, referer)
            out.append(head + url.encode())
        except (RequestCodecError, UnicodeEncodeError):
            break
    else:
        return out
    # one of them cannot be stored: encode_link says which, and why
    return [
        prefix + encode_link(u, depth, callback, r) for u, r in zip(urls, referers, strict=True)
    ]


def payload_kind(data: bytes) -> int:
    """Return LINK, REQUEST_JSON or REQUEST_PICKLE; check the kind and format version."""
    if len(data) < 2 or data[0] not in _KIND_NAMES:
        raise RequestCodecError(
            f"not an irlscrapy request payload (starts {bytes(data[:8])!r}); the queue file "
            "is damaged or not ours: remove it, or start with a new JOBDIR"
        )
    if data[1] != FORMAT_VERSION:
        raise RequestCodecError(
            f"{_KIND_NAMES[data[0]]} payload has format version {data[1]}, this irlscrapy "
            f"reads version {FORMAT_VERSION}: resume with the irlscrapy that wrote the JOBDIR, "
            "or start with a new JOBDIR"
        )
    return data[0]


def uses_pickle(data: bytes) -> bool:
    """Whether the payload fell back to pickle (for a stats counter)."""
    return payload_kind(data) == REQUEST_PICKLE


def _damaged(kind: int, exc: Exception) -> RequestCodecError:
    return RequestCodecError(
        f"damaged {_KIND_NAMES[kind]} payload ({exc!r}); remove the queue file, "
        "or start with a new JOBDIR"
    )


def _split(data: bytes) -> tuple[int, str, int]:
    """Return (kind, url, offset of the fields after a request's URL)."""
    kind = payload_kind(data)
    try:
        if kind == LINK:
            _, _, _, cb, ref = _LINK_HEAD.unpack_from(data)
            start, end = _LINK_HEAD.size + max(cb - 1, 0) + max(ref - 1, 0), len(data)
        else:
            start = _REQUEST_HEAD.size
            end = start + _REQUEST_HEAD.unpack_from(data)[2]
        if start > end or end > len(data):
            raise ValueError("its length fields overrun it")
        return kind, data[start:end].decode(), end
    except (struct.error, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise _damaged(kind, exc) from exc


def payload_url(data: bytes) -> str:
    """Return the URL of any payload without decoding the rest."""
    return _split(data)[1]


def link_from_payload(data: bytes) -> LinkRecord:
    """Return the fields of a LINK payload."""
    kind, url, _ = _split(data)
    if kind != LINK:
        raise RequestCodecError(f"{_KIND_NAMES[kind]} payload is not a link: use decode_request")
    _, _, depth, cb, ref = _LINK_HEAD.unpack_from(data)
    start = _LINK_HEAD.size + max(cb - 1, 0)
    try:
        callback = data[_LINK_HEAD.size : start].decode() if cb else None
        referer = data[start : start + ref - 1].decode() if ref else None
    except ValueError as exc:
        raise _damaged(kind, exc) from exc
    return LinkRecord(url, depth, callback, referer)


def decode_request(data: bytes, spider: Spider | None) -> Request:
    """Rebuild the Request of any payload (a LINK becomes a GET with meta depth)."""
    kind, url, offset = _split(data)
    if kind == LINK:
        link = link_from_payload(data)
        fields: dict[str, Any] = {"callback": link.callback, "meta": {"depth": link.depth}}
        if link.referer is not None:
            fields["headers"] = {b"Referer": [link.referer.encode()]}
    else:
        try:
            if kind == REQUEST_JSON:
                fields = _DECODER.decode(data[offset:].decode("ascii"))
                fields["headers"] = {
                    name.encode("latin-1"): [value.encode("latin-1") for value in values]
                    for name, values in fields["headers"]
                }
            else:
                fields = pickle.loads(data[offset:])
            if not isinstance(fields, dict):
                raise TypeError(f"fields are a {type(fields).__name__}, not a dict")
        except Exception as exc:
            raise _damaged(kind, exc) from exc
    fields["url"] = url
    if spider is None and (fields.get("callback") or fields.get("errback")):
        raise RequestCodecError(
            f"the request to {url} names callback {fields.get('callback')!r} and errback "
            f"{fields.get('errback')!r}: pass the spider to decode it"
        )
    try:
        return request_from_dict(fields, spider=spider)
    except Exception as exc:
        raise RequestCodecError(
            f"cannot rebuild the request to {url}: {exc}; resume with the spider (and "
            "Request classes) that stored it, or start with a new JOBDIR"
        ) from exc


request_from_payload = decode_request
