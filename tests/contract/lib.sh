# Shared by lint.sh and contract.sh (sourced after `build` is set): the installed tools, and
# FetchOpenApi, which serves the document from a fresh blocktuned (tests/e2e/lib.sh) and saves
# it to $build/contract/openapi.json.
npm_dir=$build/contract/npm
redocly=$npm_dir/node_modules/.bin/redocly
# Redocly CLI would otherwise try to send usage data and check for updates over the network.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
[[ -x $redocly ]] || { echo "contract tools missing: run tests/contract/npm-ci.sh $npm_dir"; exit 1; }
BLOCKTUNE_NO_EXCHANGE_LOG=1 source "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
FetchOpenApi() {
  StartDaemon --log-level warn
  mkdir -p "$build/contract"
  curl -fsS "$url/v1/openapi.json" >"$build/contract/openapi.json"
  kill "$daemon_pid"
  wait "$daemon_pid" || true
  daemon_pid=
}
