"""irlscrapy.distributed.ownership: what an agent owns, has taken over and holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.distributed.ownership import Ownership, decode_holds, encode_holds
from irlscrapy.distributed.partitions import assignment

P = 16
AGENTS = ["a", "b", "c", "d"]


@given(
    st.lists(st.sets(st.sampled_from(AGENTS[1:]), max_size=3), min_size=1, max_size=8),
    st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_an_agent_holds_what_it_owns_and_what_it_lost_until_it_hands_it_off(
    changes: list[set[str]], hand_off: list[bool]
) -> None:
    """A model: what ``a`` holds is what it owned at some point since its last handoff
    of it, and never less than it owns now; what it lost is what it holds and does not
    own; the partitions taken over are read once nobody else holds any of them."""
    ours = Ownership("a", P)
    held: set[int] = set()
    lost = ours.start(["a", *sorted(changes[0])], frozenset())
    assert not lost
    for others, release in zip(changes, hand_off, strict=False):
        members = ["a", *sorted(others)]
        owned = assignment(members, P)["a"]
        lost = ours.set_members(members)
        assert ours.owned == owned and lost == (held | ours.owned) - owned
        held |= owned
        assert ours.holds == frozenset(held) and ours.owned <= ours.holds
        assert set(ours.taken_over) <= owned
        if release:
            ours.released(lost)
            held -= lost
            assert ours.holds == owned
        assert ours.routed_here == owned - set(ours.taken_over)
        others_hold = {"b": frozenset(range(P // 2)), "a": frozenset(range(P))}
        readable = ours.readable(list(ours.taken_over), others_hold)
        blocked = any(p < P // 2 for p in ours.taken_over)
        assert readable == ([] if blocked else ours.taken_over)
        ours.read(readable)
        assert not set(readable) & set(ours.taken_over)


def test_a_restart_hands_off_what_redis_says_it_still_holds() -> None:
    ours = Ownership("a", P)
    before = assignment(["a"], P)["a"]
    lost = ours.start(["a", "b"], before)  # b joined while a was down
    assert lost == before - assignment(["a", "b"], P)["a"] and lost
    assert ours.published == ours.holds == before  # (published as it starts)
    assert ours.unpublished() is None
    ours.released(lost)
    assert ours.unpublished() == assignment(["a", "b"], P)["a"]


def test_holds_round_trip_through_their_redis_form() -> None:
    assert decode_holds(encode_holds(frozenset({3, 1, 12}))) == {1, 3, 12}
    assert decode_holds(b"") == frozenset()
