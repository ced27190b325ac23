"""The Action's settings, parsed from the environment the runner gives a container step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalgate.github.settings import Settings, SettingsError


def env(tmp_path: Path, **inputs: str) -> dict[str, str]:
    base = {f"INPUT_{k.upper()}": "" for k in ("spec", "fail-on", "comment", "github-token", "summary",
                                                "results-path", "working-directory", "concurrency", "comment-key")}
    base.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
    base["GITHUB_WORKSPACE"] = str(tmp_path)
    return base


def test_empty_inputs_take_the_documented_defaults(tmp_path: Path) -> None:
    settings = Settings.from_env(env(tmp_path))
    assert (settings.spec, settings.fail_on) == ("evalgate.yaml", "failed")
    assert settings.comment and settings.summary
    assert settings.results_file == tmp_path.resolve() / "evalgate-results.json"
    assert settings.concurrency is None and settings.comment_key == ""


def test_hyphenated_names_are_read_and_the_token_never_shows(tmp_path: Path) -> None:
    settings = Settings.from_env(env(tmp_path, **{"github-token": "ghs_secret", "fail-on": "scored",
                                                  "working-directory": "evals", "concurrency": "8"}))
    assert settings.token == "ghs_secret" and "ghs_secret" not in repr(settings)
    assert settings.fail_on == "scored" and settings.concurrency == 8
    assert settings.spec_path == tmp_path.resolve() / "evals" / "evalgate.yaml"


@pytest.mark.parametrize(("name", "value"), [("fail-on", "always"), ("comment", "yes"), ("concurrency", "0"),
                                             ("concurrency", "many"), ("summary", "1")])
def test_bad_inputs_are_refused(tmp_path: Path, name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env(env(tmp_path, **{name: value}))


def test_pull_request_number_only_on_pull_request_events(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text('{"number": 12, "pull_request": {"number": 12}}')
    values = {**env(tmp_path), "GITHUB_EVENT_PATH": str(event), "GITHUB_EVENT_NAME": "pull_request"}
    assert Settings.from_env(values).pr_number == 12
    assert Settings.from_env({**values, "GITHUB_EVENT_NAME": "push"}).pr_number is None
    assert Settings.from_env({**values, "GITHUB_EVENT_PATH": str(tmp_path / "missing")}).pr_number is None


def test_shard_mode_results_and_max_cost_inputs(tmp_path: Path) -> None:
    settings = Settings.from_env(env(tmp_path, shard="2/4", **{"max-cost": "$1.50"}))
    assert str(settings.shard) == "2/4" and settings.max_cost == 1.5 and settings.mode == "run"
    merge = Settings.from_env(env(tmp_path, mode="merge", results="shards/*.json\nmore/*.json, x.json"))
    assert merge.results == ("shards/*.json", "more/*.json", "x.json")
    for inputs, message in (({"shard": "0/4"}, "input `shard`"), ({"max-cost": "lots"}, "input `max-cost`"),
                            ({"max-cost": "0"}, "more than 0"), ({"mode": "merge", "shard": "1/2", "results": "a"},
                                                                  "exclude each other")):
        with pytest.raises(SettingsError, match=message):
            Settings.from_env(env(tmp_path, **inputs))


def test_a_shard_writes_its_results_under_its_own_default_name(tmp_path: Path) -> None:
    # Four shard jobs downloaded with merge-multiple into one folder: one name each, or three are lost.
    names = {Settings.from_env(env(tmp_path, shard=f"{i}/4")).results_file.name for i in range(1, 5)}
    assert names == {f"evalgate-results-shard-{i}-of-4.json" for i in range(1, 5)}
    given = Settings.from_env(env(tmp_path, shard="3/4", **{"results-path": "shards/s3.json"}))
    assert given.results_file == tmp_path.resolve() / "shards" / "s3.json"
    assert Settings.from_env(env(tmp_path)).results_file.name == "evalgate-results.json"


@pytest.mark.parametrize("pull_request", ["7", [7], 7, True, {"number": True, "base": "main"},
                                          {"number": "7", "base": ["main"]}])
def test_an_event_whose_pull_request_is_not_an_object_has_no_number_and_no_base(tmp_path: Path,
                                                                                pull_request: object) -> None:
    # `"pull_request": "7"` raised AttributeError (exit 3, "a bug in evalgate") at the comment step;
    # `"number": true` was taken as pull request #1.
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": True, "pull_request": pull_request}))
    settings = Settings.from_env({**env(tmp_path), "GITHUB_EVENT_PATH": str(event),
                                  "GITHUB_EVENT_NAME": "pull_request"})
    assert settings.pr_number is None and settings.base_ref == ""


@pytest.mark.parametrize(("variable", "url"), [("GITHUB_API_URL", "api.github.com"), ("GITHUB_API_URL", "ftp://x"),
                                               ("GITHUB_API_URL", "http://127.0.0.1:99999"),
                                               ("GITHUB_API_URL", "http://[::1"), ("GITHUB_API_URL", "https://a b"),
                                               ("GITHUB_GRAPHQL_URL", "graphql")])
def test_an_api_address_that_is_no_web_address_is_named(tmp_path: Path, variable: str, url: str) -> None:
    settings = Settings.from_env({**env(tmp_path), variable: url})
    assert settings.api_problem.startswith(f"{variable} (")


def test_a_web_address_with_spaces_around_it_is_the_api(tmp_path: Path) -> None:
    settings = Settings.from_env({**env(tmp_path), "GITHUB_API_URL": " https://ghe.example.com/api/v3/ \n"})
    assert settings.api_url == "https://ghe.example.com/api/v3" and settings.api_problem == ""
    assert Settings.from_env(env(tmp_path)).api_problem == ""
