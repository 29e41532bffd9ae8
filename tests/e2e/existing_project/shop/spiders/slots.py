"""Two downloader slots of the project's own on one host: a slow one and a fast one
(DOWNLOAD_SLOTS), each a chain of requests; it records when each response came
(tests/e2e/test_existing_project.py)."""

import time
from typing import ClassVar

import scrapy

CHAIN = 4


class SlotsSpider(scrapy.Spider):
    name = "slots"
    custom_settings: ClassVar[dict] = {
        "DOWNLOAD_SLOTS": {
            "slow": {"delay": 1.5, "jitter": 0},
            "fast": {"delay": 0.1, "jitter": 0},
        }
    }

    def __init__(self, root: str = "", **kwargs):
        super().__init__(**kwargs)
        self.root = root

    async def start(self):
        for slot in ("slow", "fast"):
            yield self.link(slot, 0)

    def link(self, slot: str, n: int) -> scrapy.Request:
        return scrapy.Request(
            f"{self.root}?slot={slot}&n={n}",
            callback=self.parse,
            meta={"download_slot": slot},
            cb_kwargs={"slot": slot, "n": n},
        )

    def parse(self, response, slot: str, n: int):
        yield {"slot": slot, "n": n, "at": time.monotonic()}
        if n + 1 < CHAIN:
            yield self.link(slot, n + 1)
