"""deploy/ as an operator copies it, run without Docker: the services of deploy/compose.yaml
started as processes on this machine from the commands and health checks written there (the
compose-only names, db, web1, web2 and /competition, put to this machine's), Caddy from
Debian running deploy/Caddyfile as shipped (its host-specific parts set by the environment),
on the tests' PostgreSQL with real bots; web2 and worker2 run the commands of deploy/systemd's
units instead (the same processes without Docker). One topology for the whole file: every health check
passes, a page comes over HTTPS through Caddy, the workers play the ladder's games, a worker
stopped with SIGTERM finishes its games in hand, and with one web process stopped the other
answers every page. Docker itself (the images, the network) is not run here."""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.distributed.test_workers import ROOT, SLOW_BOT, SLOW_BOTS, query, wait_for
from tests.postgres_server import PostgresServer, free_port

DEPLOY = ROOT / "deploy"
LADDER = "deployladder"
LADDER_FILE = f"""name = "{LADDER}"
table_size = 2
seed = 4

[flags]
short_game = true

""" + SLOW_BOTS.replace('"0.002"', '"0.0005"')
"""Two bots that think half a millisecond a move: a round is two games of a second or two, long
enough to stop a worker holding one."""

COMPOSE_ENV = {"CRAITS_DB_PASSWORD": "0123abcd", "CRAITS_LADDER": LADDER, "CRAITS_DOMAIN": "localhost"}
"""What the operator exports before `docker compose up`."""
WORKERS = ("worker1", "worker2")
"""`--scale worker=2`: their $HOSTNAME."""


def find_caddy() -> str:
    caddy = shutil.which("caddy")
    if caddy is None:
        reason = "Caddy is not installed (Debian: apt-get install caddy)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; under CI it must be: scripts/system-deps.sh installs it")
        pytest.skip(reason)
    return caddy


def interpolate(value: str) -> str:
    """Compose's own substitution of COMPOSE_ENV: ${NAME}, ${NAME:-default}, ${NAME:?error}, $$."""
    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, how, other = match.group(1), match.group(2), match.group(3)
        if name in COMPOSE_ENV:
            return COMPOSE_ENV[name]
        if how == "?":
            raise AssertionError(f"compose would refuse to start: {other}")
        return other if how == "-" else ""
    return re.sub(r"\$\$|\$\{(\w+)(?::([-?])([^}]*))?\}", one, value)


@dataclass
class Service:
    """One service of compose.yaml as it runs here: its command, environment and health check,
    each string interpolated, then with the compose-only names replaced by this machine's."""

    name: str
    argv: list[str]
    env: dict[str, str]
    health: list[str] | None

    @classmethod
    def of(cls, compose: dict[str, Any], name: str, here: dict[str, str], entrypoint: list[str]) -> Service:
        spec = compose["services"][name]

        def local(value: str) -> str:
            value = interpolate(str(value))
            for there, instead in here.items():
                value = value.replace(there, instead)
            return value

        if "build" not in spec:  # (another image than deploy/Dockerfile's: its command is all there is)
            entrypoint = []
        argv = [local(a) for a in spec.get("entrypoint", entrypoint) + spec.get("command", [])]
        env = {key: local(value) for key, value in (spec.get("environment") or {}).items()}
        test = (spec.get("healthcheck") or {}).get("test")
        health = None
        if test is not None:
            kind, *check = [local(part) for part in test]
            health = {"CMD": check, "CMD-SHELL": ["sh", "-c", *check]}[kind]
        return cls(name, argv, env, health)


@dataclass
class Deploy:
    """The running topology: its folder (/competition), database, Caddy's HTTPS port and root
    certificate, and each process by its name (web1, web2, ladder, worker1, worker2, caddy)."""

    folder: Path
    url: str
    https_port: int
    root_cert: Path
    base_env: dict[str, str]
    services: dict[str, Service] = field(default_factory=dict)
    running: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def env(self, service: Service, **more: str) -> dict[str, str]:
        return {**self.base_env, **service.env, **more}

    def start(self, service: Service, **env: str) -> None:
        log = (self.folder / f"{service.name}.out").open("wb")
        self.running[service.name] = subprocess.Popen(
            service.argv, cwd=self.folder, env=self.env(service, **env), stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)

    def output(self, name: str) -> str:
        return (self.folder / f"{name}.out").read_text(errors="replace")

    def healthy(self, name: str, service: str | None = None) -> int:
        """The exit status of the health check of ``name`` (of its ``service``'s spec), run as written."""
        spec = self.services[service or name]
        assert spec.health is not None, f"{spec.name} has no health check"
        env = self.env(spec, HOSTNAME=name)
        return subprocess.run(spec.health, cwd=self.folder, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=30, check=False).returncode

    def https(self, path: str) -> tuple[int, bytes]:
        """GET through Caddy over HTTPS, trusting Caddy's own root certificate alone."""
        context = ssl.create_default_context(cafile=str(self.root_cert))
        request = urllib.request.Request(f"https://localhost:{self.https_port}{path}")
        try:
            with urllib.request.urlopen(request, timeout=15, context=context) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as failed:
            return failed.code, failed.read()

    def stop(self, name: str, timeout: float) -> int:
        proc = self.running[name]
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{name} did not stop on SIGTERM:\n{self.output(name)[-3000:]}") from None


def unit_command(unit: str, key: str, instance: str, here: dict[str, str], env: dict[str, str]) -> list[str]:
    """A deploy/systemd unit's ``key`` (ExecStart, ExecStartPre) as systemd runs it: ``%i`` its
    instance, ``${NAME}`` from its EnvironmentFile (``env``), then the unit's paths put to this
    machine's (``here``)."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string((DEPLOY / "systemd" / unit).read_text(encoding="utf-8"))
    argv = shlex.split(parser["Service"][key].replace("%i", instance))
    argv = [re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], arg) for arg in argv]
    for there, instead in here.items():
        argv = [arg.replace(there, instead) for arg in argv]
    return argv


def dockerfile_entrypoint() -> list[str]:
    line = next(line for line in (DEPLOY / "Dockerfile").read_text().splitlines() if line.startswith("ENTRYPOINT "))
    return list(json.loads(line.removeprefix("ENTRYPOINT ")))


class Up:
    """`docker compose up`: each service started once what it depends on is there (healthy, or
    run to its end), ``--scale worker=2``; the caddy service with this machine's ports, given
    by the environment to deploy/Caddyfile; the processes in ``units`` with their systemd
    unit's command."""

    def __init__(self, deploy: Deploy, caddy_env: dict[str, str], compose: dict[str, Any],
                 units: dict[str, list[str]]) -> None:
        self.deploy, self.caddy_env, self.compose, self.units = deploy, caddy_env, compose, units
        self.done: set[str] = {"db"}  # (the tests' PostgreSQL)

    def __call__(self, name: str) -> None:
        if name in self.done:
            return
        needs = self.compose["services"][name].get("depends_on") or {}
        for other in needs:
            self(other)
        for other, condition in needs.items():  # (once all are started: web1 and web2 start together)
            if condition["condition"] == "service_healthy":
                passes(self.deploy, other)
        deploy, service = self.deploy, self.deploy.services[name]
        if name == "migrate":  # (service_completed_successfully: the one that runs to its end)
            done = subprocess.run(service.argv, cwd=deploy.folder, env=deploy.env(service), capture_output=True,
                                  text=True, timeout=120, check=False)
            assert done.returncode == 0, done.stderr
        elif name == "worker":
            for worker in WORKERS:
                deploy.start(replace(service, name=worker, argv=self.units.get(worker, service.argv)), HOSTNAME=worker)
        else:
            service = replace(service, argv=self.units.get(name, service.argv))
            deploy.start(service, **(self.caddy_env if name == "caddy" else {}))
        self.done.add(name)


def passes(deploy: Deploy, name: str, service: str | None = None, timeout: float = 60.0) -> None:
    """Waits for the health check of ``name`` to pass (as Docker would, until its process exits)."""
    def check() -> bool:
        proc = deploy.running.get(name)
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{name} exited {proc.returncode}:\n{deploy.output(name)[-3000:]}")
        return deploy.healthy(name, service) == 0
    wait_for(f"{name}'s health check", check, timeout)


@pytest.fixture(scope="module")
def deploy(pg_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deploy]:
    find_caddy()
    if not pg_server.is_running():
        pg_server.start()
    url = pg_server.new_database()
    folder = tmp_path_factory.mktemp("competition")  # (the compose file's ../competition)
    folder.chmod(0o755)  # (sandboxed bots read their folder as another user)
    (folder / "bots").mkdir(mode=0o755)
    shutil.copy(SLOW_BOT, folder / "bots" / "slow_bot.py")
    (folder / "ladder.toml").write_text(LADDER_FILE, encoding="utf-8")
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    caddyfile = next(v.split(":")[0] for v in compose["services"]["caddy"]["volumes"] if "/etc/caddy/Caddyfile" in v)
    web = {name: free_port() for name in ("web1", "web2")}
    https_port, caddy_data = free_port(), folder / "caddy-data"
    common = {interpolate(compose["x-craits"]["environment"]["CRAITS_STORE"]): url, "/competition": str(folder)}
    here = {name: {**common, "0.0.0.0:8080": f"127.0.0.1:{port}", "127.0.0.1:8080": f"127.0.0.1:{port}"}
            for name, port in web.items()}
    here["caddy"] = {"/etc/caddy/Caddyfile": str((DEPLOY / caddyfile).resolve())}
    services = {name: Service.of(compose, name, here.get(name, common), dockerfile_entrypoint())
                for name in ("db", "migrate", "ladder", "web1", "web2", "worker", "caddy")}
    for service in services.values():  # (nothing left of Docker's network)
        said = " ".join([*service.argv, *(service.health or []), *service.env.values()])
        assert not re.search(r"@db:|\bweb[12]:|:8080|/competition\b", said), (service.name, said)
    bin_dir = Path(sys.executable).parent  # (craits and python, as in the image)
    unit_env = {"CRAITS_STORE": url, "CRAITS_LADDER": LADDER}  # (deploy/systemd/craits.env, filled in)
    unit_here = {"/opt/craits/.venv/bin/": f"{bin_dir}/", "/srv/competition": str(folder)}
    units = {"web2": unit_command("craits-web@.service", "ExecStart", str(web["web2"]), unit_here, unit_env),
             "worker2": unit_command("craits-worker@.service", "ExecStart", "worker2", unit_here, unit_env)}
    for unit, key, service in (("craits-ladder.service", "ExecStartPre", "migrate"),
                               ("craits-ladder.service", "ExecStart", "ladder")):  # (the same as compose's)
        assert unit_command(unit, key, "", unit_here, unit_env) == [str(bin_dir / "craits"),
                                                                      *services[service].argv[1:]], (unit, key)
    path = os.pathsep.join([str(bin_dir), str(pg_server.bin), os.environ.get("PATH", "")])
    base = {**os.environ, "PATH": path, "PYTHONUNBUFFERED": "1", "PGHOST": "127.0.0.1", "PGPORT": str(pg_server.port)}
    base.pop("CRAITS_STORE", None)  # (each service's own, from the compose file)
    base.pop("CRAITS_LADDER", None)
    done = Deploy(folder, url, https_port, caddy_data / "caddy" / "pki" / "authorities" / "local" / "root.crt",
                  base, services)
    try:
        up = Up(done, {"CRAITS_WEB": " ".join(f"127.0.0.1:{p}" for p in web.values()),
                       "CRAITS_HTTP_PORT": str(free_port()), "CRAITS_HTTPS_PORT": str(https_port),
                       "CRAITS_CADDY_ADMIN": f"127.0.0.1:{free_port()}", "XDG_DATA_HOME": str(caddy_data),
                       "XDG_CONFIG_HOME": str(folder / "caddy-config"), "HOME": str(folder)}, compose, units)
        for name in ("worker", "caddy"):  # (the workers first: they need the database only)
            up(name)
        yield done
    finally:
        for proc in done.running.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 3.0  # (a worker would finish its games in hand: not waited for here)
        for proc in done.running.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def answered(deploy: Deploy, path: str) -> tuple[int, bytes] | None:
    """What Caddy answers, or None while it does not listen yet."""
    try:
        return deploy.https(path)
    except (urllib.error.URLError, ConnectionError):
        return None


def in_hand(deploy: Deploy) -> dict[str, set[str]]:
    """Each worker's games in hand: started by it and not yet ended (its log, worker.jsonl)."""
    hands = {}
    for name in WORKERS:
        log = deploy.folder / "logs" / name / "worker.jsonl"
        lines = log.read_text().split("\n")[:-1] if log.exists() else []  # (whole lines only)
        events = [json.loads(line) for line in lines if line.strip()]
        started = {e["game"] for e in events if e["event"] == "game_started"}
        ended = {e["game"] for e in events if e["event"] in ("game_recorded", "duplicate_result_dropped")}
        if started - ended:
            hands[name] = started - ended
    return hands


def recorded(url: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in query(url, "SELECT game_id, worker FROM craits_results WHERE tournament = %s",
                                        LADDER)]


# ---------------------------------------------------------------------------------------------


def test_every_service_starts_and_its_health_check_passes(deploy: Deploy) -> None:
    checks = [("db", None), ("ladder", None), ("web1", None), ("web2", None), *((w, "worker") for w in WORKERS)]
    with ThreadPoolExecutor(len(checks)) as pool:  # (at once, as Docker runs them)
        for done in [pool.submit(passes, deploy, name, service) for name, service in checks]:
            done.result()


def test_a_page_comes_through_caddy_over_https_with_its_own_certificate(deploy: Deploy) -> None:
    status, body = wait_for("Caddy's certificate", lambda: deploy.root_cert.exists() and answered(deploy, "/"), 30)
    assert status == 200 and LADDER.encode() in body, body[:500]
    status, body = deploy.https("/api/progress")
    assert status == 200 and json.loads(body)["name"] == LADDER


def test_the_workers_play_the_ladders_games_and_the_pages_show_them(deploy: Deploy) -> None:
    games = wait_for("games recorded", lambda: recorded(deploy.url), 60)
    assert {worker for _, worker in games} <= set(WORKERS)
    wait_for("the games on the board, through Caddy", lambda: json.loads(deploy.https("/api/standings")[1])
             .get("games_recorded", 0) >= len(games), 30)  # (each web process reads the database again as it changes)


def test_a_worker_stopped_with_sigterm_finishes_its_games_in_hand(deploy: Deploy) -> None:
    hands = wait_for("a worker playing a game", lambda: in_hand(deploy), 60)
    name, games = next(iter(hands.items()))
    assert deploy.stop(name, 60) == 0, deploy.output(name)
    mine = {game for game, worker in recorded(deploy.url) if worker == name}
    assert games <= mine, (games, mine)
    assert deploy.healthy(name, "worker") != 0, "a stopped worker's health check fails"
    other = next(worker for worker in WORKERS if worker != name)
    assert deploy.healthy(other, "worker") == 0


def test_with_one_web_process_stopped_the_other_answers_every_page(deploy: Deploy) -> None:
    """At once, before Caddy's own check (every 5 s) leaves web1 out: the requests Caddy sends
    there fail and are tried again on web2."""
    assert deploy.stop("web1", 30) == 0, deploy.output("web1")
    for path in ("/", "/api/progress", "/api/standings", "/api/games") * 3:
        status, body = deploy.https(path)
        assert status == 200, (path, status, body[:300])
    assert deploy.healthy("web1") != 0 and deploy.healthy("web2") == 0
