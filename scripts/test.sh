#!/usr/bin/env bash
# The project's test command: installs what it needs, lints, then runs every test tier.
#   scripts/test.sh                 lint, then unit + lab tests, then the heavy and vm tiers (time allowing)
#   scripts/test.sh ARGS...         lint, then `pytest ARGS...` (e.g. -m "not lab", or one module)
# The lab tiers need root (systemd-nspawn, network namespaces). The heavy tier (marker `heavy`: the
# node-side fault matrix, the roles on twins, the secret-hygiene bring-up) runs after the rest
# when the run so far took less than PROVISION_HEAVY_START_BUDGET seconds (default 1800), so that the
# whole command stays well inside CI's limit on a slow machine; PROVISION_TEST_HEAVY=1 forces it,
# PROVISION_TEST_HEAVY=0 skips it. Either way the skip is printed.
# The tests that need no lab run first, over PROVISION_TEST_WORKERS pytest-xdist workers (default 0: they run
# in this process), each test file on one worker; then the lab tier, one test at a time (its tests share twins,
# simulators, network slots and the lab's ports). Each tier prints its time at its end ("== unit tier: 312 s").
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

# With PROVISION_RUN_LIMIT set (seconds; .ci/run sets 5100, 85 min, CI's limit being 90), the heavy and vm tiers
# are stopped when the whole run reaches it (SIGTERM, so every fixture's teardown runs, tests/conftest.py; SIGKILL
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

# The unit and lab tiers: together exactly the tests marked neither heavy nor vm.
workers=${PROVISION_TEST_WORKERS:-0}
xdist=()
[ "$workers" = "0" ] || xdist=(-n "$workers" --dist loadfile)
echo "== tests: unit tier (${workers} workers)"
tier "unit tier" "${xdist[@]}" -m "not lab and not heavy and not vm"
echo "== tests: lab tier"
tier "lab tier" -m "lab and not heavy and not vm"

# The heavy and vm tiers run side by side (the vm tier is one qemu under TCG, about one core; the heavy tier
# leaves the other): the vm tier's output is printed after the heavy tier's, each with its time, and the run
# fails if either does.
# The vm tier (qemu VMs under TCG: boot_raid1 on a real md RAID1, an OS install then the whole bring-up; ~16 min
# here) runs always with PROVISION_TEST_VM=1, never with 0, and with `auto` when the run so far took less than
# PROVISION_VM_START_BUDGET seconds (default 3720: started by 62 min, it ends by about 80, inside CI's 90; and
# PROVISION_RUN_LIMIT stops it at 85 min whatever happens).
elapsed=$(( $(date +%s) - started ))
vm=${PROVISION_TEST_VM:-0}
vm_budget=${PROVISION_VM_START_BUDGET:-3720}
vm_pid=""
vm_log=$(mktemp)
trap 'rm -f "$committed_matrix" "$vm_log"; [ -z "$vm_pid" ] || pkill -TERM -P "$vm_pid" 2>/dev/null || true' EXIT
if [ "$vm" = "1" ] || { [ "$vm" = "auto" ] && [ "$elapsed" -lt "$vm_budget" ]; }; then
  echo "== tests: vm tier, beside the heavy tier (elapsed so far ${elapsed}s; its output follows the heavy tier's)"
  ( limit_tier; tier "vm tier" -m vm tests/vm ) >"$vm_log" 2>&1 &
  vm_pid=$!
else
  echo "== vm tier SKIPPED (elapsed ${elapsed}s, budget ${vm_budget}s, PROVISION_TEST_VM=${vm})"
fi

budget=${PROVISION_HEAVY_START_BUDGET:-1800}
heavy=${PROVISION_TEST_HEAVY:-auto}
heavy_rc=0
if [ "$heavy" = "0" ] || { [ "$heavy" = "auto" ] && [ "$elapsed" -ge "$budget" ]; }; then
  echo "== heavy tier SKIPPED (elapsed ${elapsed}s, budget ${budget}s, PROVISION_TEST_HEAVY=${heavy})"
else
  echo "== tests: heavy tier (elapsed so far ${elapsed}s)"
  (
    limit_tier
    tier "heavy tier" -m "heavy and not vm"
    echo "== generated documents in step"
    python tests/faults/doccheck.py "$committed_matrix" docs/fault-matrix.md --written-after "$started"
  ) || heavy_rc=$?
fi

vm_rc=0
if [ -n "$vm_pid" ]; then
  wait "$vm_pid" || vm_rc=$?
  vm_pid=""
  echo "== vm tier output"
  cat "$vm_log"
fi
[ "$heavy_rc" -eq 0 ] || exit "$heavy_rc"
exit "$vm_rc"
