"""A bot that plays legally (random legal actions, with the Python kit) while it tries one
escape from its sandbox, named by argv[1] (its arguments follow). It prints one line,
``attempt NAME: blocked (...)`` or ``attempt NAME: ESCAPED (...)``, which the test reads in
the bot's log; an attempt that a limit ends (memory, CPU) prints nothing and the referee
says why the bot ended.

    python hostile.py read PATH...           open and read each PATH
    python hostile.py environ SECRET         look for SECRET in every /proc/*/environ it can read
    python hostile.py signal PID             SIGKILL and ptrace PID
    python hostile.py connect PORT...        TCP connections to 127.0.0.1:PORT
    python hostile.py write PATH...          create or append to each PATH
    python hostile.py fork N                 start N processes that sleep
    python hostile.py allocate BYTES         hold BYTES of memory
    python hostile.py fill-tmp BYTES         write BYTES into /tmp
    python hostile.py burn                   compute without end (between turns, in a thread)
    python hostile.py setsid TAG             leave a process behind, in a session of its own
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

from craits_bot import Bot, run

ATTEMPT, ARGS = sys.argv[1], sys.argv[2:]
said = threading.Event()


def say(result: str) -> None:
    print(f"attempt {ATTEMPT}: {result}", flush=True)
    said.set()


def read() -> str:
    for path in ARGS:
        try:
            with open(path, "rb") as f:
                return f"ESCAPED (read {len(f.read())} bytes of {path})"
        except OSError as err:
            last = f"{path}: {err.strerror}"
    return f"blocked ({last})"


def environ() -> str:
    secret = ARGS[0].encode()
    readable = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                text = f.read()
        except OSError:
            continue
        readable += 1
        if secret in text:
            return f"ESCAPED (found the secret in /proc/{pid}/environ)"
    return f"blocked (the secret is in none of the {readable} environments readable)"


def signal_() -> str:
    pid = int(ARGS[0])
    results = []
    try:
        os.kill(pid, signal.SIGKILL)
        return f"ESCAPED (SIGKILL sent to {pid})"
    except OSError as err:
        results.append(f"kill: {err.strerror}")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
        return f"ESCAPED (ptrace attached to {pid})"
    results.append(f"ptrace: {os.strerror(ctypes.get_errno())}")
    return f"blocked ({'; '.join(results)})"


def connect() -> str:
    for port in ARGS:
        try:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=2):
                return f"ESCAPED (connected to 127.0.0.1:{port})"
        except OSError as err:
            last = f"127.0.0.1:{port}: {err.strerror or err}"
    return f"blocked ({last})"


def write() -> str:
    for path in ARGS:
        try:
            with open(path, "ab") as f:
                f.write(b"written by a hostile bot\n")
            return f"ESCAPED (wrote into {path})"
        except OSError as err:
            last = f"{path}: {err.strerror}"
    return f"blocked ({last})"


def fork() -> str:
    children = []
    try:
        for _ in range(int(ARGS[0])):
            children.append(subprocess.Popen(["sleep", "20"]))
        return f"ESCAPED (started {len(children)} processes)"
    except OSError as err:
        return f"blocked (after {len(children)} processes: {err.strerror})"
    finally:
        for child in children:
            child.kill()
            child.wait()


def allocate() -> str:
    held = bytearray(int(ARGS[0]))  # zero-filled: every page is touched
    return f"ESCAPED (holding {len(held)} bytes)"


def fill_tmp() -> str:
    chunk = b"x" * 2**20
    written = 0
    try:
        with open("/tmp/fill", "wb") as f:
            while written < int(ARGS[0]):
                f.write(chunk)
                written += len(chunk)
        return f"ESCAPED (wrote {written} bytes into /tmp)"
    except OSError as err:
        return f"blocked (after {written // 2**20} MiB: {err.strerror})"
    finally:
        os.unlink("/tmp/fill")


def burn() -> str:
    started = time.process_time()
    while True:
        if time.process_time() - started > 30:
            return "ESCAPED (30 CPU seconds)"


def setsid() -> str:
    subprocess.Popen(["sleep", ARGS[0]], start_new_session=True)
    return "left a process behind (the test looks for it)"


ATTEMPTS = {"read": read, "environ": environ, "signal": signal_, "connect": connect, "write": write, "fork": fork,
            "allocate": allocate, "fill-tmp": fill_tmp, "burn": burn, "setsid": setsid}


def attempt() -> None:
    try:
        say(ATTEMPTS[ATTEMPT]())
    except Exception as err:
        say(f"blocked ({type(err).__name__}: {err})")


class Hostile(Bot):
    def __init__(self) -> None:
        self.rng = random.Random(7)

    def choose(self, request):
        if ATTEMPT == "burn":
            time.sleep(0.05)  # (a game long enough for its CPU limit on a fast machine too)
        return self.rng.choice(request.legal_actions)


if __name__ == "__main__":
    threading.Thread(target=attempt, daemon=True).start()
    if ATTEMPT not in ("allocate", "burn"):  # (those go on while it plays)
        said.wait(10)  # the attempt first (most take milliseconds), then the game
    run(Hostile(), argv=[])
