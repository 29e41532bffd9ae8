"""Build shim for ``scrapyd-deploy``, which builds a Scrapyd egg by running
``python setup.py bdist_egg`` (and, when there is no setup.py, writes its own, naming
the distribution "project" and packaging every directory with an ``__init__.py``).

Everything else about the distribution is in pyproject.toml. The one thing decided
here: the egg also carries ``settings``, the project's Scrapy settings (the ``scrapy``
entry point ``settings`` names its module ``settings.broad``), which a wheel leaves out
so that ``pip install`` puts only the ``irlscrapy`` library into site-packages.
"""

import sys

from setuptools import find_packages, setup

packages = find_packages(include=["irlscrapy", "irlscrapy.*"])
if "bdist_egg" in sys.argv:
    packages.append("settings")
setup(packages=packages)
