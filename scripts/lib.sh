# Shared by scripts/run and scripts/test: install what is missing, quietly.
set -euo pipefail

APT_PACKAGES=(libsodium-dev libpq-dev libcurl4-openssl-dev postgresql netcat-openbsd)

# ensure_apt_packages [EXTRA...]: the packages above plus EXTRA (scripts/test adds haproxy).
ensure_apt_packages() {
    local missing=()
    for pkg in "${APT_PACKAGES[@]}" "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "==> installing ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# postgres_reachable_dir DIR: where a cluster meant for DIR lives. As root the clusters run as the
# postgres OS user, which may not be able to reach DIR (a clone in root's mode-0700 home): then
# <that user's home>/aerie/<digest of DIR>, as aerie-server places the embedded cluster of an
# AERIE_HOME it cannot reach. That directory, once it exists, is found again first.
postgres_reachable_dir() {
    local dir=$1
    [ "$(id -u)" -eq 0 ] || { echo "$dir"; return; }
    local base; base="$(getent passwd postgres | cut -d: -f6)/aerie"
    local elsewhere; elsewhere="$base/$(printf %s "$dir" | sha256sum | cut -c1-16)"
    if [ ! -d "$elsewhere" ] && runuser -u postgres -- test -x "$(dirname "$dir")" 2>/dev/null; then
        echo "$dir"; return
    fi
    mkdir -p "$base" && chown postgres: "$base" && chmod 700 "$base"
    echo "$elsewhere"
}

# The PostgreSQL server binaries (initdb, pg_ctl), highest version first.
postgres_bindir() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
    command -v initdb >/dev/null && dirname "$(command -v initdb)" && return
    echo "no PostgreSQL server binaries found (install the postgresql package)" >&2
    return 1
}

# ACA-Py 1.2.7 and 1.7.0 in venvs under .interop/ (ignored by git), for the interop tests.
ensure_acapy_venv() {
    install_acapy_venv 1.2.7 3.12.1 python3.12
    install_acapy_venv 1.7.0 3.13.0 python3.13
}

# install_acapy_venv VERSION PYENV_PYTHON FALLBACK_PYTHON
install_acapy_venv() {
    local version="$1" pyenv_version="$2" fallback="$3"
    local venv=".interop/venv-$version"
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import acapy_agent" 2>/dev/null; then return; fi
    local py=""
    if command -v pyenv >/dev/null && [ -x "$(pyenv root)/versions/$pyenv_version/bin/python" ]; then
        py="$(pyenv root)/versions/$pyenv_version/bin/python"
    elif command -v "$fallback" >/dev/null && "$fallback" -c "" 2>/dev/null; then
        py="$fallback"
    else
        echo "Python ${pyenv_version%.*} is needed for ACA-Py $version (interop tests)" >&2
        return 1
    fi
    echo "==> installing acapy-agent $version into $venv"
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "acapy-agent==$version"
}

# kill_tree PID: SIGKILL to PID and every process below it.
kill_tree() {
    local below
    below=$(descendants "$1")
    kill -KILL "$1" $below 2>/dev/null || true
}

# test_watchdog PID MINUTES LOG PSQL SOCKET_DIR: after MINUTES, if PID still runs, kills its
# process tree and says which tests had not ended (from the swift test output in LOG) and what
# the test cluster's sessions were doing. (Thread stacks would not say more: a suspended async
# test holds no thread, as stop 26's CI run showed, every thread idle.)
test_watchdog() {
    local pid="$1" minutes="$2" log="$3" psql="$4" socket_dir="$5"
    local waited=0
    while [ "$waited" -lt $((minutes * 60)) ]; do
        sleep 5
        waited=$((waited + 5))
        kill -0 "$pid" 2>/dev/null || return 0
    done
    touch "$log.watchdog"   # scripts/test then waits for this report instead of ending it
    local sessions
    sessions=$("$psql" -h "$socket_dir" -U postgres -d postgres -X -A -F ' | ' -c \
        "SELECT pid, datname, application_name, state, wait_event_type, wait_event,
                now() - query_start AS running, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query
         FROM pg_stat_activity WHERE backend_type = 'client backend' AND state IS DISTINCT FROM 'idle'
         AND pid <> pg_backend_pid()" 2>&1 || true)
    kill_tree "$pid"
    sleep 1   # tee's last lines first
    {
        echo
        echo "==> swift test still running after $minutes minutes (AERIE_TEST_MINUTES): stopped"
        # Swift Testing announces most tests at once and runs them as threads free up: the list
        # is what had not finished, the hung one among them.
        local unfinished
        unfinished=$(unfinished_tests "$log" | grep '^Test ' | grep -v '^Test run$' || true)
        if [ -z "$unfinished" ]; then
            echo "==> no test had been announced yet"
        else
            echo "==> $(printf '%s\n' "$unfinished" | wc -l) tests announced and not ended (the first 100):"
            printf '%s\n' "$unfinished" | head -n 100 | sed 's/^/    /'
        fi
        echo "==> sessions of the test cluster that were not idle when the time ran out:"
        printf '%s\n' "$sessions" | sed 's/^/    /'
    } >&2
}

# descendants PID: the PIDs below PID, children first.
descendants() {
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        echo "$child"
        descendants "$child"
    done
}

# unfinished_tests LOG: the names of tests and suites that swift test's output shows started
# ("◇ Test x() started.") and not passed, failed or skipped since (as many ends as starts).
unfinished_tests() {
    local started ended
    started=$(grep -a -E '^◇ (Test|Suite) .* started\.$' "$1" | grep -a -v '^◇ Test case ' \
        | sed -E 's/^◇ //; s/ started\.$//' | LC_ALL=C sort || true)
    ended=$(grep -a -E '^(✔|✘|➜) (Test|Suite) ' "$1" | grep -a -v ' recorded an issue' \
        | sed -E 's/^(✔|✘|➜) //; s/ with [0-9]+ test cases? (passed|failed).*$//; s/ with [0-9]+ tests? in [0-9]+ suites? (passed|failed).*$//; s/ (passed|failed|skipped)( after.*|\.)?$//' \
        | LC_ALL=C sort || true)
    LC_ALL=C comm -23 <(printf '%s\n' "$started") <(printf '%s\n' "$ended") | grep -v '^$' || true
}
