"""`python` and `command` targets that misbehave, run through the real CLI: the run ends with a documented
exit code, the misbehaving item is errored with a bounded message, the other items are scored, and the
results file loads."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import CLI_TIMEOUT_S, CliResult, dedent, run_cli

from evalgate.api import run_spec

DATA = '{"id": "good1", "input": "x"}\n{"id": "bad", "input": "bad"}\n{"id": "good2", "input": "y"}\n'


def _run(tmp_path: Path, target: str, files: dict[str, str], extra: str = "", data: str = DATA,
         env: dict[str, str] | None = None) -> tuple[CliResult, dict[str, Any]]:
    """Run a spec with `target:` over `data`; (the CLI's result, the results' items by id)."""
    for name, text in files.items():
        (tmp_path / name).write_text(dedent(text), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(data, encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\ndata: data.jsonl\nmax_errors: 1\nconcurrency: 2\n{target}{extra}"
        "scorers:\n  - type: includes\n    value: hi\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "evalgate.cli", "run", "evalgate.yaml", "-o", "results.json"],
                          cwd=tmp_path, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S)
    done = CliResult(proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in done.output, done.output
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    return done, {item["id"]: item for item in results["items"]}


def _command(timeout_s: float = 5) -> str:
    return f"target:\n  type: command\n  run: [{json.dumps(sys.executable)}, agent.py]\n  timeout_s: {timeout_s}\n"


def _python(function: str = "agent:agent", timeout_s: float = 5) -> str:
    return f"target:\n  type: python\n  function: '{function}'\n  timeout_s: {timeout_s}\n"


def _good_items_scored(items: dict[str, Any]) -> None:
    for item_id in ("good1", "good2"):
        assert items[item_id].get("error") is None, items[item_id]
        assert items[item_id]["scores"] == {"includes:hi": 1.0}


def test_an_exception_whose_message_cannot_be_read_errors_its_item_not_the_run(tmp_path: Path) -> None:
    # str() of the exception raised the exception again: evalgate's handlers raised in turn, the CLI
    # ended with a Python traceback and exit 1, which reads as "the verdict failed", and wrote no results
    done, items = _run(tmp_path, _python(), {"agent.py": """
        class Unprintable(Exception):
            def __str__(self):
                raise Unprintable()

        def agent(x):
            if x == "bad":
                raise Unprintable()
            return "hi"
        """})
    assert done.code == 0, done.output
    assert items["bad"]["error"] == "Unprintable: (its message could not be read: str() raised Unprintable)"
    _good_items_scored(items)


def test_a_scorer_exception_whose_message_cannot_be_read_errors_that_result(tmp_path: Path) -> None:
    done, items = _run(tmp_path, _python(), {"agent.py": """
        def agent(x):
            return "hi"
        """, "score.py": """
        class Unprintable(Exception):
            def __str__(self):
                raise RuntimeError("no message")

        def score(item, run):
            if item.input == "bad":
                raise Unprintable()
            return 1.0
        """}, extra="gates:\n  - type: python\n    function: 'score:score'\n")
    assert done.code == 1, done.output  # the gate scored 0 on one item
    assert items["bad"]["gates"] == {"python:score": 0.0}
    assert items["bad"]["reasons"]["python:score"] == (
        "Unprintable: (its message could not be read: str() raised RuntimeError)")
    assert items["good1"]["gates"] == {"python:score": 1.0}


def test_an_exception_message_of_megabytes_is_cut(tmp_path: Path) -> None:
    done, items = _run(tmp_path, _python(), {"agent.py": """
        def agent(x):
            if x == "bad":
                raise ValueError("why " + "m" * (8 << 20))
            return "hi"
        """})
    assert done.code == 0, done.output
    error = items["bad"]["error"]
    assert error.startswith("ValueError: why mmm") and error.endswith("…")
    assert len(error) < 1100
    assert (tmp_path / "results.json").stat().st_size < 100_000
    _good_items_scored(items)


def test_an_integer_too_long_to_write_is_kept_as_a_marker_not_the_end_of_the_run(tmp_path: Path) -> None:
    # json.dumps refuses an int of more than 4,300 digits: writing the item ended the run (exit 3)
    done, items = _run(tmp_path, _python(), {"agent.py": """
        def agent(x):
            if x == "bad":
                return {"text": "hi", "tool_calls": [{"name": "factorial", "args": {"n": 2000}, "result": 10**5000}],
                        "usage": {"prompt_tokens": 10**5000, "completion_tokens": 3}}
            return "hi"
        """}, extra="gates:\n  - type: called_tool\n    tool: factorial\n")
    assert done.code == 1, done.output  # the good items called no tool: the gate fails, as it should
    bad = items["bad"]
    assert bad.get("error") is None and bad["gates"] == {"called_tool:factorial": 1.0}
    assert bad["scores"] == {"includes:hi": 1.0}
    call = bad["output"]["tool_calls"][0]
    assert call["args"] == {"n": 2000} and call["result"] == "…(an integer of about 5,000 digits)"
    assert bad["output"]["usage"] == {"completion_tokens": 3}  # a token count that is no number is left out


COMMAND_HEAD = """
    import json, sys
    item = json.load(sys.stdin)
    if item["input"] != "bad":
        print(json.dumps({"text": "hi"}))
        sys.exit(0)
"""


def test_a_command_run_with_an_integer_too_long_for_python_is_still_a_run(tmp_path: Path) -> None:
    # json.loads refused it, and the run was scored as its raw JSON text: the tool call was lost
    done, items = _run(tmp_path, _command(), {"agent.py": COMMAND_HEAD + """
    call = '{"name": "factorial", "args": {"n": 2000}, "result": ' + "9" * 5000 + '}'
    print('{"text": "hi", "tool_calls": [' + call + ']}')
    """}, extra="gates:\n  - type: called_tool\n    tool: factorial\n")
    assert done.code == 1, done.output  # the good items called no tool
    bad = items["bad"]
    assert bad.get("error") is None and bad["gates"] == {"called_tool:factorial": 1.0}
    assert bad["output"]["text"] == "hi"
    assert bad["output"]["tool_calls"][0]["result"] == "…(an integer of 5,000 digits)"


def test_a_command_run_nested_hundreds_of_levels_deep_is_cut_not_the_end_of_the_run(tmp_path: Path) -> None:
    # JSON nested 900 levels deep reads, but writing the item with a secret to mask recursed past the
    # limit: exit 3 and no results. The run is cut at 64 levels, as a python target's is.
    env = {"GITHUB_TOKEN": "ghs_hostile_targets_token_1234"}  # a secret to mask in what is written
    done, items = _run(tmp_path, _command(), {"agent.py": COMMAND_HEAD + """
    deep = "[" * 900 + "]" * 900
    print('{"text": "hi", "tool_calls": [{"name": "t", "args": {"deep": ' + deep + '}}]}')
    """}, env=env)
    assert done.code == 0, done.output
    bad = items["bad"]
    assert bad.get("error") is None and bad["scores"] == {"includes:hi": 1.0}
    assert "…(nested too deeply)" in json.dumps(bad["output"]["tool_calls"], ensure_ascii=False)
    _good_items_scored(items)


def test_a_python_function_that_edits_its_input_changes_neither_the_results_nor_later_calls(tmp_path: Path) -> None:
    # the function got the item's own objects: the results recorded the edited input, and each
    # trial saw what the one before had left
    data = '{"id": "good1", "input": {"q": "hi"}, "metadata": {"seen": 0}}\n'
    done, items = _run(tmp_path, _python(), {"agent.py": """
        def agent(x, item):
            answer = f"{x['q']} {item.metadata['seen']}"
            x["q"] = "edited"
            item.metadata["seen"] += 1
            return answer
        """}, extra="repeats: 3\n", data=data)
    assert done.code == 0, done.output
    item = items["good1"]
    assert item["input"] == {"q": "hi"}
    assert [trial["run"]["text"] for trial in item["trials"]] == ["hi 0"] * 3


def test_a_python_function_that_changes_the_working_directory_loses_no_results(tmp_path: Path) -> None:
    # the results were written relative to the new directory: exit 2, "No such file or directory",
    # and every finished item lost
    (tmp_path / "workspace").mkdir()
    files = {"agent.py": """
        import os

        def agent(x):
            os.chdir(os.path.join(os.path.dirname(__file__), "workspace"))  # an agent at work in its folder
            return "hi"
        """, "data.jsonl": DATA}
    for name, text in files.items():
        (tmp_path / name).write_text(dedent(text), encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\ndata: data.jsonl\n{_python()}scorers:\n  - type: includes\n    value: hi\n", encoding="utf-8")
    done = run_cli("run", "evalgate.yaml", "-o", "out/results.json", "--junit", "junit.xml", cwd=tmp_path)
    assert done.code == 0, done.output
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert [item["scores"] for item in results["items"]] == [{"includes:hi": 1.0}] * 3
    assert "<testsuite" in (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert not list((tmp_path / "workspace").iterdir())


def test_an_async_target_closes_its_event_loop_when_the_run_ends(tmp_path: Path) -> None:
    # the loop was stopped, never closed: its descriptors stayed open until a garbage collection, and
    # at the interpreter's exit its __del__ often printed "Exception ignored ... Traceback ... Invalid
    # file descriptor: -1" on stderr. With the collector off, what the run leaves open shows at once.
    files = {"agent.py": """
        import asyncio

        async def agent(x):
            await asyncio.sleep(0.01)
            if x == "bad":
                raise ValueError("no answer")
            return "hi"
        """}
    done, items = _run(tmp_path, _python(), files)
    assert done.code == 0 and "Exception ignored" not in done.stderr, done.stderr
    assert items["bad"]["error"] == "ValueError: no answer"
    _good_items_scored(items)
    gc.disable()
    try:
        run_spec(tmp_path / "evalgate.yaml")  # the first run imports what every run uses
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(3):
            result = run_spec(tmp_path / "evalgate.yaml")
            assert result.outcome.errored_items == 1
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        gc.enable()


def test_a_command_gets_its_env_with_variables_expanded_and_their_values_never_shown(tmp_path: Path) -> None:
    # `${NAME}` in `env:` was passed on as those characters (the agent got no key); expanded, the value
    # is a secret: an agent that echoes it, in its reply or its stderr, shows `***`
    key = "ak_hostile_targets_agent_key_5150"
    done, items = _run(tmp_path, _command() + "  env: {AGENT_KEY: 'Bearer ${HOSTILE_AGENT_KEY}'}\n",
                       {"agent.py": """
    import json, os, sys
    item = json.load(sys.stdin)
    if item["input"] == "bad":
        sys.stderr.write("401: the key " + os.environ["AGENT_KEY"] + " was refused\\n")
        sys.exit(1)
    print(json.dumps({"text": "hi, I was called with " + os.environ["AGENT_KEY"]}))
    """}, env={"HOSTILE_AGENT_KEY": key})
    assert done.code == 0, done.output
    assert items["bad"]["error"] == "exited with code 1: 401: the key Bearer *** was refused"
    assert items["good1"]["output"]["text"] == "hi, I was called with Bearer ***"
    _good_items_scored(items)
    written = b"".join(path.read_bytes() for path in tmp_path.iterdir() if path.is_file())
    assert key.encode() not in written and key not in done.output


def test_a_command_env_naming_an_unset_variable_errors_each_item_saying_which(tmp_path: Path) -> None:
    done, items = _run(tmp_path, _command() + "  env: {AGENT_KEY: '${HOSTILE_UNSET_VARIABLE}'}\n",
                       {"agent.py": "print('hi')\n"})
    assert done.code == 4, done.output  # could not evaluate: every item errored
    assert {item["error"] for item in items.values()} == {
        "env AGENT_KEY: environment variable HOSTILE_UNSET_VARIABLE is not set"}


def test_a_python_function_that_closes_sys_stdout_does_not_silence_the_verdict(tmp_path: Path) -> None:
    # evalgate's stdout was closed under it: printing the verdict raised, exit 3 ("a bug in evalgate")
    done, items = _run(tmp_path, _python(), {"agent.py": """
        import sys

        def agent(x):
            print("working on", x)
            sys.stdout.close()
            return "hi"
        """})
    assert done.code == 0, done.output
    assert "verdict: none" in done.stdout and "results: results.json" in done.stdout
    _good_items_scored(items)


def test_a_command_reads_an_input_with_a_lone_surrogate_as_valid_utf8_json(tmp_path: Path) -> None:
    # `\ud800` in the data went to stdin as the bytes ED A0 80, which are no UTF-8: a strict reader
    # (Rust's, or this one) failed on the item, a lenient one read three other characters
    data = '{"id": "good1", "input": "x"}\n{"id": "bad", "input": "hi \\ud800 there"}\n{"id": "good2", "input": "y"}\n'
    done, items = _run(tmp_path, _command(), {"agent.py": """
    import json, sys
    item = json.loads(sys.stdin.buffer.read().decode("utf-8"))  # strict: no invalid bytes allowed
    print(json.dumps({"text": item["input"] if item["input"] not in ("x", "y") else "hi"}))
    """}, data=data)
    assert done.code == 0, done.output
    assert items["bad"].get("error") is None, items["bad"]["error"]
    assert items["bad"]["output"]["text"] == "hi \ud800 there"
    _good_items_scored(items)


def test_a_run_of_the_wrong_shape_is_quoted_in_a_bounded_error(tmp_path: Path) -> None:
    # the error quoted every unknown key, whole: a megabyte of error per item, in the results and the log
    (tmp_path / "py").mkdir()
    (tmp_path / "cmd").mkdir()
    _, items = _run(tmp_path / "py", _python(), {"agent.py": """
        def agent(x):
            if x == "bad":
                return {"text": "hi", "tool_calls": [{"name": "t", "status": "s" * 200_000}]}
            return "hi"
        """})
    assert items["bad"]["error"].startswith("the function returned something that is not a run: tool_calls[0]")
    assert len(items["bad"]["error"]) < 1100
    _good_items_scored(items)
    _, items = _run(tmp_path / "cmd", _command(), {"agent.py": COMMAND_HEAD + """
    print(json.dumps({"text": "hi", **{"key%d" % i: 1 for i in range(100_000)}}))
    """})
    assert items["bad"]["error"].startswith("stdout is JSON but not a run: unknown run key(s) ['key0'")
    assert len(items["bad"]["error"]) < 1100
    _good_items_scored(items)


def test_a_python_run_in_a_mapping_that_is_no_dict_is_cut_like_a_dict(tmp_path: Path) -> None:
    # any Mapping is read as a run, but only a dict was made safe to write: a cycle or deep nesting in
    # a MappingProxyType's tool call ended the run while a secret was masked (exit 3, no results)
    env = {"GITHUB_TOKEN": "ghs_hostile_targets_token_1234"}
    done, items = _run(tmp_path, _python(), {"agent.py": """
        import types

        def agent(x):
            loop = {}
            loop["self"] = loop
            return types.MappingProxyType({"text": "hi", "tool_calls": [{"name": "t", "args": loop}]})
        """}, env=env)
    assert done.code == 0, done.output
    assert items["bad"]["output"]["tool_calls"] == [{"name": "t", "args": {"self": "…(cycle)"}}]
    _good_items_scored(items)


def test_a_module_raising_an_unprintable_exception_on_import_is_a_spec_error(tmp_path: Path) -> None:
    # the import's handler read the message, which raised again: a traceback and exit 1
    (tmp_path / "agent.py").write_text(dedent("""
        class Unprintable(Exception):
            def __str__(self):
                raise Unprintable()

        raise Unprintable()
        """), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(DATA, encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\ndata: data.jsonl\n{_python()}scorers:\n  - type: includes\n    value: hi\n", encoding="utf-8")
    done = run_cli("run", "evalgate.yaml", cwd=tmp_path)
    assert done.code == 2 and "Traceback" not in done.output, done.output
    assert ("evalgate.yaml:5: target.function: importing `agent` raised Unprintable: (its message could not be "
            "read: str() raised Unprintable)") in done.stderr


def test_a_module_that_takes_sigterm_on_import_cannot_stop_a_cancelled_run_from_writing_results(
        tmp_path: Path) -> None:
    # the module's handlers replaced evalgate's: a cancelled CI job (SIGTERM) or Ctrl-C went unnoticed,
    # the run went on until killed, and no results file was written
    (tmp_path / "agent.py").write_text(dedent("""
        import signal, time
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, lambda signum, frame: None)

        def agent(x):
            if x != "x":
                open("waiting", "w").close()  # the first item is done: now is the time to cancel
                time.sleep(60)
            return "hi"
        """), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(DATA, encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text(
        f"version: 1\ndata: data.jsonl\nconcurrency: 1\n{_python(timeout_s=60)}"
        "scorers:\n  - type: includes\n    value: hi\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "evalgate.cli", "run", "evalgate.yaml", "-o", "results.json"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "waiting").exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the second item never started"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["summary"]["interrupted"] is True
    assert [item["scores"] for item in results["items"]] == [{"includes:hi": 1.0}]


def test_a_command_run_after_a_byte_order_mark_is_still_a_run(tmp_path: Path) -> None:
    # stdout began with U+FEFF, not `{`: the JSON run was scored as its text and its tool call was lost
    done, items = _run(tmp_path, _command(), {"agent.py": COMMAND_HEAD + """
    run = json.dumps({"text": "hi", "tool_calls": [{"name": "lookup"}]})
    sys.stdout.buffer.write(b"\\xef\\xbb\\xbf" + run.encode())
    """}, extra="gates:\n  - type: called_tool\n    tool: lookup\n")
    assert done.code == 1, done.output  # the good items called no tool
    assert items["bad"]["gates"] == {"called_tool:lookup": 1.0}
    assert items["bad"]["output"]["text"] == "hi"


def test_a_python_scorer_that_edits_the_item_or_the_run_changes_no_other_score(tmp_path: Path) -> None:
    # the scorer got the run itself: clearing its tool calls made the next check score 0, and the
    # results recorded the edited input and output
    data = '{"id": "good1", "input": {"q": "hi"}, "output": {"text": "hi", "tool_calls": [{"name": "lookup"}]}}\n'
    (tmp_path / "score.py").write_text(dedent("""
        def score(item, run):
            item.input["q"] = "edited"
            run.tool_calls.clear()
            run.texts[0] = "edited"
            return 1.0
        """), encoding="utf-8")
    (tmp_path / "data.jsonl").write_text(data, encoding="utf-8")
    (tmp_path / "evalgate.yaml").write_text(
        "version: 1\ndata: data.jsonl\nscorers:\n  - type: python\n    function: 'score:score'\n"
        "  - type: called_tool\n    tool: lookup\n  - type: includes\n    value: hi\n", encoding="utf-8")
    done = run_cli("run", "evalgate.yaml", "-o", "results.json", cwd=tmp_path)
    assert done.code == 0, done.output
    item = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["items"][0]
    assert item["scores"] == {"python:score": 1.0, "called_tool:lookup": 1.0, "includes:hi": 1.0}
    assert item["input"] == {"q": "hi"}
    assert item["output"]["text"] == "hi" and item["output"]["tool_calls"][0]["name"] == "lookup"
