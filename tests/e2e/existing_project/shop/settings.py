"""Settings of an ordinary Scrapy project (the fixture of tests/e2e/test_existing_project.py)."""

BOT_NAME = "shop"
SPIDER_MODULES = ["shop.spiders"]
NEWSPIDER_MODULE = "shop.spiders"
ROBOTSTXT_OBEY = True
ITEM_PIPELINES = {
    "shop.pipelines.DropLongPages": 100,
    "shop.pipelines.AddLength": 200,
}
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
