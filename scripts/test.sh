#!/usr/bin/env bash
# The project's test command: installs what it needs, lints, then runs every test tier.
#   scripts/test.sh                 lint, then every tier: unit, lab, heavy and vm (time allowing)
#   scripts/test.sh ARGS...         lint, then `pytest ARGS...` (e.g. -m "not lab", or one module)
# The lab tiers need root (systemd-nspawn, network namespaces). After lint, three lanes run side by side: the lab
# tier (one test at a time: its tests share twins, simulators, network slots and the lab's ports); the unit tier
# (tests that need no lab; over PROVISION_TEST_WORKERS pytest-xdist workers, default 0: in one process) then the
# heavy tier (marker `heavy`: the node-side fault matrix, the roles on twins, the secret-hygiene bring-up; run
# when the run so far took less than PROVISION_HEAVY_START_BUDGET seconds, default 1800; PROVISION_TEST_HEAVY=1
# forces it, =0 skips it, and the skip is printed); and the vm tier (PROVISION_TEST_VM, below). Each tier prints
# its time at its end ("== unit tier: 312 s").
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
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

pytest_args=(-p no:cacheprovider --durations=25)
if [ "$#" -gt 0 ]; then
  echo "== tests: $*"
  exec python -m pytest "${pytest_args[@]}" "$@"
fi

# The lab tier regenerates the BMC section of docs/fault-matrix.md and the heavy tier its node section; the
# committed copy, kept here before either runs, must agree with them (same cells, same outcomes, a passing
# baseline): a stale document fails the run.
committed_matrix=$(mktemp)
trap 'rm -f "$committed_matrix"' EXIT
cp docs/fault-matrix.md "$committed_matrix"

# tier NAME PYTEST-ARGS...: run one tier, print its time at its end (passed or not), exit with its status if it
# failed. With bound set (seconds), the tier gets SIGTERM when it runs that long, SIGKILL 60 s later.
bound=""
tier() {
  local name=$1 began rc=0 limit=()
  shift
  [ -z "$bound" ] || limit=(timeout -k 60 "$bound")
  began=$(date +%s)
  "${limit[@]}" python -m pytest "${pytest_args[@]}" "$@" || rc=$?
  [ "$rc" -ne 124 ] || [ -z "$bound" ] || echo "== ${name} STOPPED after ${bound} s: the run would have gone past its limit"
  echo "== ${name}: $(( $(date +%s) - began )) s (exit ${rc}; elapsed so far $(( $(date +%s) - started )) s)"
  [ "$rc" -eq 0 ] || exit "$rc"
}

# With PROVISION_RUN_LIMIT set (seconds; .ci/run sets 5100, 85 min, CI's limit being 90), every tier is
# stopped when the whole run reaches it (SIGTERM, so every fixture's teardown runs, tests/conftest.py; SIGKILL
# 60 s later): a slow machine fails the run with its simulators, twins and VMs torn down rather than run past CI's
# limit. Unset, nothing is stopped.
run_limit=${PROVISION_RUN_LIMIT:-}
limit_tier() {
  bound=""
  [ -n "$run_limit" ] || return 0
  bound=$(( run_limit - ($(date +%s) - started) ))
  [ "$bound" -gt 0 ] || bound=1
  echo "== stopped if it runs past ${bound} s (PROVISION_RUN_LIMIT=${run_limit})"
}

# Three lanes side by side (2 cores: the lab tier mostly waits on twins, SSH and simulators; the unit tier is one
# busy process; the vm tier one qemu under TCG):
#   the lab tier, in the foreground (its output streams);
#   the unit tier, then the heavy tier (its output in a log, printed when the lab tier is done);
#   the vm tier (likewise).
# The unit and lab tiers together are exactly the tests marked neither heavy nor vm. The run fails if any lane
# does; every lane's output is printed with its tier times whatever happened.
workers=${PROVISION_TEST_WORKERS:-0}
xdist=()
[ "$workers" = "0" ] || xdist=(-n "$workers" --dist loadfile)
lane_pids=()
lane_logs=()
heavy_ran=$(mktemp -u)
cleanup() {
  rm -f "$committed_matrix" "$heavy_ran" "${lane_logs[@]}"
  local pid
  for pid in "${lane_pids[@]}"; do pkill -TERM -P "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# lane NAME COMMAND...: run COMMAND in the background, its output kept for later.
lane() {
  local name=$1 log
  shift
  log=$(mktemp)
  lane_logs+=("$log")
  echo "== lane started: ${name} (its output follows the lab tier's)"
  ( "$@" ) >"$log" 2>&1 &
  lane_pids+=($!)
}

# The heavy tier (marker `heavy`: the node-side fault matrix, the roles on twins, the secret-hygiene bring-up)
# runs after the unit tier when the run so far took less than PROVISION_HEAVY_START_BUDGET seconds (default 1800),
# with PROVISION_TEST_HEAVY=1 always, with 0 never; the skip is printed.
unit_then_heavy() {
  echo "== tests: unit tier (${workers} workers)"
  limit_tier
  tier "unit tier" "${xdist[@]}" -m "not lab and not heavy and not vm"
  local elapsed=$(( $(date +%s) - started )) budget=${PROVISION_HEAVY_START_BUDGET:-1800}
  local heavy=${PROVISION_TEST_HEAVY:-auto}
  if [ "$heavy" = "0" ] || { [ "$heavy" = "auto" ] && [ "$elapsed" -ge "$budget" ]; }; then
    echo "== heavy tier SKIPPED (elapsed ${elapsed}s, budget ${budget}s, PROVISION_TEST_HEAVY=${heavy})"
    return 0
  fi
  echo "== tests: heavy tier (elapsed so far ${elapsed}s)"
  limit_tier
  tier "heavy tier" -m "heavy and not vm"
  touch "$heavy_ran"
}

# The vm tier (qemu VMs under TCG: boot_raid1 on a real md RAID1, OS installs then the whole bring-up) runs
# always with PROVISION_TEST_VM=1, never with 0, and with `auto` when the run so far took less than
# PROVISION_VM_START_BUDGET seconds (default 3720; it starts at once here, so `auto` runs it unless the
# bootstrap took an hour).
vm_tier() {
  limit_tier
  tier "vm tier" -m vm tests/vm
}

elapsed=$(( $(date +%s) - started ))
lane "unit tier, then heavy tier" unit_then_heavy
vm=${PROVISION_TEST_VM:-0}
vm_budget=${PROVISION_VM_START_BUDGET:-3720}
if [ "$vm" = "1" ] || { [ "$vm" = "auto" ] && [ "$elapsed" -lt "$vm_budget" ]; }; then
  lane "vm tier" vm_tier
else
  echo "== vm tier SKIPPED (elapsed ${elapsed}s, budget ${vm_budget}s, PROVISION_TEST_VM=${vm})"
fi

# With PROVISION_RUN_LIMIT set, every tier is stopped when the whole run reaches it (limit_tier above).
echo "== tests: lab tier"
lab_rc=0
( limit_tier; tier "lab tier" -m "lab and not heavy and not vm" ) || lab_rc=$?

rc=$lab_rc
for i in "${!lane_pids[@]}"; do
  lane_rc=0
  wait "${lane_pids[$i]}" || lane_rc=$?
  echo "== lane output ($(( i + 1 )) of ${#lane_pids[@]}, exit ${lane_rc})"
  cat "${lane_logs[$i]}"
  [ "$rc" -ne 0 ] || rc=$lane_rc
done
lane_pids=()

# The lab tier regenerated the BMC section of docs/fault-matrix.md and the heavy tier its node section: both
# must agree with the committed copy (same cells, same outcomes, a passing baseline).
if [ "$rc" -eq 0 ] && [ -e "$heavy_ran" ]; then
  echo "== generated documents in step"
  python tests/faults/doccheck.py "$committed_matrix" docs/fault-matrix.md --written-after "$started" || rc=$?
fi
echo "== tier times (the lab tier's is above)"
grep -h '^== .* tier: [0-9]* s' "${lane_logs[@]}" || true
echo "== all tiers: exit ${rc}, $(( $(date +%s) - started )) s"
exit "$rc"
