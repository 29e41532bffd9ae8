"""Scrapy settings of this repository's own project (``scrapy crawl broad``).

For now the crawl runs on Scrapy's stock scheduler; the IRL components switch on here
as they land. Every choice below differs from Scrapy's default for a stated reason.
"""

BOT_NAME = "irlscrapy"
SPIDER_MODULES = ["irlscrapy.spiders"]
NEWSPIDER_MODULE = "irlscrapy.spiders"

# A broad crawler follows links chosen by strangers: obey robots.txt.
ROBOTSTXT_OBEY = True
USER_AGENT = "irlscrapy/0.1 (broad crawl; Scrapy)"

# Per-request DEBUG lines drown a broad crawl; progress comes from CrawlProgress instead.
LOG_LEVEL = "INFO"
EXTENSIONS = {
    "irlscrapy.report.progress.CrawlProgress": 500,
    "irlscrapy.report.logflood.FetchErrorLogLimit": 0,
}
IRL_PROGRESS_INTERVAL = 5.0

# A broad crawl spreads over many hosts: more in flight than the default 16.
CONCURRENT_REQUESTS = 64
# Slow and hanging servers should cost a slot for seconds, not minutes.
DOWNLOAD_TIMEOUT = 20
