"""Importing users' callables: each spec gets the module beside it."""

from pathlib import Path

from evalgate.user_code import import_callable


def test_two_folders_with_the_same_module_name_each_get_their_own(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "same_name_agent.py").write_text(f"def answer(q):\n    return {name!r}\n")
    first = import_callable("same_name_agent:answer", tmp_path / "one")
    second = import_callable("same_name_agent:answer", tmp_path / "two")
    assert (first("q"), second("q")) == ("one", "two")
    assert import_callable("same_name_agent:answer", tmp_path / "one")("q") == "one"
