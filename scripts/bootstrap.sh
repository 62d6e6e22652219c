#!/usr/bin/env bash
# Install everything the project, its lab and its tests need on a fresh Debian 12 machine (as root).
# Idempotent: a second run only checks. Used by scripts/test.sh, scripts/demo.sh and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(debootstrap systemd-container iproute2 dpkg-dev openssh-client procps psmisc curl ca-certificates)
APT_PACKAGES+=(dnsmasq-base)   # provision netboot and tests/lab/test_netboot_lab.py (the binary only: no system service)
APT_PACKAGES+=(slurm-wlm munge)   # tests/lab/test_slurm.py: slurmctld+munged on the host, slurmd's debs for the twins
# report and metrics validators the tests run: xmllint (JUnit vs junit-10.xsd), promtool (verify/campaign --prom)
APT_PACKAGES+=(libxml2-utils prometheus)
APT_PACKAGES+=(postgresql)   # a PostgreSQL journal: tests start a throwaway cluster with its initdb/pg_ctl (tests/pgcluster.py)
APT_OPTIONAL=(chromium)   # headless browser for the HTML report test; the test skips cleanly without it
if [ "${PROVISION_TEST_VM:-0}" != "0" ]; then
  APT_PACKAGES+=(qemu-system-x86)   # the vm tier only (PROVISION_TEST_VM=1 or auto): a real kernel under qemu
  APT_PACKAGES+=(ovmf)              # UEFI firmware of the VM lab node (a BMC-driven qemu host)
  APT_PACKAGES+=(ipxe)              # the iPXE EFI loader dnsmasq serves the VM lab node's network boot (tests/vm)
  APT_PACKAGES+=(xorriso grub-common grub-efi-amd64-bin mtools dosfstools)  # the lab's installer CD
fi

missing=()
for pkg in "${APT_PACKAGES[@]}" "${APT_OPTIONAL[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${APT_PACKAGES[@]}" >/dev/null
  apt-get install -y -qq --no-install-recommends "${APT_OPTIONAL[@]}" >/dev/null \
    || echo "bootstrap: optional packages unavailable: ${APT_OPTIONAL[*]}"
  # only promtool is wanted from the prometheus package: never leave its server running on a test machine
  if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null; then
    systemctl disable --now prometheus.service >/dev/null 2>&1 || true
  fi
  # nor Debian's own PostgreSQL cluster: the tests make throwaway ones, an operator points PROVISION_JOURNAL_URL
  if [[ " ${missing[*]} " == *" postgresql "* ]] && command -v systemctl >/dev/null; then
    systemctl disable --now postgresql.service >/dev/null 2>&1 || true
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/pip install -q -e '.[test,fast,postgres]' 2>&1 | grep -v -E "^WARNING: Location|^$" || true
.venv/bin/python -c "import provision, redfish, ansible_runner, testinfra, pydantic, psycopg" \
  || { echo "bootstrap: python dependencies did not install" >&2; exit 1; }
echo "bootstrap: ready"
