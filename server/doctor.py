"""`craits doctor`'s checks: what each feature needs from this machine, whether it is here,
and the command that fixes it when it is not.

Each check returns a :class:`Finding`: ``ok``, ``missing`` (not installed), ``broken``
(installed but it does not work here: a bwrap that cannot make a sandbox) or ``warn`` (in
the way of a default, not of the README's commands: a port taken, little disk). A finding
names what needs it; the README's two commands can run when nothing they need is missing
or broken (:func:`ready_for`). The checks read the machine (PATH, /proc/sys, ports, disk)
and start nothing for long: the slowest is the sandbox's own test (about 10 ms).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from server.transport import sandbox

DEMO = "make demo"
TEST = "make test"
README_COMMANDS = (DEMO, TEST)

DEFAULT_PORTS = ((50051, "the referee (craits serve, bots that connect on their own)"),
                 (8080, "the board in the browser (craits web)"))
PG_VERSIONS = ("17", "16", "15", "14", "13")
DISK_LOW = 1 << 30
"""Less free space than this under logs/ is a warning (a game leaves about 35 KB; 1 MB in replay format 1)."""
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class Finding:
    item: str
    status: str
    """ok, missing, broken or warn."""
    detail: str
    fix: str = ""
    """The command (or step) that puts it right; empty when it is ok."""
    needed_by: tuple[str, ...] = ()
    """Which of the README's commands cannot run without it."""
    used_for: str = ""

    @property
    def blocking(self) -> bool:
        return self.status in ("missing", "broken") and bool(self.needed_by)


def apt(*packages: str) -> str:
    """The one line that installs Debian packages, as this user would type it."""
    return ("" if os.geteuid() == 0 else "sudo ") + f"apt-get install -y {' '.join(packages)}"


def check_sandbox() -> Finding:
    """bwrap present, and able to make a sandbox here (the very one a bot would get)."""
    used = "sandboxing launched bots: tournaments, ladders, play, check-bot (the demo plays without it)"
    if shutil.which("bwrap") is None:
        return Finding("sandbox", "missing", "bwrap not found (Debian package bubblewrap)", apt("bubblewrap"),
                       (TEST,), used)
    sandbox.problem.cache_clear()  # (PATH may have changed since the last look, in a test)
    why = sandbox.problem()
    if why is None:
        return Finding("sandbox", "ok", f"bwrap makes a sandbox here ({_version(['bwrap', '--version'])})",
                       used_for=used)
    if " not found " in why:  # (prlimit, setpriv)
        return Finding("sandbox", "missing", why, apt("util-linux"), (TEST,), used)
    return Finding("sandbox", "broken", why, userns_fix(), (TEST,), used)


def userns_fix(proc_sys: Path = Path("/proc/sys")) -> str:
    """What turns unprivileged user namespaces on, read from the kernel's switches that turn
    them off; the way out of a container that forbids them, when none of those is set."""
    switches = (
        ("kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone=1"),
        ("kernel/apparmor_restrict_unprivileged_userns", "1", "kernel.apparmor_restrict_unprivileged_userns=0"),
        ("user/max_user_namespaces", "0", "user.max_user_namespaces=15000"),
    )
    for name, off, on in switches:
        try:
            value = (proc_sys / name).read_text().strip()
        except OSError:
            continue
        if value == off:
            return f"{'' if os.geteuid() == 0 else 'sudo '}sysctl -w {on}"
    return ("run craits where bwrap may make namespaces (a container: with --privileged, or at least "
            "--security-opt seccomp=unconfined --cap-add SYS_ADMIN); for bots you trust: --no-sandbox")


def check_node(root: Path = ROOT) -> Finding:
    used = "the demo's JavaScript bot (clients/js)"
    if shutil.which("node") is None:
        return Finding("node.js", "missing", "node not found", apt("nodejs", "npm"), README_COMMANDS, used)
    version = _version(["node", "--version"])
    if not version:
        return Finding("node.js", "broken", "node does not start", apt("--reinstall", "nodejs"), README_COMMANDS,
                       used)
    if (root / "clients" / "js" / "package.json").is_file() and not (root / "clients" / "js" / "node_modules").is_dir():
        return Finding("node.js", "missing", f"node {version}, but the JavaScript bot's packages are not installed",
                       "make setup", README_COMMANDS, used)
    return Finding("node.js", "ok", f"node {version}", used_for=used)


JAVA_JARS = ("grpc-api", "grpc-core", "grpc-netty", "grpc-stub", "grpc-protobuf", "protobuf", "guava", "perfmark-api",
             "netty-codec-http2", "geronimo-annotation-1.3-spec")
"""Debian's jars the Java kit builds and runs with (/usr/share/java), by the name of their link."""
JAVA_PACKAGES = ("openjdk-17-jdk-headless", "libgrpc-java", "libprotobuf-java", "libnetty-java", "libperfmark-java",
                 "protobuf-compiler", "protobuf-compiler-grpc-java-plugin", "libgeronimo-annotation-1.3-spec-java")
CPP_PACKAGES = ("g++", "cmake", "pkg-config", "libgrpc++-dev", "libprotobuf-dev", "protobuf-compiler",
                "protobuf-compiler-grpc")


def check_java(jars: Path = Path("/usr/share/java")) -> Finding:
    """A JDK, protoc with grpc-java's plugin and Debian's grpc-java jars: the Java kit's Debian build."""
    used = "the Java bot kit (make kits: clients/java, built with Debian's grpc-java)"
    lacking = [tool for tool in ("java", "javac", "protoc", "grpc_java_plugin") if shutil.which(tool) is None]
    lacking += [f"{jar}.jar" for jar in JAVA_JARS if not (jars / f"{jar}.jar").is_file()]
    if lacking:
        return Finding("java kit", "missing", f"not found: {', '.join(lacking)}", apt(*JAVA_PACKAGES), (TEST,), used)
    version = _version(["javac", "-version"])
    grpc = sorted(jars.glob("grpc-core-*.jar"))
    found = f"{version}, grpc-java {grpc[-1].stem.removeprefix('grpc-core-')}" if grpc else version
    return Finding("java kit", "ok", f"{found} ({jars})", used_for=used)


def check_cpp() -> Finding:
    """g++, cmake, protoc with gRPC's C++ plugin, and gRPC C++ as pkg-config finds it: the C++ kit's build."""
    used = "the C++ bot kit (make kits: clients/cpp, built with Debian's gRPC C++)"
    lacking = [tool for tool in ("g++", "cmake", "protoc", "grpc_cpp_plugin", "pkg-config") if shutil.which(tool) is None]
    grpc = _version(["pkg-config", "--modversion", "grpc++"]) if shutil.which("pkg-config") else ""
    if not grpc:
        lacking.append("grpc++ (pkg-config)")
    if lacking:
        return Finding("c++ kit", "missing", f"not found: {', '.join(lacking)}", apt(*CPP_PACKAGES), (TEST,), used)
    return Finding("c++ kit", "ok", f"{_version(['g++', '--version'])}, gRPC C++ {grpc}, "
                   f"{_version(['cmake', '--version'])}", used_for=used)


def find_pg_bin(roots: Sequence[Path] = (Path("/usr/lib/postgresql"),)) -> Path | None:
    """The folder of PostgreSQL's ``initdb`` and ``pg_ctl``: Debian's versioned one, else the PATH."""
    for root in roots:
        for version in PG_VERSIONS:
            folder = root / version / "bin"
            if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
                return folder
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    return None


def check_postgres_client() -> Finding:
    used = "--store postgresql://... (tournaments, ladders and workers on PostgreSQL)"
    try:
        import psycopg

        libpq = psycopg.pq.version()
    except Exception as err:  # (an ImportError, or a libpq that does not load: either says why)
        return Finding("postgresql client", "missing", f"psycopg cannot be used: {err}", "make setup", (TEST,), used)
    return Finding("postgresql client", "ok", f"psycopg {psycopg.__version__}, libpq {libpq // 10000}.{libpq % 100}",
                   used_for=used)


def check_postgres_server(roots: Sequence[Path] = (Path("/usr/lib/postgresql"),)) -> Finding:
    used = "the tests' own PostgreSQL server, and a store on this machine"
    folder = find_pg_bin(roots)
    if folder is None:
        return Finding("postgresql server", "missing", "initdb and pg_ctl not found", apt("postgresql"), (TEST,),
                       used)
    return Finding("postgresql server", "ok", f"{folder} ({_version([str(folder / 'initdb'), '--version'])})",
                   used_for=used)


def check_chromium() -> Finding:
    used = "the browser tests (Debian's chromium, driven by playwright)"
    if shutil.which("chromium") is None:
        return Finding("chromium", "missing", "chromium not found", apt("chromium", "fonts-dejavu-core", "fontconfig"),
                       (TEST,), used)
    version = _version(["chromium", "--version"], timeout_s=20)
    if not version:
        return Finding("chromium", "broken", "chromium --version fails", apt("--reinstall", "chromium"), (TEST,), used)
    return Finding("chromium", "ok", version, used_for=used)


def check_caddy() -> Finding:
    used = "the test that runs deploy/ (its Caddyfile, with TLS, in front of two web processes)"
    if shutil.which("caddy") is None:
        return Finding("caddy", "missing", "caddy not found", apt("caddy"), (TEST,), used)
    version = _version(["caddy", "version"])
    if not version:
        return Finding("caddy", "broken", "caddy version fails", apt("--reinstall", "caddy"), (TEST,), used)
    return Finding("caddy", "ok", version, used_for=used)


def check_port(port: int, used: str, host: str = "127.0.0.1") -> Finding:
    item = f"port {port}"
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError as err:
            return Finding(item, "warn", f"{host}:{port} is taken ({err.strerror or err})",
                           f"ss -ltnp 'sport = :{port}' shows who holds it; or give the command --address HOST:PORT",
                           used_for=used)
    return Finding(item, "ok", f"{host}:{port} is free", used_for=used)


def check_grpc_io() -> Finding:
    import craits.grpc_io

    return Finding("grpc I/O layer", "ok", craits.grpc_io.describe(),
                   used_for="the referee's and the Python kit's gRPC (docs/referee.md, gRPC's I/O layer)")


def check_disk(logs: Path) -> Finding:
    used = "logs/: databases, replays and viewer pages (about 35 KB a game; 1 MB in replay format 1), logs"
    where = logs if logs.exists() else logs.parent
    try:
        free = shutil.disk_usage(where).free
    except OSError as err:
        return Finding("disk", "broken", f"{where}: {err.strerror or err}", f"mkdir -p {logs}", README_COMMANDS, used)
    text = f"{free / 2**30:.1f} GiB free under {where}"
    if free < DISK_LOW:
        return Finding("disk", "warn", text, "free some space on that disk, or give tournaments --out DIR elsewhere",
                       used_for=used)
    return Finding("disk", "ok", text, used_for=used)


def check_python() -> Finding:
    version = ".".join(map(str, sys.version_info[:3]))  # (an older one does not get this far: craits needs 3.11)
    return Finding("python", "ok", f"Python {version} ({sys.executable})", used_for="craits itself")


def diagnose(logs: Path | None = None) -> list[Finding]:
    """Every check, in the order `craits doctor` prints them."""
    checks: list[Callable[[], Finding]] = [
        check_python, check_sandbox, check_node, check_java, check_cpp, check_postgres_client, check_postgres_server, check_chromium,
        check_caddy,
        *(lambda port=port, used=used: check_port(port, used) for port, used in DEFAULT_PORTS),
        check_grpc_io, lambda: check_disk(logs or Path("logs")),
    ]
    return [check() for check in checks]


def ready_for(findings: Sequence[Finding]) -> dict[str, list[str]]:
    """For each of the README's commands, what it lacks (empty: it can run)."""
    return {command: [f.item for f in findings if f.blocking and command in f.needed_by]
            for command in README_COMMANDS}


def _version(argv: list[str], timeout_s: float = 10) -> str:
    """A program's first line of ``--version``, or "" when it does not run."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else ""
