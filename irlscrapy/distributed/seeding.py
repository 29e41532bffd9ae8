"""Seeding a multi-agent crawl from outside its agents (``irlscrapy agents seed``).

The seed URLs go where any agent would send them: each to the stream of its PLD's
partition, as a link of depth 0 (:func:`irlscrapy.scheduler.intake.seed_aux`), in batches
of at most :data:`SEED_BATCH` URLs, each with its host spelt as the agents' own intake
spells it (:func:`irlscrapy.domains.canonical_authority`). The owner drops a URL its
URLseen has seen, so seeding twice, or seeding a crawl that runs, fetches nothing twice.
If the crawl is new, the command stores its configuration, as its first agent would;
the crawl's "seeded" flag then lets the agents end once it is all crawled (agent.py: a
crawl that never had a URL is not done, so agents started first wait for their seeds).
"""

from __future__ import annotations

from collections.abc import Iterable

from irlscrapy.distributed.partitions import partition_of
from irlscrapy.distributed.registry import CrawlRegistry
from irlscrapy.distributed.streams import Batch, Exchange, Outgoing
from irlscrapy.domains import ICANN, PayLevelDomains, canonical_authority, url_host
from irlscrapy.scheduler.intake import seed_aux

SEED_BATCH = 1000


def seed_crawl(registry: CrawlRegistry, urls: Iterable[str]) -> dict[int, int]:
    """Send ``urls`` to their owners; return the URLs sent per partition."""
    registry.ensure_config()
    partitions = registry.config.partitions
    plds = PayLevelDomains(private=True) if registry.config.private_suffixes else ICANN
    exchange = Exchange(registry, "seed")
    exchange.create_groups(range(partitions))
    by_partition: dict[int, Batch] = {}
    for url in map(canonical_authority, urls):
        p = partition_of(plds(url_host(url)), partitions)
        batch = by_partition.setdefault(p, Batch(p))
        batch.urls.append(url)
        batch.auxes.append(seed_aux(url))
    outgoing = []
    for p, batch in by_partition.items():
        for at in range(0, len(batch.urls), SEED_BATCH):
            part = Batch(p, batch.urls[at : at + SEED_BATCH], batch.auxes[at : at + SEED_BATCH])
            sent = Outgoing(p)
            sent.add(part.encode())
            outgoing.append(sent)
    exchange.send(outgoing)
    registry.client.set(registry.key("seeded"), "1")
    return {p: len(batch.urls) for p, batch in by_partition.items()}
