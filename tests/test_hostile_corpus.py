"""The hostile corpus (tests/hostile_corpus.py) through validate, run, report, JUnit, --resume,
real Ctrl-C, the runner's credentials and the Action's entrypoint.

What holds for every input: an exit code in {0, 1, 2, 3, 4, 130} (and the one the case allows),
no traceback in either stream, bounded time (timeouts kill a hung process) and memory (peak RSS
of each child, from wait4), no secret in any byte written or printed, and for the Action its
outputs and summary always present. A table of the totals is printed at the end (`-s` shows it).

Most cases run in a few driver processes (tests/hostile_driver.py) that call the CLI's entry in
process, case after case: the CLI path as a process is not the point there, and it keeps the
whole corpus under a minute and a half on two cores.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import action_scenarios as scenarios
import hostile_corpus as corpus
import pytest
from runner_sim import RunnerFiles

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXIT_CODES = {0, 1, 2, 3, 4, 130}
TRACEBACK = "Traceback (most recent call last)"
MAX_RSS_MB = 500
DRIVERS = 3
LINE = re.compile(r"(evalgate\.yaml|data\.\w+):\d+: ")
# What must never reach a terminal raw: C0 controls but tab/newline, DEL, C1, bidi overrides and isolates.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@dataclass
class Tally:
    inputs: int = 0
    runs: int = 0  # evalgate commands run over those inputs
    tracebacks: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    over_memory: list[str] = field(default_factory=list)
    wrong_codes: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    def table(self) -> str:
        rows = [("inputs tried", self.inputs), ("evalgate commands run", self.runs),
                ("tracebacks", len(self.tracebacks)), ("hangs", len(self.hangs)),
                ("over memory", len(self.over_memory)), ("wrong exit codes", len(self.wrong_codes)),
                ("secrets leaked", len(self.leaks)), ("other failures", len(self.other))]
        return "\n".join(f"| {name} | {count} |" for name, count in rows)

    def problems(self) -> list[str]:
        return self.tracebacks + self.hangs + self.over_memory + self.wrong_codes + self.leaks + self.other


def secret_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GITHUB_TOKEN=corpus.SECRET, ACTIONS_RUNTIME_TOKEN=corpus.RUNTIME_SECRET,
               ACTIONS_ID_TOKEN_REQUEST_TOKEN=corpus.RUNTIME_SECRET + "_id", JUDGE_KEY=corpus.JUDGE_SECRET,
               AGENT_KEY=corpus.AGENT_SECRET, PLUS_KEY=corpus.PLUS_SECRET, OPENAI_API_KEY=corpus.PROVIDER_SECRET,
               **corpus.WORD_SECRETS)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def _own_peak_kib(pid: int) -> int | None:
    """The child's own high-water RSS (VmHWM), or None once it has exited."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def wait_child(proc: subprocess.Popen[bytes], timeout_s: float,
               seen_kib: int | None = None) -> tuple[int | None, int, float]:
    """(exit code or None when it hung and was killed, peak RSS in MiB, seconds) of one child.

    wait4's ru_maxrss is not the child's own: Linux carries the spawning process's high-water mark
    into it at exec, so once pytest itself has grown, every child would look that big. The child's
    own VmHWM, polled while it runs, is what it used; wait4's figure stands only where no poll
    landed (a child that lived a few milliseconds); `seen_kib` is a VmHWM the caller sampled earlier."""
    started = time.monotonic()
    timer = threading.Timer(timeout_s, lambda: os.killpg(proc.pid, signal.SIGKILL))
    timer.start()
    peak_box = {"kib": seen_kib}
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            kib = _own_peak_kib(proc.pid)
            if kib is not None:
                peak_box["kib"] = max(kib, peak_box["kib"] or 0)
            done.wait(0.02)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        done.set()
        hung = not timer.is_alive()
        timer.cancel()
    poller.join(1)
    proc.returncode = os.waitstatus_to_exitcode(status)
    peak_kib = peak_box["kib"] if peak_box["kib"] is not None else usage.ru_maxrss
    return (None if hung else proc.returncode), peak_kib // 1024, time.monotonic() - started


def echoed_forms(secret: str) -> set[bytes]:
    """The secret as an echo may carry it: as is, URL-encoded (hex in either case), JSON-escaped (`\\/`)."""
    forms = {secret, quote(secret, safe=""), quote_plus(secret), quote(secret),
             json.dumps(secret)[1:-1].replace("/", "\\/")}
    forms |= {re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), f) for f in forms}
    return {f.encode() for f in forms}


FORMS = {s: echoed_forms(s) for s in (*corpus.SECRETS, scenarios.TOKEN)}


def leaked(data: bytes | str) -> list[str]:
    text = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    return [s for s, forms in FORMS.items() if any(f in text for f in forms)]


def scan_written(folder: Path, inputs: set[Path]) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and path not in inputs and leaked(path.read_bytes()):
            found.append(str(path.relative_to(folder.parent)))
    return found


def run_drivers(cases: list[corpus.Case], root: Path, chunks: int,
                name: str, env: dict[str, str] | None = None) -> Iterator[tuple[list[dict[str, Any]], int, Any]]:
    """Run the cases in `chunks` driver processes; yields (records, peak RSS MiB, exit code) per driver."""
    groups = [cases[i::chunks] for i in range(chunks)]

    def one(index: int) -> tuple[list[dict[str, Any]], int, Any]:
        remaining = groups[index]
        records: list[dict[str, Any]] = []
        peak, code = 0, 0
        for attempt in range(5):  # a hang ends a driver: start another one on the cases after it
            spec = root / f"driver-{name}-{index}-{attempt}.json"
            out = root / f"driver-{name}-{index}-{attempt}.jsonl"
            spec.write_text(json.dumps([{"id": c.id, "cwd": str(root / c.id), "steps": c.steps,
                                         "timeout_s": c.timeout_s} for c in remaining]))
            proc = subprocess.Popen([sys.executable, str(HERE / "hostile_driver.py"), str(spec), str(out)],
                                    env={**secret_env(), **(env or {})}, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            budget = sum(c.timeout_s * len(c.steps) for c in remaining) + 60
            code, rss, _ = wait_child(proc, budget)
            peak = max(peak, rss)
            got = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
            records += got
            done = {r["id"] for r in got}
            if not got or not any(r.get("hang") for r in got):
                break
            last = got[-1]["id"]
            position = next(i for i, c in enumerate(remaining) if c.id == last)
            remaining = [c for c in remaining[position + 1:] if c.id not in done]
            if not remaining:
                break
        return records, peak, code

    with ThreadPoolExecutor(chunks) as pool:
        yield from pool.map(one, range(chunks))


def check_records(cases: list[corpus.Case], results: list[tuple[list[dict[str, Any]], int, Any]],
                  root: Path, tally: Tally) -> None:
    by_id = {c.id: c for c in cases}
    seen: set[tuple[str, int]] = set()
    for records, rss, driver_code in results:
        if rss > MAX_RSS_MB:
            first = next((r for r in records if r.get("rss_mb", 0) > MAX_RSS_MB), None)
            where = f"{first['id']} step {first['step']}" if first else "a case that did not finish"
            tally.over_memory.append(f"a driver peaked at {rss} MiB, first over at {where}")
        if driver_code is None:
            tally.hangs.append("a driver process ran past its budget")
        for record in records:
            case = by_id[record["id"]]
            label = f"{case.id} step {record['step']} {' '.join(record['argv'][:1])}"
            tally.runs += 1
            seen.add((case.id, record["step"]))
            if record.get("hang"):
                tally.hangs.append(label)
                continue
            streams = record["stdout"] + record["stderr"]
            code = record["code"]
            if TRACEBACK in streams:
                tally.tracebacks.append(label)
            if code not in EXIT_CODES or code not in case.codes[record["step"]]:
                tally.wrong_codes.append(f"{label}: exit {code!r}: {record['stderr'][-300:]!r}")
            elif code == 2 and case.line_required and not LINE.search(record["stderr"]):
                tally.other.append(f"{label}: exit 2 without file:line: {record['stderr'][:300]!r}")
            if record["step"] == 0 and code == 0 and case.expect_out and case.expect_out not in record["stdout"]:
                tally.other.append(f"{label}: expected {case.expect_out!r} in {record['stdout'][:200]!r}")
            said = case.expect.get(record["step"])
            if said and said not in streams:
                tally.other.append(f"{label}: expected {said!r} in {streams[-300:]!r}")
            if record["seconds"] > case.max_seconds:
                tally.hangs.append(f"{label}: {record['seconds']}s")
            if "internal error" in streams:
                tally.wrong_codes.append(f"{label}: internal error: {record['stderr'][-300:]!r}")
            if leaked(streams):
                tally.leaks.append(f"{label}: printed a secret")
            unsafe = UNSAFE.search(streams)
            if unsafe:
                tally.other.append(f"{label}: printed a raw control character {unsafe.group()!r}")
    for case in cases:
        tally.inputs += 1
        if (case.id, 0) not in seen:
            tally.hangs.append(f"{case.id}: never finished (its driver stopped)")
        folder = root / case.id
        inputs = {folder / name for name in case.files}
        for path in scan_written(folder, inputs):
            tally.leaks.append(f"{case.id}: secret in {path}")
        if case.outside:  # a folder outside the case's own: what is there stays as it was, nothing is added
            outside = case.outside_folder(root)
            found = {p.name: p.read_text(errors="replace") if p.is_file() else "(a folder)" for p in outside.iterdir()}
            if found != case.outside:
                tally.other.append(f"{case.id}: written outside: {sorted(found)} {list(found.values())[:2]!r}")


TALLY = Tally()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile")


def test_generated_specs_data_and_behaviours(root: Path) -> None:
    cases = corpus.corpus()
    for case in cases:
        case.write(root)
    fast = [c for c in cases if c.kind != "behaviour"]
    slow = [c for c in cases if c.kind == "behaviour"]
    # behaviours spend their time waiting on timeouts: more drivers than cores is fine there
    results = list(run_drivers(fast, root, DRIVERS, "fast")) + list(run_drivers(slow, root, 6, "slow"))
    tally = Tally()
    check_records(cases, results, root, tally)
    TALLY.inputs += tally.inputs
    TALLY.runs += tally.runs
    for name in ("tracebacks", "hangs", "over_memory", "wrong_codes", "leaks", "other"):
        getattr(TALLY, name).extend(getattr(tally, name))
    assert not tally.problems(), "\n".join(tally.problems()[:40])


class Agent:
    """An HTTP agent on 127.0.0.1 that answers every POST with the same JSON reply (the cache stores it)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                data = b'{"text": "hello there"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


FILE_KINDS = ("write", "cache", "read", "journal", "ids", "spec")


def test_files_written_and_read_are_never_followed_out_waited_on_or_read_whole(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Section E: symlinks, FIFOs, devices, sparse 2 GiB files and folder symlinks at every path evalgate writes
    or reads back, cache folders and entries planted by someone else, 1e999 in a journal, NFC-equal ids, a
    spec of 10,000 gates. Each driver's address space is capped: a file read whole fails it, not the machine."""
    root = tmp_path_factory.mktemp("hostile-files")
    cases = corpus.file_cases()
    agent = Agent()
    try:
        for case in cases:
            case.write(root, agent.url)
        results = list(run_drivers(cases, root, 2, "files", {"HOSTILE_MAX_ADDRESS_MB": "2048"}))
    finally:
        agent.close()
    tally = Tally()
    check_records(cases, results, root, tally)
    failed = {p.split(":")[0].split(" step ")[0] for p in tally.problems()}
    rows = [(kind, sum(c.id.startswith(kind) for c in cases), sum(f.startswith(kind) for f in failed))
            for kind in FILE_KINDS]
    print("\n| kind | tried | failed |\n|---|---|---|\n" + "\n".join(f"| {k} | {t} | {f} |" for k, t, f in rows))
    _merge(tally)
    assert not tally.problems(), "\n".join(tally.problems()[:60])


# ---- real processes: Ctrl-C, the runner's credentials, judges and agents that echo secrets ----


def start_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "evalgate.cli", *args], cwd=cwd, env=env or secret_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def finish(proc: subprocess.Popen[bytes], timeout_s: float, label: str, tally: Tally,
           codes: set[int], seen_kib: int | None = None) -> tuple[str, str]:
    out_box: dict[str, bytes] = {}

    def drain() -> None:
        out_box["out"] = proc.stdout.read() if proc.stdout else b""
        out_box["err"] = proc.stderr.read() if proc.stderr else b""

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    code, rss, _ = wait_child(proc, timeout_s, seen_kib)
    reader.join(5)
    out = out_box.get("out", b"").decode("utf-8", "replace")
    err = out_box.get("err", b"").decode("utf-8", "replace")
    tally.inputs += 1
    tally.runs += 1
    if code is None:
        tally.hangs.append(label)
    elif code not in codes:
        tally.wrong_codes.append(f"{label}: exit {code}: {err[-300:]!r}")
    if TRACEBACK in out + err:
        tally.tracebacks.append(label)
    if rss > MAX_RSS_MB:
        tally.over_memory.append(f"{label}: {rss} MiB")
    if leaked(out + err):
        tally.leaks.append(f"{label}: printed a secret")
    return out, err


SLEEPER = "import os, sys, time\nopen(f'pids/{os.getpid()}', 'w').close()\ntime.sleep(60)\n"


def pids_alive(folder: Path) -> list[int]:
    alive = []
    for path in folder.glob("*"):
        try:  # a zombie (killed, not yet reaped by init) is not alive
            state = Path(f"/proc/{int(path.name)}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, ValueError):
            continue
        if state not in ("Z", "X"):
            alive.append(int(path.name))
    return alive


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_stops_command_agents_and_exits_130(tmp_path: Path, presses: int) -> None:
    (tmp_path / "pids").mkdir()
    (tmp_path / "agent.py").write_text(SLEEPER)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"input": f"q{i}"}) + "\n" for i in range(6)))
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\ndata: data.jsonl\nconcurrency: 3\ntarget:\n  type: command\n"
        f"  run: [{json.dumps(sys.executable)}, agent.py]\n  timeout_s: 120\n"
        "scorers:\n  - type: includes\n    value: x\n")
    proc = start_cli(["run", "evalgate.yaml", "-o", "out/r.json"], tmp_path)
    deadline = time.monotonic() + 30
    while len(list((tmp_path / "pids").glob("*"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(list((tmp_path / "pids").glob("*"))) == 3, "the agents never started"
    seen_kib = _own_peak_kib(proc.pid)  # it may be gone before finish() polls
    pressed = time.monotonic()
    for _ in range(presses):
        os.kill(proc.pid, signal.SIGINT)  # not send_signal: its poll() would reap the child before wait4
        time.sleep(0.05)
    tally = Tally()
    _, err = finish(proc, 15, f"ctrl-c x{presses}", tally, {130}, seen_kib)
    assert time.monotonic() - pressed < 10, "Ctrl-C took too long"
    assert not tally.problems(), tally.problems()
    assert "interrupted" in err
    time.sleep(0.2)
    assert pids_alive(tmp_path / "pids") == [], "an agent outlived Ctrl-C"
    _merge(tally)


SNOOP = """\
import os, sys
SECRETS = {secrets!r}
found = []
for name in ("GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "INPUT_GITHUB-TOKEN"):
    if name in os.environ:
        found.append("env:" + name)
for pid in ("self", str(os.getppid())):
    try:
        data = open(f"/proc/{{pid}}/environ", "rb").read()
    except OSError:
        continue
    found += [f"proc-{{pid}}:{{i}}" for i, s in enumerate(SECRETS) if s.encode() in data]
print("FOUND " + ",".join(found) if found else "clean")
"""


def snoop_code(extra: tuple[str, ...] = ()) -> str:
    return SNOOP.format(secrets=[corpus.SECRET, corpus.RUNTIME_SECRET, *extra])


def test_targets_and_served_judges_get_no_runner_credentials(tmp_path: Path) -> None:
    """Real CLI with GITHUB_TOKEN, ACTIONS_* and INPUT_GITHUB-TOKEN set: a command agent, a python target and
    a served judge look in their environment and in /proc of themselves and their parent."""
    tally = Tally()
    (tmp_path / "snoop.py").write_text(snoop_code())
    (tmp_path / "snoop_target.py").write_text(
        "import subprocess, sys\ndef agent(x):\n    return subprocess.run([sys.executable, 'snoop.py'], "
        "capture_output=True, text=True).stdout.strip() + ' ' + __import__('snoop_inproc').look()\n")
    (tmp_path / "snoop_inproc.py").write_text(
        "import os\nSECRETS = " + repr([corpus.SECRET, corpus.RUNTIME_SECRET]) + "\ndef look():\n"
        "    data = open('/proc/self/environ', 'rb').read()\n"
        "    bad = [n for n in ('GITHUB_TOKEN', 'ACTIONS_RUNTIME_TOKEN') if n in os.environ]\n"
        "    bad += ['proc-self' for s in SECRETS if s.encode() in data]\n"
        "    return 'INPROC ' + ','.join(bad) if bad else 'inproc-clean'\n")
    (tmp_path / "data.jsonl").write_text('{"input": "hi"}\n')
    results = {}
    for kind, target in (("command", f"  type: command\n  run: [{json.dumps(sys.executable)}, snoop.py]\n"),
                         ("python", "  type: python\n  function: snoop_target:agent\n")):
        (tmp_path / f"{kind}.yaml").write_text(
            f"version: 1\ndata: data.jsonl\ntarget:\n{target}scorers:\n  - type: includes\n    value: clean\n")
        env = {**secret_env(), "INPUT_GITHUB-TOKEN": corpus.SECRET}
        proc = start_cli(["run", f"{kind}.yaml", "-o", f"out/{kind}.json"], tmp_path, env)
        finish(proc, 60, f"credentials {kind}", tally, {0, 1, 4})
        results[kind] = json.loads((tmp_path / f"out/{kind}.json").read_text())["items"][0]["output"]["text"]
    assert results["command"] == "clean", results
    assert results["python"] == "clean inproc-clean", results
    for path in scan_written(tmp_path, {tmp_path / "snoop.py", tmp_path / "snoop_inproc.py"}):
        tally.leaks.append(f"credentials: secret in {path}")
    assert not tally.problems(), tally.problems()
    _merge(tally)


class EchoServer:
    """An OpenAI-compatible judge and an HTTP agent on 127.0.0.1 that echo the Authorization header back,
    in every way a reply can reach an error message or a result."""

    def __init__(self) -> None:
        echo = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization", "")
                mode = self.path.strip("/").split("/")[0]
                status, body = echo.reply(mode, auth)
                data = body.encode("utf-8", "surrogatepass")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @staticmethod
    def reply(mode: str, auth: str) -> tuple[int, str]:
        completion = {"choices": [{"message": {"content": ""}, "finish_reason": "stop"}], "model": "m"}
        if mode == "text-reply":  # not JSON: quoted in the error after the repair
            completion["choices"][0]["message"]["content"] = f"I refuse. You sent {auth}"
            return 200, json.dumps(completion)
        if mode == "wrong-shape":
            completion["choices"][0]["message"]["content"] = json.dumps({"verdicts": auth})
            return 200, json.dumps(completion)
        if mode == "not-completion":
            return 200, json.dumps({"error": {"message": f"bad key {auth}"}})
        if mode == "unauthorized":
            return 401, json.dumps({"error": f"invalid {auth}"})
        if mode == "unauthorized-padded":  # the key just past where an error body is cut
            return 401, json.dumps({"error": "x" * 270 + f" invalid {auth}"})
        if mode == "agent":
            return 200, json.dumps({"text": f"hello, your header was {auth} \x1b]0;x\x07", "usage": {"auth": auth}})
        return 404, "{}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("mode", ["text-reply", "wrong-shape", "not-completion", "unauthorized", "unauthorized-padded"])
def test_judges_and_agents_that_echo_the_key_leak_nothing(tmp_path: Path, mode: str) -> None:
    server = EchoServer()
    try:
        (tmp_path / "data.jsonl").write_text('{"input": "What is the weather in Paris?"}\n')
        (tmp_path / "evalgate.yaml").write_text(
            f"version: 1\ndata: data.jsonl\nmax_errors: 5\ntarget:\n  type: http\n  url: {server.url}/agent\n"
            "  headers:\n    Authorization: 'Bearer ${AGENT_KEY}'\n  response:\n    text: text\n"
            f"judge:\n  model: m\n  base_url: {server.url}/{mode}/v1\n  api_key_env: JUDGE_KEY\n"
            "  retries: {attempts: 1}\nscorers:\n  - type: answer_relevancy\n  - type: includes\n    value: hello\n")
        tally = Tally()
        proc = start_cli(["run", "evalgate.yaml", "-o", "out/r.json", "--junit", "out/j.xml"], tmp_path)
        finish(proc, 60, f"echo {mode} run", tally, {0, 1, 4})
        for fmt in ("markdown", "junit"):
            finish(start_cli(["report", "out/r.json", "--format", fmt], tmp_path), 60, f"echo {mode} {fmt}",
                   tally, {0})
        written = json.loads((tmp_path / "out/r.json").read_text())
        assert written["summary"]["errored_items"] == 1  # the judge failed: the error was recorded, redacted
        for path in scan_written(tmp_path, {tmp_path / "evalgate.yaml", tmp_path / "data.jsonl"}):
            tally.leaks.append(f"echo {mode}: secret in {path}")
        assert not tally.problems(), tally.problems()
        _merge(tally)
    finally:
        server.close()


# ---- the Action's entrypoint, hostile agent output, against the fake GitHub ----

ACTION_AGENTS = {
    "lone-surrogate": r"print('{\"text\": \"ok \\ud800 \\u001b]0;x\\u0007\"}')",
    "snoops": None,  # looks for the token in its environment and its parent's
    "crashes-results": "print('hi')",  # the results path is a directory: refused before the run
    # OPENAI_API_KEY set on the step for another tool, no spec names it: printed, echoed as a key, URL-encoded
    "prints-provider-key": "import json, os, sys, urllib.parse as u; k = os.environ['OPENAI_API_KEY']; "
                           "print('bad key ' + u.quote(k) + ' ' + k, file=sys.stderr); "
                           "print(json.dumps({'text': k, 'tool_calls': [{'name': 't', 'args': {k: 1}}]}))",
}


@pytest.mark.parametrize("agent", list(ACTION_AGENTS))
def test_the_action_always_publishes_and_leaks_nothing(tmp_path: Path, agent: str) -> None:
    code = ACTION_AGENTS[agent] or snoop_code((scenarios.TOKEN,))
    with scenarios.new_github() as github:
        tally = Tally()

        def launch(files: RunnerFiles, env: Any) -> tuple[int, str]:
            environment = env(workspace=str(files.workspace), output=str(files.output),
                              summary=str(files.summary), event_path=str(files.event), api_url=github.url)
            environment.update(PATH=os.environ.get("PATH", ""), HOME=str(files.root),
                               ACTIONS_RUNTIME_TOKEN=corpus.RUNTIME_SECRET, GITHUB_TOKEN=corpus.SECRET,
                               OPENAI_API_KEY=corpus.PROVIDER_SECRET, PYTHONPATH=str(REPO))
            proc = subprocess.Popen([sys.executable, str(REPO / "entrypoint.py")], cwd=files.workspace,
                                    env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            # a results path that is a folder is a file error, said as one (exit 2), never a crash
            out, _ = finish(proc, 90, f"action {agent}", tally, {2} if agent == "crashes-results" else {0, 1, 3, 4})
            return proc.returncode, out

        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "agent.py").write_text(code + "\n")
        (workspace / "scorer.py").write_text("def score(item, run):\n    return float('nan')\n")
        (workspace / "data.jsonl").write_text('{"id": "a\\ud800", "input": "hi"}\n{"id": "b", "input": "yo"}\n')
        (workspace / "evalgate.yaml").write_text(
            f"version: 1\ndata: data.jsonl\ntarget:\n  type: command\n  run: [{json.dumps(sys.executable)}, agent.py]\n"
            "gates:\n  - type: includes\n    value: clean\nscorers:\n  - type: python\n    function: scorer:score\n"
            "    threshold: 0.5\n")
        inputs = {"results-path": "out"} if agent == "crashes-results" else {}
        if agent == "crashes-results":
            (workspace / "out").mkdir()
        run = scenarios.Action(launch, tmp_path, github).run(inputs)
        outputs = run.outputs
        assert set(outputs) >= scenarios.OUTPUT_NAMES, outputs
        assert outputs["passed"] in ("true", "false")
        assert run.files.summary.read_text(encoding="utf-8").strip(), "no job summary"
        if agent == "snoops":
            results = json.loads((workspace / "evalgate-results.json").read_text())
            assert [i["output"]["text"] for i in results["items"]] == ["clean", "clean"]
        if agent != "crashes-results":
            assert outputs["verdict"], outputs
            assert github.comments_on(scenarios.REPO, scenarios.PR), "no PR comment"
        for path in scan_written(tmp_path, {workspace / "agent.py"}):
            tally.leaks.append(f"action {agent}: secret in {path}")
        for comment in github.comments_on(scenarios.REPO, scenarios.PR):
            if leaked(comment["body"]):
                tally.leaks.append(f"action {agent}: secret in the PR comment")
        assert not tally.problems(), tally.problems()
        _merge(tally)


def _merge(tally: Tally) -> None:
    TALLY.inputs += tally.inputs
    TALLY.runs += tally.runs
    for name in ("tracebacks", "hangs", "over_memory", "wrong_codes", "leaks", "other"):
        getattr(TALLY, name).extend(getattr(tally, name))


def test_zz_print_the_table() -> None:
    """The issue's table, measured on this corpus (shown with `pytest -s`)."""
    print("\n| what | count |\n|---|---|\n" + TALLY.table())
    assert TALLY.inputs > 0


# ---- the Action's writes: never through a committed symlink, never outside the workspace ----

ACTION_PLANTS = {  # a fork's pull request commits these; what the Action must end with
    "results-symlink": ({"evalgate-results.json": "victim"}, {}, {2}),
    "comment-file-symlink": ({"evalgate-results.comment.md": "victim"}, {}, {0, 1}),
    "results-path-parent": ({}, {"results-path": "../escape.json"}, {2}),
    "results-folder-symlink": ({"out": "outside"}, {"results-path": "out/r.json"}, {2}),
    "cache-dir-parent": ({}, {}, {2}),
}


@pytest.mark.parametrize("plant", list(ACTION_PLANTS))
def test_the_action_writes_nothing_outside_the_workspace(tmp_path: Path, plant: str) -> None:
    links, inputs, codes = ACTION_PLANTS[plant]
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text(corpus.VICTIM)
    with scenarios.new_github() as github:
        tally = Tally()

        def launch(files: RunnerFiles, env: Any) -> tuple[int, str]:
            environment = env(workspace=str(files.workspace), output=str(files.output),
                              summary=str(files.summary), event_path=str(files.event), api_url=github.url)
            environment.update(PATH=os.environ.get("PATH", ""), HOME=str(files.root), PYTHONPATH=str(REPO))
            proc = subprocess.Popen([sys.executable, str(REPO / "entrypoint.py")], cwd=files.workspace,
                                    env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            out, _ = finish(proc, 90, f"action {plant}", tally, codes)
            return proc.returncode, out

        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "data.jsonl").write_text('{"id": "a", "input": "hi", "output": "hello"}\n')
        cache = ("target:\n  type: http\n  url: http://127.0.0.1:9/agent\n  cache: {dir: ../cache-escape}\n"
                 if plant == "cache-dir-parent" else "")
        (workspace / "evalgate.yaml").write_text(
            f"version: 1\ndata: data.jsonl\n{cache}gates:\n  - type: includes\n    value: hel\n")
        for name, to in links.items():
            (workspace / name).symlink_to(victim if to == "victim" else outside)
        run = scenarios.Action(launch, tmp_path, github).run(inputs)
        assert victim.read_text() == corpus.VICTIM and [p.name for p in outside.iterdir()] == ["victim.txt"]
        assert not (tmp_path / "escape.json").exists() and not (tmp_path / "cache-escape").exists()
        assert set(run.outputs) >= scenarios.OUTPUT_NAMES, run.outputs
        if plant == "comment-file-symlink":  # the body stays in memory: the comment is posted all the same
            assert github.comments_on(scenarios.REPO, scenarios.PR), "no PR comment"
            assert (workspace / "evalgate-results.comment.md").is_symlink()
        assert not tally.problems(), tally.problems()
        _merge(tally)


# ---- `baseline: auto`: an artifact that inflates past its caps (a zip bomb) ----


def _zip(members: dict[str, Iterator[bytes]]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, blocks in members.items():
            with archive.open(name, "w", force_zip64=True) as member:
                for block in blocks:
                    member.write(block)
    return buffer.getvalue()


def test_a_zip_bomb_baseline_is_refused_while_it_inflates_never_held_in_memory(tmp_path: Path) -> None:
    """300 MiB of zeros deflate to about 300 KiB: past the ratio cap. Inflated a megabyte at a time into
    a file that is removed, never into memory (tracemalloc sees every bytes object)."""
    import tracemalloc

    from evalgate.github.artifacts import MAX_INFLATE_RATIO, NoBaseline, results_from_zip

    bomb = _zip({"evalgate-results.json": (bytes(2**20) for _ in range(300))})
    assert len(bomb) * MAX_INFLATE_RATIO < 300 * 2**20
    dest = tmp_path / "baseline-results.json"
    tracemalloc.start()
    try:
        with pytest.raises(NoBaseline, match="zip bomb"):
            results_from_zip(bomb, "evalgate-results.json", dest)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB held while inflating"
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind
    # a real results file (deflating about 10 times) comes out whole
    text = json.dumps({"items": [{"index": i, "id": f"item-{i}", "output": {"text": f"answer {i * 7919 % 1000}"}}
                                 for i in range(20_000)]}).encode()
    results_from_zip(_zip({"out/evalgate-results.json": iter([text])}), "evalgate-results.json", dest)
    assert dest.read_bytes() == text
