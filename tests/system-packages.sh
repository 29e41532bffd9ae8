#!/bin/sh
# Install the Debian packages some tests need, when this machine lets us.
#
#   sh tests/system-packages.sh            # install what is missing, or say what is
#   sh tests/system-packages.sh --require  # the same, but exit 1 if anything stays missing
#   sh tests/system-packages.sh --list     # print the package names and exit
#
# Who needs what:
#   nginx, iproute2, util-linux  tests/e2e/test_real_web.py: a real web server, `ip` to
#                                bring up loopback in the test's network namespace, and
#                                `unshare` to make that namespace (util-linux is Essential)
#   redis-server                 the multi-agent mode's tests (irlscrapy/distributed/): a real
#                                Redis on an ephemeral loopback port (harness/redisserver.py)
#   chromium                     tests/e2e/test_console.py: the status console and the
#                                crawl report in a real headless browser (DevTools Protocol)
#   *-doc, debian-policy         the real web's pages: HTML documentation written by the
#                                projects themselves (harness/realweb/sites.py maps each
#                                package to its host name)
#
# Quick and idempotent: when dpkg-query finds every package installed it exits at once
# and never calls apt. Otherwise, as root with apt-get, it installs the missing ones
# (`apt-get update` first only if apt does not know a package yet, or if the install
# fails on stale package lists). Services are not started: while it installs, a
# policy-rc.d that denies them is put in place unless the machine already has one.
# Without root or apt-get it prints what is missing and exits 0 (or 1 with --require):
# the tests that need these packages then skip, each with its reason.
set -eu

PACKAGES="nginx iproute2 util-linux redis-server chromium postgresql-doc-15 python3.11-doc sqlite3-doc git-doc \
python-flask-doc python-requests-doc debian-policy"

case "${1:-}" in
--list)
    echo "$PACKAGES"
    exit 0
    ;;
--require) require=1 ;;
"") require=0 ;;
*)
    echo "usage: sh $0 [--require | --list]" >&2
    exit 2
    ;;
esac

missing=""
for package in $PACKAGES; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing="$missing $package"
done
[ -z "$missing" ] && exit 0

give_up() {
    echo "system-packages: not installed:$missing ($1); tests that need them will skip." >&2
    echo "system-packages: to install them: apt-get install --no-install-recommends$missing" >&2
    exit "$require"
}
[ "$(id -u)" = 0 ] || give_up "installing needs root"
command -v apt-get >/dev/null 2>&1 || give_up "no apt-get on this machine"

policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# left by tests/system-packages.sh while it installs\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
fi

export DEBIAN_FRONTEND=noninteractive
apt_install() {
    # shellcheck disable=SC2086  # the list is meant to split into words
    apt-get install -y -q --no-install-recommends $missing
}
echo "system-packages: installing$missing" >&2
# shellcheck disable=SC2086
if ! apt-cache show $missing >/dev/null 2>&1; then
    apt-get update -q || give_up "apt-get update failed"
fi
if ! apt_install; then
    apt-get update -q && apt_install || give_up "apt-get install failed"
fi
