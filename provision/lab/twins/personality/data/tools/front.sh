# LAB STAND-IN: simulated hardware, not the real tool.
# The shell front of every stand-in tool: an entry point sets `_pv_tool=<module>` and sources this file
# with the tool's arguments. The Python implementation (<module>.py) renders what the tool prints from the
# twin's simulated state. A read-only invocation's output is kept under $PROVISION_LAB_RUN/render and
# served with one `cat` while nothing it is rendered from has changed: the state dir and its *.json
# (hardware, faults, zfs), the dpkg database, the persistence flag, /dev, and the invocations of the units
# the tools ask systemd about (/run/systemd/units/invocation:<unit> exists while a unit runs and is new at
# each start). Anything else (writes, daemons, burn-in runs, an output with stderr, odd arguments) runs the
# Python every time. The bytes served are the bytes rendered; only time stamps in them (nvidia-smi's
# Timestamp, smartctl's local_time, mdadm's Update Time) show when they were rendered.
_pv_dir=${PROVISION_LAB_TOOLS:-/usr/lib/provision-lab/tools}

_pv_py() { exec "${PROVISION_LAB_PYTHON:-/usr/bin/python3}" -S -I "$_pv_dir/$_pv_tool.py" "$@"; }

_pv_cacheable() {
  case $_pv_tool in
    nvme|smartctl|ibstat|ibv_devinfo|lscpu|dmidecode) return 0 ;;
    nvidia_smi)
      for _pv_a; do case $_pv_a in -pm|-pm=*|--persistence-mode*|-pl|-pl=*|--power-limit*) return 1 ;; esac; done
      return 0 ;;
    zpool) case ${1-} in status|list|get|version) return 0 ;; esac ;;
    zfs) case ${1-} in list|get|version) return 0 ;; esac ;;
    mdadm) for _pv_a; do case $_pv_a in --detail|-D|--examine|-E|--query|-Q) return 0 ;; esac; done ;;
  esac
  return 1
}

# The cache key: the tool and its arguments, '/' written as '%'; arguments outside a plain set are not cached.
_pv_key() {
  _pv_k=$_pv_tool
  for _pv_a; do
    case $_pv_a in ''|*[!A-Za-z0-9_.,=:/-]*) return 1 ;; esac
    _pv_k="$_pv_k+$_pv_a"
  done
  _pv_r=$_pv_k; _pv_k=
  while :; do
    case $_pv_r in
      */*) _pv_k="$_pv_k${_pv_r%%/*}%"; _pv_r=${_pv_r#*/} ;;
      *) _pv_k="$_pv_k$_pv_r"; break ;;
    esac
  done
  [ ${#_pv_k} -le 200 ]
}

_pv_cacheable "$@" && _pv_key "$@" || _pv_py "$@"

_pv_S=${PROVISION_LAB_STATE:-/var/lib/provision-lab}
_pv_A=${PROVISION_LAB_DPKG_ADMINDIR:-/var/lib/dpkg}
_pv_U=${PROVISION_LAB_UNITS:-/run/systemd/units}
_pv_C=${PROVISION_LAB_RUN:-/run/provision-lab}/render
_pv_stamp=$(stat --printf '%n %i %.9Y %s|' "$_pv_S" "$_pv_S"/*.json "$_pv_A/status" "$_pv_A/updates" \
  "${PROVISION_LAB_RUN:-/run/provision-lab}/persistence" "${PROVISION_LAB_DEV:-/dev}" \
  "$_pv_U/invocation:nvidia-fabricmanager.service" "$_pv_U/invocation:nvidia-persistenced.service" \
  "$_pv_U/invocation:nvidia-dcgm.service" 2>/dev/null)

# Served: the entry's first line is "<rc> <output file>", its second the stamp it was rendered under.
_pv_old=
if { read -r _pv_rc _pv_old && read -r _pv_was; } 2>/dev/null <"$_pv_C/$_pv_k"; then
  # opened first: a re-render may remove the file, but not from under an open descriptor
  if [ "$_pv_was" = "$_pv_stamp" ] && { command exec 4<"$_pv_C/$_pv_old"; } 2>/dev/null; then
    cat <&4
    exit "$_pv_rc"
  fi
fi

# Rendered: run the Python, keep what it printed when it printed nothing on stderr.
[ -d "$_pv_C" ] || mkdir -p "$_pv_C" 2>/dev/null || _pv_py "$@"
_pv_out="$_pv_k.$$"
"${PROVISION_LAB_PYTHON:-/usr/bin/python3}" -S -I "$_pv_dir/$_pv_tool.py" "$@" >"$_pv_C/$_pv_out" 2>"$_pv_C/.$_pv_out.err"
_pv_rc=$?
if [ -s "$_pv_C/.$_pv_out.err" ]; then
  cat "$_pv_C/$_pv_out"; cat "$_pv_C/.$_pv_out.err" >&2
  rm -f "$_pv_C/$_pv_out" "$_pv_C/.$_pv_out.err"
  exit "$_pv_rc"
fi
printf '%s %s\n%s\n' "$_pv_rc" "$_pv_out" "$_pv_stamp" >"$_pv_C/.$_pv_out.entry" &&
  mv -f "$_pv_C/.$_pv_out.entry" "$_pv_C/$_pv_k"
cat "$_pv_C/$_pv_out"
rm -f "$_pv_C/.$_pv_out.err" ${_pv_old:+"$_pv_C/$_pv_old"}
exit "$_pv_rc"
