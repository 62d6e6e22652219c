#!/usr/bin/env bash
# The main job on the built-in lab. Installs what it needs, then validates the example inventory and
# shows the effective spec of node01. (Grows into a full lab bring-up as the stages land.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh >/dev/null
# shellcheck disable=SC1091
. .venv/bin/activate
provision spec validate -i inventory/hosts.yml
provision inventory list -i inventory/hosts.yml
provision spec show node01 -i inventory/hosts.yml
