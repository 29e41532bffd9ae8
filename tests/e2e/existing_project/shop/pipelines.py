"""Item pipelines of the fixture project: one drops items, one adds a field."""

from scrapy.exceptions import DropItem


class DropLongPages:
    def process_item(self, item, spider):
        if "/long/" in item.get("path", ""):
            raise DropItem("long page")
        return item


class AddLength:
    def process_item(self, item, spider):
        item["path_length"] = len(item.get("path", ""))
        return item
