"""Every IRL_* setting is declared once, documented in the manual (docs/settings.md), and read
with its default."""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

import pytest
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.settings import Settings

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]


#: The manual's page that holds the settings table and the "Renamed in 0.2" table.
SETTINGS_PAGE = ROOT / "docs" / "settings.md"


def test_the_manuals_settings_table_matches_the_defaults_module() -> None:
    page = SETTINGS_PAGE.read_text()
    documented = set(re.findall(r"^\| `(IRL_[A-Z0-9_]+)` \| (?!`)", page, re.M))
    assert documented == set(defaults.BY_NAME)
    renamed = dict(re.findall(r"^\| `(IRL_[A-Z0-9_]+)` \| `(IRL_[A-Z0-9_]+)` \|$", page, re.M))
    assert renamed == defaults.RENAMED


def test_every_irl_setting_used_in_the_code_is_declared() -> None:
    used = set()
    for path in [*(ROOT / "irlscrapy").rglob("*.py"), *(ROOT / "settings").rglob("*.py")]:
        used |= set(re.findall(r"\b(IRL_[A-Z][A-Z0-9_]+)\b", path.read_text()))
    assert used <= set(defaults.BY_NAME) | set(defaults.RETIRED) | set(defaults.RENAMED)


def test_a_renamed_setting_is_read_under_its_old_name_with_a_warning_naming_the_new() -> None:
    old = Settings({"IRL_BUDGETS": "constant", "IRL_GIVE_UP_AFTER": 0})
    with pytest.warns(ScrapyDeprecationWarning) as said:
        defaults.check_names(old)
    assert sorted(str(w.message).split(":")[0] for w in said) == [
        "IRL_BUDGETS is renamed IRL_BUDGET_MODE",
        "IRL_GIVE_UP_AFTER is renamed IRL_CRAWL_GIVE_UP_AFTER",
    ]
    assert defaults.get(old, "IRL_BUDGET_MODE") == "constant"
    assert defaults.get(old, "IRL_CRAWL_GIVE_UP_AFTER") == 0  # (0 wins, as always)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        defaults.check_names(old)  # (the scheduler checks the add-on's settings again)
    both = Settings({"IRL_BUDGETS": "constant", "IRL_BUDGET_MODE": "off"})
    with pytest.warns(ScrapyDeprecationWarning, match="IRL_BUDGET_MODE is set too, and wins"):
        defaults.check_names(both)
    assert defaults.get(both, "IRL_BUDGET_MODE") == "off"
    with pytest.raises(ConfigurationError, match="IRL_GIVE_UP_AFTER=-1: must be 0 or more"):
        defaults.check_values(Settings({"IRL_GIVE_UP_AFTER": -1}))


def test_every_renamed_setting_is_renamed_to_a_setting_and_was_none() -> None:
    assert set(defaults.RENAMED.values()) <= set(defaults.BY_NAME)
    assert not set(defaults.RENAMED) & set(defaults.BY_NAME)
    assert not set(defaults.RENAMED) & set(defaults.RETIRED)
    assert {s.formerly for s in defaults.SETTINGS if s.formerly} == set(defaults.RENAMED)


def test_zero_overrides_a_nonzero_default() -> None:
    assert defaults.get(Settings({"IRL_PROGRESS_INTERVAL": 0}), "IRL_PROGRESS_INTERVAL") == 0
    assert defaults.get(Settings(), "IRL_PROGRESS_INTERVAL") == 5.0


def test_bad_values_and_unknown_names_are_explained() -> None:
    with pytest.raises(ConfigurationError, match="IRL_PROGRESS_INTERVAL='soon'"):
        defaults.get(Settings({"IRL_PROGRESS_INTERVAL": "soon"}), "IRL_PROGRESS_INTERVAL")
    with pytest.raises(ConfigurationError, match="not an irlscrapy setting"):
        defaults.get(Settings(), "IRL_NOPE")


def test_a_misspelt_or_retired_setting_is_refused_with_what_was_meant() -> None:
    defaults.check_names(Settings({"IRL_HOST_DELAY": 1, "DOWNLOAD_DELAY": 2}))
    with pytest.raises(ConfigurationError, match=r"IRL_HOST_DELAYS is not .* mean IRL_HOST_DELAY"):
        defaults.check_names(Settings({"IRL_HOST_DELAYS": 1}))
    with pytest.raises(
        ConfigurationError, match="IRL_STAR_ENABLED is no longer read: use IRL_BUDGET_MODE"
    ):
        defaults.check_names(Settings({"IRL_STAR_ENABLED": False}))


def test_every_default_is_a_value_its_own_declaration_takes() -> None:
    defaults.check_values(Settings({s.name: s.default for s in defaults.SETTINGS}))


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("IRL_HOST_DELAY", "-1", "IRL_HOST_DELAY=-1: must be 0 or more (seconds; the default"),
        ("IRL_IP_DELAY", "fast", "IRL_IP_DELAY=fast: must be a number (seconds"),
        ("IRL_CRAWL_CONTINUOUS", "maybe", "IRL_CRAWL_CONTINUOUS=maybe: must be true or false"),
        ("IRL_BUDGET_DEFAULT", "0", "IRL_BUDGET_DEFAULT=0: must be 1 or more"),
        ("IRL_STATUS_PORT", "70000", "IRL_STATUS_PORT=70000: must be 65535 or less"),
        ("IRL_BUDGET_MODE", "some", "IRL_BUDGET_MODE=some: must be one of star, constant, off"),
        ("IRL_STAR_TOP_SHARE", "0", "IRL_STAR_TOP_SHARE=0: must be 1e-09 or more"),
        ("IRL_STAR_TOP_SHARE", "2", "IRL_STAR_TOP_SHARE=2: must be 1 or less"),
        ("IRL_IP_DELAY", {"fast": 1}, "IRL_IP_DELAY={'fast': 1}: must be a number"),
    ],
)
def test_a_value_out_of_its_type_or_range_is_refused_as_written(
    name: str, value: str | dict[str, int], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message)):
        defaults.check_values(Settings({name: value}))


def test_every_wrong_value_is_named_in_one_refusal() -> None:
    with pytest.raises(ConfigurationError) as refused:
        defaults.check_values(Settings({"IRL_HOST_DELAY": "-1", "IRL_IP_DELAY": "fast"}))
    assert "IRL_HOST_DELAY=-1" in str(refused.value) and "IRL_IP_DELAY=fast" in str(refused.value)


def test_a_negative_value_is_taken_where_it_has_a_meaning() -> None:
    defaults.check_values(Settings({"IRL_LOG_FETCH_ERRORS": -1}))  # logs them all


def test_the_manuals_settings_table_is_the_one_the_declarations_generate() -> None:
    """docs/settings.md's table is rendered from :data:`defaults.SETTINGS`; after
    changing a declaration, ``python docs/settings_table.py`` writes it again."""
    spec = importlib.util.spec_from_file_location(
        "settings_table", ROOT / "docs" / "settings_table.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.written() == generator.table(), "run: python docs/settings_table.py"
