"""Scrapy settings of this repository's own project (``scrapy crawl broad``).

The IRL components are switched on by the add-on (see irlscrapy/addon.py for each
setting it changes and why). Every choice below differs from Scrapy's default for a
stated reason.
"""

BOT_NAME = "irlscrapy"
SPIDER_MODULES = ["irlscrapy.spiders"]
NEWSPIDER_MODULE = "irlscrapy.spiders"

ADDONS = {"irlscrapy.Addon": 0}

# A broad crawler follows links chosen by strangers: obey robots.txt.
ROBOTSTXT_OBEY = True
USER_AGENT = "irlscrapy/0.1 (broad crawl; Scrapy)"

# Per-request DEBUG lines drown a broad crawl; progress comes from CrawlProgress instead
# (the add-on installs it too; named here for -s ADDONS={}, the spider on stock Scrapy).
LOG_LEVEL = "INFO"
EXTENSIONS = {
    "irlscrapy.report.progress.CrawlProgress": 500,
    "irlscrapy.report.logflood.FetchErrorLogLimit": 0,
    "irlscrapy.report.reactorlag.ReactorLag": 0,  # off unless IRL_REACTOR_LAG_STATS
}
IRL_PROGRESS_INTERVAL = 5.0
# The demo ends by writing its report (report.html and plots) here, relative to the
# directory the crawl runs in; with JOBDIR, `irlscrapy report JOBDIR` writes it again.
IRL_REPORT_DIR = "crawl-report"

# A broad crawl spreads over many hosts: more in flight than the default 16.
CONCURRENT_REQUESTS = 64
# Slow and hanging servers should cost a slot for seconds, not minutes.
DOWNLOAD_TIMEOUT = 20

# The demo crawls the in-vitro web: politeness as in the benchmark (tau_h 4 s,
# tau_s 0.5 s) rather than the paper's 40 s and 1 s, so a short demo sees many pages.
IRL_HOST_DELAY = 4.0
IRL_HOST_DELAY_MIN = 1.0
IRL_IP_DELAY = 0.5
IRL_IP_DELAY_MIN = 0.05

# Scrapy 2.19 starts CONCURRENT_ITEMS (default 100) asyncio tasks for every response,
# whatever the callback yields (scrapy.utils.asyncio._parallel_asyncio): 100 task
# creations per page, the largest single cost in a profile of the broad crawl. The broad
# spider yields one Links per 2,000 links of a page (one for almost every page), a
# reactor turn apart, so 4 is plenty.
CONCURRENT_ITEMS = 4
