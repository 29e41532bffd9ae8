"""A real web for the e2e tests: documentation written by other people, served by nginx.

The in-vitro web models what we thought of; this one is what nobody modelled. Its pages
are the HTML manuals that Debian packages install (PostgreSQL, Python, SQLite, Git,
Flask, Requests, Debian Policy), served by Debian's nginx under the projects' own host
names on loopback addresses, inside a private mount and network namespace whose
/etc/hosts names them (the machine's own files and network are never touched).

Modules, one idea each:

- :mod:`.sites`: the hosts, their packages, addresses and robots.txt variants;
- :mod:`.server`: the files nginx and the namespace's name service read;
- :mod:`.netns`: running nginx and one crawl in a namespace that always goes away;
- :mod:`.crawls`: the stock and irlscrapy command lines and what their logs say;
- :mod:`.accesslog`: the audit of nginx's log (pages, robots.txt, politeness).

Used by tests/e2e/test_real_web.py and bench/realweb.py. The Debian packages come from
tests/system-packages.sh; without them (or without root) the test skips and says why.
"""
