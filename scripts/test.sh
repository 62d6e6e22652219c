#!/usr/bin/env bash
# The project's test command: installs what it needs, lints, then runs every test tier.
#   scripts/test.sh            lint + unit tests + lab tests (root: the lab needs nspawn and netns)
#   scripts/test.sh -m "not lab"   pass pytest arguments through (e.g. only the fast tier)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
# shellcheck disable=SC1091
. .venv/bin/activate

echo "== lint"
ruff check provision tests bench
mypy provision
yamllint -s inventory $( [ -d playbooks ] && echo playbooks ) $( [ -d roles ] && echo roles )
if [ -f .ansible-lint ] && [ -n "$(ls -A roles 2>/dev/null)" ]; then
  ansible-lint --offline -q
fi

echo "== tests"
exec python -m pytest -p no:cacheprovider --durations=25 "$@"
