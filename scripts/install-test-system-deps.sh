#!/usr/bin/env bash
# Install the system packages the test suite needs, from Debian's packages, and only
# those that are missing:
#   postgresql                    the server binaries (initdb, pg_ctl, postgres) that
#                                 tests/fixtures_system.py starts in a temporary folder
#   chromium, chromium-driver     the headless browser (and its WebDriver) of the dashboard tests
#   curl                          the docs' service examples are curl commands, run as written
#                                 by tests/test_docs.py against a real server
# Idempotent: when everything is there it says so, touches nothing and needs no network.
# Runs as root (CI does) or through sudo. Called by the README's test command and by .ci/run.
set -euo pipefail

have_postgres() {
    command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 && return 0
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]] && return 0
    done
    return 1
}
have_chromium() { [[ -x /usr/bin/chromium ]]; }
have_chromedriver() { [[ -x /usr/bin/chromedriver ]]; }
have_curl() { command -v curl >/dev/null 2>&1; }

missing=()
have_postgres || missing+=(postgresql)
have_chromium || missing+=(chromium)
have_chromedriver || missing+=(chromium-driver)
have_curl || missing+=(curl)

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "install-test-system-deps: PostgreSQL server, chromium, chromedriver and curl already present; nothing to do"
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-system-deps: missing ${missing[*]} and apt-get is not available;" \
         "install them with your system's package manager" >&2
    exit 1
fi
if [[ $(id -u) -eq 0 ]]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "install-test-system-deps: missing ${missing[*]}; run this script as root" \
         "(or install sudo) to install them" >&2
    exit 1
fi

echo "install-test-system-deps: installing ${missing[*]} from the Debian packages"
if [[ " ${missing[*]} " == *" postgresql "* ]]; then
    # The tests start their own PostgreSQL in a temporary folder: keep the package from
    # creating and starting a cluster of its own on port 5432.
    "${as_root[@]}" mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" | "${as_root[@]}" tee \
        /etc/postgresql-common/createcluster.d/glmbandits-tests.conf >/dev/null
fi
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
echo "install-test-system-deps: installed ${missing[*]}"
