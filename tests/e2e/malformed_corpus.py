#!/usr/bin/env python3
"""Malformed-request corpus against a running blocktuned, over raw sockets.

Generates COUNT requests from a seed: mutated valid requests (bit flips, deletions,
insertions, truncation), bad methods and request lines, truncated and garbled JSON, 100k-deep
nesting, huge strings and arrays, chunked bodies past the limit, gzip bombs declared with
Content-Encoding, bad Host names, bad query parameters, invalid UTF-8 and unicode, overlong
URIs and headers. Asserts: no response has a 5xx status, every non-empty 4xx body is the error
shape {"error": {"code", "message", "path"}}, and the daemon still answers /healthz at the end.

Usage: malformed_corpus.py PORT TOKEN COUNT [SEED]
"""
import gzip
import json
import random
import socket
import sys
from concurrent.futures import ThreadPoolExecutor

port, token, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
rng = random.Random(seed)

GZIP_BOMB = gzip.compress(b"\0" * (16 << 20), compresslevel=9)  # 16 MiB inflated, ~16 KiB sent


def req(method, target, body=b"", headers=None, host="127.0.0.1", auth=True, length=True):
    h = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    if auth:
        h.append(f"Authorization: Bearer {token}")
    for k, v in (headers or {}).items():
        h.append(f"{k}: {v}")
    if length and method not in ("GET", "HEAD"):
        h.append(f"Content-Length: {len(body)}")
    h.append("Connection: close")
    return ("\r\n".join(h) + "\r\n\r\n").encode("utf-8", "surrogateescape") + body


SWEEP = {"kernel": "matmul", "shapes": [{"m": 8, "n": 8, "k": 8}], "strategy": "random", "budget": 1}
OVERRIDE = {"kernel": "matmul", "hardware": "*", "bucket": "m8_n8_k8", "config": {"block_m": 48},
            "reason": "corpus", "expires_at": "2001-01-01T00:00:00Z"}
BATCH = {"queries": [{"kernel": "matmul", "dims": {"m": 8, "n": 8, "k": 8}}]}
VALID = [
    ("GET", "/v1/lookup?kernel=matmul&m=100&n=200&k=300&threads=1", b"", {}),
    ("POST", "/v1/lookup", json.dumps(BATCH).encode(), {}),
    ("POST", "/v1/sweeps", json.dumps(SWEEP).encode(), {"Idempotency-Key": "corpus"}),
    ("POST", "/v1/overrides", json.dumps(OVERRIDE).encode(), {}),
    ("GET", "/v1/sweeps?status=done&limit=5", b"", {}),
    ("GET", "/v1/sweeps/1/measurements?after_id=0&limit=3", b"", {}),
    ("GET", "/v1/kernels/matmul", b"", {}),
    ("GET", "/v1/tuned?kernel=matmul", b"", {}),
    ("POST", "/v1/sweeps/1/cancel", b"", {}),
    ("DELETE", "/v1/overrides/1", b"", {}),
    ("GET", "/v1/tables/matmul", b"", {}),
]


def mutate_request():
    """Mutates one part of a valid request (method, target, a header, or the body) and keeps
    the framing honest (Content-Length of the mutated body), so the server answers at once."""
    method, target, body, headers = rng.choice(VALID)
    part = rng.randrange(4)
    if part == 0:
        method = mutate(method.encode()).decode("latin-1")
    elif part == 1:
        target = mutate(target.encode()).decode("latin-1")
    elif part == 2:
        headers = dict(headers)
        headers[mutate(b"X-Name").decode("latin-1") or "X"] = mutate(b"some value").decode("latin-1")
    else:
        body = mutate(body or b"{}")
    clean = lambda t: "".join(c for c in t if c not in "\r\n ") or "X"
    return req(clean(method), clean(target), body,
               {clean(k): v.replace("\r", "").replace("\n", "") for k, v in headers.items()})


def mutate(raw):
    b = bytearray(raw)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(5)
        if not b:
            break
        i = rng.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            del b[i:i + rng.randint(1, 16)]
        elif op == 2:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == 3:
            b[i:i] = rng.choice([b"{", b"[", b"\"", b"\\", b"\r\n", b"\x00", b"%", b"\xff", b"\xc3", b"9" * 30])
        else:
            b = b[:i]
    return bytes(b)


def garbled_json():
    base = json.dumps(rng.choice([SWEEP, OVERRIDE, BATCH]))
    kind = rng.randrange(6)
    if kind == 0:
        return base[: rng.randrange(len(base))]
    if kind == 1:
        return base.replace(rng.choice(["8", "\"", ":", ","]), rng.choice(["", "\"", "-1", "1e999", "null", "[]"]), 1)
    if kind == 2:
        return json.dumps({**SWEEP, "threads": rng.choice([0, -1, 10**20, "1", None, 1.5, [], {}])})
    if kind == 3:
        return json.dumps({**SWEEP, "shapes": [{"m": rng.choice([0, -5, 2**63 - 1, 1e300, "x", None]), "n": 8, "k": 8}]})
    if kind == 4:
        return json.dumps({**OVERRIDE, "expires_at": rng.choice(["tomorrow", "2020-13-45T99:99:99Z", "", 5])})
    return "\ufeff" + base + rng.choice(["", "}", "]", "garbage", "\u0000"])


def generate(i):
    kind = i % 16
    route = rng.choice(["/v1/sweeps", "/v1/lookup", "/v1/overrides"])
    if kind in (0, 1, 2, 3):
        return mutate_request()
    if kind == 4:
        method = rng.choice(["PUT", "PATCH", "OPTIONS", "TRACE", "CONNECT", "get", "G\x00ET", "POST " * 3, "", "BREW"])
        return req(method, rng.choice(["/v1/lookup", "/v1/sweeps/1", "*", "/", "http://x/"]), b"{}")
    if kind == 5:
        return req("POST", route, garbled_json().encode("utf-8", "surrogatepass"))
    if kind == 6:
        depth = rng.choice([17, 1000, 100000])
        opener, closer = rng.choice([("[", "]"), ("{\"a\":", "}")])
        return req("POST", route, (opener * depth + "1" + closer * depth).encode())
    if kind == 7:
        if rng.random() < 0.5:
            body = json.dumps({"kernel": "x" * rng.choice([5000, 900000]), "shapes": []})
        else:
            body = json.dumps({"queries": [1] * rng.choice([2000, 200000])})
        return req("POST", route, body.encode()[: 1 << 20])
    if kind == 8:
        chunk = b"a" * 65536
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(rng.choice([1, 40]))) + b"0\r\n\r\n"
        return req("POST", route, body, {"Transfer-Encoding": "chunked"}, length=False)
    if kind == 9:
        return req("POST", route, GZIP_BOMB, {"Content-Encoding": rng.choice(["gzip", "deflate", "br", "GZIP"])})
    if kind == 10:
        host = rng.choice(["evil.example", "127.0.0.1.evil", "", "[::1", "localhost:99999", "a" * 300, "l\xf6calhost"])
        return req("GET", "/v1/lookup?kernel=matmul&m=1&n=1&k=1", host=host)
    if kind == 11:
        q = rng.choice([
            "kernel=matmul&m=-1&n=1&k=1", "kernel=matmul&m=99999999999999999999&n=1&k=1",
            "kernel=matmul&m=1&n=1", "kernel=matmul&m=1&n=1&k=1&threads=0", "kernel=matmul&m=1&m=2&n=1&k=1",
            "kernel=%ff%fe&m=1", "kernel=matmul&m=1&n=1&k=1&hardware=" + "x" * 500, "kernel=matmul&m=%zz",
            "kernel=matmul&m=1&n=1&k=1&config=block_m%3D-5", "kernel=matmul&m=1&n=1&k=1&config=%%%",
            "kernel=m\u00e4tmul&m=1", "kernel=matmul&m=1&n=1&k=1&dtype=f64", "&&&==&", "kernel",
        ])
        target = rng.choice(["/v1/lookup?", "/v1/sweeps?", "/v1/tuned?", "/v1/sweeps/1/measurements?",
                             "/v1/hardware/host?"]) + q
        return req("GET", target)
    if kind == 12:
        return req("GET", "/v1/lookup?kernel=matmul&m=1&n=1&k=1", headers={"X-Long": "v" * rng.choice([9000, 70000])})
    if kind == 13:
        headers = {f"X-H{j}": "v" for j in range(rng.choice([200, 5000]))}
        return req("GET", "/healthz", headers=headers)
    if kind == 14:
        return req("GET", "/v1/sweeps/" + rng.choice(["9" * 40, "-1", "1%00", "1/../../etc", "0x10", "\u00e9"]) +
                   "/measurements?limit=" + rng.choice(["0", "100000", "-5", "1e3"]))
    # 15: overlong URI, NUL bytes, bare LF, HTTP/0.9, bad versions
    return rng.choice([
        req("GET", "/v1/lookup?" + "a" * rng.choice([9000, 100000])),
        b"GET /healthz\r\n\r\n",
        b"GET /healthz HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",
        b"\x00\x01\x02\x03" * 100,
        b"GET /healthz HTTP/1.1\nHost: 127.0.0.1\n\n",
        req("POST", "/v1/sweeps", b"{}", {"Content-Length": "-5"}, length=False),
        req("POST", "/v1/sweeps", b"{}", {"Content-Length": "1, 2"}, length=False),
        req("POST", "/v1/sweeps", b"{}", {"Content-Length": "99999999999999999999999"}, length=False),
        # Raw byte mutation of a whole valid request: framing may break, and a body shorter
        # than its Content-Length costs the server's 5 s read timeout, so this one is rare.
        mutate(req(*rng.choice(VALID)[:3])),
    ])


def send(raw):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError as e:
        return ("connect", str(e))
    try:
        try:
            # No half-close: cpp-httplib answers nothing on a half-closed socket.
            s.sendall(raw)
        except OSError:
            pass  # the server may refuse and close before reading everything
        data = b""
        try:
            # Read one response: the head, then Content-Length bytes. The server may keep the
            # connection open afterwards (keep-alive), so do not wait for it to close.
            while len(data) < (1 << 21):
                d = s.recv(65536)
                if not d:
                    break
                data += d
                head, sep, body = data.partition(b"\r\n\r\n")
                if sep:
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length" and value.strip().isdigit():
                            length = int(value.strip())
                    if len(body) >= length:
                        break
        except OSError:
            pass
        return ("ok", data)
    finally:
        s.close()


def check(data):
    if not data:
        return None  # connection closed without a response (e.g. a broken request line)
    line = data.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    if len(parts) < 2 or not parts[1].isdigit():
        return f"malformed status line {line[:80]!r}"
    status = int(parts[1])
    if status >= 500:
        return f"status {status}: {data[:300]!r}"
    if status >= 400:
        head, _, body = data.partition(b"\r\n\r\n")
        if body:
            try:
                e = json.loads(body)["error"]
                assert isinstance(e["code"], str) and isinstance(e["message"], str) and isinstance(e["path"], str)
            except Exception:
                return f"4xx body is not the error shape: {body[:200]!r}"
    return None


def main():
    corpus = [generate(i) for i in range(count)]
    statuses = {}
    failures = []
    with ThreadPoolExecutor(max_workers=32) as pool:
        for raw, (kind, data) in zip(corpus, pool.map(send, corpus)):
            if kind != "ok":
                failures.append(f"cannot connect (daemon down?): {data}")
                break
            problem = check(data)
            code = data.split(b" ", 2)[1].decode("latin-1") if data.startswith(b"HTTP/") else "closed"
            statuses[code] = statuses.get(code, 0) + 1
            if problem:
                failures.append(f"{problem}\n  request: {raw[:200]!r}")
    alive = send(req("GET", "/healthz", auth=False))
    alive_ok = alive[0] == "ok" and b" 200 " in alive[1][:20]
    print(f"requests={len(corpus)} statuses={dict(sorted(statuses.items()))} failures={len(failures)} "
          f"daemon_alive={alive_ok}")
    for f in failures[:20]:
        print("FAIL:", f)
    sys.exit(0 if not failures and alive_ok else 1)


main()
