"""Hypothesis strategies shared by the test suite."""

from hypothesis import strategies as st

_label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
hosts = st.builds(
    lambda labels, tld: ".".join([*labels, tld]),
    st.lists(_label, min_size=1, max_size=3),
    st.sampled_from(["com", "co.uk", "org"]),
)
ports = st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}"))
_segment = st.one_of(
    st.from_regex(r"[A-Za-z0-9_~-]{0,8}", fullmatch=True),
    st.sampled_from([".", "..", "%2e", "a.html", "b.pdf", "x y", "%41"]),
)
paths = st.lists(_segment, max_size=5).map(lambda segs: "/".join(segs))
queries = st.one_of(st.just(""), st.from_regex(r"\?[a-z0-9=&;%]{0,12}", fullmatch=True))
fragments = st.one_of(st.just(""), st.from_regex(r"#[a-z0-9]{0,6}", fullmatch=True))
schemes = st.sampled_from(["http", "https"])

absolute_urls = st.builds(
    lambda s, h, p, path, q, f: f"{s}://{h}{p}/{path}{q}{f}",
    schemes,
    hosts,
    ports,
    paths,
    queries,
    fragments,
)

#: hrefs as they appear in pages: absolute, protocol-relative, root-relative, relative,
#: other schemes, fragments, with odd whitespace and dot segments.
hrefs = st.one_of(
    absolute_urls,
    st.builds(lambda h, path, q: f"//{h}/{path}{q}", hosts, paths, queries),
    st.builds(lambda path, q, f: f"/{path}{q}{f}", paths, queries, fragments),
    st.builds(lambda path, q, f: f"{path}{q}{f}", paths, queries, fragments),
    st.sampled_from(
        [
            "mailto:a@b.com",
            "javascript:void(0)",
            "tel:+1555",
            "ftp://h/x",
            "#top",
            "",
            "?q=1",
            "./",
            "../",
            "HTTP://UP.com/A",
            " /pad ",
        ]
    ),
)


def combined(old: int | None, value: int, combine: str) -> int:
    """The value a DRUM stores after an update (irlscrapy.storage.drummerge's
    ``combine``), on a plain dict's entry ``old`` (None: absent)."""
    if combine == "add":
        return (old or 0) + value
    if combine == "first":
        return value if old is None else old
    return value


#: Normalized path-absolute paths (no dot segments, no empty segments) with an optional
#: query: what a server's page paths look like, and what relative references point to.
_clean_segment = st.one_of(
    st.from_regex(r"[a-z0-9_~-]{1,6}(\.html)?", fullmatch=True),
    st.sampled_from(["x:y", "news", "blog"]),
)
clean_paths = st.builds(
    lambda segs, slash, query: "/" + "/".join(segs) + ("/" if slash and segs else "") + query,
    st.lists(_clean_segment, max_size=4),
    st.booleans(),
    st.one_of(st.just(""), st.from_regex(r"\?[a-z0-9=&]{1,8}", fullmatch=True)),
)
