# ruff: noqa: E501
"""A generated corpus of hostile specs, data files, target behaviours and replies.

Nothing here is listed case by case: hostile values are crossed with the places they can go
(every slot of a spec, every data format), and target behaviours with the commands that read
their results back. `corpus(root)` writes every case's files under `root` and returns the cases.

Each case says which exit codes it may end with; the test adds what holds for all of them:
no traceback, bounded time and memory, no secret in any byte written.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

SECRET = "ghs_CORPUS_S3CRET_token_7f3a9c"  # the runner's GITHUB_TOKEN in every run
RUNTIME_SECRET = "rt_CORPUS_runtime_5e1d"  # ACTIONS_RUNTIME_TOKEN
JUDGE_SECRET = "sk-CORPUS-judge-key-93b1"
AGENT_SECRET = "ak_CORPUS_agent_header_44c2"
PLUS_SECRET = "pk+CORPUS/plus=key_81d0"  # its URL-encoded forms differ from it
PROVIDER_SECRET = "sk-proj-CORPUS-unnamed-6a2e"  # OPENAI_API_KEY on the step: no spec names it
SECRETS = (SECRET, RUNTIME_SECRET, JUDGE_SECRET, AGENT_SECRET, PLUS_SECRET, PROVIDER_SECRET)
# Secrets that are ordinary words (header values of 4+ characters): never scanned for, they are in every
# results file; the results must stay readable (every step exits 0).
WORD_SECRETS = {"WORD_SUMMARY": "summary", "WORD_ITEM": "item", "WORD_CORE": "core", "WORD_SCORES": "scores",
                "WORD_INPUT": "input"}
PY = sys.executable


@dataclass
class Case:
    id: str
    files: dict[str, bytes | str | None]  # None: made by `special`
    steps: list[list[str]]
    codes: list[set[int]]  # allowed exit codes, per step
    line_required: bool = False  # an exit 2 must name `file:line`
    special: dict[str, str] = field(default_factory=dict)  # path -> dir | fifo | device | sparse:<bytes> | symlink:<to>
    outside: dict[str, str] = field(default_factory=dict)  # files beside the case's folder: they must stay as they are
    timeout_s: float = 20.0
    max_seconds: float = 15.0
    kind: str = "spec"
    expect_out: str = ""  # printed by the first step when it exits 0 (e.g. the real item count)
    expect: dict[int, str] = field(default_factory=dict)  # step -> text its stdout or stderr must hold

    def outside_folder(self, root: Path) -> Path:
        return root / f"{self.id}.outside"

    def write(self, root: Path, agent_url: str = "") -> Path:
        """The case's files; `@OUT@` in a file or a symlink's target is the outside folder, `@AGENT_URL@` a
        loopback agent's address."""
        folder = root / self.id
        folder.mkdir(parents=True)
        outside = self.outside_folder(root)

        def fill(text: str) -> str:
            return text.replace("@OUT@", str(outside)).replace("@AGENT_URL@", agent_url)

        for name, text in self.outside.items():
            outside.mkdir(exist_ok=True)
            (outside / name).write_text(text)
        for name, content in self.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                path.write_bytes(fill(content).encode("utf-8", "surrogatepass"))
            elif content is not None:
                path.write_bytes(content)
        for name, what in self.special.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if what.startswith("symlink:"):
                path.symlink_to(fill(what.split(":", 1)[1]))
            elif what == "dir":
                path.mkdir()
            elif what == "fifo":
                os.mkfifo(path)
            elif what == "device":
                path.symlink_to("/dev/zero")
            elif what.startswith("sparse:"):
                with path.open("wb") as handle:
                    handle.truncate(int(what.split(":", 1)[1]))
        return folder


VALIDATE = ["validate", "evalgate.yaml"]
RAN = {0, 1, 4}  # a verdict: passed/scored, failed on gates, or failed because too many items errored
RUN = ["run", "evalgate.yaml", "-o", "out/r.json", "--junit", "out/j.xml"]
READ_BACK = [["report", "out/r.json"], ["report", "out/r.json", "--format", "junit"],
             ["run", "evalgate.yaml", "-o", "out/r.json", "--resume"]]

# ---- A. hostile YAML values in every slot of a spec ----

HOSTILE_VALUES: dict[str, str] = {
    "bad-date": "2001-13-45",
    "bad-timestamp-tag": "!!timestamp 2020-99-01",
    "int-tag-text": "!!int abc",
    "float-tag-text": "!!float abc",
    "huge-int": "9" * 5000,
    "huge-negative": "-" + "9" * 4400,
    "big-hex": "0x" + "f" * 400,
    "inf": ".inf",
    "minus-inf": "-.inf",
    "nan": ".nan",
    "negative": "-1",
    "zero": "0",
    "overflow-float": "1e400",
    "bad-binary": "!!binary zz",
    "python-object": "!!python/object/apply:os.system ['echo pwned']",
    "set": "!!set {a, b}",
    "omap": "!!omap [a: 1]",
    "escaped-nul": '"a\\0b"',
    "raw-nul": "a\x00b",
    "raw-esc-osc": "\x1b]0;pwned\x07",
    "escaped-osc": '"\\e]0;pwned\\a"',
    "bidi": "\u202eexe.txt",
    "equals": '"A=B"',
    "null": "~",
    "empty": '""',
    "nested-list": "[1, [2, [3]]]",
    "mapping": "{a: 1}",
    "undefined-alias": "*nowhere",
    "anchor": "&here x",
    "long-string": "'" + "x" * 300_000 + "'",
    "regex-nested": "'" + "(" * 5000 + "a" + ")" * 5000 + "'",
    "regex-overflow": "'a{99999999999}'",
    "regex-bad-range": "'[z-a]'",
    "regex-catastrophic": "'^(a+)+$'",
    "secret": SECRET,
}

COMMAND_SPEC = """\
version: 1
name: {name}
data: {data}
target:
  type: command
  run: {run}
  timeout_s: {timeout_s}
  env:
    {env_name}: {env_value}
concurrency: {concurrency}
max_errors: {max_errors}
pass_env: [{pass_env}]
gates:
  - type: {gate_type}
    value: {gate_value}
scorers:
  - type: matches
    pattern: {pattern}
"""
COMMAND_SLOTS = {"name": "demo", "data": "data.jsonl", "run": "python agent.py", "timeout_s": "5",
                 "env_name": "MODE", "env_value": "fast", "concurrency": "2", "max_errors": "0",
                 "pass_env": "HOME", "gate_type": "includes", "gate_value": "hi", "pattern": "'h.*'"}

HTTP_SPEC = """\
version: 1
data: data.jsonl
target:
  type: http
  url: {url}
  headers:
    Authorization: {header}
  timeout_s: {timeout_s}
  retries:
    attempts: {attempts}
    backoff_s: {backoff_s}
    max_backoff_s: {max_backoff_s}
judge:
  model: {model}
  base_url: http://127.0.0.1:9/v1
  api_key_env: {api_key_env}
  timeout_s: {judge_timeout_s}
scorers:
  - type: answer_relevancy
    threshold: {threshold}
"""
HTTP_SLOTS = {"url": "http://127.0.0.1:9/agent", "header": "'Bearer ${AGENT_KEY}'", "timeout_s": "5",
              "attempts": "2", "backoff_s": "0.1", "max_backoff_s": "1", "model": "judge-1",
              "api_key_env": "JUDGE_KEY", "judge_timeout_s": "5", "threshold": "0.5"}

DATA_OK = '{"id": "a", "input": "hi", "output": "hello"}\n'


# A spec error wherever they appear: YAML that cannot be read as written.
ALWAYS_BAD = {"bad-date", "bad-timestamp-tag", "int-tag-text", "float-tag-text", "bad-binary", "python-object",
              "raw-nul", "raw-esc-osc", "undefined-alias"}
# A spec error in a number of seconds, attempts or items: nothing finite and sane.
NUMBER_SLOTS = {"timeout_s", "concurrency", "backoff_s", "max_backoff_s", "judge_timeout_s", "attempts"}
BAD_NUMBERS = {"inf", "minus-inf", "nan", "overflow-float", "huge-int", "huge-negative", "big-hex", "negative",
               "mapping", "nested-list", "long-string", "secret"}
BAD_ENV_NAMES = {"equals", "escaped-nul", "empty"}


def slot_codes(slot: str, value_name: str) -> set[int]:
    if value_name in ALWAYS_BAD or (slot in NUMBER_SLOTS and value_name in BAD_NUMBERS):
        return {2}
    if slot in ("env_name", "pass_env") and value_name in BAD_ENV_NAMES | {"nested-list", "mapping"}:
        return {2}
    if slot == "env_value" and value_name == "escaped-nul":
        return {2}
    return {0, 2}


def slot_cases() -> list[Case]:
    cases = []
    for template, slots, label in ((COMMAND_SPEC, COMMAND_SLOTS, "cmd"), (HTTP_SPEC, HTTP_SLOTS, "http")):
        for slot in slots:
            for value_name, value in HOSTILE_VALUES.items():
                spec = template.format(**{**slots, slot: value})
                cases.append(Case(f"slot-{label}-{slot}-{value_name}", {"evalgate.yaml": spec, "data.jsonl": DATA_OK,
                                                                         "agent.py": "print('hi')\n"},
                                  [VALIDATE], [slot_codes(slot, value_name)], line_required=True))
    return cases


# ---- B. the spec file's structure ----

BASE = "version: 1\ndata:\n  - input: hi\n    output: hello\ngates:\n  - type: includes\n    value: hel\n"
TOP_KEYS = {"version": "1", "data": "[{input: a, output: a}]", "gates": "[{type: includes, value: a}]",
            "scorers": "[{type: includes, value: a}]", "target": "{type: recorded}", "max_errors": "1",
            "concurrency": "2", "name": "x"}


def alias_bomb(levels: int, width: int = 9) -> str:
    lines = ["version: 1", "data: [{input: a, output: a}]", "gates: [{type: includes, value: a}]",
             "name: &l0 lol"]
    for level in range(1, levels + 1):
        refs = ", ".join([f"*l{level - 1}"] * width)
        lines.append(f"k{level}: &l{level} [{refs}]")
    lines.append(f"scorers: [{{type: includes, value: a, id: *l{levels}}}]")
    return "\n".join(lines) + "\n"


def structure_cases() -> list[Case]:
    specs: dict[str, str | bytes] = {}
    for key, value in TOP_KEYS.items():
        specs[f"duplicate-{key}"] = BASE + f"{key}: {value}\n" + (f"{key}: {value}\n" if key not in BASE else "")
    for levels in range(2, 10):
        specs[f"alias-bomb-{levels}"] = alias_bomb(levels)
    specs["self-alias"] = "version: 1\ndata: &d [*d]\n"
    for depth in (101, 2000, 200_000):
        specs[f"flow-nesting-{depth}"] = BASE + "name: " + "[" * depth + "]" * depth + "\n"
    for depth in (150, 1500):
        specs[f"block-nesting-{depth}"] = BASE + "metadata:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, depth))
    specs["too-big"] = BASE + "name: '" + "x" * (9 * 2**20) + "'\n"
    specs["empty"] = ""
    specs["bom-only"] = "\ufeff"
    specs["not-utf8"] = b"version: 1\nname: \xff\xfe\n"
    specs["binary"] = bytes(range(256)) * 4
    specs["a-list"] = "- version: 1\n"
    specs["a-scalar"] = "hello\n"
    specs["tabs"] = "version: 1\n\tdata: x\n"
    specs["unclosed-quote"] = BASE + "name: 'abc\n"
    specs["merge-key-bomb"] = "version: 1\nbase: &b {a: 1}\n" + "".join(f"k{i}: {{<<: *b}}\n" for i in range(200)) + BASE[11:]
    must_fail = {n for n in specs if n.startswith(("duplicate-", "flow-nesting", "block-nesting", "too-big", "self-alias",
                                                   "not-utf8", "binary", "a-", "tabs", "unclosed"))}
    must_fail |= {f"alias-bomb-{n}" for n in range(7, 10)}  # 9**7 values and more
    cases = [Case(f"structure-{name}", {"evalgate.yaml": text}, [VALIDATE, RUN],
                  [{2}, {2}] if name in must_fail else [{0, 2}, RAN | {2}],
                  line_required=name.startswith(("duplicate-", "alias-bomb", "flow-nesting", "tabs")))
             for name, text in specs.items()]
    for kind in ("dir", "fifo", "device"):
        cases.append(Case(f"structure-spec-is-{kind}", {}, [VALIDATE, RUN], [{2}, {2}],
                          special={"evalgate.yaml": kind}))
    return cases


# ---- C. data files ----

def data_contents() -> dict[str, dict[str, bytes | str]]:
    """content name -> {suffix: file content} for each format where the content makes sense."""
    deep_small = "[" * 90 + "]" * 90  # under the limit: deep, but fine
    deep_over = "[" * 150 + "]" * 150
    deep_huge = "[" * 100_000 + "]" * 100_000
    item = {"id": "a", "input": "hi", "output": "hello"}
    return {
        "valid": {".jsonl": DATA_OK, ".json": json.dumps([item]), ".yaml": "- {id: a, input: hi, output: hello}\n",
                  ".csv": "id,input,output\na,hi,hello\n"},
        "bom": {".jsonl": "\ufeff" + DATA_OK, ".json": "\ufeff" + json.dumps([item]), ".csv": "\ufeffinput,output\nhi,hello\n"},
        "not-utf8": {s: b"\xff\xfe" + DATA_OK.encode() for s in (".jsonl", ".json", ".yaml", ".csv")},
        "raw-nul": {".jsonl": '{"input": "h\x00i", "output": "x"}\n', ".csv": "input,output\nh\x00i,x\n",
                    ".yaml": "- {input: \"h\x00i\", output: x}\n"},
        "control-chars-escaped": {".jsonl": '{"id": "\\u001b]0;pwned\\u0007", "input": "\\u202ehi", "output": "\\u001b[2Jx"}\n'},
        "lone-surrogate": {".jsonl": '{"id": "s\\ud800", "input": "hi", "output": "ok \\ud800"}\n',
                           ".json": '[{"id": "s\\ud800", "input": "hi", "output": "ok \\ud800"}]'},
        "nan": {".jsonl": '{"input": NaN, "output": Infinity}\n', ".json": '[{"input": "a", "output": NaN}]'},
        "deep-90": {".jsonl": '{"input": "a", "output": "x", "metadata": {"d": ' + deep_small + "}}\n",
                    ".json": '[{"input": "a", "output": "x", "metadata": {"d": ' + deep_small + "}}]"},
        "deep-150": {".jsonl": '{"input": "a", "output": "x", "metadata": {"d": ' + deep_over + "}}\n",
                     ".json": '[{"input": "a", "output": "x", "metadata": {"d": ' + deep_over + "}}]"},
        "deep-100000": {".jsonl": '{"input": ' + deep_huge + "}\n", ".json": deep_huge,
                        ".csv": "input,metadata\na," + '"' + deep_huge.replace('"', '""') + '"\n'},
        "duplicate-ids": {".jsonl": DATA_OK * 2},
        "duplicate-keys": {".yaml": "- input: a\n  input: b\n  output: x\n"},
        "alias-bomb": {".yaml": alias_bomb(8).replace("version: 1\n", "")},
        "bad-date": {".yaml": "- {input: 2001-13-45, output: x}\n"},
        "unclosed-quote": {".csv": 'input,output\n"hi,hello\nmore,rows\n'},
        "duplicate-headers": {".csv": "input,output,output\nhi,a,b\n"},
        "no-input-column": {".csv": "question,answer\nhi,hello\n"},
        "huge-field": {".csv": "input,output\nhi," + "x" * (17 * 2**20) + "\n"},  # a row over 16 MiB
        "huge-line": {".jsonl": '{"input": "' + "x" * (17 * 2**20) + '"}\n'},
        "empty": {s: "" for s in (".jsonl", ".json", ".yaml", ".csv")},
        "scalars": {".jsonl": "null\n1\n[]\n", ".json": "42", ".yaml": "hello\n"},
        "huge-number": {".jsonl": '{"input": 1e999, "output": ' + "9" * 5000 + "}\n"},
    }


DATA_MUST_FAIL = {"not-utf8", "deep-100000", "deep-150", "huge-line", "duplicate-ids", "duplicate-keys", "alias-bomb", "bad-date",
                  "unclosed-quote", "duplicate-headers", "no-input-column", "huge-field", "empty", "scalars", "raw-nul"}


def data_cases() -> list[Case]:
    cases = []
    for name, by_suffix in data_contents().items():
        for suffix, content in by_suffix.items():
            spec = f"version: 1\ndata: data{suffix}\ngates:\n  - type: includes\n    value: hel\n"
            if name in DATA_MUST_FAIL and not (name == "raw-nul" and suffix == ".csv"):
                codes = [{2}, {2}, {2}, {2}]
            elif name in ("valid", "bom", "lone-surrogate", "control-chars-escaped", "deep-90"):
                codes = [{0}, RAN, {0}, {0}]  # fine data: it runs and reads back
            else:
                codes = [{0, 2}, RAN | {2}, {0, 2}, {0, 2}]
            cases.append(Case(f"data-{name}{suffix.replace('.', '-')}", {"evalgate.yaml": spec, f"data{suffix}": content},
                              [VALIDATE, RUN, *READ_BACK[:2]], codes, kind="data",
                              expect_out="ok (1 items" if name in ("valid", "bom") else ""))
    for what in ("dir", "fifo", "device", "missing", "sparse:" + str(300 * 2**20)):
        for suffix in (".jsonl", ".json", ".yaml", ".csv"):
            spec = f"version: 1\ndata: data{suffix}\ngates:\n  - type: includes\n    value: hel\n"
            special = {} if what == "missing" else {f"data{suffix}": what}
            cases.append(Case(f"data-is-{what.split(':')[0]}{suffix.replace('.', '-')}", {"evalgate.yaml": spec},
                              [VALIDATE, RUN], [{2}, {2}], special=special, line_required=True, kind="data"))
    return cases


# ---- D. target and scorer behaviours, read back by report, JUnit and --resume ----

AGENTS: dict[str, str] = {
    "exit-9": "import sys; print('bye', file=sys.stderr); sys.exit(9)",
    "killed": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
    "grandchild-holds-pipe": "import subprocess; subprocess.Popen(['sleep', '60']); print('hi')",
    "setsid-grandchild-holds-pipe": "import subprocess; subprocess.Popen(['sleep', '60'], start_new_session=True); "
                                    "print('hi')",
    "sleeps-past-timeout": "import time; time.sleep(60)",
    "stdout-flood": "import sys\nwhile True: sys.stdout.write('y' * 65536)",
    "stderr-flood": "import sys, time\nend = time.time() + 30\nwhile time.time() < end: sys.stderr.write('e' * 65536)",
    "lone-surrogate": r"print('{\"text\": \"ok \\ud800\"}')",
    "nan-json": "print('{\"text\": \"x\", \"cost_usd\": NaN, \"latency_ms\": Infinity}')",
    "deep-json": "print('{\"text\": ' + '[' * 100000 + ']' * 100000 + '}')",
    "control-chars": r"print('\x1b]0;pwned\x07\x1b[2J\u202eevil @someone ::error::x <script>')",
    "binary": "import sys; sys.stdout.buffer.write(bytes(range(256)) * 100)",
    "ten-mib": "import sys; sys.stdout.write('z' * (10 * 2**20))",
    "echoes-env": "import os; print(os.environ.get('GITHUB_TOKEN'), os.environ.get('ACTIONS_RUNTIME_TOKEN'))",
    "echoes-passed-secret": "import os, sys; t = os.environ.get('GITHUB_TOKEN', ''); print('token ' + t); "
                            "print('stderr ' + t, file=sys.stderr); sys.exit(3)",
}

PY_TARGETS: dict[str, str] = {
    "sys-exit": "def agent(x):\n    raise SystemExit(9)\n",
    "keyboard-interrupt": "def agent(x):\n    raise KeyboardInterrupt\n",
    "generator-exit": "def agent(x):\n    raise GeneratorExit\n",
    "async-hang": "import asyncio\nasync def agent(x):\n    await asyncio.sleep(3600)\n",
    "async-blocks-loop": "import time\nasync def agent(x):\n    time.sleep(3)\n    return 'late'\n",
    "async-sys-exit": "async def agent(x):\n    raise SystemExit(5)\n",
    "sync-hang": "import time\ndef agent(x):\n    time.sleep(3600)\n",
    "nan": "def agent(x):\n    return {'text': 'x', 'cost_usd': float('nan'), 'latency_ms': float('inf')}\n",
    "lone-surrogate": "def agent(x):\n    return 'ok \\ud800'\n",
    "deep": "def agent(x):\n    v = 'x'\n    for _ in range(5000):\n        v = [v]\n    return {'text': 'x', 'tool_calls': "
            "[{'name': 't', 'args': {'v': v}}]}\n",
    "cyclic": "def agent(x):\n    d = {}\n    d['self'] = d\n    return {'text': 'x', 'tool_calls': [{'name': 't', 'args': d}]}\n",
    "object": "def agent(x):\n    return {'text': object(), 'usage': {'prompt_tokens': object()}}\n",
    "raises-secret": "import os\ndef agent(x):\n    raise RuntimeError('key is ' + os.environ.get('GITHUB_TOKEN', 'none'))\n",
    "exits-on-import": "import sys\nsys.exit(4)\n",
    "raises-on-import": "raise ValueError('no')\n",
    "interrupt-on-import": "raise KeyboardInterrupt\n",
}

SCORERS: dict[str, str] = {
    "slow": "import time\ndef score(item, run):\n    time.sleep(3)\n    return 1.0\n",
    "sys-exit": "def score(item, run):\n    raise SystemExit(7)\n",
    "nan": "def score(item, run):\n    return float('nan')\n",
    "surrogate-reason": "def score(item, run):\n    return 0.5, 'why \\ud800'\n",
    "raises-secret": "import os\ndef score(item, run):\n    raise RuntimeError('tok ' + os.environ.get('GITHUB_TOKEN', ''))\n",
    "generator-exit": "def score(item, run):\n    raise GeneratorExit\n",
}

DATA_TWO = '{"id": "a", "input": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"}\n{"id": "b", "input": "hi"}\n'


def behaviour_cases() -> list[Case]:
    cases = []
    for name, code in AGENTS.items():
        passes = "GITHUB_TOKEN" if name == "echoes-passed-secret" else "HOME"
        spec = (f"version: 1\ndata: data.jsonl\nmax_errors: 1\npass_env: [{passes}]\ntarget:\n  type: command\n"
                f"  run: [{json.dumps(PY)}, agent.py]\n  timeout_s: 2\nscorers:\n  - type: includes\n    value: hi\n")
        cases.append(Case(f"agent-{name}", {"evalgate.yaml": spec, "data.jsonl": DATA_TWO, "agent.py": code + "\n"},
                          [RUN, *READ_BACK], [RAN, {0}, {0}, RAN], kind="behaviour", max_seconds=12))
    for name, code in PY_TARGETS.items():
        on_import = name.endswith("-on-import")
        passes = "GITHUB_TOKEN" if name == "raises-secret" else "HOME"
        spec = (f"version: 1\ndata: data.jsonl\nmax_errors: 1\npass_env: [{passes}]\ntarget:\n  type: python\n"
                f"  function: agent_{name.replace('-', '_')}:agent\n  timeout_s: 1\n"
                "scorers:\n  - type: includes\n    value: x\n")
        codes = [{2}, {2}, {2}, {2}] if on_import else [RAN, {0}, {0}, RAN]
        cases.append(Case(f"python-{name}", {"evalgate.yaml": spec, "data.jsonl": DATA_TWO,
                                             f"agent_{name.replace('-', '_')}.py": code},
                          [RUN, *READ_BACK], codes, kind="behaviour", max_seconds=12))
    for name, code in SCORERS.items():
        passes = "GITHUB_TOKEN" if name == "raises-secret" else "HOME"
        module = f"scorer_{name.replace('-', '_')}"
        spec = (f"version: 1\ndata: data.jsonl\nmax_errors: 2\npass_env: [{passes}]\nscorers:\n"
                f"  - type: python\n    function: {module}:score\n    timeout_s: 0.5\n    threshold: 0.5\n")
        data = '{"id": "a", "input": "hi", "output": "x"}\n{"id": "b", "input": "hi", "output": "y"}\n'
        cases.append(Case(f"scorer-{name}", {"evalgate.yaml": spec, "data.jsonl": data, f"{module}.py": code},
                          [RUN, *READ_BACK], [RAN, {0}, {0}, RAN], kind="behaviour", max_seconds=12))
    regex_spec = ("version: 1\ndata: data.jsonl\nmax_errors: 2\ngates:\n  - type: matches\n    pattern: '^(a+)+$'\n"
                  "scorers:\n  - type: matches\n    pattern: '(x+x+)+y'\n")
    data = '{"input": "a", "output": "' + "a" * 40 + '!"}\n{"input": "b", "output": "' + "x" * 40 + '"}\n'
    cases.append(Case("scorer-catastrophic-regex", {"evalgate.yaml": regex_spec, "data.jsonl": data},
                      [RUN, *READ_BACK], [RAN, {0}, {0}, RAN], kind="behaviour", max_seconds=12))
    # a JSON Schema pattern went to Python's re, which no deadline stops: the agent's answer hung the run
    schema_spec = ("version: 1\ndata: data.jsonl\nmax_errors: 2\ngates:\n  - type: json_schema\n    schema:\n"
                   "      properties: {name: {type: string, pattern: '^(a|a)*$'}}\n"
                   "      patternProperties: {'^(a|a)*$': {}}\n      additionalProperties: false\n")
    data = ('{"input": "a", "output": "{\\"name\\": \\"' + "a" * 45 + '!\\"}"}\n'
            '{"input": "b", "output": "{\\"' + "a" * 45 + '!\\": 1}"}\n')
    cases.append(Case("scorer-json-schema-catastrophic-pattern", {"evalgate.yaml": schema_spec, "data.jsonl": data},
                      [RUN, *READ_BACK], [RAN, {0}, {0}, RAN], kind="behaviour", max_seconds=12))
    # `regex` builds every required repetition: this pattern alone took gigabytes until the kernel killed the run
    bomb_spec = ("version: 1\ndata: data.jsonl\ngates:\n  - type: matches\n"
                 "    pattern: '(?:(?:a{1000}){1000}){1000}'\n")
    cases.append(Case("spec-regex-repetition-bomb", {"evalgate.yaml": bomb_spec, "data.jsonl": DATA_OK},
                      [VALIDATE, RUN], [{2}, {2}], kind="behaviour", max_seconds=12))
    return cases


# ---- E. secrets in what the code under test prints: keys, encodings, words, unnamed credentials ----

ECHO = "import json, os, sys, urllib.parse as up\nk = os.environ.get('K', '') or os.environ.get('OPENAI_API_KEY', '')\n"
SECRET_AGENTS: dict[str, tuple[str, str]] = {  # name -> (the variable the spec hands over as K, the agent's code)
    "json-key": ("PLUS_KEY", "print(json.dumps({'text': 'hi', 'tool_calls': [{'name': 't', 'args': {k: {k: 1}}}]}))"),
    "json-key-usage": ("PLUS_KEY", "print(json.dumps({'text': 'hi', 'usage': {k: 1}, 'extra': {k: k}}))"),
    "url-encoded": ("PLUS_KEY", "print(json.dumps({'text': 'hi ' + up.quote(k, safe='') + ' ' + up.quote_plus(k) + ' '"
                                " + up.quote(k, safe='').replace('%2B', '%2b').replace('%2F', '%2f')}))"),
    "url-encoded-location": ("PLUS_KEY", "print('Location: https://x.example/cb?state=' + up.quote(k, safe=''), "
                                         "file=sys.stderr); sys.exit(3)"),
    "json-escaped": ("PLUS_KEY", "print('{\"text\": \"hi ' + ''.join('\\\\u%04x' % ord(c) for c in k) + '\"}')"),
    "json-escaped-key": ("PLUS_KEY", "print('{\"text\": \"hi\", \"tool_calls\": [{\"name\": \"t\", \"args\": {\"'"
                                     " + k.replace('/', '\\\\/') + '\": 1}}]}')"),
    "unnamed-provider-key": ("", "print('key ' + k); print('stderr ' + k, file=sys.stderr); sys.exit(3)"),
    "unnamed-provider-key-as-key": ("", "print(json.dumps({'text': 'hi', 'tool_calls': [{'name': k, 'args': {k: 1}}]}))"),
    **{f"word-{v}": (n, "print(json.dumps({'text': 'hi ' + k, 'tool_calls': [{'name': k, 'args': {k: k, k + 's': 1}}]}))")
       for n, v in WORD_SECRETS.items()},
}


def secret_cases() -> list[Case]:
    cases = []
    for name, (variable, code) in SECRET_AGENTS.items():
        env = f"  env: {{K: '${{{variable}}}'}}\n" if variable else ""
        spec = (f"version: 1\ndata: data.jsonl\nmax_errors: 2\ntarget:\n  type: command\n"
                f"  run: [{json.dumps(PY)}, agent.py]\n{env}  timeout_s: 5\n"
                "gates:\n  - type: includes\n    value: hi\nscorers:\n  - type: max_tool_calls\n    max: 3\n")
        codes = [{0}, {0}, {0}, {0}] if name.startswith("word-") else [RAN, {0}, {0}, RAN]
        cases.append(Case(f"secret-{name}", {"evalgate.yaml": spec, "data.jsonl": DATA_TWO, "agent.py": ECHO + code + "\n"},
                          [RUN, *READ_BACK], codes, kind="secrets", max_seconds=12))
    return cases


def corpus() -> list[Case]:
    return slot_cases() + structure_cases() + data_cases() + behaviour_cases() + secret_cases()


# ---- F. files evalgate writes and files it reads but did not write (issue 33) ----

SPEC_OK = "version: 1\ndata: data.jsonl\ngates:\n  - type: includes\n    value: hel\n"
DATA_THREE = "".join(json.dumps({"id": i, "input": "hi", "output": "hello"}) + "\n" for i in "abc")
DATA_ASKED = "".join(json.dumps({"id": i, "input": f"question {i}"}) + "\n" for i in "abc")  # three cache keys
VICTIM = "precious: never written by evalgate\n"
TWO_GIB = "sparse:" + str(2 * 2**30)
# What a hostile file at a path evalgate reads can be: no regular file, or one far too big to read whole.
NOT_FILES = {"fifo": "fifo", "dev-zero": "device", "dir": "dir", "sparse-2gib": TWO_GIB}
HTTP_CACHED = ("version: 1\ndata: data.jsonl\nmax_errors: 0\ntarget:\n  type: http\n  url: @AGENT_URL@/agent\n"
               "  cache: {{dir: {dir}}}\n  retries: {{attempts: 1}}\ngates:\n  - type: includes\n    value: hello\n")
RUN_ONLY = ["run", "evalgate.yaml", "-o", "out/r.json"]


def py(code: str) -> list[str]:
    """A driver step that runs Python in the case's folder (an attacker's edit, or a check of what was written)."""
    return ["!python", code]


def write_cases() -> list[Case]:
    """A symlink (to a file outside), a FIFO, a device or a folder symlink at every path evalgate writes."""
    cases = []
    base = {"evalgate.yaml": SPEC_OK, "data.jsonl": DATA_THREE}
    results_then = {  # what is written, and the command that writes it after the files it needs
        "results": ("out/r.json", [RUN_ONLY]),
        "junit": ("out/j.xml", [[*RUN_ONLY, "--junit", "out/j.xml"]]),
        "journal": ("out/r.json.items.jsonl", [RUN_ONLY]),
        "lock": ("out/r.json.lock", [RUN_ONLY]),
        "compare-output": ("out/c.json", [["run", "evalgate.yaml", "-o", "base.json"],
                                          ["compare", "base.json", "base.json", "-o", "out/c.json"]]),
        "merge-output": ("out/m.json", [["run", "evalgate.yaml", "--shard", "1/1", "-o", "s.json"],
                                        ["merge", "s.json", "-o", "out/m.json"]]),
    }
    for what, (path, steps) in results_then.items():
        for kind, special in (("symlink", "symlink:@OUT@/victim.txt"), ("fifo", "fifo"), ("device", "device"),
                              ("dir", "dir")):
            codes = [RAN] * (len(steps) - 1) + [{2}]  # refused, nothing run or written through
            cases.append(Case(f"write-{what}-is-{kind}", dict(base), steps, codes, special={path: special},
                              outside={"victim.txt": VICTIM}, kind="files", timeout_s=10))
        folder = path.split("/")[0]  # the folder on the way is a symlink out of the working directory
        cases.append(Case(f"write-{what}-folder-symlink", dict(base), steps, [RAN] * (len(steps) - 1) + [{2}],
                          special={folder: "symlink:@OUT@"}, outside={"victim.txt": VICTIM}, kind="files",
                          timeout_s=10))
    # the results' temporary file is ours: whatever is there is replaced, never written through
    for kind, special in (("symlink", "symlink:@OUT@/victim.txt"), ("fifo", "fifo")):
        cases.append(Case(f"write-results-tmp-is-{kind}", dict(base), [RUN_ONLY], [{0}],
                          special={"out/r.json.tmp": special}, outside={"victim.txt": VICTIM}, kind="files",
                          timeout_s=10))
    return cases


def cache_cases() -> list[Case]:
    """The response cache: its folder confined like the Action's working-directory, its sub-folders never
    followed out, its entries (which another run, or a fork, may have left) read as a miss when unreadable."""
    cases = []
    for name, folder in (("parent", "../cache-dir-parent-outside.outside/cache"), ("absolute", "@OUT@/cache"),
                         ("symlink", ".cache")):
        special = {".cache": "symlink:@OUT@"} if name == "symlink" else {}
        files = {"evalgate.yaml": HTTP_CACHED.format(dir=folder), "data.jsonl": DATA_ASKED}
        # a folder named outright is a spec error at its line; a symlink out is found when the run writes
        codes = [{0}, {0}] if name == "symlink" else [{2}, {2}]
        cases.append(Case(f"cache-dir-{name}-outside", files, [VALIDATE, RUN_ONLY], codes, special=special,
                          outside={"victim.txt": VICTIM}, kind="files", line_required=name != "symlink",
                          timeout_s=10, expect={1: "leads outside"} if name == "symlink" else {}))
    files = {"evalgate.yaml": HTTP_CACHED.format(dir=".cache"), "data.jsonl": DATA_ASKED}
    every_prefix = {f".cache/{n:02x}": "symlink:@OUT@" for n in range(256)}  # an entry's folder is its key's start
    cases.append(Case("cache-subfolders-are-symlinks", dict(files), [RUN_ONLY], [{0}], special=every_prefix,
                      outside={"victim.txt": VICTIM}, kind="files", timeout_s=10, expect={0: "could not keep"}))
    planted = {  # step 2 puts this at every entry the first run stored; the third step must run, not hang or error
        "fifo": "os.unlink(p); os.mkfifo(p)",
        "dev-zero": "os.unlink(p); os.symlink('/dev/zero', p)",
        "symlink-out": f"os.unlink(p); os.symlink({'@OUT@/victim.txt'!r}, p)",
        "dir": "os.unlink(p); os.mkdir(p)",
        "sparse-2gib": "open(p, 'r+b').truncate(2 * 2**30)",
        "deep-nesting": "open(p, 'w').write('{\"value\": ' + '[' * 100000 + ']' * 100000 + '}')",
        "wrong-types": "open(p, 'w').write('{\"value\": {\"status\": \"x\", \"body\": 5, \"elapsed_ms\": []}}')",
        "no-value": "open(p, 'w').write('[1, 2]')",
        "body-missing": "open(p, 'w').write('{\"value\": {\"status\": 200}}')",
        "not-utf8": "open(p, 'wb').write(b'\\xff\\xfe{')",
    }
    for name, edit in planted.items():
        plant = py("import glob, os\nentries = glob.glob('.cache/*/*.json')\nassert len(entries) == 3, entries\n"
                   f"for p in entries:\n    {edit}\n")
        check = py("import json\nr = json.load(open('out/r.json'))\n"
                   "assert r['summary']['errored_items'] == 0, r['items']\n")
        cases.append(Case(f"cache-entry-{name}", dict(files), [RUN_ONLY, plant, RUN_ONLY, check], [{0}, {0}, {0}, {0}],
                          outside={"victim.txt": VICTIM}, kind="files", timeout_s=10,
                          expect={2: "cache entr"} if name != "symlink-out" else {}))
    return cases


def read_cases() -> list[Case]:
    """Files read back and never written by this run, each no regular file or one past its cap: exit 2 naming it,
    no hang, no memory spent on it."""
    cases = []
    base = {"evalgate.yaml": SPEC_OK, "data.jsonl": DATA_THREE}
    made = ["run", "evalgate.yaml", "-o", "ok.json"]
    readers = {  # the file, and the command that reads it
        "baseline": ("base.json", ["run", "evalgate.yaml", "-o", "out/r.json", "--baseline", "base.json"]),
        "compare-base": ("base.json", ["compare", "base.json", "ok.json"]),
        "compare-head": ("head.json", ["compare", "ok.json", "head.json"]),
        "merge-shard": ("s.json", ["merge", "s.json", "-o", "out/m.json"]),
        "report": ("r.json", ["report", "r.json"]),
        "report-junit": ("r.json", ["report", "r.json", "--format", "junit"]),
        "comment-results": ("r.json", ["comment", "--results", "r.json", "--pr", "1", "--repo", "o/r"]),
        "resume-journal": ("out/r.json.items.jsonl", [*RUN_ONLY, "--resume"]),
        "resume-results": ("out/r.json", [*RUN_ONLY, "--resume"]),
    }
    for what, (path, command) in readers.items():
        for kind, special in NOT_FILES.items():
            if what.startswith("resume-") and kind == "dir":
                continue  # a folder at the output's path: the writers' cases
            cases.append(Case(f"read-{what}-is-{kind}", dict(base), [made, command], [RAN, {2}],
                              special={path: special}, kind="files", timeout_s=10))
    # a journal value no run writes: an infinite number is no record (its item runs again), never copied
    infinite = py("import json\nitems = json.load(open('out/r.json'))['items']\n"
                  "lines = [json.dumps(i) for i in items]\n"
                  "lines[0] = lines[0].replace('\"duration_ms\": ', '\"duration_ms\": 1e999, \"x\": ', 1)\n"
                  "open('out/r.json.items.jsonl', 'w').write(''.join(l + '\\n' for l in lines))\n")
    check = py("import json, math\ntext = open('out/r.json').read()\n"
               "assert '1e999' not in text and 'Infinity' not in text, text[:300]\n"
               "json.loads(text, parse_float=lambda s: (_ for _ in ()).throw(ValueError(s)) "
               "if not math.isfinite(float(s)) else float(s))\n")
    cases.append(Case("journal-value-1e999", dict(base), [RUN_ONLY, infinite, [*RUN_ONLY, "--resume"], check],
                      [{0}, {0}, {0}, {0}], kind="files", timeout_s=10))
    return cases


def id_cases() -> list[Case]:
    """Two ids the same after Unicode NFC normalisation (`café` composed and decomposed) look the same in
    every report: a duplicate id, named with both lines, in every data format."""
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    rows = [{"id": composed, "input": "hi", "output": "hello"}, {"id": decomposed, "input": "hi", "output": "hello"}]
    formats = {
        ".jsonl": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
        ".json": "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n]\n",
        ".yaml": "".join(f"- {{id: {r['id']}, input: hi, output: hello}}\n" for r in rows),
        ".csv": "id,input,output\n" + "".join(f"{r['id']},hi,hello\n" for r in rows),
    }
    cases = []
    for suffix, content in formats.items():
        spec = f"version: 1\ndata: data{suffix}\ngates:\n  - type: includes\n    value: hel\n"
        cases.append(Case(f"ids-nfc-equal{suffix.replace('.', '-')}", {"evalgate.yaml": spec, f"data{suffix}": content},
                          [VALIDATE, RUN_ONLY], [{2}, {2}], line_required=True, kind="files", timeout_s=10,
                          expect={0: "written another way"}))
    return cases


def scale_cases() -> list[Case]:
    """Spec validation in time linear in its entries: 10,000 gates took minutes when it was quadratic."""
    gates = "".join(f"  - {{type: includes, value: v{i}, id: gate-{i}}}\n" for i in range(10_000))
    spec = "version: 1\ndata: data.jsonl\ngates:\n" + gates
    return [Case("spec-10000-gates", {"evalgate.yaml": spec, "data.jsonl": DATA_THREE}, [VALIDATE], [{0}],
                 kind="files", timeout_s=30, max_seconds=25)]


def file_cases() -> list[Case]:
    return write_cases() + cache_cases() + read_cases() + id_cases() + scale_cases()
