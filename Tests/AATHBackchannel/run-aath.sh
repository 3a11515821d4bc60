#!/usr/bin/env bash
# Runs the Aries Agent Test Harness's connection scenarios with Aerie and ACA-Py on loopback.
#
#   Tests/AATHBackchannel/run-aath.sh HARNESS_DIR [options]
#
# HARNESS_DIR holds the harness's files (aries-test-harness/, aries-backchannels/), fetched for
# the run and never committed, e.g.
#   git -C <clone of openwallet-foundation/owl-agent-test-harness> archive HEAD | tar -x -C /tmp/aath
# Nothing is fetched from the internet except packages from PyPI (pip) into the venvs.
#
# Options:
#   --role invitee|inviter   Aerie's side: invitee/requester (default) or inviter/responder
#   --peer acapy|aerie       the other agent: ACA-Py through the harness's backchannel (default)
#                            or a second Aerie tenant
#   --aerie-bin DIR          aerie-server and aerie-admin (default: the checkout's .build/debug)
#   --schema DIR             migrations (default: the checkout's schema/)
#   --work DIR               state, logs, reports (default: .aath/run in the checkout)
#   --venvs DIR              where the venvs go (default: .aath in the checkout)
#   --acapy-version V        acapy-agent from PyPI (default 1.2.7)
#   --suite NAME             run only this suite (repeatable): rfc0160, rfc0023, t012, rfc0793,
#                            rfc0434, rfc0453, rfc0454, reuse; default all
#   --keep                   leave the processes running after the run (their PIDs are printed)
#
# Suites (each one behave run; -D names map the feature's roles onto Aerie and the peer):
#   rfc0160  features/0160-connection.feature  -t @RFC0160 -t ~@wip
#   rfc0023  features/0023-did-exchange.feature -t @RFC0023 -t ~@wip
#   t012     features/0023-did-exchange.feature -t @T012-RFC0023  (reuse; @wip in the harness)
#   rfc0793  features/0793-peer-did.feature   -t @RFC0793
#   rfc0434  features/0434-out-of-band.feature -t @RFC0434  (connectionless credentials/proofs)
#   rfc0453  features/0453-issue-credential-v2.feature, T001.1's JSON-LD Ed25519Signature2018 did:key
#            example: Aerie the holder (Bob), the peer the issuer (Acme); --no-ledger
#   rfc0454  features/0454-present-proof-v2.feature, T001's JSON-LD Ed25519Signature2018 did:key
#            example: Aerie the prover (Bob), the peer issuer (Acme) and verifier (Faber)
#   reuse    reuse_check.py: out-of-band handshake-reuse, Aerie invitee, ACA-Py inviter
#
# Stops only what it started, by PID (Aerie with its embedded PostgreSQL by SIGTERM; the ACA-Py
# backchannel and the aca-py process it started).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-2}"; }
[[ $# -ge 1 ]] || usage
[[ "$1" == "-h" || "$1" == "--help" ]] && usage 0
harness="$(cd "$1" && pwd)"; shift
[[ -d "$harness/aries-test-harness/features" && -d "$harness/aries-backchannels/acapy" ]] \
  || { echo "run-aath: $harness does not hold aries-test-harness/ and aries-backchannels/" >&2; exit 2; }

role=invitee peer=acapy keep=0
aerie_bin="$repo/.build/debug" schema="$repo/schema"
work="$repo/.aath/run" venvs="$repo/.aath" acapy_version=1.2.7
suites=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --role) role="$2"; shift 2 ;;
    --peer) peer="$2"; shift 2 ;;
    --aerie-bin) aerie_bin="$(cd "$2" && pwd)"; shift 2 ;;
    --schema) schema="$(cd "$2" && pwd)"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --venvs) venvs="$2"; shift 2 ;;
    --acapy-version) acapy_version="$2"; shift 2 ;;
    --suite) suites+=("$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run-aath: unknown option $1" >&2; usage ;;
  esac
done
[[ "$role" == invitee || "$role" == inviter ]] || { echo "run-aath: --role invitee|inviter" >&2; exit 2; }
[[ "$peer" == acapy || "$peer" == aerie ]] || { echo "run-aath: --peer acapy|aerie" >&2; exit 2; }
[[ ${#suites[@]} -gt 0 ]] || suites=(rfc0160 rfc0023 t012 rfc0793 rfc0434 reuse)
for bin in aerie-server aerie-admin; do
  [[ -x "$aerie_bin/$bin" ]] || { echo "run-aath: no $aerie_bin/$bin (swift build, or --aerie-bin)" >&2; exit 2; }
done

mkdir -p "$work" "$venvs"
work="$(cd "$work" && pwd)"; venvs="$(cd "$venvs" && pwd)"
logs="$work/logs" results="$work/results"
rm -rf "$work/aerie" "$work/acapy-home" "$results"
mkdir -p "$logs" "$results" "$work/acapy-home"
chmod 711 "$work"   # the postgres user of the embedded cluster needs search permission

# Loopback ports: Aerie JSON-RPC and DIDComm; backchannels (ACA-Py uses its port + 1..4).
rpc_port=7640 didcomm_port=7641
aerie_port=9030 peer_port=9020 mallory_port=9050

# --- venvs (PyPI only) --------------------------------------------------------------------------
find_python() {
  if [[ -n "${PYTHON:-}" ]]; then echo "$PYTHON"; return; fi
  local root candidate
  if command -v pyenv >/dev/null 2>&1; then
    root="$(pyenv root)"
    for candidate in "$root"/versions/3.12.*/bin/python3.12 "$root"/versions/3.13.*/bin/python3.13; do
      [[ -x "$candidate" ]] && { echo "$candidate"; return; }
    done
  fi
  for candidate in python3.12 python3.13 python3; do
    command -v "$candidate" >/dev/null 2>&1 && { command -v "$candidate"; return; }
  done
  echo "run-aath: no Python 3.12+ (set PYTHON)" >&2; exit 2
}
python="$(find_python)"
acapy_venv="$venvs/venv-acapy-$acapy_version" harness_venv="$venvs/venv-harness"
if [[ "$peer" == acapy && ! -f "$acapy_venv/.ready" ]]; then
  echo "run-aath: making $acapy_venv (acapy-agent==$acapy_version and the backchannel's requirements)"
  "$python" -m venv "$acapy_venv"
  # python3-indy (libindy) and debugpy are not needed ledger-less; prompt_toolkit is pinned by acapy-agent.
  grep -v -E '^(python3-indy|debugpy|prompt_toolkit)' "$harness/aries-backchannels/python/requirements.txt" > "$work/backchannel-requirements.txt"
  "$acapy_venv/bin/pip" install -q "acapy-agent==$acapy_version" -r "$work/backchannel-requirements.txt"
  touch "$acapy_venv/.ready"
fi
if [[ ! -f "$harness_venv/.ready" ]]; then
  echo "run-aath: making $harness_venv (behave, aiohttp)"
  "$python" -m venv "$harness_venv"
  # setuptools: the harness's steps import distutils, gone from Python 3.12's standard library.
  "$harness_venv/bin/pip" install -q "behave==1.2.6" aiohttp setuptools
  touch "$harness_venv/.ready"
fi

# --- processes ----------------------------------------------------------------------------------
pids=()
stop_all() {
  local status=$?
  if [[ $keep == 1 ]]; then
    echo "run-aath: left running (PIDs): ${pids[*]:-}"
    return $status
  fi
  local pid
  # The ACA-Py backchannel runs aca-py in a session of its own: end it by its PID too.
  [[ -n "${acapy_child:-}" ]] && kill -TERM "$acapy_child" 2>/dev/null || true
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  if [[ -n "${acapy_child:-}" ]]; then
    for _ in $(seq 20); do kill -0 "$acapy_child" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$acapy_child" 2>/dev/null || true
  fi
  return $status
}
trap stop_all EXIT
trap 'exit 130' INT TERM

wait_http() { # url seconds
  for _ in $(seq "$2"); do
    curl -sf "$1" >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "run-aath: $1 did not answer in $2 s" >&2; return 1
}

echo "run-aath: starting aerie-server ($aerie_bin), logs in $logs"
AERIE_HOME="$work/aerie" AERIE_SCHEMA_DIR="$schema" \
AERIE_RPC_LISTEN="127.0.0.1:$rpc_port" AERIE_DIDCOMM_LISTEN="127.0.0.1:$didcomm_port" \
AERIE_PUBLIC_ENDPOINT="http://127.0.0.1:$didcomm_port" AERIE_METRICS_LISTEN=off \
AERIE_ALLOWED_NETWORKS=127.0.0.0/8 \
  "$aerie_bin/aerie-server" > "$logs/aerie-server.log" 2>&1 &
pids+=($!)
for _ in $(seq 120); do
  grep -q "JSON-RPC listening" "$logs/aerie-server.log" 2>/dev/null && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "run-aath: aerie-server exited; see $logs/aerie-server.log" >&2; exit 1; }
  sleep 1
done
grep -q "JSON-RPC listening" "$logs/aerie-server.log" || { echo "run-aath: aerie-server did not start" >&2; exit 1; }

new_tenant() { # label -> token file
  local file="$work/$1.token"
  ( umask 077
    "$aerie_bin/aerie-admin" tenant create --label "$1" --server "127.0.0.1:$rpc_port" --home "$work/aerie" --json \
      | "$python" -c 'import json,sys; print(json.load(sys.stdin)["token"])' > "$file" )
  echo "$file"
}
start_aerie_backchannel() { # label port
  local token; token="$(new_tenant "$1")"
  python3 "$here/backchannel.py" --port "$2" --aerie "127.0.0.1:$rpc_port" --token-file "$token" --label "aerie.$1" \
    > "$logs/backchannel-$1.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$2/agent/command/status/" 30
}

start_aerie_backchannel Aerie "$aerie_port"
start_aerie_backchannel Mallory "$mallory_port"
if [[ "$peer" == acapy ]]; then
  echo "run-aath: starting the harness's ACA-Py backchannel (acapy-agent $acapy_version) on $peer_port"
  ( cd "$harness/aries-backchannels" && \
    HOME="$work/acapy-home" AGENT_NAME=Peer exec "$acapy_venv/bin/python" "$here/acapy_local.py" --port "$peer_port" ) \
    > "$logs/acapy-backchannel.log" 2>&1 &
  pids+=($!)
  wait_http "http://127.0.0.1:$peer_port/agent/command/status/" 120
  acapy_child="$(pgrep -P "${pids[-1]}" | head -1 || true)"
else
  start_aerie_backchannel Peer "$peer_port"
fi

aerie_url="http://127.0.0.1:$aerie_port" peer_url="http://127.0.0.1:$peer_port" mallory_url="http://127.0.0.1:$mallory_port"
# Role names of each feature: 0160 Acme inviter / Bob invitee; 0023 and 0793 Acme requester /
# Bob responder; 0434 Acme issuer, Faber verifier / Bob holder, prover.
if [[ "$role" == invitee ]]; then
  d0160=(-D "Acme=$peer_url" -D "Bob=$aerie_url" -D "Mallory=$mallory_url")
  d0023=(-D "Acme=$aerie_url" -D "Bob=$peer_url")
  d0434=(-D "Acme=$peer_url" -D "Faber=$peer_url" -D "Bob=$aerie_url")
else
  d0160=(-D "Acme=$aerie_url" -D "Bob=$peer_url" -D "Mallory=$mallory_url")
  d0023=(-D "Acme=$peer_url" -D "Bob=$aerie_url")
  d0434=(-D "Acme=$aerie_url" -D "Faber=$aerie_url" -D "Bob=$peer_url")
fi

failed=0
run_behave() { # suite feature agents... -- tags...
  local suite="$1" feature="$2"; shift 2
  echo "run-aath: suite $suite ($feature $*)"
  ( cd "$harness/aries-test-harness" && \
    "$harness_venv/bin/behave" "features/$feature" "$@" -k --no-capture \
      -f json.pretty -o "$results/$suite.json" -f plain ) > "$logs/behave-$suite.log" 2>&1 || failed=1
  tail -n 5 "$logs/behave-$suite.log" | sed 's/^/  /'
}

for suite in "${suites[@]}"; do
  case "$suite" in
    rfc0160) run_behave rfc0160 0160-connection.feature "${d0160[@]}" -t @RFC0160 -t ~@wip ;;
    rfc0023) run_behave rfc0023 0023-did-exchange.feature "${d0023[@]}" -t @RFC0023 -t ~@wip ;;
    t012) run_behave t012 0023-did-exchange.feature "${d0023[@]}" -t @T012-RFC0023 ;;
    rfc0793) run_behave rfc0793 0793-peer-did.feature "${d0023[@]}" -t @RFC0793 ;;
    rfc0434) run_behave rfc0434 0434-out-of-band.feature "${d0434[@]}" -t @RFC0434 ;;
    rfc0453) run_behave rfc0453 0453-issue-credential-v2.feature "${d0434[@]}" \
               -t @T001.1-RFC0453 -t @CredFormat_JSON-LD -t @ProofType_Ed25519Signature2018 -t @DidMethod_key ;;
    rfc0454) run_behave rfc0454 0454-present-proof-v2.feature "${d0434[@]}" \
               -t @T001-RFC0454 -t @CredFormat_JSON-LD -t @ProofType_Ed25519Signature2018 -t @DidMethod_key ;;
    reuse)
      if [[ "$peer" == acapy && "$role" == invitee ]]; then
        echo "run-aath: suite reuse (reuse_check.py)"
        python3 "$here/reuse_check.py" --acapy "$peer_url" --aerie "$aerie_url" > "$logs/reuse.log" 2>&1 || failed=1
        sed 's/^/  /' "$logs/reuse.log"
      else
        echo "run-aath: suite reuse needs --role invitee --peer acapy; skipped"
      fi ;;
    *) echo "run-aath: unknown suite $suite" >&2; failed=1 ;;
  esac
done

echo
reports=("$results"/*.json)
if [[ -e "${reports[0]}" ]]; then
  python3 "$here/summarize.py" "${reports[@]}" | tee "$results/summary.md"
fi
echo "run-aath: role $role, peer $peer; reports in $results, logs in $logs"
exit $failed
