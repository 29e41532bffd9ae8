"""URLs an agent hands over (irlscrapy.distributed.leave and .handoff) through the
intake of their new owner, on a real URLseen: admitted once per handover's salt, even
when URLseen knows them, and never under the owner's own leave salt (it holds those
still), but again under its handoff salt (those left it)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from scrapy.utils.request import RequestFingerprinter
from twisted.internet import defer, task

from irlscrapy.distributed.ownership import Ownership
from irlscrapy.distributed.peering import AgentPeers
from irlscrapy.dupefilters.identity import RequestIdentity
from irlscrapy.dupefilters.urlseen import DRUMDupeFilter
from irlscrapy.scheduler.intake import Intake, handed_off_aux, stored_aux
from irlscrapy.scheduler.requestcodec import encode_link, payload_url

OWN_SALT = 7
HEAD = len(stored_aux(0, b""))  # an aux's head: route and priority


class _Waker:
    clock = task.Clock()

    def wake(self) -> None:
        pass


def _intake(path: Path, salt_kind: str = "leave") -> Intake:
    urlseen = DRUMDupeFilter(
        path, RequestIdentity(RequestFingerprinter()), memory=64 << 20,
        in_thread=lambda f, *a: defer.maybeDeferred(f, *a),
    )  # fmt: skip
    urlseen.batched = True
    urlseen.open()
    ownership = Ownership("a", 16)
    ownership.set_salt(salt_kind, OWN_SALT)
    peers = AgentPeers(SimpleNamespace(ownership=ownership))  # type: ignore[arg-type]
    intake = Intake(urlseen, None, None, _Waker(), dedup=True, persistent=False,  # type: ignore[arg-type]
                    log_unserializable=False, peers=peers)  # fmt: skip
    return intake


def _stored(intake: Intake) -> list[str]:
    """Merge what the intake submitted; the URLs it would store, in order."""
    urlseen = intake.urlseen
    urlseen.flush()
    found: list[str] = []
    for batch in urlseen.results():
        assert batch.aux is not None
        found += [payload_url(batch.aux[i][HEAD:]) for i in batch.unique.nonzero()[0].tolist()
                  if batch.aux[i]]  # fmt: skip
        urlseen.ack(batch.seq)
    return found


def _handed(url: str, salt: int) -> bytes:
    return handed_off_aux(3, encode_link(url, 1, None, None), salt)


def test_a_url_handed_over_is_admitted_once_per_salt_even_if_seen(tmp_path: Path) -> None:
    intake = _intake(tmp_path)
    try:
        seen, fresh = "http://h.com/seen", "http://h.com/fresh"
        intake.receive([seen], [stored_aux(0, encode_link(seen, 1, None, None))])
        assert _stored(intake) == [seen]  # admitted here once (it may be coming back)
        intake.receive([seen, fresh], [_handed(seen, 11), _handed(fresh, 11)])
        assert _stored(intake) == [seen, fresh], "handed over: admitted though seen"
        intake.receive([seen, fresh], [_handed(seen, 11), _handed(fresh, 11)])
        assert _stored(intake) == [], "the same handover again (a kill cut it short)"
        intake.receive([seen], [_handed(seen, 12)])
        assert _stored(intake) == [seen], "another handover of it: it was never fetched"
        intake.receive([fresh], [stored_aux(0, encode_link(fresh, 1, None, None))])
        assert _stored(intake) == [], "its own key is stored as seen"
        other = "http://h.com/own"
        intake.receive([other], [_handed(other, OWN_SALT)])
        assert _stored(intake) == [], "its own handover, back from a leave cut short"
    finally:
        intake.urlseen.close("finished")


def test_a_url_handed_off_to_an_agent_that_left_comes_back_and_is_admitted(
    tmp_path: Path,
) -> None:
    """An agent forwards a URL to one that joins (handoff salt); the joiner leaves before
    it reads it, and the URL comes back under that salt: the agent no longer holds it
    (a forward takes it out), so dropping it would lose it (seen in the join, kill -9
    and leave e2e test)."""
    intake = _intake(tmp_path, salt_kind="handoff")
    try:
        url = "http://h.com/forwarded"
        intake.receive([url], [stored_aux(0, encode_link(url, 1, None, None))])
        assert _stored(intake) == [url]
        intake.receive([url], [_handed(url, OWN_SALT)])
        assert _stored(intake) == [url]
        intake.receive([url], [_handed(url, OWN_SALT)])
        assert _stored(intake) == [], "once per salt"
    finally:
        intake.urlseen.close("finished")


def test_the_stored_aux_of_a_url_handed_over_loses_its_salt(tmp_path: Path) -> None:
    intake = _intake(tmp_path)
    try:
        url = "http://h.com/a"
        payload = encode_link(url, 1, None, None)
        intake.receive([url], [handed_off_aux(3, payload, 99)])
        intake.urlseen.flush()
        (batch, *_rest) = [b for b in intake.urlseen.results() if b.aux and b.aux[0]]
        assert batch.aux == [stored_aux(3, payload)]
    finally:
        intake.urlseen.close("finished")
