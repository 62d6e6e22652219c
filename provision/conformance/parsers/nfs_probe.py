"""The NFS consistency probe: the node-side script (python3, stdlib only) and the parser of what it prints.

`write` mode, for one mountpoint: the mount's line in /proc/self/mountinfo (fstype, source, the per-mount and
the superblock options as the kernel reports them), statvfs free bytes, then a 1 MiB random payload written
under `<mountpoint>/.provision-probe/`, fsync'd (on NFS: the client's WRITEs and a COMMIT, answered once the
server has the data on stable storage), closed, and read back through a fresh open with O_DIRECT (the Linux
NFS client sends O_DIRECT reads to the server, bypassing its page cache; when O_DIRECT is refused the read is
buffered and says so: it then proves only what the client's cache holds after close-to-open revalidation).
The file is removed, unless it is kept for the cross-node read (`keep`): then another node of the run reads
it (`read` mode) and removes it. Stale kept files (a run that died between the phases) older than a day are
removed by the next write. The script prints `key=value` lines; the checks judge them locally.
"""

from __future__ import annotations

from pydantic import Field

from provision.conformance.parsers._base import Model, fail, tool_parser

TOOL = "nfs probe"
PROBE_DIR = ".provision-probe"
PAYLOAD_BYTES = 1 << 20

SCRIPT = r"""
import hashlib, mmap, os, socket, sys, time
mode, mp, arg = sys.argv[1], sys.argv[2], sys.argv[3]
def emit(k, v): print(f"{k}={v}", flush=True)
def unescape(s): return s.encode().decode("unicode_escape") if "\\" in s else s
def read_back(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT); how = "direct"
    except OSError:
        fd = os.open(path, os.O_RDONLY); how = "buffered"
    try:
        size = os.fstat(fd).st_size
        buf = mmap.mmap(-1, max(4096, -(-size // 4096) * 4096))
        got = 0
        while got < size:
            n = os.readv(fd, [memoryview(buf)[got:]])
            if n <= 0: break
            got += n
        return hashlib.sha256(buf[:got]).hexdigest(), got, how
    finally:
        os.close(fd)
d = os.path.join(mp, "PROBE_DIR")
if mode == "read":
    path = os.path.join(d, os.path.basename(arg))
    try:
        sha, n, how = read_back(path)
        emit("read_sha", sha); emit("read_bytes", n); emit("read_mode", how)
        os.unlink(path); emit("removed", "yes")
    except OSError as e:
        emit("read_error", f"{path}: {e.strerror or e}")
    sys.exit(0)
entry = None
with open("/proc/self/mountinfo") as f:
    for line in f:
        p = line.split()
        if unescape(p[4]) == mp:
            entry = p
if entry is None:
    emit("mounted", "no"); sys.exit(0)
sep = entry.index("-")
fstype = entry[sep + 1]
emit("mounted", "yes"); emit("fstype", fstype); emit("source", entry[sep + 2])
emit("mount_options", entry[5]); emit("super_options", entry[sep + 3] if len(entry) > sep + 3 else "")
st = os.statvfs(mp)
emit("free_bytes", st.f_bavail * st.f_frsize)
if not fstype.startswith("nfs"):
    emit("write_error", f"{fstype} is not NFS: nothing written"); sys.exit(0)
try:
    os.makedirs(d, exist_ok=True)
    now = time.time()
    for old in os.listdir(d):
        q = os.path.join(d, old)
        if old.startswith("keep-") and now - os.stat(q).st_mtime > 86400: os.unlink(q)
    payload = os.urandom(PAYLOAD_BYTES)
    sha = hashlib.sha256(payload).hexdigest()
    name = ("keep-" if arg == "keep" else "") + f"{socket.gethostname()}-{os.getpid()}-{os.urandom(6).hex()}.bin"
    path = os.path.join(d, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    emit("written_sha", sha); emit("written_bytes", len(payload))
    got_sha, n, how = read_back(path)
    emit("read_sha", got_sha); emit("read_bytes", n); emit("read_mode", how)
    if arg == "keep":
        emit("kept", name)
    else:
        os.unlink(path); emit("removed", "yes")
except OSError as e:
    emit("write_error", f"{e.filename or mp}: {e.strerror or e}")
""".replace("PROBE_DIR", PROBE_DIR).replace("PAYLOAD_BYTES", str(PAYLOAD_BYTES))


class NfsProbe(Model):
    """What the probe printed for one mountpoint (write mode) or one read of another node's file (read mode)."""

    mounted: bool | None = Field(default=None, description="None in read mode")
    fstype: str = ""
    source: str = ""
    mount_options: tuple[str, ...] = ()
    super_options: dict[str, str] = Field(default_factory=dict, description="flag -> '' , name -> value")
    free_bytes: int | None = None
    written_sha: str = ""
    written_bytes: int | None = None
    read_sha: str = ""
    read_bytes: int | None = None
    read_mode: str = ""
    kept: str = ""
    removed: bool = False
    write_error: str = ""
    read_error: str = ""


_INT = {"free_bytes", "written_bytes", "read_bytes"}
_TEXT = {"fstype", "source", "written_sha", "read_sha", "read_mode", "kept", "write_error", "read_error"}


@tool_parser(TOOL)
def parse_nfs_probe(text: str) -> NfsProbe:
    """The probe's `key=value` lines -> NfsProbe; an unknown key, a repeated key or nothing at all is a ParseError."""
    values: dict[str, object] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, eq, value = line.partition("=")
        if not eq:
            fail(TOOL, f"line without '=': {line[:80]!r}")
        if key in values:
            fail(TOOL, f"{key} printed twice")
        if key in _INT:
            values[key] = int(value)
        elif key in _TEXT:
            values[key] = value
        elif key in ("mounted", "removed"):
            values[key] = value == "yes"
        elif key == "mount_options":
            values[key] = tuple(o for o in value.split(",") if o)
        elif key == "super_options":
            values[key] = dict((o.partition("=")[0], o.partition("=")[2]) for o in value.split(",") if o)
        else:
            fail(TOOL, f"unknown key {key!r}")
    if not values:
        fail(TOOL, "no output")
    return NfsProbe.model_validate(values)
