"""The response cache: a second run sends zero requests; keys ignore secrets; ttl; --no-cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fake_agent import FakeServer

from evalgate.infra.net import ResponseCache, key_digest

SECRET = "cache-secret-token-4242"


def write_spec(tmp_path: Path, url: str, cache: dict | None, body: dict | None = None, n: int = 5) -> None:
    target: dict = {
        "type": "http",
        "url": f"{url}/agent",
        "headers": {"Authorization": "Bearer ${AGENT_TOKEN}"},
        "response": {"text": "output.text", "tool_calls": "output.tool_calls"},
        "retries": {"attempts": 2, "backoff_s": 0.01},
    }
    if cache is not None:
        target["cache"] = cache
    if body is not None:
        target["body"] = body
    spec = {
        "version": 1,
        "data": [{"id": f"q{i}", "input": f"weather in Paris #{i}"} for i in range(n)],
        "target": target,
        "concurrency": 2,
        "gates": [{"type": "called_tool", "tool": "get_weather"}],
    }
    (tmp_path / "evalgate.yaml").write_text(json.dumps(spec))


def run(tmp_path: Path, *args: str, token: str = SECRET) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json", *args],
        cwd=tmp_path, env={**os.environ, "AGENT_TOKEN": token}, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    return json.loads((tmp_path / "out.json").read_text())


def outputs(results: dict) -> list[dict]:
    return [{k: v for k, v in i["output"].items() if k != "latency_ms"} for i in results["items"]]


def test_second_run_sends_zero_requests(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, server.url, {"dir": ".cache"})
    first = run(tmp_path)
    assert server.count == 5 and first["summary"]["network"]["cache_hits"] == 0
    second = run(tmp_path)
    assert server.count == 5  # nothing sent
    assert second["summary"]["network"]["cache_hits"] == 5
    assert second["summary"]["network"]["requests"] == 0
    assert outputs(second) == outputs(first) and second["verdict"] == first["verdict"] == "passed"
    for path in (tmp_path / ".cache").rglob("*"):  # the key and the entries hold no secret
        if path.is_file():
            assert SECRET not in path.read_text() and SECRET not in path.name


def test_secret_value_is_not_part_of_the_key(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, server.url, {"dir": ".cache"})
    run(tmp_path)
    run(tmp_path, token="a-rotated-token-value")
    assert server.count == 5


def test_changed_settings_miss_the_cache(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, server.url, {"dir": ".cache"})
    run(tmp_path)
    write_spec(tmp_path, server.url, {"dir": ".cache"}, body={"input": "{{input}}", "lang": "fr"})
    run(tmp_path)
    assert server.count == 10


def test_no_cache_flag_bypasses_it(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, server.url, {"dir": ".cache"})
    run(tmp_path)
    results = run(tmp_path, "--no-cache")
    assert server.count == 10
    assert "cache_hits" not in results["summary"]["network"]


def test_no_cache_configured_means_every_run_sends(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, server.url, None)
    run(tmp_path)
    run(tmp_path)
    assert server.count == 10 and not (tmp_path / ".evalgate").exists()


def test_failures_are_not_cached(tmp_path: Path, server: FakeServer) -> None:
    server.faults["weather in Paris #0"] = ["400"]
    write_spec(tmp_path, server.url, {"dir": ".cache"})
    proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json"], cwd=tmp_path,
                          env={**os.environ, "AGENT_TOKEN": SECRET}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 4  # one errored item > max_errors 0: could not evaluate
    results = run(tmp_path)
    assert results["summary"]["network"]["cache_hits"] == 4 and server.count == 6


def test_cache_entries_expire_after_ttl(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path, ttl_s=60)
    key = key_digest({"b": 1, "a": [1, 2]})
    assert key == key_digest({"a": [1, 2], "b": 1})  # key order does not matter
    cache.put(key, {"body": {"x": 1}})
    assert cache.get(key) == {"body": {"x": 1}}
    path = next(tmp_path.rglob(f"{key}.json"))
    old = time.time() - 120
    os.utime(path, (old, old))
    assert cache.get(key) is None
    assert ResponseCache(tmp_path).get(key) == {"body": {"x": 1}}  # no ttl: never expires
    path.write_text("{torn")
    assert cache.get("nope") is None and ResponseCache(tmp_path).get(key) is None


def test_ttl_is_validated_in_the_spec(tmp_path: Path) -> None:
    write_spec(tmp_path, "http://127.0.0.1:9", {"dir": ".cache", "ttl": "soon"})
    proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "validate"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "ttl" in proc.stderr and "Traceback" not in proc.stderr


def test_a_cache_that_cannot_be_written_is_a_warning_not_a_silent_miss(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, server.url, {"dir": ".cache"})
    (tmp_path / ".cache").write_text("a file where the cache's folder should be")
    proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "-o", "out.json"], cwd=tmp_path,
                          env={**os.environ, "AGENT_TOKEN": SECRET}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr  # the run itself is whole: the cache only saves requests
    results = json.loads((tmp_path / "out.json").read_text())
    assert results["verdict"] == "passed" and results["summary"]["network"]["cache_unstored"] == 5
    [warning] = results["summary"]["warnings"]
    assert "could not keep 5 replies" in warning and "NotADirectoryError" in warning and "a re-run sends" in warning
    assert f"warning: {warning}" in proc.stderr and SECRET not in proc.stderr + json.dumps(results)
    run(tmp_path)
    assert server.count == 10  # nothing was kept: the second run sent every request again


def test_a_healthy_cache_adds_no_warning_and_no_counter(tmp_path: Path, server: FakeServer) -> None:
    write_spec(tmp_path, server.url, {"dir": ".cache"})
    results = run(tmp_path)
    assert "warnings" not in results["summary"] and "cache_unstored" not in results["summary"]["network"]
