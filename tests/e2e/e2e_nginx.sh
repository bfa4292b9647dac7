#!/usr/bin/env bash
# deploy/nginx/blocktune.conf in front of blocktuned (Debian's nginx; deploy/install-deps.sh):
#  - before: 200 connections sending one header line per second straight to blocktuned (64 HTTP
#    threads) make a lookup from another client wait (measured, printed);
#  - after: the same 200 connections to nginx delay a lookup through nginx by under 100 ms
#    (median of 5 against the median of 5 without them);
#  - TLS with `curl --cacert` (a self-signed certificate made here with openssl);
#  - a mutating route without the token is refused through the proxy, and the token passes.
# Also: blocktuned refuses a non-loopback --host without --allow-remote.
# Label slow: it measures latency and holds connections for ~25 s.
# Usage: e2e_nginx.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
nginx_pid=
slow_pid=
stop_all() {
  [[ -n $slow_pid ]] && kill "$slow_pid" 2>/dev/null || true
  [[ -n $nginx_pid ]] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null || true
  cleanup
}
trap stop_all EXIT
command -v nginx >/dev/null || { echo "nginx is not installed: run deploy/install-deps.sh"; exit 1; }

# Non-loopback bind: refused unless --allow-remote, then a warning.
rc=0; "$build/server/blocktuned" --host 0.0.0.0 --port 0 --db "$work/other/b.db" >"$work/remote.log" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "refusing to listen on non-loopback" "$work/remote.log" || { echo "FAIL: non-loopback bind not refused"; cat "$work/remote.log"; exit 1; }
"$build/server/blocktuned" --host 0.0.0.0 --allow-remote --port 0 --port-file "$work/remote.port" --db "$work/other/b.db" >"$work/remote.log" 2>&1 &
remote_pid=$!
for _ in $(seq 200); do [[ -s $work/remote.port ]] && break; sleep 0.05; done
kill "$remote_pid"; wait "$remote_pid" || true
grep -q "listening on non-loopback host=0.0.0.0" "$work/remote.log" || { echo "FAIL: no warning for --allow-remote"; cat "$work/remote.log"; exit 1; }
echo "non-loopback --host: refused (exit 2) without --allow-remote, warned with it"

StartDaemon --log-level warn
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
tls_port=$(free_port)
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
mkdir -p "$work/nginx-tmp"
sed -e "s|listen 443 ssl;|listen 127.0.0.1:$tls_port ssl;|" -e "s|127.0.0.1:8787|127.0.0.1:$port|" \
  -e "s|/etc/blocktune/tls/cert.pem|$work/cert.pem|" -e "s|/etc/blocktune/tls/key.pem|$work/key.pem|" \
  "$here/../../deploy/nginx/blocktune.conf" >"$work/blocktune.conf"
user_line=
[[ $(id -u) == 0 ]] && user_line="user root;"
cat >"$work/nginx.conf" <<CONF
$user_line
worker_processes 2;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 1000; }
http {
  access_log off;
  client_body_temp_path $work/nginx-tmp/body;
  proxy_temp_path $work/nginx-tmp/proxy;
  fastcgi_temp_path $work/nginx-tmp/fastcgi;
  uwsgi_temp_path $work/nginx-tmp/uwsgi;
  scgi_temp_path $work/nginx-tmp/scgi;
  include $work/blocktune.conf;
}
CONF
nginx -t -c "$work/nginx.conf" -p "$work" 2>&1 | tail -1
nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
front="https://localhost:$tls_port"
for _ in $(seq 100); do curl -fsS --cacert "$work/cert.pem" "$front/healthz" >/dev/null 2>&1 && break; sleep 0.05; done
curl -fsS --cacert "$work/cert.pem" "$front/healthz" >/dev/null || { echo "FAIL: no TLS through nginx"; cat "$work/nginx-error.log"; exit 1; }
echo "TLS through nginx with curl --cacert: ok"

# Auth through the proxy: without the token refused, with it the request reaches the handler.
code=$(curl -s -o "$work/noauth.json" -w '%{http_code}' --cacert "$work/cert.pem" -X POST "$front/v1/results" -d '{}')
[[ $code == 401 ]] || { echo "FAIL: POST /v1/results without token through nginx answered $code"; exit 1; }
code=$(curl -s -o "$work/auth.json" -w '%{http_code}' --cacert "$work/cert.pem" -X POST "$front/v1/results" \
  -H "Authorization: Bearer $token" -d '{}')
[[ $code == 400 ]] || { echo "FAIL: with the token, POST /v1/results through nginx answered $code"; cat "$work/auth.json"; exit 1; }
echo "mutating route through nginx: 401 without the token, 400 (body checked) with it"
# blocktune push over TLS through the front (--cacert), the token passing through.
"$build/client/blocktune" sweep matmul --local --in-process --shape m=32,n=32,k=32 --db "$work/src.db" \
  --min-repetition-ms 0.05 --repetitions 1 --max-cv 1000 >/dev/null 2>&1
"$build/client/blocktune" push --server "$front" --cacert "$work/cert.pem" --token "$token" "$work/src.db"
[[ $(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*) FROM measurements") == $(sqlite3 "$work/src.db" "SELECT COUNT(*) FROM measurements") ]] ||
  { echo "FAIL: push through nginx lost measurements"; exit 1; }

lookup='/v1/lookup?kernel=matmul&m=1000&n=1000&k=1000'
# Median seconds of 5 lookups: URL, then curl options.
median_lookup() {
  local url=$1; shift
  for _ in 1 2 3 4 5; do curl -s -o /dev/null --max-time 30 -w '%{time_total}\n' "$@" "$url" || echo 30; done | sort -n | sed -n 3p
}
slow() {  # host port seconds [cafile]
  python3 "$here/slow_clients.py" "$@" >"$work/slow.out" 2>&1 &
  slow_pid=$!
  for _ in $(seq 200); do grep -q "slow connections open" "$work/slow.out" 2>/dev/null && break; sleep 0.1; done
  sleep 1
}

# Before: straight to blocktuned.
direct_idle=$(median_lookup "$url$lookup")
slow 127.0.0.1 "$port" 200 12
head -1 "$work/slow.out"
direct_slow=$(curl -s -o /dev/null --max-time 30 -w '%{time_total}' "$url$lookup" || echo 30)
wait "$slow_pid" || true; slow_pid=
echo "direct to blocktuned: lookup ${direct_idle}s idle, ${direct_slow}s with 200 slow connections"

# After: through nginx.
front_idle=$(median_lookup "$front$lookup" --cacert "$work/cert.pem")
slow 127.0.0.1 "$tls_port" 200 10 "$work/cert.pem"
head -1 "$work/slow.out"
front_slow=$(median_lookup "$front$lookup" --cacert "$work/cert.pem")
wait "$slow_pid" || true; slow_pid=
delay_ms=$(python3 -c "print(round(1000 * ($front_slow - $front_idle), 1))")
echo "through nginx: lookup ${front_idle}s idle, ${front_slow}s with 200 slow connections (median of 5): +${delay_ms} ms"
python3 -c "import sys; sys.exit(0 if $front_slow - $front_idle < 0.1 else 1)" || { echo "FAIL: slow clients delay a lookup through nginx by ${delay_ms} ms"; exit 1; }
grep -q "200 slow connections open" "$work/slow.out" || { echo "FAIL: the slow clients did not all connect"; cat "$work/slow.out"; exit 1; }
echo "e2e_nginx: ok"
