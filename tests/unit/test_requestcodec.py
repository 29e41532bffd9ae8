"""The request codec: exact round trips, the pickle fallback, links, and damaged payloads."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Request, Spider
from scrapy.http import FormRequest, JsonRequest, Response

from irlscrapy.scheduler.requestcodec import (
    FORMAT_VERSION,
    LINK,
    REQUEST_JSON,
    REQUEST_PICKLE,
    LinkRecord,
    RequestCodecError,
    decode_request,
    encode_link,
    encode_links,
    encode_request,
    link_from_payload,
    payload_kind,
    payload_url,
    request_from_payload,
    uses_pickle,
)


class TinySpider(Spider):
    name = "tiny"

    def parse(self, response: Response, **kwargs: Any) -> None:
        pass

    def parse_item(self, response: Response) -> None:
        pass

    def on_error(self, failure: Any) -> None:
        pass


class OtherSpider(Spider):
    name = "other"


@dataclass
class Opaque:
    """Not JSON: makes the codec fall back to pickle."""

    value: int


class Name(str):
    """A str subclass: JSON would bring it back as a plain str."""


SPIDER = TinySpider()
URL = "https://www.example.com/a/b.html?q=1"


def typed(v: Any) -> Any:
    """A form of v where equal means same types too (1, 1.0 and True differ)."""
    if isinstance(v, dict):
        return ("dict", [(typed(k), typed(x)) for k, x in v.items()])
    if isinstance(v, list | tuple):
        return (type(v).__name__, [typed(x) for x in v])
    if isinstance(v, set | frozenset):
        return (type(v).__name__, sorted(repr(typed(x)) for x in v))
    if isinstance(v, float) and math.isnan(v):
        return ("float", "nan")
    return (type(v).__name__, repr(v))


def round_trip(request: Request) -> Request:
    decoded = decode_request(encode_request(request, SPIDER), SPIDER)
    assert type(decoded) is type(request)
    assert typed(decoded.to_dict(spider=SPIDER)) == typed(request.to_dict(spider=SPIDER))
    return decoded


# -- round trips of request shapes ------------------------------------------------------

SHAPES = {
    "plain GET": lambda: Request(URL),
    "FormRequest with formdata": lambda: FormRequest(
        URL, formdata={"a": "1", "b": ["x", "y"], "é": "ü"}
    ),
    "FormRequest GET": lambda: FormRequest(URL, method="GET", formdata={"q": "a b"}),
    "JsonRequest": lambda: JsonRequest(URL, data={"k": [1, 2, {"z": None}]}),
    "multi-valued headers": lambda: Request(
        URL, headers={"Accept": ["text/html", "application/xml"], "X-Raw": b"\xff\x00v"}
    ),
    "binary body": lambda: Request(URL, method="PUT", body=bytes(range(256)) * 3),
    "ASCII body": lambda: Request(URL, method="POST", body=b"a=1&b=2"),
    "cookies dict": lambda: Request(URL, cookies={"session": "abc", "n": "1"}),
    "cookies list": lambda: Request(
        URL, cookies=[{"name": "a", "value": "1", "domain": "example.com", "path": "/"}]
    ),
    "nested meta": lambda: Request(
        URL,
        meta={
            "depth": 3,
            "download_slot": "www.example.com",
            "nested": {"a": [1, 2.5, None, {"b": (1, "x", b"y")}], "t": (), "$b": "tag"},
            "bytes": b"\x00\x80\xff",
            "floats": [0.1, -0.0, 1e300, math.inf, -math.inf],
            "none": None,
            "bools": [True, False, 1, 0],
            "int keys": {1: "one", (2, 3): "tuple", b"k": "bytes", None: "none"},
            "sets": [{1, 2}, frozenset({"a"})],
            "big": 2**100,
        },
    ),
    "cb_kwargs": lambda: Request(
        URL, callback=SPIDER.parse, cb_kwargs={"page": 2, "tags": ("a", "b"), "raw": b"x"}
    ),
    "callback and errback": lambda: Request(
        URL, callback=SPIDER.parse_item, errback=SPIDER.on_error
    ),
    "negative priority, flags, dont_filter": lambda: Request(
        URL, priority=-7, flags=["cached", "retry"], dont_filter=True
    ),
    "non-UTF-8 encoding": lambda: Request(
        "http://example.ru/поиск?q=тест", encoding="cp1251", body="тело".encode("cp1251")
    ),
    "unicode URL": lambda: Request("https://bücher.example/straße?ä=ö"),
    "tag-like dict in meta": lambda: Request(URL, meta={"x": {"$t": [1]}, "y": {"$d": []}}),
}


@pytest.mark.parametrize("make", SHAPES.values(), ids=SHAPES.keys())
def test_request_shapes_round_trip_exactly_as_json(make: Any) -> None:
    request = make()
    data = encode_request(request, SPIDER)
    assert payload_kind(data) == REQUEST_JSON
    assert not uses_pickle(data)
    assert payload_url(data) == request.url
    round_trip(request)


def test_decoded_request_calls_the_same_spider_methods() -> None:
    decoded = round_trip(Request(URL, callback=SPIDER.parse_item, errback=SPIDER.on_error))
    assert decoded.callback == SPIDER.parse_item
    assert decoded.errback == SPIDER.on_error


def test_decoded_form_request_keeps_body_and_content_type() -> None:
    request = FormRequest(URL, formdata={"a": "1", "b": "2"})
    decoded = round_trip(request)
    assert decoded.body == b"a=1&b=2"
    assert decoded.headers[b"Content-Type"] == b"application/x-www-form-urlencoded"


def test_request_without_callback_decodes_without_spider() -> None:
    request = Request(URL, meta={"depth": 1})
    decoded = decode_request(encode_request(request, None), None)
    assert decoded.to_dict() == request.to_dict()


def test_request_from_payload_is_decode_request() -> None:
    assert request_from_payload is decode_request


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.binary(max_size=8),
)
_keys = st.one_of(st.text(max_size=4), st.integers(), st.binary(max_size=4))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(_keys, inner, max_size=4),
        st.dictionaries(st.sampled_from(["$b", "$B", "$t", "$s", "$f", "$d", "b"]), inner),
    ),
    max_leaves=12,
)
_meta = st.dictionaries(st.text(max_size=6), _values, max_size=5)


@given(meta=_meta, cb_kwargs=_meta)
def test_json_like_bytes_and_tuple_values_round_trip_exactly(
    meta: dict[str, Any], cb_kwargs: dict[str, Any]
) -> None:
    request = Request(URL, callback=SPIDER.parse, meta=meta, cb_kwargs=cb_kwargs)
    assert payload_kind(encode_request(request, SPIDER)) == REQUEST_JSON
    round_trip(request)


# -- the pickle fallback ---------------------------------------------------------------


def test_object_in_meta_falls_back_to_pickle_for_that_request_only() -> None:
    request = Request(URL, meta={"depth": 1, "obj": Opaque(5)}, cookies={"a": "b"})
    data = encode_request(request, SPIDER)
    assert payload_kind(data) == REQUEST_PICKLE
    assert uses_pickle(data)
    assert payload_url(data) == URL
    decoded = round_trip(request)
    assert decoded.meta["obj"] == Opaque(5)
    assert not uses_pickle(encode_request(Request(URL, meta={"depth": 1}), SPIDER))


def test_str_subclass_and_cycle_fall_back_to_pickle() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    data = encode_request(Request(URL, cb_kwargs={"n": Name("x")}), SPIDER)
    assert uses_pickle(data)
    assert type(decode_request(data, SPIDER).cb_kwargs["n"]) is Name
    data = encode_request(Request(URL, meta={"c": cyclic}), SPIDER)
    assert uses_pickle(data)
    decoded = decode_request(data, SPIDER).meta["c"]
    assert decoded[0] is decoded


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"meta": {"depth": 1, "lock": threading.Lock()}}, "meta['lock']"),
        ({"cb_kwargs": {"fn": lambda: None}}, "cb_kwargs['fn']"),
    ],
)
def test_value_neither_json_nor_pickle_can_store_is_named_in_the_error(
    kwargs: dict[str, Any], where: str
) -> None:
    with pytest.raises(RequestCodecError, match=r"neither as JSON nor by pickle") as info:
        encode_request(Request(URL, **kwargs), SPIDER)
    assert where in str(info.value)
    assert "keep the request in memory" in str(info.value)


def test_callback_that_is_not_a_spider_method_is_refused() -> None:
    with pytest.raises(RequestCodecError, match=r"not an instance method.*methods of the spider"):
        encode_request(Request(URL, callback=lambda response: None), SPIDER)
    with pytest.raises(RequestCodecError, match="methods of the spider"):
        encode_request(Request(URL, errback=OtherSpider().parse), SPIDER)


def test_codec_error_is_a_value_error_as_scrapy_schedulers_expect() -> None:
    assert issubclass(RequestCodecError, ValueError)


# -- links -----------------------------------------------------------------------------

LINKS = [
    LinkRecord("https://example.com/", 0, None, None),
    LinkRecord("https://bücher.example/straße?ä=ö#frag", 1, "parse_item", "https://ü.example/"),
    LinkRecord("http://a.example/x", 2**32 - 1, "", ""),
    LinkRecord("", 7, None, "https://ref.example/"),
    LinkRecord("http://b.example/\U0001f600", 65536, "parse", None),
]


@pytest.mark.parametrize("link", LINKS, ids=range(len(LINKS)))
def test_links_round_trip(link: LinkRecord) -> None:
    data = encode_link(link.url, link.depth, link.callback, link.referer)
    assert payload_kind(data) == LINK
    assert not uses_pickle(data)
    assert link_from_payload(data) == link
    assert payload_url(data) == link.url


def test_link_layout_is_stable() -> None:
    data = encode_link("http://a/", 3, "cb", None)
    assert data == b"L\x01" + b"\x00\x00\x00\x03" + b"\x00\x03" + b"\x00\x00\x00\x00cbhttp://a/"


def test_link_becomes_a_get_request_with_depth_callback_and_referer() -> None:
    data = encode_link(URL, 4, "parse_item", "https://ref.example/")
    request = decode_request(data, SPIDER)
    assert type(request) is Request
    assert (request.url, request.method, request.meta) == (URL, "GET", {"depth": 4})
    assert request.callback == SPIDER.parse_item
    assert request.headers[b"Referer"] == b"https://ref.example/"
    plain = decode_request(encode_link(URL, 0, None, None), None)
    assert plain.callback is None
    assert b"Referer" not in plain.headers


@pytest.mark.parametrize(
    ("depth", "callback"), [(-1, None), (2**32, None), (0, "x" * 65535), (0, "\ud800")]
)
def test_link_that_does_not_fit_is_refused(depth: int, callback: str | None) -> None:
    with pytest.raises(RequestCodecError, match="cannot store the link"):
        encode_link(URL, depth, callback, None)


link_urls = st.text(max_size=20)
referers = st.one_of(st.none(), st.sampled_from(["https://ref.example/", "", "https://ü.example/"]))


@given(
    st.lists(st.tuples(link_urls, referers), max_size=8),
    st.integers(0, 2**32 - 1),
    st.sampled_from([None, "", "parse"]),
    st.binary(max_size=5),
)
def test_encode_links_is_encode_link_of_each_after_the_prefix(
    pairs: list[tuple[str, str | None]], depth: int, callback: str | None, prefix: bytes
) -> None:
    urls, refs = [u for u, _ in pairs], [r for _, r in pairs]
    try:
        one_by_one = [prefix + encode_link(u, depth, callback, r) for u, r in pairs]
    except RequestCodecError as exc:  # a lone surrogate: the batch refuses the same URL
        with pytest.raises(RequestCodecError) as batch_error:
            encode_links(urls, depth, callback, refs, prefix=prefix)
        assert str(batch_error.value) == str(exc)
        return
    assert encode_links(urls, depth, callback, refs, prefix=prefix) == one_by_one


def test_encode_links_names_the_link_that_cannot_be_stored() -> None:
    urls = ["http://a.example/1", "http://a.example/\ud800", "http://a.example/3"]
    with pytest.raises(
        RequestCodecError, match=r"cannot store the link 'http://a\.example/\\ud800'"
    ):
        encode_links(urls, 1, None, [None] * 3)


def test_link_from_payload_refuses_a_request_payload() -> None:
    with pytest.raises(RequestCodecError, match="not a link"):
        link_from_payload(encode_request(Request(URL), SPIDER))


# -- versions and damaged payloads ------------------------------------------------------

PAYLOADS = {
    "link": lambda: encode_link(URL, 1, "parse", URL),
    "json": lambda: encode_request(Request(URL, meta={"depth": 1}), SPIDER),
    "pickle": lambda: encode_request(Request(URL, meta={"o": Opaque(1)}), SPIDER),
}


@pytest.mark.parametrize("make", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_every_payload_carries_the_format_version_and_a_wrong_one_is_refused(make: Any) -> None:
    data = make()
    assert data[1] == FORMAT_VERSION
    wrong = data[:1] + bytes([FORMAT_VERSION + 1]) + data[2:]
    for read in (payload_kind, payload_url, uses_pickle, lambda d: decode_request(d, SPIDER)):
        with pytest.raises(RequestCodecError, match=f"format version {FORMAT_VERSION + 1}"):
            read(wrong)


@pytest.mark.parametrize(
    "garbage",
    [b"", b"J", b"\x00\x01", b"hello world", b"J\x01", b"J\x01\x00\x00\x00\x09http://a/"],
)
def test_garbage_is_refused(garbage: bytes) -> None:
    with pytest.raises(RequestCodecError):
        decode_request(garbage, SPIDER)


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[1, 2]", b'{"headers": 5}', b"\xff\xfe", b'{"headers": [], "x": {"$B": "!"}}'],
)
def test_damaged_json_fields_are_refused(body: bytes) -> None:
    data = b"J\x01\x00\x00\x00\x09http://a/" + body
    assert payload_url(data) == "http://a/"
    with pytest.raises(RequestCodecError, match="damaged REQUEST_JSON payload"):
        decode_request(data, SPIDER)


@pytest.mark.parametrize("body", [b"not a pickle", b"\x80\x05K\x01."])
def test_damaged_pickle_fields_are_refused(body: bytes) -> None:
    with pytest.raises(RequestCodecError, match="damaged REQUEST_PICKLE payload"):
        decode_request(b"P\x01\x00\x00\x00\x09http://a/" + body, SPIDER)


@pytest.mark.parametrize(
    "data",
    [
        b"J\x01\x00\x00\x01\x00http://a/",  # URL longer than the payload
        b"L\x01\x00\x00\x00\x01\x00\x09\x00\x00\x00\x00cb",  # callback longer
        b"L\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00http://\xff/",  # not UTF-8
        b"L\x01\x00\x00",  # header cut short
    ],
)
def test_length_fields_that_overrun_the_payload_are_refused(data: bytes) -> None:
    with pytest.raises(RequestCodecError, match="damaged"):
        payload_url(data)


def test_link_callback_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(RequestCodecError, match="damaged LINK payload"):
        link_from_payload(b"L\x01\x00\x00\x00\x01\x00\x02\x00\x00\x00\x00\xffhttp://a/")


def test_stored_callback_needs_the_spider_that_has_it() -> None:
    data = encode_request(Request(URL, callback=SPIDER.parse_item), SPIDER)
    with pytest.raises(RequestCodecError, match="pass the spider"):
        decode_request(data, None)
    with pytest.raises(RequestCodecError, match="'parse_item' not found"):
        decode_request(data, OtherSpider())
    with pytest.raises(RequestCodecError, match="'parse_item' not found"):
        decode_request(encode_link(URL, 1, "parse_item", None), OtherSpider())
