"""The multi-agent mode's ``IRL_*`` settings (joined to the others in
:mod:`irlscrapy.defaults`, where components read them)."""

from __future__ import annotations

from irlscrapy.defaults.spec import Setting

MULTI_AGENT_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "IRL_REDIS_URL",
        "",
        "str",
        "redis:// URL",
        "the multi-agent mode: this process is one agent of a crawl whose agents exchange "
        "URLs over this Redis (irlscrapy.distributed); empty: a crawl of one process",
    ),
    Setting(
        "IRL_CRAWL_ID",
        "",
        "str",
        "name",
        "the multi-agent crawl this agent belongs to (its keys in Redis); empty: the spider's name",
    ),
    Setting(
        "IRL_AGENT_ID",
        "",
        "str",
        "name",
        "this agent's id, unique within the crawl and the same at every restart of the "
        "agent (with its JOBDIR); required in the multi-agent mode",
    ),
    Setting(
        "IRL_AGENT_MEMBERS",
        [],
        "list",
        "agent ids",
        "the agents a multi-agent crawl starts with; each partition's owner is fixed among "
        "them from the start, whichever starts first (an agent not listed joins the crawl "
        "as it runs)",
    ),
    Setting(
        "IRL_AGENT_PARTITIONS",
        64,
        "int",
        "partitions",
        "P, the fixed partitions of the PLDs that agents own (about 16 per agent the crawl "
        "may ever run); stored in Redis by the first agent, and the same for every agent",
        minimum=1,
    ),
    Setting(
        "IRL_AGENT_LEASE",
        10.0,
        "float",
        "seconds",
        "an agent's lease on its id in Redis, renewed every third of it; a restart after "
        "a kill -9 waits up to this long for the dead process's lease to lapse",
    ),
    Setting(
        "IRL_AGENT_IP_ROUND",
        2.0,
        "float",
        "seconds",
        "how often an agent asks Redis for the IP leases it waits for and gives back those "
        "others wait for (per-IP politeness across agents): handovers come faster as it "
        "falls, at one Redis script a round",
    ),
    Setting(
        "IRL_EXCHANGE_BATCH",
        1000,
        "int",
        "records",
        "URLs and PLD edges per batch sent to another agent's partition",
        minimum=1,
    ),
    Setting(
        "IRL_EXCHANGE_AGE",
        10.0,
        "float",
        "seconds",
        "a partition's batch is sent when this old, even if not full (at once when the agent "
        "has nothing of its own to fetch): Redis commands per page fall as it grows",
    ),
    Setting(
        "IRL_EXCHANGE_CACHE",
        1 << 20,
        "int",
        "slots (power of two)",
        "the cache of URLs recently sent to other agents (8 bytes a slot): a popular URL "
        "is sent once while it stays there (Cho's replication); 0: off",
    ),
)
