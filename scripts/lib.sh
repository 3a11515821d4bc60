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
