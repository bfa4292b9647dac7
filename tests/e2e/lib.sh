# Shared by the e2e scripts (sourced, not run): a temporary work folder removed on exit with
# the daemon the script started, and StartDaemon, which runs blocktuned on a free port with
# its database in $work/db and waits until it listens.
#   source "$(dirname "$0")/lib.sh"   (after `build` is set)
# Every exchange with a daemon StartDaemon starts is recorded (blocktuned --exchange-log) in
# $build/contract/exchanges/<script>_<hash of its arguments>.jsonl, which the contract test
# (tests/contract/contract.sh) validates against the served OpenAPI document. Set
# BLOCKTUNE_NO_EXCHANGE_LOG=1 to not record.
exchange_args=()
if [[ -z ${BLOCKTUNE_NO_EXCHANGE_LOG:-} ]]; then
  mkdir -p "$build/contract/exchanges"
  exchange_log="$build/contract/exchanges/$(basename "$0" .sh)_$(printf '%s' "$*" | cksum | cut -d' ' -f1).jsonl"
  : >"$exchange_log"
  exchange_args=(--exchange-log "$exchange_log")
fi
work=$(mktemp -d)
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# StartDaemon [blocktuned flags...]: sets daemon_pid, port, url and token; exits 1 with the
# daemon's log if it does not listen within 10 s.
StartDaemon() {
  rm -f "$work/port"
  "$build/server/blocktuned" --port 0 --port-file "$work/port" --db "$work/db/blocktune.db" "${exchange_args[@]}" "$@" \
    >"$work/daemon.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 200); do [[ -s $work/port ]] && break; sleep 0.05; done
  [[ -s $work/port ]] || { echo "daemon did not start"; cat "$work/daemon.log"; exit 1; }
  port=$(cat "$work/port")
  url="http://127.0.0.1:$port"
  token=$(cat "$work/db/token")
}
