#!/usr/bin/env python3
"""Opens N connections that each send an HTTP request one header line per second (a slowloris
client), optionally over TLS, for SECONDS; prints how many were open at the start.
Usage: slow_clients.py HOST PORT N SECONDS [CAFILE]"""
import socket
import ssl
import sys
import time

host, port, n, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ctx = None
if len(sys.argv) > 5:
    ctx = ssl.create_default_context(cafile=sys.argv[5])
socks = []
for i in range(n):
    try:
        s = socket.create_connection((host, port), timeout=5)
        if ctx is not None:
            s = ctx.wrap_socket(s, server_hostname="localhost")
        s.sendall(b"GET /v1/lookup?kernel=matmul&m=64&n=64&k=64 HTTP/1.1\r\nHost: localhost\r\n")
        socks.append(s)
    except OSError as e:
        print(f"connection {i}: {e}", file=sys.stderr)
print(f"{len(socks)} slow connections open", flush=True)
end = time.monotonic() + seconds
k = 0
while time.monotonic() < end:
    time.sleep(1)
    k += 1
    for s in list(socks):
        try:
            s.sendall(b"X-Slow-%d: %d\r\n" % (k, k))
        except OSError:
            socks.remove(s)
print(f"{len(socks)} still open after {seconds:.0f} s", flush=True)
for s in socks:
    s.close()
