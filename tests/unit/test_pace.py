"""The pace rule (irlscrapy.scheduler.hosts.pace): which setting sets a crawl's per-host
and per-IP delays, and the waits drawn from a project's DOWNLOAD_DELAY."""

from __future__ import annotations

import dataclasses
import random
import statistics

import pytest
from scrapy.settings import Settings

from irlscrapy import defaults
from irlscrapy.addon import Addon
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.hosts.delays import Politeness
from irlscrapy.scheduler.hosts.pace import DEFAULT, PROJECT, USER, pace_of

#: What ``scrapy startproject`` writes into settings.py.
TEMPLATE = {"DOWNLOAD_DELAY": 1, "CONCURRENT_REQUESTS_PER_DOMAIN": 1}


def project(values: dict[str, object], priority: str = "project") -> Settings:
    """Scrapy's defaults, then ``values`` at ``priority``, then the add-on."""
    settings = Settings()
    settings.setdict(values, priority=priority)
    Addon().update_settings(settings)
    return settings


def test_a_project_that_sets_nothing_gets_the_focused_crawl_default() -> None:
    pace = pace_of(project({}))
    assert pace.source == DEFAULT and not pace.paces_download_delay
    assert pace.host_delay == defaults.BY_NAME["IRL_HOST_DELAY"].default == 1.0
    assert pace.host_delay_min == 0.5  # STAR may halve it for well-linked domains
    assert (pace.ip_delay, pace.ip_delay_min, pace.jitter) == (1.0, 0.1, 0.0)


def test_the_templates_download_delay_is_the_host_delay_with_scrapys_jitter() -> None:
    pace = pace_of(project(TEMPLATE))
    assert pace.source == PROJECT and pace.paces_download_delay
    assert (pace.host_delay, pace.jitter) == (1.0, 0.5)
    assert pace.host_delay_min == 1.0  # STAR never shortens the project's pace
    assert pace.ip_delay == 0.5  # the shortest wait: the IP never holds one site back
    assert str(pace) == (
        "politeness: 1 s between two requests to a host (from the project's DOWNLOAD_DELAY, "
        "each wait 0.5 to 1.5 s), 0.5 s to an IP"
    )


@pytest.mark.parametrize("priority", ["addon", "project", "spider", "cmdline"])
def test_any_priority_above_scrapys_default_is_the_project_setting_its_pace(
    priority: str,
) -> None:
    assert pace_of(project({"DOWNLOAD_DELAY": 3}, priority)).host_delay == 3.0


def test_an_irl_delay_present_at_any_priority_is_the_users() -> None:
    """irlscrapy's defaults never enter Scrapy's settings: one found there, even at
    Scrapy's default priority (a harness patching Scrapy's default settings), was set."""
    pace = pace_of(project({"IRL_HOST_DELAY": 0, "IRL_IP_DELAY": 0}, "default"))
    assert pace.source == USER
    assert (pace.host_delay, pace.ip_delay) == (0.0, 0.0)


def test_scrapys_own_default_delay_is_not_the_projects_pace() -> None:
    settings = project({})
    assert settings.getpriority("DOWNLOAD_DELAY") == 0  # the add-on leaves it alone
    assert settings.getpriority("CONCURRENT_REQUESTS_PER_DOMAIN") == 0


def test_concurrent_requests_per_domain_alone_means_scrapys_delay_of_0() -> None:
    pace = pace_of(project({"CONCURRENT_REQUESTS_PER_DOMAIN": 4}))
    assert pace.source == PROJECT
    assert (pace.host_delay, pace.host_delay_min, pace.ip_delay, pace.ip_delay_min) == (0, 0, 0, 0)


def test_irl_host_delay_wins_over_the_projects_download_delay() -> None:
    pace = pace_of(project({**TEMPLATE, "IRL_HOST_DELAY": 4.0}))
    assert pace.source == USER and not pace.paces_download_delay  # the downloader keeps it
    assert (pace.host_delay, pace.host_delay_min, pace.jitter) == (4.0, 2.0, 0.0)
    assert pace.ip_delay == 1.0
    assert str(pace) == (
        "politeness: 4 s between two requests to a host (from IRL_HOST_DELAY, down to 2 s "
        "for well-linked domains), 1 s to an IP"
    )


def test_the_broad_projects_explicit_values_are_kept() -> None:
    broad = {
        "IRL_HOST_DELAY": 4.0,
        "IRL_HOST_DELAY_MIN": 1.0,
        "IRL_IP_DELAY": 0.5,
        "IRL_IP_DELAY_MIN": 0.05,
    }
    pace = pace_of(project(broad))
    assert (pace.host_delay, pace.host_delay_min, pace.ip_delay, pace.ip_delay_min) == (
        4.0,
        1.0,
        0.5,
        0.05,
    )


def test_derived_floors_and_ip_delays_stay_under_a_short_host_delay() -> None:
    pace = pace_of(project({"IRL_HOST_DELAY": 0.2}))
    assert (pace.host_delay_min, pace.ip_delay, pace.ip_delay_min) == (0.1, 0.2, 0.1)
    Politeness.of_pace(pace, Settings())  # floors within their delays: accepted


@pytest.mark.parametrize(
    ("values", "jitter"),
    [
        ({"RANDOMIZE_DOWNLOAD_DELAY": False}, 0.0),
        ({"RANDOMIZE_DOWNLOAD_DELAY": True}, 0.5),
        ({"DOWNLOAD_DELAY_JITTER": 0.2}, 0.2),
        ({"DOWNLOAD_DELAY_JITTER": 0}, 0.0),
    ],
)
def test_the_jitter_is_scrapys(values: dict[str, object], jitter: float) -> None:
    assert pace_of(project({**TEMPLATE, **values})).jitter == jitter


def test_randomize_download_delay_wins_when_set_above_the_jitter_setting() -> None:
    settings = project({**TEMPLATE, "DOWNLOAD_DELAY_JITTER": 0.2})
    settings.set("RANDOMIZE_DOWNLOAD_DELAY", False, priority="cmdline")
    assert pace_of(settings).jitter == 0.0


def test_a_negative_download_delay_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match="DOWNLOAD_DELAY=-1"):
        pace_of(project({"DOWNLOAD_DELAY": -1}))


def test_each_wait_is_drawn_within_half_the_delay_either_side_with_the_delay_as_mean() -> None:
    politeness = Politeness.of_pace(pace_of(project({"DOWNLOAD_DELAY": 2})), Settings())
    politeness = dataclasses.replace(politeness, rng=random.Random(7))
    waits = [politeness.wait(10) for _ in range(4000)]
    assert 1.0 <= min(waits) < 1.01 and 2.99 < max(waits) <= 3.0
    assert statistics.fmean(waits) == pytest.approx(2.0, abs=0.05)
    assert politeness.host(10) == 2.0  # the delay in force is the mean
    assert politeness.longest == 3.0
    # what the host asked for (Crawl-delay) or earned (back-off) is never cut
    assert min(politeness.wait(10, crawl_delay=3.5) for _ in range(200)) == 3.5
    assert min(politeness.wait(10, backoff=5.0) for _ in range(200)) == 5.0


def test_star_never_shortens_the_projects_delay_and_the_ip_never_holds_one_site_back() -> None:
    politeness = Politeness.of_pace(pace_of(project(TEMPLATE)), Settings())
    for budget in (10, 100, 10_000):
        assert politeness.host(budget) == 1.0
        shortest = politeness.host(budget) * (1 - politeness.jitter)
        assert politeness.ip(budget) <= shortest  # one host alone on its IP


def test_star_shortens_the_default_delay_for_well_linked_domains_to_the_floor() -> None:
    politeness = Politeness.of_pace(pace_of(project({})), Settings())
    assert politeness.host(10) == 1.0 and politeness.host(20) == 0.5
    assert politeness.host(10_000) == 0.5
    for budget in (10, 15, 10_000):
        assert politeness.ip(budget) <= politeness.host(budget)
