"""blocktune.Client against a real blocktuned (conftest.daemon): every call the SDK offers, the
error shape (status, code, message, field path), idempotent sweep creation, waiting with
progress, cancel, measurements, tuned rows and their explanation, misses, results push, and the
one keep-alive connection surviving the daemon's idle close."""

from __future__ import annotations

import time
import uuid

import pytest

from blocktune import ApiError, Client, Lookup, Query

SHAPE = {"m": 64, "n": 64, "k": 64}


@pytest.fixture(scope="module")
def client(daemon):  # type: ignore[no-untyped-def]
    with Client(daemon.url, token=daemon.token) as c:
        yield c


@pytest.fixture(scope="module")
def finished_sweep(client):  # type: ignore[no-untyped-def]
    created = client.create_sweep("matmul", [SHAPE], strategy="random", budget=4, seed=3,
                                  idempotency_key="pytest-sweep-1")
    seen = []
    final = client.wait_sweep(created["id"], progress=seen.append, poll_seconds=0.2, timeout=240)
    return created, final, seen


def test_health_and_kernels(client):
    assert client.health() == {"status": "ok"}
    names = {k["name"] for k in client.kernels()}
    assert {"matmul", "flash_attention"} <= names
    mm = client.kernel("matmul")
    assert [p["name"] for p in mm["params"]] == ["block_m", "block_n", "block_k"]
    assert client.host_hardware(threads=1)["threads"] == 1


def test_lookup_answers_and_explicit(client):
    a = client.lookup("matmul", m=1000, n=1000, k=1000, threads=1)
    assert isinstance(a, Lookup)
    assert a.bucket == "m1024_n1024_k1024" and set(a.config) == {"block_m", "block_n", "block_k"}
    assert a.source in {"tuned", "tuned_fallback", "nearest", "default"}
    e = client.lookup("matmul", m=1000, n=1000, k=1000, config={"block_m": 48})
    assert e.source == "explicit" and e.config["block_m"] == 48


def test_errors_carry_status_code_and_path(client):
    with pytest.raises(ApiError) as ei:
        client.lookup("matmul", m=1000, n=1000)  # k missing
    assert ei.value.status == 400 and ei.value.code == "invalid_argument" and ei.value.path == "k"
    with pytest.raises(ApiError) as ei:
        client.kernel("no_such_kernel")
    assert ei.value.status == 404 and ei.value.code == "not_found"
    with pytest.raises(ApiError) as ei:
        client.sweep(999999)
    assert ei.value.status == 404
    anonymous = Client(client.url, token="")
    anonymous.token = None
    with pytest.raises(ApiError) as ei:
        anonymous.create_sweep("matmul", [SHAPE])
    assert ei.value.status == 401 and ei.value.code == "unauthenticated" and ei.value.path == "Authorization"
    with pytest.raises(ApiError) as ei:
        client.create_sweep("matmul", [{"m": 64, "n": 64}])
    assert ei.value.status == 400 and ei.value.path == "shapes[0].k", ei.value


def test_batch_lookup_mixes_answers_and_errors(client):
    got = client.lookup_batch([Query("matmul", {"m": 100, "n": 100, "k": 100}),
                               Query("matmul", {"m": 100, "n": -1, "k": 100}),
                               {"kernel": "flash_attention", "dims": {"batch": 1, "heads": 8, "kv_heads": 8,
                                "seq_q": 512, "seq_kv": 512, "head_dim": 64, "causal": 1}}])
    assert isinstance(got[0], Lookup) and got[0].bucket == "m128_n128_k128"
    # A query the lookup refuses is an error item; the others are answered.
    assert isinstance(got[1], ApiError) and got[1].code == "invalid_argument"
    assert got[1].path == "queries[1].dims.n", got[1].path
    assert isinstance(got[2], Lookup) and set(got[2].config) == {"block_q", "block_kv"}
    # A malformed envelope (a required dim missing) refuses the whole batch, naming the field.
    with pytest.raises(ApiError) as ei:
        client.lookup_batch([Query("matmul", {"m": 100, "k": 100})])
    assert ei.value.status == 400 and ei.value.path == "queries[0].dims.n"


def test_sweep_create_is_idempotent_and_waits_with_progress(client, finished_sweep):
    created, final, seen = finished_sweep
    assert created["status"] == "queued" and created["created"] is True
    assert final["status"] == "done", final
    assert seen and seen[-1]["status"] == "done"
    assert all(s["progress"]["done"] <= s["progress"]["total"] for s in seen)
    again = client.create_sweep("matmul", [SHAPE], strategy="random", budget=4, seed=3,
                                idempotency_key="pytest-sweep-1")
    assert again["id"] == created["id"] and again["created"] is False
    with pytest.raises(ApiError) as ei:
        client.create_sweep("matmul", [SHAPE], strategy="random", budget=5, seed=3,
                            idempotency_key="pytest-sweep-1")
    assert ei.value.status == 409 and ei.value.code == "already_exists"
    assert any(s["id"] == created["id"] for s in client.sweeps(status="done"))


def test_measurements_tuned_and_explain(client, finished_sweep):
    created, final, _ = finished_sweep
    ms = list(client.measurements(created["id"], limit=2))  # pages of 2: the iterator follows them
    assert len(ms) == final["progress"]["done"] >= 4
    assert len({m["id"] for m in ms}) == len(ms)
    assert all(m["bucket"] == "m64_n64_k64" for m in ms)
    ok = [m for m in ms if m["outcome"] == "ok"]
    # Every repetition the daemon was asked for (3), or, for a searched config far behind the
    # best so far (SweepOptions::stop_behind), the ones its detail names: "stopped after 2 of 3".
    def all_repetitions(m):
        n = len(m["samples_ns"])
        return n >= 3 or m["detail"].startswith(f"stopped after {n} of 3 ")
    assert ok and all(all_repetitions(m) for m in ok)
    rows = client.tuned(kernel="matmul", hardware=final["hardware"], dtype="f32")
    row = next(r for r in rows if r["hardware"] == final["hardware"] and r["bucket"] == "m64_n64_k64")
    assert row["sweep_id"] == created["id"]
    why = client.explain("matmul", final["hardware"], "f32", "m64_n64_k64", top=3)
    assert why["sweep"]["id"] == created["id"]
    assert any(r["is_winner"] for r in why["ranked"])
    a = client.lookup("matmul", m=64, n=64, k=64, hardware=final["hardware"])
    assert a.source == "tuned" and a.config == row["config"] and a.sweep_id == created["id"]


def test_cancel(client):
    # Exhaustive over a large bucket: thousands of configs, so it is still queued or running.
    s = client.create_sweep("matmul", [{"m": 2048, "n": 2048, "k": 2048}], strategy="exhaustive")
    c = client.cancel_sweep(s["id"])
    assert c["id"] == s["id"] and c["status"] == "cancelled"
    assert client.wait_sweep(s["id"], timeout=120)["status"] == "cancelled"
    with pytest.raises(ApiError) as ei:
        client.cancel_sweep(s["id"])
    assert ei.value.status == 412 and ei.value.code == "failed_precondition"


def test_misses_count_defaulted_lookups(client):
    hw = "x86_64.avx2.pytest.fam0_mod0.t1"
    for _ in range(3):
        assert client.lookup("matmul", m=24, n=24, k=24, hardware=hw).source == "default"
    rows = [r for r in client.misses(kernel="matmul", hardware=hw)]
    assert len(rows) == 1 and rows[0]["count"] == 3 and rows[0]["bucket"] == "m32_n32_k32"


def test_push_results_applies_once(client, finished_sweep):
    created, final, _ = finished_sweep
    profile = next(p for p in client.hardware()["profiles"] if p["key"] == final["hardware"])
    sweep = {"uid": "pytest-" + uuid.uuid4().hex[:12], "host": "pytest-host", "kernel": "matmul", "dtype": "f32",
             "threads": final["threads"], "strategy": final["strategy"], "budget": final["budget"],
             "budget_seconds": final["budget_seconds"], "seed": final["seed"], "shapes": final["shapes"],
             "shard_index": 0, "shard_count": 1, "status": "done", "progress_total": final["progress"]["total"],
             "error": "", "bucket_version": client.kernel("matmul")["bucket_version"],
             "created_at": final["created_at"], "started_at": final["started_at"],
             "finished_at": final["finished_at"], "environment": final["environment"]}
    hardware = {k: v for k, v in profile.items() if k not in ("id", "first_seen_at")}
    keep = ("bucket", "problem", "config", "outcome", "detail", "iterations", "median_ns", "cv", "max_abs_err",
            "max_rel_err", "samples_ns", "fingerprint", "created_at")
    ms = [{k: m[k] for k in keep} for m in client.measurements(created["id"])]
    batch = {"batch_id": "pytest-batch-" + sweep["uid"], "sweep": sweep, "hardware": hardware, "measurements": ms}
    first = client.push_results(batch)
    assert first["measurements"] == len(ms) and first["inserted"] == len(ms) and first["replayed"] is False
    second = client.push_results(batch)
    assert second["replayed"] is True and second["sweep_id"] == first["sweep_id"]


def test_one_connection_reused_and_reopened_after_idle_close(client):
    client.health()
    conn = client._conn
    for _ in range(20):
        client.lookup("matmul", m=128, n=128, k=128)
    assert client._conn is conn  # one keep-alive connection for all of them
    time.sleep(5.5)  # the daemon closes connections idle for 5 s
    assert client.lookup("matmul", m=128, n=128, k=128).bucket == "m128_n128_k128"
