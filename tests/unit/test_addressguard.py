"""The address guard refuses every non-public range, IPv4 and IPv6, unless allowed; each
host refused is counted, the first logged."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.hosts.addressguard import AddressGuard

BLOCKED = [
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("::1", "loopback"),
    ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
    ("2002:7f00:1::1", "loopback"),  # 6to4 of 127.0.0.1
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.254", "private"),
    ("192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("fd00:ec2::254", "private"),  # AWS's IPv6 metadata service
    ("::ffff:10.0.0.1", "private"),
    ("169.254.169.254", "link-local"),  # cloud metadata (AWS, GCP, Azure)
    ("169.254.0.1", "link-local"),
    ("fe80::1", "link-local"),
    ("100.64.0.1", "cgnat"),
    ("100.127.255.254", "cgnat"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("0.0.0.0", "reserved"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("::", "reserved"),
]
PUBLIC = ["8.8.8.8", "1.1.1.1", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize(("address", "kind"), BLOCKED)
def test_each_blocked_range_is_refused_by_default(address: str, kind: str) -> None:
    assert AddressGuard().refuses(address) == kind


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_pass(address: str) -> None:
    assert AddressGuard().refuses(address) is None


def test_an_allowed_network_opens_only_itself() -> None:
    guard = AddressGuard.parse("127.0.0.0/8")
    assert guard.refuses("127.0.3.9") is None
    assert guard.refuses("::ffff:127.0.0.1") is None  # the same address, IPv4-mapped
    assert guard.refuses("::1") == "loopback"
    assert guard.refuses("10.0.0.1") == "private"
    assert guard.refuses("169.254.169.254") == "link-local"


@pytest.mark.parametrize(
    ("setting", "off"),
    [(True, True), ("true", True), ("1", True), (False, False), ("", False), ("false", False)],
)
def test_the_setting_reads_booleans(setting: object, off: bool) -> None:
    assert (AddressGuard.parse(setting).refuses("10.0.0.1") is None) is off


def test_a_list_of_networks() -> None:
    guard = AddressGuard.parse(["10.1.0.0/16", "fd00::/8"])
    assert guard.refuses("10.1.9.9") is None
    assert guard.refuses("10.2.0.1") == "private"
    assert guard.refuses("fd12::1") is None


def test_bad_settings_and_addresses_are_explained() -> None:
    with pytest.raises(ConfigurationError, match="not a network"):
        AddressGuard.parse("127.0.0.0/8,localhost")
    with pytest.raises(ConfigurationError, match="IRL_ALLOW_PRIVATE_ADDRESSES"):
        AddressGuard.parse(3.5)
    assert AddressGuard().refuses("not-an-address") == "invalid"


def test_a_host_refused_is_counted_and_the_first_logged(caplog: pytest.LogCaptureFixture) -> None:
    class Stats:
        def __init__(self) -> None:
            self.values: Counter[str] = Counter()

        def inc_value(self, key: str, count: int = 1) -> None:
            self.values[key] += count

    guard, stats = AddressGuard(), Stats()
    with caplog.at_level(logging.INFO):
        why = guard.refusal("a.example", "10.0.0.1", stats)
        guard.refusal("b.example", "127.0.0.1", stats)
        assert guard.refusal("c.example", "8.8.8.8", stats) is None
    assert why == "address guard: a.example resolves to 10.0.0.1, a private address"
    assert stats.values == {"irl/guard/refused_lookups": 2}
    [line] = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"{why} (IRL_ALLOW_PRIVATE_ADDRESSES) (counted in irl/guard/")
