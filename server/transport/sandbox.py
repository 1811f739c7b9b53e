"""The sandbox a launched bot runs in: bubblewrap, a private view of the machine, limits.

A sandboxed bot sees, read-only: the system's programs and libraries (``/usr`` and the
``/bin``, ``/lib*`` links beside it), a few files of ``/etc`` (:data:`ETC_FILES`), the
interpreter running the referee with its prefix and virtual environment, the bot kits (the
Python packages ``craits`` and ``craits_bot``, the ``.proto`` the JavaScript bot loads, the Java and
C++ kits' builds under ``build/kits``), a Java runtime's files outside ``/usr`` (:func:`jvm_paths`), its
own folder and the paths its ``allow_read`` names. It has a private ``/tmp`` (and ``/dev/shm``) of limited size,
its own PID, network, IPC and UTS namespaces (``/proc`` shows only its own processes, and
its network is a loopback interface of its own: it reaches nothing outside the sandbox) and reaches the referee only through the referee's Unix socket,
bound in at :data:`SOCKET_INSIDE` (``CRAITS_SERVER=unix:/run/craits/referee.sock``).
Nothing else exists inside: not ``logs/``, the database, the replays, another bot's folder,
another bot's token or the referee's environment.

A referee running as root cannot rely on a user namespace (root's namespace still reads
every root-owned file it is shown), so there bwrap runs privileged and the bot becomes a
fresh uid of its own (``setpriv``, every capability dropped) before it starts; that uid
also makes the process limit (RLIMIT_NPROC counts per uid) a limit of that one bot. A
referee that is not root runs bwrap in an unprivileged user namespace instead.

Limits (:class:`Limits`): memory through a cgroup (v1 ``memory``, made inside the referee's
own group) where the referee may make one, else the address space (RLIMIT_AS, at
:data:`AS_FACTOR` times the memory limit); processes
and threads (RLIMIT_NPROC); CPU seconds per game through a ``cpuacct`` cgroup that the
launcher watches, else per launch (RLIMIT_CPU: SIGXCPU, then SIGKILL a second later); open
files (RLIMIT_NOFILE); the size of ``/tmp``; output (kept by the launcher). A bot that its memory or CPU limit ends gets that as its exit reason
(:meth:`Jail.verdict`: "killed: memory limit 512 MiB").

Every sandbox dies with the referee (``--die-with-parent``), and everything in it dies with
the bot (the bot is the PID namespace's only child of its init). A referee that is killed
cannot remove its bots' cgroups; the next one to sandbox a bot in the same place removes
the empty ones whose referee is gone (:func:`sweep_left_groups`), so a ladder that runs for
weeks through crashes and restarts does not pile them up.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

from craits import frames

from server.logging import get_logger
from server.transport.commands import JS_KIT_BOT

log = get_logger()

SANDBOXES = ("bwrap", "none")
"""The values of a tournament file's ``sandbox`` key."""

SOCKET_INSIDE = "/run/craits/referee.sock"
"""Where the referee's Unix socket appears inside the sandbox."""
FRAMES_INSIDE = "/run/craits/frames.sock"
"""Where the referee's frames socket appears inside the sandbox (``CRAITS_FRAMED_SOCKET``: the
same messages as gRPC's, in frames, for a kit that speaks them; ``craits.frames``)."""

ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
             "/etc/localtime", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/hosts")
"""The only files of /etc a bot sees: the dynamic loader's, Debian's program links, the time
zone, and the world-readable user and host lists (no secrets in any of them)."""

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Bound read-only (or re-created as the same symbolic links, on a merged-/usr system)."""

UID_BASE = 1 << 20
UID_SPAN = 1 << 24
"""A root referee runs each bot as a fresh uid in [UID_BASE, UID_BASE + UID_SPAN): it owns
nothing and is in no group, so it reads only what every user may read."""

SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs")
AS_FACTOR = 4
"""Without a memory cgroup the limit is one of address space, this many times ``memory``:
runtimes reserve far more than they use (node will not start in less than about 1 GiB)."""
MiB = 2**20


@dataclass(frozen=True, slots=True)
class Limits:
    """What one launched bot may use (a tournament file's ``[limits]``, same names)."""

    memory: int = 512 * MiB
    """Bytes of memory: of the bot's cgroup (what it holds, its /tmp included), else of its address space."""
    processes: int = 64
    """Processes and threads together (node alone starts about a dozen threads)."""
    cpu_s: int = 60
    """CPU seconds of one game (of one launch where no cpuacct cgroup can be made), whatever the clocks
    say: a bot that computes between its turns is stopped."""
    open_files: int = 256
    """Open files and sockets at once."""
    tmp: int = 64 * MiB
    """Bytes of the bot's private /tmp (and as many of its /dev/shm)."""
    output: int = 8 * MiB
    """Bytes of the bot's stdout and stderr kept per game (the rest is discarded)."""
    output_budget: int = 64 * MiB
    """Bytes of the bot's output kept on disk across all its launches: a launch that would pass
    it removes the bot's oldest logs first, and its log says what went (the newest are kept)."""


SIZE_LIMITS = ("memory", "tmp", "output", "output_budget")
"""The limits that are sizes ("512 MiB"); the others are whole numbers."""


LIMIT_NAMES = tuple(f.name for f in fields(Limits))


def parse_limit(key: str, value: object) -> int:
    """One limit as a tournament file's ``[limits]`` or ``check-bot --limit`` writes it: a size
    ("512 MiB", "64M", bytes) for memory, tmp and output, a whole number of at least 1 for the
    rest. ValueError saying what is expected (the caller names where)."""
    if key not in LIMIT_NAMES:
        raise ValueError(f"unknown limit {key!r}; the limits are {', '.join(LIMIT_NAMES)}")
    if key in SIZE_LIMITS:
        return parse_size(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"must be a whole number of at least 1, got {value!r}")
    return value


def size_text(n: int) -> str:
    """512 MiB, 2 GiB, 1000 bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", MiB), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


_SIZE = re.compile(r"\s*(\d+)\s*(?:([KMGT])(?:i?B)?|B|bytes)?\s*", re.IGNORECASE)


def parse_size(value: object) -> int:
    """A size as a tournament file writes it: 1048576, "512M", "512 MiB", "2 GiB", "64KiB".

    Raises ValueError saying what is expected."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and (match := _SIZE.fullmatch(value)):
        number = int(match[1]) * (1024 ** ("KMGT".index(match[2].upper()) + 1) if match[2] else 1)
    else:
        raise ValueError(f'must be a size like "512 MiB" or a number of bytes, got {value!r}')
    if number <= 0:
        raise ValueError(f"must be above 0, got {value!r}")
    return number


class SandboxError(Exception):
    """Launched bots cannot be sandboxed here (the message says why and what to do)."""


# ---------------------------------------------------------------------------- can it run here


@functools.cache
def problem() -> str | None:
    """Why bwrap cannot sandbox bots here, or None. Checked once (about 10 ms), by starting
    the sandbox a bot would get, without its folders, and running ``true`` in it."""
    if not sys.platform.startswith("linux"):
        return "bubblewrap runs on Linux only"
    for tool in ("bwrap", "prlimit", "setpriv") if os.geteuid() == 0 else ("bwrap", "prlimit"):
        if shutil.which(tool) is None:
            package = "bubblewrap" if tool == "bwrap" else "util-linux"
            return f"{tool} not found (Debian package {package})"
    argv = [*_system_view(tmp_bytes=MiB), "--", *_drop(UID_BASE), "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        return f"bwrap does not start: {err}"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"bwrap cannot make a sandbox here ({said}; are user namespaces turned off?)"
    return None


def check() -> None:
    """Raise :class:`SandboxError` when bots cannot be sandboxed here, with the way out."""
    why = problem()
    if why is not None:
        raise SandboxError(
            f"cannot sandbox launched bots: {why}; install bubblewrap, or for bots you trust "
            'set sandbox = "none" in the tournament file (--no-sandbox on the command line)')


def mode(*, unsandboxed: bool, launches: bool) -> str:
    """The sandbox a command runs its launched bots in ("bwrap" or "none"); SandboxError
    when they are to be sandboxed and cannot be (a command with no launched bot needs nothing)."""
    if unsandboxed:
        return "none"
    if launches:
        check()
    return "bwrap"


UNSANDBOXED = ("warning: launched bots run without a sandbox: each can read and write whatever this user can "
               "(the database, logs, replays, other bots' files and tokens), signal its processes and use the network")
"""The one line said when launched bots run unsandboxed."""


# ---------------------------------------------------------------------------- what a bot sees


def _system_view(*, tmp_bytes: int) -> list[str]:
    """bwrap and its options for the system part: namespaces, /usr, /etc, /proc, /dev, /tmp."""
    argv = ["bwrap", "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:  # privileged bwrap, no user namespace: the bot then drops to a uid of its own
        argv += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                 "--cap-add", "CAP_SETUID,CAP_SETGID"]
    else:
        argv += ["--unshare-all"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--perms", "0755", "--dir", "/etc"]
    for path in ETC_FILES:
        if os.path.exists(path):
            argv += ["--ro-bind", path, path]
    argv += _read_only(jvm_paths())  # (a JVM's /etc files, read-only: java starts with no option added)
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", "/dev/shm"]  # (POSIX semaphores, node)
    return argv


JVM_HOME = "/usr/lib/jvm"
"""Where Debian installs Java runtimes: their configuration files are links out of /usr."""


@functools.cache
def jvm_paths(home: str = JVM_HOME) -> tuple[str, ...]:
    """What the Java runtimes under ``home`` link to outside the system folders, to be shown
    read-only: Debian's OpenJDK keeps its configuration in ``/etc/java-17-openjdk`` (without it
    ``java`` stops at start with "Error loading java.security file") and its certificates in
    ``/etc/ssl/certs/java/cacerts``; a folder named for Java is shown whole, another file alone.
    Nothing secret: the package's own settings and the public trust store. Found once (a walk of
    about 900 files, 40 ms); empty where no JVM is installed."""
    found: set[str] = set()
    for root, dirs, names in os.walk(home):
        for name in (*dirs, *names):
            link = os.path.join(root, name)
            if not os.path.islink(link):
                continue
            target = os.path.realpath(link)
            if any(_inside(target, s) for s in SYSTEM_DIRS) or not os.path.exists(target):
                continue
            parts = Path(target).parts
            if len(parts) > 2 and parts[1] == "etc" and parts[2].startswith("java"):
                target = os.path.join("/etc", parts[2])
            found.add(target)
    return tuple(sorted(found))


def _drop(uid: int) -> list[str]:
    """For a root referee: become ``uid`` (no groups, no capabilities) just before the bot starts."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--"]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _read_only(paths: Iterable[str]) -> list[str]:
    """bwrap options binding ``paths`` read-only at the same place; each folder on the way is
    made world-readable (bwrap's own would be 0700), a path inside another is bound once."""
    argv: list[str] = []
    made = {"/", "/tmp", "/etc", "/run"}
    kept: list[str] = []
    for path in sorted({os.path.normpath(p) for p in paths}):
        if any(_inside(path, k) for k in kept) or any(_inside(path, s) for s in (*SYSTEM_DIRS, "/proc", "/dev")):
            continue
        kept.append(path)
        parts = Path(path).parts
        for depth in range(2, len(parts)):
            folder = str(Path(*parts[:depth]))
            if folder not in made:
                made.add(folder)
                argv += ["--perms", "0755", "--dir", folder]
        argv += ["--ro-bind", path, path]
    return argv


@functools.cache
def runtime_paths() -> tuple[str, ...]:
    """What every bot may read beside the system: this interpreter (its prefix and virtual
    environment) and the bot kits (the Python packages, the protocol's .proto, the JavaScript
    kit's folder)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for package in ("craits", "craits_bot"):
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(package)
            if spec is not None:
                paths.update(spec.submodule_search_locations or [])
    proto = Path(__file__).resolve().parents[2] / "proto" / "craits"
    if proto.is_dir():
        paths.add(str(proto))
    if (JS_KIT_BOT.parent / "node_modules").is_dir():  # (the JavaScript kit and its packages: craits-js-bot)
        paths.add(str(JS_KIT_BOT.parent))
    for kit in ("java", "cpp"):  # (the Java and C++ kits as `make kits` built them: java-bot, the jar, the library)
        paths.add(str(proto.parents[1] / "build" / "kits" / kit))
    return tuple(sorted(os.path.realpath(p) for p in paths if os.path.isdir(p)))


def _script(command: Sequence[str], cwd: str | None) -> str | None:
    """The file ``command`` runs (``./bot``, ``python bot.py``, ``node bot.js``), absolute, if any."""
    base = cwd or os.getcwd()
    if os.sep in command[0]:
        program = os.path.abspath(os.path.join(base, command[0]))
        system = (*SYSTEM_DIRS, *runtime_paths(), sys.prefix)
        if not any(_inside(p, s) for p in (program, os.path.realpath(program)) for s in system):
            return program  # the bot itself (./bot), not an interpreter
    for arg in command[1:]:
        if arg in ("-m", "-c", "-e"):
            return None
        if arg.endswith(SCRIPT_SUFFIXES) and not arg.startswith("-"):
            return os.path.abspath(os.path.join(base, arg))
    return None


def bot_folder(command: Sequence[str], cwd: str | os.PathLike[str] | None) -> str | None:
    """The folder a bot sees as its own: ``cwd``, else the folder of the script it runs, else none."""
    if cwd is not None:
        return os.path.abspath(cwd)
    script = _script(command, None)
    return os.path.dirname(script) if script is not None else None


def unreadable(*paths: str) -> str | None:
    """Under a root referee a sandboxed bot runs as a uid of its own, which reads only what
    every user may read: the first of ``paths`` (its folder, its script) it could not read,
    said with the fix, or None."""
    if os.geteuid() != 0:
        return None
    for path in paths:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue  # (a missing script is command_problem's to report)
        need = 0o005 if os.path.isdir(path) else 0o004
        if mode & need != need:
            return (f"{path} is not readable by other users, and a sandboxed bot reads only what every "
                    f"user may read (chmod a+rX {path})")
    return None


def outside_problem(command: Sequence[str], cwd: str | os.PathLike[str] | None,
                    allow_read: Sequence[str] = (), *, command_line: bool = False) -> str | None:
    """Why ``command`` cannot work sandboxed (its folder or script unreadable, its script or
    program outside what the bot sees), or None. Checked with the tournament file, before any
    game; ``command_line``: a bot given on ``craits play``'s or ``serve``'s command line, which
    has no cwd or allow_read (the advice says what it can do instead)."""
    folder = bot_folder(command, cwd)
    script = _script(command, None if cwd is None else str(cwd))
    if why := unreadable(*(p for p in (folder, script) if p is not None)):
        return why
    visible = [*SYSTEM_DIRS, *runtime_paths(), *(os.path.realpath(p) for p in allow_read)]
    if folder is not None:
        visible.append(os.path.realpath(folder))
    if script is not None and not any(_inside(os.path.realpath(script), v) for v in visible):
        return (f"{script} is outside the bot's folder {folder}: a sandboxed bot sees only its own folder "
                "(move it in, set cwd, or add its folder to allow_read)")
    program = shutil.which(command[0]) if os.sep not in command[0] else None
    if program is not None and not any(_inside(os.path.realpath(program), v) for v in visible):
        fix = (f"give its path, {program}, for its folder to be the bot's (or --no-sandbox for a trusted bot)"
               if command_line else "add its folder to allow_read")
        return f"{program} is outside what a sandboxed bot sees (the system, this Python, its folder): {fix}"
    return None


# ---------------------------------------------------------------------------- the referee's socket


def socket_path() -> str:
    """A fresh path for the referee's Unix socket, in a folder only this user may enter."""
    return os.path.join(tempfile.mkdtemp(prefix="craits-referee-"), "referee.sock")


def open_socket(path: str) -> None:
    """Let a bot's uid connect (the folder around it keeps everyone else out)."""
    os.chmod(path, 0o666)


def frames_socket_path(path: str) -> str:
    """The frames socket beside the referee's socket ``path`` (removed with it)."""
    return os.path.join(os.path.dirname(path), "frames.sock")


def remove_socket(path: str) -> None:
    for each in (path, frames_socket_path(path)):
        with contextlib.suppress(OSError):
            os.unlink(each)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(path))


# ---------------------------------------------------------------------------- one launch


def _own_cgroup(controller: str) -> Path | None:
    """This process's (v1) cgroup of ``controller``, if this process may make groups in it."""
    try:
        with open("/proc/self/cgroup") as lines:
            for line in lines:
                _, names, where = line.rstrip("\n").split(":", 2)
                if controller in names.split(","):
                    folder = Path("/sys/fs/cgroup", controller, where.lstrip("/"))
                    return folder if (folder / "cgroup.procs").is_file() and os.access(folder, os.W_OK) else None
    except (OSError, ValueError):
        return None
    return None


GROUP_PREFIX = "craits-bot-"
"""A bot's cgroup is named ``craits-bot-<pid of the referee that made it>-<random>``."""
UNOWNED_GROUP_AGE_S = 3600.0
"""An empty bot group whose name gives no owner (an older referee's) is swept after this long."""

_swept: set[Path] = set()


def _make_group(controller: str, settings: Mapping[str, int]) -> Path | None:
    """A fresh cgroup of ``controller`` inside this process's own, with ``settings`` written
    (a setting whose file is missing is skipped: swap accounting may be off), or None."""
    root = _own_cgroup(controller)
    if root is None:
        return None
    if root not in _swept:
        _swept.add(root)
        sweep_left_groups(root)
    group = root / f"{GROUP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    try:
        group.mkdir()
        for name, value in settings.items():
            with contextlib.suppress(FileNotFoundError):
                (group / name).write_text(str(value))
    except OSError as err:
        with contextlib.suppress(OSError):
            group.rmdir()
        log.warning("sandbox_no_cgroup", controller=controller, error=str(err), effect="an rlimit instead")
        return None
    return group


def sweep_left_groups(root: Path) -> int:
    """Remove the empty bot groups in ``root`` that a referee left behind (it was killed before
    it could release them); return how many. A group whose referee still runs is kept, and so
    is any group with a process in it: only empty folders of the dead go."""
    removed = 0
    now = time.time()
    try:
        groups = [entry for entry in root.iterdir() if entry.name.startswith(GROUP_PREFIX)]
    except OSError:
        return 0
    for group in groups:
        owner = group.name[len(GROUP_PREFIX):].split("-", 1)[0]
        try:
            if owner.isdigit() and "-" in group.name[len(GROUP_PREFIX):]:
                if _alive(int(owner)):
                    continue
            elif now - group.stat().st_mtime < UNOWNED_GROUP_AGE_S:
                continue
            if (group / "cgroup.procs").read_text().split():
                continue
            group.rmdir()
            removed += 1
        except OSError:  # gone meanwhile, busy, or not ours to remove
            continue
    if removed:
        log.info("sandbox_groups_swept", folder=str(root), removed=removed,
                 why="left behind by referees that ended without releasing them")
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _empty_and_remove(group: Path) -> None:
    """SIGKILL whatever is left in ``group`` and remove it."""
    for _ in range(100):
        try:
            for pid in (group / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)  # (the killed are still leaving)
    log.warning("sandbox_group_left", group=str(group))


class Jail:
    """One sandboxed launch: the command line that starts it, its cgroups, what became of it.

    CPU seconds are counted per game where a ``cpuacct`` group could be made (the launcher
    polls :meth:`over_cpu` and :meth:`new_game` starts a game's count afresh, so a bot kept
    between games has the same allowance in each); elsewhere RLIMIT_CPU counts the launch."""

    def __init__(self, argv: list[str], limits: Limits, memory_group: Path | None = None,
                 cpu_group: Path | None = None) -> None:
        self.argv = argv
        self.limits = limits
        self.memory_group = memory_group
        self.cpu_group = cpu_group
        self.oom_killed = False
        self.cpu_killed = False
        self._cpu_from = 0.0

    def verdict(self, returncode: int | None) -> str:
        """"killed: memory limit 512 MiB" / "killed: CPU limit 60 s" when a limit ended the bot, else ""."""
        if self._out_of_memory():
            return f"killed: memory limit {size_text(self.limits.memory)}"
        if self.cpu_killed or returncode in (128 + signal.SIGXCPU, -signal.SIGXCPU):
            return f"killed: CPU limit {self.limits.cpu_s} s"
        return ""

    def _out_of_memory(self) -> bool:
        """Whether the kernel killed something of the bot's for its memory limit."""
        if self.memory_group is not None and not self.oom_killed:
            with contextlib.suppress(OSError, ValueError):
                control = (self.memory_group / "memory.oom_control").read_text().split()
                self.oom_killed = "oom_kill" in control and int(control[control.index("oom_kill") + 1]) > 0
        return self.oom_killed

    def _cpu_s(self) -> float:
        """CPU seconds the whole sandbox has used (0 without a cpuacct group)."""
        if self.cpu_group is None:
            return 0.0
        try:
            return int((self.cpu_group / "cpuacct.usage").read_text()) / 1e9
        except (OSError, ValueError):
            return 0.0

    def new_game(self) -> None:
        """The bot starts another game: its CPU seconds count from zero again."""
        self._cpu_from = self._cpu_s()

    def over_cpu(self) -> bool:
        """Whether this game's CPU seconds passed the limit (remembered: see :meth:`verdict`)."""
        if self.cpu_group is not None and self._cpu_s() - self._cpu_from > self.limits.cpu_s:
            self.cpu_killed = True
        return self.cpu_killed

    def release(self) -> None:
        """Kill whatever is left in the bot's cgroups and remove them. Safe to call twice."""
        self._out_of_memory()  # (remembered: the group is gone after this)
        for group in (self.memory_group, self.cpu_group):
            if group is not None:
                _empty_and_remove(group)
        self.memory_group = self.cpu_group = None


@dataclass(frozen=True, slots=True)
class Sandbox:
    """How a referee confines the bots it launches."""

    socket: str | None
    """The referee's Unix socket (outside), bound in at :data:`SOCKET_INSIDE` (None: a build, which
    talks to no referee)."""
    limits: Limits = field(default_factory=Limits)
    frames: str | None = None
    """The referee's frames socket (outside), bound in at :data:`FRAMES_INSIDE` (None: none)."""

    @property
    def server(self) -> str:
        """CRAITS_SERVER for a sandboxed bot."""
        return f"unix:{SOCKET_INSIDE}"

    def env(self, token: str, name: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A sandboxed bot's whole environment: nothing of the referee's, only where and who."""
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8",
               "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        env.update(extra or {})
        env.update({"CRAITS_SERVER": self.server, "CRAITS_TOKEN": token, "CRAITS_BOT_NAME": name})
        if self.frames is not None:
            env[frames.ENV] = FRAMES_INSIDE
        return env

    def confine(self, command: Sequence[str], *, cwd: str | os.PathLike[str] | None,
                allow_read: Sequence[str] = (), watched: bool = True, writable: bool = False) -> Jail:
        """The command line that runs ``command`` sandboxed (in ``cwd``; without one, in the
        script's folder, with the files its arguments name made absolute and readable).

        ``watched``: the caller polls :meth:`Jail.over_cpu` (the launcher does), so CPU seconds
        may be counted per game; else the kernel counts them per launch. ``writable``: ``cwd``
        may be written (a submitted bot's build); under a root referee it is handed to the
        sandbox's uid for that (the caller takes it back)."""
        limits = self.limits
        folder = bot_folder(command, cwd)
        command = list(command)
        files: list[str] = []
        if cwd is None and os.sep in command[0] and not os.path.isabs(command[0]):
            command[0] = os.path.abspath(command[0])  # (the sandbox starts in the bot's folder, not here)
        if cwd is None:  # a command line's files (its script, a strategy file), absolute and readable
            for i, arg in enumerate(command[1:], 1):
                if not arg.startswith("-") and os.path.isfile(arg):
                    command[i] = os.path.abspath(arg)
                    files.append(command[i])
        if command[0] in ("python", "python3"):  # as in a tournament file: the interpreter running craits
            command[0] = sys.executable
        elif os.sep not in command[0] and (program := shutil.which(command[0])) is not None:
            command[0] = program  # found with the referee's PATH, not the bot's
        view = _system_view(tmp_bytes=limits.tmp)
        uid = UID_BASE + secrets.randbelow(UID_SPAN)
        read_only = [*runtime_paths(), *files, *map(os.path.abspath, allow_read)]
        if folder and writable:  # (its parents world-enterable, as _read_only makes them: `cd $PWD` works)
            parents = [str(Path(*Path(folder).parts[:depth])) for depth in range(2, len(Path(folder).parts))]
            view += [*_read_only(read_only), *(a for p in parents for a in ("--perms", "0755", "--dir", p)),
                     "--bind", folder, folder]
            if os.geteuid() == 0:
                _hand_over(folder, uid)
        else:
            view += _read_only([*read_only, *([folder] if folder else [])])
        view += ["--perms", "0755", "--dir", "/run"]
        if self.socket is not None:
            view += ["--perms", "0755", "--dir", os.path.dirname(SOCKET_INSIDE), "--ro-bind", self.socket, SOCKET_INSIDE]
            if self.frames is not None:
                view += ["--ro-bind", self.frames, FRAMES_INSIDE]
        view += ["--chdir", folder or "/tmp"]
        rlimits = [f"--nproc={limits.processes}", f"--nofile={limits.open_files}"]
        memory_group = _make_group("memory", {"memory.limit_in_bytes": limits.memory,
                                              "memory.memsw.limit_in_bytes": limits.memory})
        if memory_group is None:
            rlimits.append(f"--as={AS_FACTOR * limits.memory}")
        cpu_group = _make_group("cpuacct", {}) if watched else None
        if cpu_group is None:  # counted per launch by the kernel, not per game by the launcher
            rlimits.append(f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}")
        argv = ["prlimit", *rlimits, "--", *view, "--", *_drop(uid), *command]
        groups = [str(g / "cgroup.procs") for g in (memory_group, cpu_group) if g is not None]
        if groups:  # a shell joins the groups and becomes prlimit: all of the bot is in them
            argv = ["/bin/sh", "-c", _JOIN, "craits-sandbox", *groups, "--", *argv]
        return Jail(argv, limits, memory_group, cpu_group)


def _hand_over(folder: str, uid: int) -> None:
    """Make ``folder`` and everything in it ``uid``'s (a root referee's build runs as that uid)."""
    for root, dirs, names in os.walk(folder):
        for name in (*dirs, *names):
            os.lchown(os.path.join(root, name), uid, uid)
    os.chown(folder, uid, uid)


_JOIN = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
"""The shell that puts itself into each cgroup named before ``--``, then runs the rest."""
