# Shared by scripts/run and scripts/test: install what is missing, quietly.
set -euo pipefail

APT_PACKAGES=(libsodium-dev libpq-dev libcurl4-openssl-dev postgresql netcat-openbsd)

ensure_apt_packages() {
    local missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
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

# The PostgreSQL server binaries (initdb, pg_ctl), highest version first.
postgres_bindir() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$dir" ] && [ -x "$dir/initdb" ]; then echo "$dir"; return; fi
    command -v initdb >/dev/null && dirname "$(command -v initdb)" && return
    echo "no PostgreSQL server binaries found (install the postgresql package)" >&2
    return 1
}

# ACA-Py 1.2.7 in a venv under .interop/ (ignored by git), for the interop tests.
ensure_acapy_venv() {
    local venv=".interop/venv-1.2.7"
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import acapy_agent" 2>/dev/null; then return; fi
    local py=""
    if command -v pyenv >/dev/null && [ -x "$(pyenv root)/versions/3.12.1/bin/python" ]; then
        py="$(pyenv root)/versions/3.12.1/bin/python"
    elif command -v python3.12 >/dev/null && python3.12 -c "" 2>/dev/null; then
        py="python3.12"
    else
        echo "Python 3.12 is needed for ACA-Py 1.2.7 (interop tests)" >&2
        return 1
    fi
    echo "==> installing acapy-agent 1.2.7 into $venv"
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "acapy-agent==1.2.7"
}
