# LAB STAND-IN: simulated hardware, not the real tool.
# The shell front of every stand-in tool: an entry point sets `_pv_tool=<module>` and sources this file
# with the tool's arguments. The Python implementation (<module>.py) renders what the tool prints from the
# twin's simulated state. A read-only invocation's output is kept under $PROVISION_LAB_RUN/render as a
# shell snippet and served by the shell alone (no process started) while nothing it is rendered from has
# changed: no input newer than the rendering, none appeared or gone. The inputs: the state dir and its
# hardware/faults/zfs.json and proc/sys/kernel/osrelease (the kernel the twin runs), the dpkg database, the
# persistence flag, /dev, and the cgroups of the units the tools ask systemd about (a unit's cgroup exists
# while it runs and is made anew at each start). Anything
# else (writes, daemons, burn-in runs, an output with stderr, odd arguments) runs the Python every time.
# The bytes served are the bytes rendered (checked before an output is kept); only time stamps in them
# (nvidia-smi's Timestamp, smartctl's local_time, mdadm's Update Time) show when they were rendered.
_pv_dir=${PROVISION_LAB_TOOLS:-/usr/lib/provision-lab/tools}
_pv_python=${PROVISION_LAB_PYTHON:-/usr/bin/python3}

_pv_py() { exec "$_pv_python" -S -I "$_pv_dir/$_pv_tool.py" "$@"; }

_pv_cacheable() {
  case $_pv_tool in
    nvme) case ${1-} in sanitize|sanitize-log|format) return 1 ;; esac; return 0 ;;  # erases, and their log
    smartctl|ibstat|ibv_devinfo|lscpu|dmidecode) return 0 ;;
    dmesg) [ $# -eq 0 ]; return ;;  # the whole log (what verify reads); any option runs the Python
    nvidia_smi)
      for _pv_a; do case $_pv_a in -pm|-pm=*|--persistence-mode*|-pl|-pl=*|--power-limit*) return 1 ;; esac; done
      return 0 ;;
    zpool) case ${1-} in status|list|get|version) return 0 ;; esac ;;
    zfs) case ${1-} in list|get|version) return 0 ;; esac ;;
    mdadm) for _pv_a; do case $_pv_a in --detail|-D|--examine|-E|--query|-Q) return 0 ;; esac; done ;;
    # docker: the daemon's answers and a container's output (`run --rm`: the stand-in keeps no container);
    # their own inputs (docker.service, daemon.json, the images) are added below.
    docker) case ${1-} in info) return 0 ;; run) for _pv_a; do [ "$_pv_a" = --rm ] && return 0; done ;; esac ;;
    apptainer)  # exec IMAGE ...: the image (an absolute path) is one of its inputs, with apptainer.conf and nvliblist
      [ "${1-}" = exec ] || return 1
      shift
      for _pv_a; do case $_pv_a in -*) ;; /*) _pv_X3=$_pv_a; return 0 ;; *) return 1 ;; esac; done ;;
  esac
  return 1
}

# The cache key: the tool and its arguments, '/' written as '%'; arguments outside a plain set are not cached.
_pv_key() {
  _pv_k=$_pv_tool
  for _pv_a; do
    case $_pv_a in ''|*[!A-Za-z0-9_.,=:/{}\ -]*) return 1 ;; esac  # {} and space: docker's --format
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
_pv_R=${PROVISION_LAB_RUN:-/run/provision-lab}
_pv_C=$_pv_R/render
_pv_G=${PROVISION_LAB_CGROUP:-}
if [ -z "$_pv_G" ]; then  # system.slice under cgroup v2, the hybrid layout, or v1's name=systemd
  for _pv_G in /sys/fs/cgroup/system.slice /sys/fs/cgroup/unified/system.slice \
      /sys/fs/cgroup/systemd/system.slice; do
    [ -d "$_pv_G" ] && break
  done
fi
case $_pv_C in *\'*) _pv_py "$@" ;; esac
_pv_O=${PROVISION_LAB_ROOT:-/}
case $_pv_tool in  # a tool's own inputs (the state dir again for the others)
  docker) _pv_X1=$_pv_G/docker.service; _pv_X2=$_pv_O/etc/docker/daemon.json
    _pv_X3=$_pv_O/var/lib/docker/provision-lab-images.json ;;
  apptainer) _pv_X1=$_pv_O/etc/apptainer/apptainer.conf; _pv_X2=$_pv_O/etc/apptainer/nvliblist.conf ;;
  *) _pv_X1=$_pv_S; _pv_X2=$_pv_S; _pv_X3=$_pv_S ;;
esac

# Call "$@" with every input appended.
_pv_inputs() {
  "$@" "$_pv_S" "$_pv_S/hardware.json" "$_pv_S/faults.json" "$_pv_S/zfs.json" "$_pv_S/proc/sys/kernel/osrelease" \
    "$_pv_A/status" "$_pv_A/updates" \
    "$_pv_R/persistence" "${PROVISION_LAB_DEV:-/dev}" "$_pv_G/nvidia-fabricmanager.service" \
    "$_pv_G/nvidia-persistenced.service" "$_pv_G/nvidia-dcgm.service" "$_pv_X1" "$_pv_X2" "$_pv_X3"
}
_pv_present() {  # which inputs exist: one 0/1 each
  _pv_p=
  for _pv_f; do if [ -e "$_pv_f" ]; then _pv_p="${_pv_p}1"; else _pv_p="${_pv_p}0"; fi; done
}
_pv_older() {  # every existing input older than the marker $1 (made when the kept output was rendered)
  _pv_m=$1; shift
  [ -e "$_pv_m" ] || return 1
  for _pv_f; do [ ! -e "$_pv_f" ] || [ "$_pv_m" -nt "$_pv_f" ] || return 1; done
}

# Served: the kept entry sets _pv_was, _pv_m, _pv_rc and defines _pv_out.
_pv_inputs _pv_present
_pv_oldm=
if [ -r "$_pv_C/$_pv_k" ] && . "$_pv_C/$_pv_k"; then
  if [ "$_pv_was" = "$_pv_p" ] && _pv_inputs _pv_older "$_pv_m"; then
    _pv_out
    exit "$_pv_rc"
  fi
  _pv_oldm=$_pv_m
fi

# Rendered: mark the time, run the Python, keep what it printed when it printed nothing on stderr.
[ -d "$_pv_C" ] || mkdir -p "$_pv_C" 2>/dev/null || _pv_py "$@"
_pv_t="$_pv_C/.$_pv_k.$$"
: >"$_pv_t.m" || _pv_py "$@"
_pv_inputs _pv_present
"$_pv_python" -S -I "$_pv_dir/$_pv_tool.py" "$@" >"$_pv_t.o" 2>"$_pv_t.e"
_pv_rc=$?
if [ -s "$_pv_t.e" ]; then
  cat "$_pv_t.o"; cat "$_pv_t.e" >&2
  rm -f "$_pv_t.o" "$_pv_t.e" "$_pv_t.m"
  exit "$_pv_rc"
fi
{
  printf "_pv_was='%s'; _pv_m='%s'; _pv_rc=%s\n_pv_out() { printf '%%s' '" "$_pv_p" "$_pv_t.m" "$_pv_rc"
  sed "s/'/'\\\\''/g" "$_pv_t.o"
  printf "'\n}\n"
} >"$_pv_t.n"
# kept only when the entry gives back exactly the bytes rendered
if (. "$_pv_t.n" && _pv_out) >"$_pv_t.c" 2>/dev/null && cmp -s "$_pv_t.c" "$_pv_t.o"; then
  mv -f "$_pv_t.n" "$_pv_C/$_pv_k" && case $_pv_oldm in "$_pv_C"/.*) rm -f "$_pv_oldm" ;; esac
else
  rm -f "$_pv_t.m"
fi
cat "$_pv_t.o"
rm -f "$_pv_t.o" "$_pv_t.e" "$_pv_t.c" "$_pv_t.n"
exit "$_pv_rc"
