#!/usr/bin/env bash
# The main job on the built-in lab: bring up node01 end to end and show its conformance summary.
#   - installs what it needs (scripts/bootstrap.sh: apt packages, .venv),
#   - starts the lab when it is not up (simulated BMC + a systemd-nspawn node twin; root needed),
#   - runs `provision bringup node01`: preflight, firmware, BIOS, one host reset, OS, configure, verify.
# A second run finds node01 converged and does nothing. `provision lab down` stops the lab.
# Only the hardware is simulated: see "What is simulated" in README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh >/dev/null
# shellcheck disable=SC1091
. .venv/bin/activate
export PROVISION_LAB_DIR=${PROVISION_LAB_DIR:-.lab}
export PROVISION_STATE_DIR=${PROVISION_STATE_DIR:-.lab-state}

state=$(provision lab status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
if [ "$state" != "up" ]; then
  echo "starting the lab (first start builds the twin root filesystem: a few minutes)"
  provision lab up --nodes 1
fi
inventory=$(provision lab status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["inventory"])')
provision bringup node01 -i "$inventory" "$@"
provision status node01
