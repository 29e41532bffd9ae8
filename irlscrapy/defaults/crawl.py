"""The ``IRL_*`` settings of a crawl, in one table (the multi-agent mode's:
:mod:`irlscrapy.defaults.agents`; both joined and read in :mod:`irlscrapy.defaults`)."""

from __future__ import annotations

from irlscrapy.defaults.spec import Setting
from irlscrapy.star.budgets import PAPER_TOP_SHARE

CRAWL_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "IRL_STATE_DIR",
        "",
        "str",
        "path",
        "directory for irlscrapy's disk state; empty uses JOBDIR, and without JOBDIR a "
        "temporary directory removed when the crawl closes",
    ),
    Setting(
        "IRL_URLSEEN_MEMORY",
        64 << 20,
        "int",
        "bytes",
        "RAM budget of the URLseen DRUM; its buckets, bucket size and buffers derive from "
        "it (the paper's model, section IV.D)",
        minimum=1,
    ),
    Setting(
        "IRL_PROGRESS_INTERVAL",
        5.0,
        "float",
        "seconds",
        "how often the progress line is logged; 0 turns the progress extension off",
    ),
    Setting(
        "IRL_LOG_FETCH_ERRORS",
        5,
        "int",
        "log lines per kind",
        "fetch-failure lines (retries given up, robots.txt errors, download errors) logged, "
        "at WARNING, per kind before the rest are only counted; negative logs them all",
        minimum=None,
    ),
    Setting(
        "IRL_CLOSE_GRACE",
        1.0,
        "float",
        "seconds",
        "when the spider starts closing (a CLOSESPIDER_* cap, Ctrl-C), downloads still in "
        "flight this long after are cut rather than waited for up to DOWNLOAD_TIMEOUT "
        "(irl/close/downloads_cut; their URLs are fetched by a resume with the same JOBDIR)",
    ),
    Setting(
        "IRL_DNS_SERVERS",
        "",
        "str",
        "ip[:port][,ip[:port]...]",
        "nameservers the IRL resolver asks instead of the system resolver; the in-vitro "
        "web sets it to its own DNS server",
    ),
    Setting(
        "IRL_DNS_TIMEOUT",
        5.0,
        "float",
        "seconds",
        "timeout of one DNS query attempt",
    ),
    Setting(
        "IRL_DNS_RETRIES",
        2,
        "int",
        "retries",
        "retries after SERVFAIL or a timeout (NXDOMAIN and no-data are answers, never "
        "retried); then the host is dropped with its URLs (irl/dns/dropped_*)",
    ),
    Setting(
        "IRL_DNS_RETRY_DELAY",
        2.0,
        "float",
        "seconds",
        "wait before the first DNS retry; doubles with each retry",
    ),
    Setting(
        "IRL_DNS_TTL_MIN",
        60.0,
        "float",
        "seconds",
        "answer TTLs are raised to at least this",
    ),
    Setting(
        "IRL_DNS_TTL_MAX",
        21600.0,
        "float",
        "seconds",
        "answer TTLs are capped at this",
    ),
    Setting(
        "IRL_DNS_TTL_DEFAULT",
        3600.0,
        "float",
        "seconds",
        "lifetime of system-resolver answers, which carry no TTL",
    ),
    Setting(
        "IRL_DNS_NEGATIVE_TTL",
        300.0,
        "float",
        "seconds",
        "how long a failed lookup (NXDOMAIN, SERVFAIL, timeout, no data) is cached",
    ),
    Setting(
        "IRL_DNS_CACHE_ENTRIES",
        25_000,
        "int",
        "entries",
        "DNS cache entries held in RAM; older ones spill to LevelDB under the state directory",
    ),
    Setting(
        "IRL_HOST_DELAY",
        1.0,
        "float",
        "seconds",
        "tau_h: the gap between two requests to one host of a domain with the default "
        "budget; scaled down in proportion to larger budgets. Unset, the project's "
        "DOWNLOAD_DELAY if it sets it or CONCURRENT_REQUESTS_PER_DOMAIN (each wait drawn "
        "as Scrapy draws it, never shortened), else 1 s: a focused crawl of a few sites "
        "at the pace scrapy startproject writes (DOWNLOAD_DELAY = 1); a broad crawl of "
        "many hosts wants the paper's 40 s",
    ),
    Setting(
        "IRL_HOST_DELAY_MIN",
        2.0,
        "float",
        "seconds",
        "the floor of tau_h however large a domain's budget; unset, the smaller of 2 s "
        "and half of tau_h (tau_h itself when it is the project's DOWNLOAD_DELAY)",
    ),
    Setting(
        "IRL_IP_DELAY",
        1.0,
        "float",
        "seconds",
        "tau_s: the gap between two requests to one IP address whose hosts have the "
        "default budget (the paper's 1 s); scaled down by their mean budget. Unset, the "
        "smaller of 1 s and a host's shortest wait (tau_h; for the project's DOWNLOAD_DELAY "
        "tau_h x (1 - jitter), half of it with Scrapy's jitter), so one site alone on its "
        "IP keeps its host's pace",
    ),
    Setting(
        "IRL_IP_DELAY_MIN",
        0.1,
        "float",
        "seconds",
        "the floor of tau_s; unset, the smaller of 0.1 s and a host's shortest wait at its floor",
    ),
    Setting(
        "IRL_BUDGET_DEFAULT",
        10,
        "int",
        "URLs per domain per queue",
        "B0, the budget of every PLD until STAR ranks it: how many of its URLs one BEAST "
        "queue holds",
        minimum=1,
    ),
    Setting(
        "IRL_BUDGET_MODE",
        "star",
        "str",
        "star, constant or off",
        "how many URLs of one PLD a BEAST queue holds: star, STAR's budget from the PLD's "
        "in-degree rank (IRL_BUDGET_FUNCTION); constant, IRL_BUDGET_DEFAULT for every "
        "PLD; off, no limit (one FIFO queue, delays as for IRL_BUDGET_DEFAULT). STAR counts "
        "in-degrees in all three",
        choices=("star", "constant", "off"),
    ),
    Setting(
        "IRL_BUDGET_FUNCTION",
        "share",
        "str",
        "name or import path",
        "F(in-degree, rank): share (linear in rank from IRL_BUDGET_MAX down to "
        "IRL_BUDGET_DEFAULT over the top IRL_STAR_TOP_SHARE of the PLDs seen), paper (the "
        "same over the top IRL_STAR_TOP_DOMAINS), constant, proportional, logarithmic, or "
        "an import path",
    ),
    Setting(
        "IRL_STAR_TOP_SHARE",
        PAPER_TOP_SHARE,
        "float",
        "share of the PLDs seen",
        "the PLDs that share raises above IRL_BUDGET_DEFAULT: the paper's 10,000 of its 89.7 "
        "million PLDs (0.011%); at least one PLD, at most IRL_STAR_TOP_DOMAINS",
        minimum=1e-9,  # above 0: any share this small raises one PLD
        maximum=1.0,
    ),
    Setting(
        "IRL_STAR_TOP_DOMAINS",
        10_000,
        "int",
        "PLDs",
        "the PLDs ranked by in-degree (the paper's 10,000; about 200 bytes of RAM each): "
        "the most that can get a budget other than IRL_BUDGET_DEFAULT",
        minimum=1,
    ),
    Setting(
        "IRL_BUDGET_MAX",
        10_000,
        "int",
        "URLs per domain per queue",
        "the largest budget STAR gives (the paper's 10,000, at rank 1)",
        minimum=1,
    ),
    Setting(
        "IRL_STAR_PRIVATE_SUFFIXES",
        False,
        "bool",
        "on/off",
        "PLDs under the Public Suffix List's private section too (alice.blogspot.com a "
        "PLD of its own); off, ICANN suffixes only (as the paper); process-wide",
    ),
    Setting(
        "IRL_STAR_REFRESH",
        10.0,
        "float",
        "seconds",
        "how often recorded PLD edges are merged and the budgets recomputed (sooner when "
        "the edge DRUM's buffers fill)",
    ),
    Setting(
        "IRL_STAR_DRUM_MEMORY",
        16 << 20,
        "int",
        "bytes",
        "RAM budget of each of STAR's two DRUMs (PLD edges, PLD in-degrees)",
        minimum=1,
    ),
    Setting(
        "IRL_BEAST_MAX_QUEUES",
        1024,
        "int",
        "queues",
        "the most BEAST queues (j) the overflow queue QF is ever split into",
        minimum=1,
    ),
    Setting(
        "IRL_WORKBENCH_URLS",
        100_000,
        "int",
        "URLs",
        "RAM cap on URLs admitted from BEAST into the workbench (and waiting for DNS)",
        minimum=1,
    ),
    Setting(
        "IRL_WORKBENCH_HORIZON",
        30.0,
        "float",
        "seconds",
        "admission from BEAST keeps the workbench at what the crawler fetches within this "
        "many seconds (its recent rate x the horizon; per host the horizon / tau_h), so "
        "BEAST's budget order decides what is crawled; past it only while no host is due "
        "and a fetch could start; 0: fill up to IRL_WORKBENCH_URLS",
    ),
    Setting(
        "IRL_WORKBENCH_HOST_URLS",
        64,
        "int",
        "URLs",
        "the most URLs of one host in the workbench; more go back to a later BEAST queue, so "
        "one huge site cannot fill the workbench",
        minimum=1,
    ),
    Setting(
        "IRL_ROBOTS_TTL",
        86400.0,
        "float",
        "seconds",
        "how long a robots.txt answer holds; after that it is fetched again before the "
        "host's next URL",
    ),
    Setting(
        "IRL_ROBOTS_RETRIES",
        3,
        "int",
        "fetches",
        "robots.txt fetches in a row that may end in 5xx or no answer before the host is "
        "taken as disallowing everything for IRL_ROBOTS_TTL (its URLs are dropped, stat "
        "irl/robots/disallowed); until then its URLs wait",
    ),
    Setting(
        "IRL_ROBOTS_RETRY_DELAY",
        60.0,
        "float",
        "seconds",
        "wait before fetching an unreachable robots.txt again; doubles with each failure",
    ),
    Setting(
        "IRL_ROBOTS_MAX_CRAWL_DELAY",
        30.0,
        "float",
        "seconds",
        "the most a robots.txt Crawl-delay raises its host's delay; a host asking for more "
        "is crawled at this delay (stat irl/robots/crawl_delay_capped)",
    ),
    Setting(
        "IRL_ROBOTS_RAM_HOSTS",
        4096,
        "int",
        "hosts",
        "robots.txt records held in RAM (an LRU); all of them are in LevelDB under the "
        "state directory",
    ),
    Setting(
        "IRL_ROBOTS_RAM_BODIES",
        1024,
        "int",
        "parsed robots.txt",
        "parsed robots.txt rules held in RAM (an LRU shared by hosts with the same body)",
    ),
    Setting(
        "IRL_ROBOTS_RAM_BYTES",
        8 << 20,
        "int",
        "bytes",
        "the robots.txt bodies whose parsed rules RAM holds, in bytes (a parse takes about "
        "8 times its body; a body is up to 500 KiB)",
    ),
    Setting(
        "IRL_ALLOW_PRIVATE_ADDRESSES",
        False,
        "str",
        "true/false or networks",
        "the address guard: by default hosts resolving to loopback, private, link-local, "
        "CGNAT, multicast, reserved or cloud-metadata addresses are refused (stat "
        "irl/guard/refused_lookups); true allows all, a comma-separated list of networks "
        "(127.0.0.0/8) allows those. The in-vitro web sets 127.0.0.0/8",
    ),
    Setting(
        "IRL_HEALTH_BACKOFF_BASE",
        10.0,
        "float",
        "seconds",
        "a host's back-off after its first timeout, connection error, or 429/503 without "
        "Retry-After; doubles with each failure in a row",
    ),
    Setting(
        "IRL_HEALTH_BACKOFF_MAX",
        600.0,
        "float",
        "seconds",
        "the longest back-off, Retry-After included (a longer Retry-After is cut to this, "
        "stat irl/hosts/retry_after_capped)",
    ),
    Setting(
        "IRL_HEALTH_MAX_FAILURES",
        5,
        "int",
        "failures",
        "failures in a row after which a host (429/503) or an origin (connection "
        "failures) is retired: its queued URLs are parked on disk (back to BEAST when "
        "the retirement ends, not lost) and it rests IRL_HEALTH_RETIRE_DELAY; 0 never retires",
    ),
    Setting(
        "IRL_HEALTH_RETIRE_DELAY",
        3600.0,
        "float",
        "seconds",
        "how long a retired host or origin rests before its next request",
    ),
    Setting(
        "IRL_IDLE_WATCH_INTERVAL",
        0.1,
        "float",
        "seconds",
        "how often the no-idle watch samples the scheduler; a second of samples idle "
        "while work waits counts in irl/scheduler/idle_with_work_windows; 0: off",
    ),
    Setting(
        "IRL_CRAWL_GIVE_UP_AFTER",
        30.0,
        "float",
        "seconds",
        "a finite crawl whose only work left waits on hosts or origins in back-off, "
        "retirement or a robots.txt retry waits this long (beyond the longest politeness "
        "delay) for one to come due, then ends with reason finished, parking those URLs "
        "(stat irl/frontier/given_up; a rerun with the same JOBDIR tries them again)",
    ),
    Setting(
        "IRL_CRAWL_CONTINUOUS",
        False,
        "bool",
        "flag",
        "a continuous crawl never gives up: it waits for hosts in back-off or "
        "retirement, and replays the parked URLs when a retirement ends",
    ),
    Setting(
        "IRL_TRAPS_MAX_PATH_DEPTH",
        24,
        "int",
        "path segments",
        "URLs whose path has more segments are dropped (crawler traps; stat "
        "irl/traps/path_depth); 0: no limit",
    ),
    Setting(
        "IRL_TRAPS_MAX_REPEATED_SEGMENTS",
        3,
        "int",
        "occurrences",
        "URLs whose path repeats one segment more often are dropped (crawler traps such "
        "as /a/b/a/b/a/b/...; stat irl/traps/repeated_segments); 0: no limit",
    ),
    Setting(
        "IRL_REACTOR_LAG_STATS",
        False,
        "bool",
        "on/off",
        "measure reactor lag with a 10 ms timer (stats irl/reactor/lag_*_ms); needs the "
        "extension irlscrapy.report.reactorlag.ReactorLag in EXTENSIONS",
    ),
    Setting(
        "IRL_REACTOR_LAG_TARGET",
        0.02,
        "float",
        "seconds",
        "the scheduler caps the fetches in flight (at most CONCURRENT_REQUESTS) so that "
        "the reactor runs a 10 ms timer no later than this: the cap falls when a quarter "
        "second's worst lag exceeds it and rises by one otherwise (stats irl/governor/*); "
        "0: no cap but CONCURRENT_REQUESTS",
    ),
    Setting(
        "IRL_STATUS_PORT",
        0,
        "int",
        "TCP port",
        "serve the crawl's figures on http://IRL_STATUS_HOST:port/ (HTML page, "
        "/status.json, Prometheus /metrics); 0: off; extension "
        "irlscrapy.report.status.StatusServer, enabled by the add-on",
        maximum=65535,
    ),
    Setting(
        "IRL_STATUS_HOST",
        "127.0.0.1",
        "str",
        "IP address",
        "the loopback address the status endpoint binds (non-loopback addresses are refused)",
    ),
    Setting(
        "IRL_STATUS_TOKEN",
        "",
        "str",
        "secret",
        "if set, the status endpoint answers only requests with Authorization: Bearer "
        "<token> or ?token=<token>",
    ),
    Setting(
        "IRL_WARC_DIR",
        "",
        "str",
        "path",
        "write WARC 1.1 files of every exchange (robots.txt included) here, through the "
        "add-on's download handler; empty: off",
    ),
    Setting(
        "IRL_WARC_PREFIX",
        "irlscrapy",
        "str",
        "name",
        "the WARC file names' prefix: <prefix>-<timestamp>-<serial>-<host>.warc.gz",
    ),
    Setting(
        "IRL_WARC_MAX_SIZE",
        1_000_000_000,
        "int",
        "bytes",
        "a WARC file is closed and the next one begun once it holds this many bytes",
        minimum=1,
    ),
    Setting(
        "IRL_WARC_CDXJ",
        False,
        "bool",
        "on/off",
        "write a CDXJ index beside each WARC file (<name>.cdxj)",
    ),
    Setting(
        "IRL_WARC_GZIP_LEVEL",
        1,
        "int",
        "zlib level",
        "compression level of each record's gzip member (0-9); 1 costs a ninth of the CPU "
        "of warcio's 9 for files about 18% larger (on the in-vitro web's pages)",
        maximum=9,
    ),
    Setting(
        "IRL_WARC_QUEUE_BYTES",
        64 << 20,
        "int",
        "bytes",
        "bodies waiting for the WARC writer's thread beyond this much make downloads wait "
        "for it (RAM bound; also what a kill -9 can lose)",
    ),
    Setting(
        "IRL_CONTENTSEEN_ENABLED",
        False,
        "bool",
        "on/off",
        "check every downloaded body's SHA-1 against a DRUM of those seen; a duplicate "
        "gets meta irl_duplicate_of (the first capture's date), stat "
        "irl/content/duplicates, and a WARC revisit record instead of a second copy",
    ),
    Setting(
        "IRL_REPORT_INTERVAL",
        10.0,
        "float",
        "seconds",
        "the longest gap between two lines of figures the crawl appends to <state "
        "dir>/report/timeline.jsonl for its report (irlscrapy report; the first lines come "
        "every 0.2 s, then ever further apart up to this); 0: no report records; extension "
        "irlscrapy.report.timeline.CrawlRecorder, enabled by the add-on",
    ),
    Setting(
        "IRL_REPORT_DIR",
        "",
        "str",
        "path",
        "write the crawl report (report.html, PNG plots) into this directory when the "
        "crawl closes, also without JOBDIR; empty: only on demand, irlscrapy report JOBDIR",
    ),
    Setting(
        "IRL_GC_FREEZE",
        True,
        "bool",
        "on/off",
        "when the spider opens, freeze the objects built at start-up out of the cyclic GC "
        "(shorter full collections); extension irlscrapy.runtime.gctuning.GCTuning, enabled by "
        "the add-on",
    ),
    Setting(
        "IRL_GC_FULL_EVERY",
        1000,
        "int",
        "collections",
        "a full cyclic-GC collection after this many generation-1 collections (CPython: "
        "10), set when the spider opens; 0: leave CPython's; extension "
        "irlscrapy.runtime.gctuning.GCTuning",
    ),
)
