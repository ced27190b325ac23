"""Importing users' callables: each spec gets the module beside it; an import that never returns is stopped."""

import signal
import sys
import time
from pathlib import Path

import pytest

from evalgate.errors import SpecError
from evalgate.load.loader import load_spec
from evalgate.run import user_code
from evalgate.run.user_code import import_callable


def test_two_folders_with_the_same_module_name_each_get_their_own(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "same_name_agent.py").write_text(f"def answer(q):\n    return {name!r}\n")
    first = import_callable("same_name_agent:answer", tmp_path / "one")
    second = import_callable("same_name_agent:answer", tmp_path / "two")
    assert (first("q"), second("q")) == ("one", "two")
    assert import_callable("same_name_agent:answer", tmp_path / "one")("q") == "one"


LOOPS = "while True:\n    pass\n\n\ndef answer(q):\n    return q\n"
SWALLOWS = "import time\nwhile True:\n    try:\n        time.sleep(1)\n    except Exception:\n        pass\n"


@pytest.fixture
def short_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(user_code, "IMPORT_LIMIT_S", 0.5)
    monkeypatch.setattr(user_code, "IMPORT_NOTICE_S", 0.1)


@pytest.mark.parametrize("code", [LOOPS, SWALLOWS], ids=["loops", "swallows-exceptions"])
def test_an_import_that_never_returns_is_stopped_and_named(code: str, tmp_path: Path, short_limits: None,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "looper.py").write_text(code)
    before = signal.getsignal(signal.SIGALRM)
    started = time.monotonic()
    with pytest.raises(ValueError, match=r"importing `looper` did not finish in 0.5 s.*`if __name__"):
        import_callable("looper:answer", tmp_path)
    assert time.monotonic() - started < 5
    assert "evalgate: still importing `looper`" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGALRM) is before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert "looper" not in sys.modules  # a later import starts again


def test_a_slow_import_is_said_and_finishes(tmp_path: Path, short_limits: None, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(user_code, "IMPORT_LIMIT_S", 5.0)
    (tmp_path / "slow_import.py").write_text("import time\ntime.sleep(0.4)\n\n\ndef answer(q):\n    return q\n")
    assert import_callable("slow_import:answer", tmp_path)("x") == "x"
    assert "still importing `slow_import`" in capsys.readouterr().err
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_spec_whose_scorer_never_finishes_importing_is_a_spec_error_at_its_line(tmp_path: Path,
                                                                                short_limits: None) -> None:
    (tmp_path / "stuck.py").write_text(LOOPS.replace("answer(q)", "score(item, run)").replace("return q", "return 1.0"))
    (tmp_path / "evalgate.yaml").write_text("version: 1\ndata: [{input: hi, output: hi}]\nscorers:\n"
                                            "  - type: python\n    function: stuck:score\n")
    with pytest.raises(SpecError) as raised:
        load_spec(tmp_path / "evalgate.yaml")
    assert "evalgate.yaml:4" in str(raised.value) and "did not finish in 0.5 s" in str(raised.value)
