"""Name resolution within `timeout_s`: the real CLI in a mount namespace whose /etc/resolv.conf points
at a DNS server on a loopback address (tests/fake_dns.py), the agent on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_agent import FakeServer
from fake_dns import FakeDns, in_namespace, namespaces_work
from test_http_target import spec_text

NAME = "agent.evalgate.test"
RESOLVER_TIMEOUT_S = 20  # what one unanswered lookup takes without evalgate's own bound

pytestmark = pytest.mark.skipif(not namespaces_work(), reason="needs root and unshare(1) for a private resolv.conf")


def run_under(dns: FakeDns, tmp_path: Path, spec: str) -> tuple[subprocess.CompletedProcess[str], float]:
    conf = tmp_path / "resolv.conf"
    conf.write_text(dns.resolv_conf(RESOLVER_TIMEOUT_S))
    (tmp_path / "evalgate.yaml").write_text(spec)
    argv = [sys.executable, "-m", "evalgate.cli", "run", "evalgate.yaml", "--output", "out.json"]
    started = time.monotonic()
    done = subprocess.run(in_namespace(argv, conf), cwd=tmp_path, capture_output=True, text=True,
                          timeout=RESOLVER_TIMEOUT_S * 4)
    return done, time.monotonic() - started


def test_a_resolver_that_never_answers_errors_the_items_at_timeout_s(tmp_path: Path, server: FakeServer) -> None:
    # Without a bound of evalgate's own, each attempt waits the resolver's 20 s and then says it
    # cannot resolve the name: a dead DNS server held the run for as long as it liked.
    data = [{"id": f"q{i}", "input": "weather in Paris"} for i in range(3)]
    url = server.url.replace("127.0.0.1", NAME)
    target = {"timeout_s": 1, "retries": {"attempts": 2, "backoff_s": 0.01, "max_backoff_s": 0.05}}
    with FakeDns(silent=True) as dns:
        done, took = run_under(dns, tmp_path, spec_text(url, data, target, concurrency=3))
    assert done.returncode == 4, done.stdout + done.stderr  # could not evaluate: every item errored
    assert took < 10, f"the run took {took:.1f}s: name resolution was not bounded by timeout_s"
    items = json.loads((tmp_path / "out.json").read_text())["items"]
    assert len(items) == 3
    for item in items:
        assert f"timed out resolving the host name {NAME} after 1s" in item["error"]
    assert set(dns.queries) == {NAME}
    assert not server.requests  # nothing reached the agent: there was no address to reach it at


def test_a_name_the_resolver_answers_reaches_the_agent(tmp_path: Path, server: FakeServer) -> None:
    # The same path when the resolver answers (slowly, within the deadline): the lookup thread's
    # addresses are the ones connected to.
    data = [{"id": "q0", "input": "weather in Paris"}, {"id": "q1", "input": "weather in Paris"}]
    url = server.url.replace("127.0.0.1", NAME)
    with FakeDns(address="127.0.0.1", delay_s=0.2) as dns:
        done, _ = run_under(dns, tmp_path, spec_text(url, data, {"timeout_s": 5}, concurrency=2))
    assert done.returncode == 0, done.stdout + done.stderr
    items = json.loads((tmp_path / "out.json").read_text())["items"]
    assert [i["error"] for i in items] == [None, None]
    assert [i["gates"] for i in items] == [{"called_tool:get_weather": 1.0}] * 2
    assert NAME in dns.queries and len(server.requests) == 2
