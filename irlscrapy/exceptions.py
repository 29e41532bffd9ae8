"""Errors raised by irlscrapy.

Hierarchy::

    IrlscrapyError                 base of everything irlscrapy raises on purpose
    ├── ConfigurationError         a setting, profile or argument is wrong; the message says
    │                              which and what values are accepted
    ├── InVitroError               the in-vitro web could not be started or reached
    └── ReportError                ``irlscrapy report`` cannot read a crawl's records

Third-party errors are translated into these at one boundary per component, and every
message says what to do next.
"""


class IrlscrapyError(Exception):
    """Base class of the errors irlscrapy raises on purpose."""


class ConfigurationError(IrlscrapyError, ValueError):
    """A setting, profile or argument has a value irlscrapy cannot use."""


class InVitroError(IrlscrapyError):
    """The in-vitro web could not be started, or it stopped unexpectedly."""


class ReportError(IrlscrapyError):
    """A directory is not a finished crawl's state directory with report records."""
