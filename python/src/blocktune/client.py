"""Client of the blocktuned HTTP API (docs/api.md): lookups, sweeps, tuned rows, kernels, misses,
overrides and results push over one persistent keep-alive connection (http.client), with every
4xx/5xx raised as ApiError carrying the server's status, error code, message and field path.

The daemon closes idle keep-alive connections after 5 s, so a request on a connection the server
has dropped fails before any answer arrives; the client then reconnects and sends it once more.
That is safe for every route: reads change nothing, a sweep is created with an Idempotency-Key
(the retry returns the first sweep), a results batch carries its batch_id (a replay writes
nothing), and an override set twice is the same pin.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

Json = dict[str, Any]

# Errors of a connection that the server closed while it was idle in our pool: nothing of the
# request was processed, so sending it again on a fresh connection is the right answer.
_DROPPED = (http.client.RemoteDisconnected, http.client.BadStatusLine, ConnectionResetError,
            BrokenPipeError, ConnectionAbortedError)


class ApiError(Exception):
    """A request the server refused or failed: `status` (HTTP), `code` (invalid_argument,
    not_found, ...), `message`, `path` (the field at fault, e.g. "shapes[0].k"; "" if none) and,
    for 429, `retry_after` seconds. Items of a batch lookup that failed are ApiErrors with the
    batch's status (200) and the item's error."""

    def __init__(self, status: int, code: str, message: str, path: str = "",
                 retry_after: float | None = None) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" (at {path})" if path else ""))
        self.status = status
        self.code = code
        self.message = message
        self.path = path
        self.retry_after = retry_after

    @classmethod
    def from_body(cls, status: int, body: Any, retry_after: float | None = None) -> ApiError:
        err = body.get("error") if isinstance(body, dict) else None
        if not isinstance(err, dict):
            return cls(status, "unknown", f"unexpected error body: {str(body)[:200]}", "", retry_after)
        return cls(status, str(err.get("code", "unknown")), str(err.get("message", "")),
                   str(err.get("path", "") or ""), retry_after)


class Lookup(NamedTuple):
    """One lookup answer (GET /v1/lookup): the config and where it came from. A NamedTuple:
    built in ~1 us, against ~5 us for a frozen dataclass, on the path the overhead target is for."""

    kernel: str
    config: dict[str, int]
    source: str  # explicit, override, tuned, tuned_fallback, nearest, default
    hardware: str
    queried_hardware: str
    fallback_levels: int
    bucket: str
    matched_bucket: str
    median_ns: float
    samples: int
    sweep_id: int
    measurement_id: int
    measured_at: str
    fingerprint: str | None
    stale: bool
    override: Json | None = None

    @classmethod
    def from_json(cls, j: Json) -> Lookup:
        return cls(j["kernel"], j["config"], j["source"], j["hardware"], j["queried_hardware"],
                   j["fallback_levels"], j["bucket"], j["matched_bucket"], j["median_ns"], j["samples"],
                   j["sweep_id"], j["measurement_id"], j["measured_at"], j.get("fingerprint"),
                   j.get("stale", False), j.get("override"))


@dataclass(frozen=True, slots=True)
class Query:
    """One problem of a batch lookup (POST /v1/lookup)."""

    kernel: str
    dims: Mapping[str, int]
    dtype: str | None = None
    threads: int | None = None
    hardware: str | None = None
    config: Mapping[str, int] | None = None

    def to_json(self) -> Json:
        j: Json = {"kernel": self.kernel, "dims": dict(self.dims)}
        for name in ("dtype", "threads", "hardware", "config"):
            v = getattr(self, name)
            if v is not None:
                j[name] = dict(v) if name == "config" else v
        return j


FINISHED = frozenset({"done", "failed", "cancelled"})

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


_QUOTED: dict[str, str] = {}


def _q(text: str) -> str:
    """A query component: kernel names, dims and hardware keys are plain; anything else quoted.
    Remembered (up to 4096 strings): the same few names come back on every lookup."""
    out = _QUOTED.get(text)
    if out is None:
        out = text if _PLAIN.issuperset(text) else urllib.parse.quote(text, safe="")
        if len(_QUOTED) < 4096:
            _QUOTED[text] = out
    return out


@dataclass
class Client:
    """blocktuned at `url` (default BLOCKTUNE_SERVER or http://127.0.0.1:8787). `token` (default
    BLOCKTUNE_TOKEN, else the contents of `token_file`) is sent on the routes that change state.
    One connection, reused for every request; not thread-safe (one Client per thread)."""

    url: str = field(default_factory=lambda: os.environ.get("BLOCKTUNE_SERVER", "http://127.0.0.1:8787"))
    token: str | None = None
    token_file: str | None = None
    timeout: float = 60.0
    _conn: http.client.HTTPConnection | None = field(default=None, init=False, repr=False)
    _used: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"server URL must be http://HOST[:PORT][/PREFIX] or https://...: {self.url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._get_headers = {"Accept": "application/json"}
        if self.token is None:
            self.token = os.environ.get("BLOCKTUNE_TOKEN") or None
        if self.token is None and self.token_file:
            with open(self.token_file, encoding="utf-8") as f:
                self.token = f.read().strip()

    # --- transport -------------------------------------------------------------------------

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connect(self) -> http.client.HTTPConnection:
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=self.timeout)
            self._used = False
        return self._conn

    def _send(self, method: str, path: str, body: bytes | None,
              headers: dict[str, str]) -> tuple[int, bytes, http.client.HTTPResponse]:
        for attempt in (0, 1):
            conn = self._connect()
            reused = self._used
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except _DROPPED:
                self.close()
                # Only a connection that already served a request may have been dropped while
                # idle; a fresh one failing means the server is gone: raise.
                if attempt == 0 and reused:
                    continue
                raise
            except BaseException:
                self.close()
                raise
            self._used = True
            if resp.will_close:
                self.close()
            return resp.status, data, resp
        raise AssertionError("unreachable")

    def _get_json(self, target: str) -> Any:
        """GET of a JSON route, the lookup's hot path: no query dict, no header dict per call."""
        status, data, resp = self._send("GET", self._prefix + target, None, self._get_headers)
        if status >= 400:
            raise ApiError.from_body(status, json.loads(data) if data else None)
        return json.loads(data)

    def request(self, method: str, path: str, query: Mapping[str, Any] | None = None,
                body: Any = None, headers: Mapping[str, str] | None = None, auth: bool = False) -> Any:
        """Any route: JSON in, JSON out (text for non-JSON answers). Raises ApiError on >= 400."""
        target = self._prefix + path
        if query:
            q = {k: v for k, v in query.items() if v is not None}
            if q:
                target += "?" + urllib.parse.urlencode(q)
        hdrs = {"Accept": "application/json"}
        payload = None
        if body is not None:
            payload = json.dumps(body, separators=(",", ":")).encode()
            hdrs["Content-Type"] = "application/json"
        elif method in ("POST", "PUT", "PATCH"):
            payload = b""
        if auth and self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        if headers:
            hdrs.update(headers)
        status, data, resp = self._send(method, target, payload, hdrs)
        ctype = resp.getheader("Content-Type", "")
        parsed: Any = json.loads(data) if "json" in ctype and data else data.decode("utf-8", "replace")
        if status >= 400:
            ra = resp.getheader("Retry-After")
            raise ApiError.from_body(status, parsed, float(ra) if ra and ra.isdigit() else None)
        return parsed

    def _pages(self, path: str, key: str, query: dict[str, Any], cursor: str, next_key: str) -> Iterator[Json]:
        while True:
            page = self.request("GET", path, query)
            yield from page[key]
            nxt = page.get(next_key)
            if nxt is None:
                return
            query[cursor] = nxt

    # --- lookups -----------------------------------------------------------------------------

    def lookup(self, kernel: str, *, dtype: str | None = None, threads: int | None = None,
               hardware: str | None = None, config: Mapping[str, int] | str | None = None,
               **dims: int) -> Lookup:
        """Best block sizes for one problem: client.lookup("matmul", m=1000, n=1000, k=1000)."""
        # The query string by hand: urlencode costs ~10 us a call, as much as parsing the answer.
        parts = ["/v1/lookup?kernel=", _q(kernel)]
        for name, v in dims.items():
            parts.append(f"&{_q(name)}={int(v)}")
        if dtype is not None:
            parts += ("&dtype=", _q(dtype))
        if threads is not None:
            parts += ("&threads=", str(int(threads)))
        if hardware is not None:
            parts += ("&hardware=", _q(hardware))
        if config is not None:
            text = config if isinstance(config, str) else ",".join(f"{k}={v}" for k, v in config.items())
            parts += ("&config=", _q(text))
        return Lookup.from_json(self._get_json("".join(parts)))

    def lookup_batch(self, queries: Sequence[Query | Mapping[str, Any]]) -> list[Lookup | ApiError]:
        """Up to 256 problems in one request; each item a Lookup or the ApiError of that query
        (its path names the query: "queries[1].dims.n")."""
        body = {"queries": [q.to_json() if isinstance(q, Query) else dict(q) for q in queries]}
        out: list[Lookup | ApiError] = []
        for item in self.request("POST", "/v1/lookup", body=body)["results"]:
            out.append(ApiError.from_body(200, item) if "error" in item else Lookup.from_json(item))
        return out

    def misses(self, *, kernel: str | None = None, hardware: str | None = None,
               limit: int | None = None) -> Iterator[Json]:
        """Buckets lookups fell back or defaulted on, most asked first (every page)."""
        q = {"kernel": kernel, "hardware": hardware, "limit": limit}
        return self._pages("/v1/misses", "misses", q, "offset", "next_offset")

    # --- kernels and hardware -------------------------------------------------------------------

    def kernels(self) -> list[Json]:
        return list(self.request("GET", "/v1/kernels")["kernels"])

    def kernel(self, name: str) -> Json:
        return dict(self.request("GET", "/v1/kernels/" + urllib.parse.quote(name, safe="")))

    def reload_kernels(self) -> Json:
        return dict(self.request("POST", "/v1/kernels/reload", auth=True))

    def hardware(self) -> Json:
        return dict(self.request("GET", "/v1/hardware"))

    def host_hardware(self, threads: int = 1) -> Json:
        return dict(self.request("GET", "/v1/hardware/host", {"threads": threads}))

    def health(self) -> Json:
        return dict(self.request("GET", "/healthz"))

    # --- sweeps ------------------------------------------------------------------------------

    def create_sweep(self, kernel: str, shapes: Sequence[Mapping[str, int]], *, dtype: str | None = None,
                     threads: int | None = None, strategy: str | None = None, budget: int | None = None,
                     budget_seconds: float | None = None, seed: int | None = None, isa: str | None = None,
                     idempotency_key: str | None = None) -> Json:
        """Queues a sweep: {"id", "status", "created"}. Sent with an Idempotency-Key (a random
        one unless given), so the reconnect-and-retry above, or yours with the same key, returns
        the first sweep ("created": false) instead of a second one."""
        body: Json = {"kernel": kernel, "shapes": [dict(s) for s in shapes]}
        for name, v in (("dtype", dtype), ("threads", threads), ("strategy", strategy), ("budget", budget),
                        ("budget_seconds", budget_seconds), ("seed", seed), ("isa", isa)):
            if v is not None:
                body[name] = v
        key = idempotency_key or uuid.uuid4().hex
        return dict(self.request("POST", "/v1/sweeps", body=body, headers={"Idempotency-Key": key}, auth=True))

    def sweep(self, sweep_id: int) -> Json:
        return dict(self.request("GET", f"/v1/sweeps/{int(sweep_id)}"))

    def sweeps(self, *, status: str | None = None) -> Iterator[Json]:
        """Every sweep, oldest first (all pages)."""
        return self._pages("/v1/sweeps", "sweeps", {"status": status}, "after_id", "next_after_id")

    def cancel_sweep(self, sweep_id: int) -> Json:
        """Cancels a queued or running sweep; ApiError 412 if it already finished."""
        return dict(self.request("POST", f"/v1/sweeps/{int(sweep_id)}/cancel", auth=True))

    def wait_sweep(self, sweep_id: int, *, progress: Callable[[Json], None] | None = None,
                   poll_seconds: float = 0.5, timeout: float | None = None) -> Json:
        """Polls until the sweep is done, failed or cancelled and returns it; `progress` gets the
        sweep (progress.done/total, eta_seconds, by_outcome) after every poll. TimeoutError after
        `timeout` seconds (the sweep keeps running)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            s = self.sweep(sweep_id)
            if progress is not None:
                progress(s)
            if s["status"] in FINISHED:
                return s
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"sweep {sweep_id} still {s['status']} after {timeout} s")
            time.sleep(poll_seconds)

    def measurements(self, sweep_id: int, *, limit: int | None = None) -> Iterator[Json]:
        """Every measurement of a sweep with its samples, oldest first (all pages)."""
        return self._pages(f"/v1/sweeps/{int(sweep_id)}/measurements", "measurements", {"limit": limit},
                           "after_id", "next_after_id")

    # --- tuned rows, overrides, results -------------------------------------------------------

    def tuned(self, *, kernel: str | None = None, hardware: str | None = None,
              dtype: str | None = None) -> list[Json]:
        q = {"kernel": kernel, "hardware": hardware, "dtype": dtype}
        return list(self.request("GET", "/v1/tuned", q)["entries"])

    def explain(self, kernel: str, hardware: str, dtype: str, bucket: str, *, top: int | None = None) -> Json:
        """Why the tuned row (kernel, exact hardware key, dtype, bucket) holds its config."""
        q = {"kernel": kernel, "hardware": hardware, "dtype": dtype, "bucket": bucket, "top": top}
        return dict(self.request("GET", "/v1/tuned/explain", q))

    def overrides(self) -> list[Json]:
        return list(self.request("GET", "/v1/overrides")["overrides"])

    def set_override(self, kernel: str, hardware: str, dtype: str, bucket: str, config: Mapping[str, int],
                     reason: str, expires_at: str | None = None) -> Json:
        body: Json = {"kernel": kernel, "hardware": hardware, "dtype": dtype, "bucket": bucket,
                      "config": dict(config), "reason": reason}
        if expires_at is not None:
            body["expires_at"] = expires_at
        return dict(self.request("POST", "/v1/overrides", body=body, auth=True))

    def delete_override(self, override_id: int) -> Json:
        return dict(self.request("DELETE", f"/v1/overrides/{int(override_id)}", auth=True))

    def push_results(self, batch: Mapping[str, Any]) -> Json:
        """One batch of another database's results (POST /v1/results; `blocktune push` builds
        them): {"batch_id", "sweep", "hardware", "measurements"}. Replayed batches answer
        "replayed": true and write nothing."""
        return dict(self.request("POST", "/v1/results", body=dict(batch), auth=True))

    def table_header(self, kernel: str) -> str:
        """The generated C++ header over the rows lookups serve."""
        return str(self.request("GET", "/v1/tables/" + urllib.parse.quote(kernel, safe="")))
