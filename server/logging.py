"""The one structlog configuration of the referee.

Every event is a JSON line in a file under ``logs/``; the same events go to
stderr through the readable console renderer when stderr is a terminal (and as
JSON lines at warning level and above when it is not, so a service manager still
sees problems). Context (tournament, game, hand, seat) is bound per unit of
work with :func:`bound` and lands in every event logged inside it; each game
runs in its own asyncio task, so bindings never leak between games.

Usage::

    from server.logging import configure_logging, get_logger, bound
    configure_logging("logs", name="serve")
    log = get_logger()
    with bound(game="g1"):
        log.info("game_started", players=4)
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import structlog

_FILE_HANDLER_NAME = "craits-json-file"
_CONSOLE_HANDLER_NAME = "craits-console"
_configured_path: Path | None = None

_shared_processors: list[Any] = [
    structlog.contextvars.merge_contextvars,
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]


class _LogFile(logging.handlers.WatchedFileHandler):
    """The JSON log file, reopened at its name when it is moved away (as logrotate moves it). A line
    it cannot write (a full disk) is said once (per process) on stderr, in one line, instead of
    logging's traceback for every event: the events are lost, nothing else."""

    said = False

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)
        elif not self.said:
            self.said = True
            with contextlib.suppress(OSError):
                sys.stderr.write(f"craits: cannot write the log {self.baseFilename}: {error.strerror or error}; "
                                 f"its events are lost until there is room\n")


class AppendedFile:
    """A text file only appended to, reopened at its name when it was moved away or removed (as
    logrotate moves it), looked at before each write as ``_LogFile`` does: a tournament's or a
    ladder's event log, open for as long as it runs (weeks, for a ladder), is rotated like every
    other log, without ``copytruncate``. Write, flush, close (or use it as a context manager)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).absolute()  # (reopened by name: after a chdir, still the same file)
        self._stream = self._open()

    def _open(self) -> Any:
        stream = self.path.open("a", encoding="utf-8")
        stat = os.fstat(stream.fileno())
        self._id = (stat.st_dev, stat.st_ino)
        return stream

    def write(self, text: str) -> int:
        try:
            stat = os.stat(self.path)
            moved = (stat.st_dev, stat.st_ino) != self._id
        except FileNotFoundError:
            moved = True
        if moved:
            with contextlib.suppress(OSError):  # (cannot create it again: keep writing where it went)
                stream = self._open()
                self._stream.close()
                self._stream = stream
        return int(self._stream.write(text))

    def flush(self) -> None:
        self._stream.flush()

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> AppendedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def configure_logging(
    log_dir: str | os.PathLike[str] | None = "logs",
    *,
    name: str = "referee",
    level: str | int = "info",
    console: bool | None = None,
) -> Path | None:
    """Configure structlog once for this process; return the JSON log file's path.

    ``log_dir`` None writes no file (tests that capture logs). ``console`` None means
    "readable on stderr if stderr is a terminal, else warnings as JSON"; False
    silences stderr. Calling it again replaces the previous handlers.
    """
    global _configured_path
    numeric = level if isinstance(level, int) else logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}: use debug, info, warning or error")
    root = logging.getLogger("craits")
    for handler in list(root.handlers):
        if handler.get_name() in (_FILE_HANDLER_NAME, _CONSOLE_HANDLER_NAME):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(numeric)
    root.propagate = False

    path: Path | None = None
    if log_dir is not None:
        directory = Path(log_dir).absolute()  # (kept and handed to worker processes: a later chdir must not move it)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{name}.jsonl"
        # (a moved log, as logrotate moves it, is reopened at its name by every process writing it)
        file_handler = _LogFile(path, encoding="utf-8")
        file_handler.set_name(_FILE_HANDLER_NAME)
        file_handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.dict_tracebacks,
                    structlog.processors.JSONRenderer(sort_keys=False),
                ],
                foreign_pre_chain=_shared_processors,
            )
        )
        root.addHandler(file_handler)

    tty = sys.stderr.isatty()
    if console is None or console:
        console_handler = logging.StreamHandler(sys.stderr)
        console_handler.set_name(_CONSOLE_HANDLER_NAME)
        if tty or console:
            renderer: Any = structlog.dev.ConsoleRenderer(colors=tty)
        else:
            renderer = structlog.processors.JSONRenderer()
            console_handler.setLevel(logging.WARNING)
        console_handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
                foreign_pre_chain=_shared_processors,
            )
        )
        root.addHandler(console_handler)

    if not root.handlers:
        quiet = logging.NullHandler()
        quiet.set_name(_CONSOLE_HANDLER_NAME)
        root.addHandler(quiet)  # else logging's last-resort handler would print warnings anyway

    structlog.configure(
        processors=[
            *_shared_processors,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        cache_logger_on_first_use=True,
    )
    _configured_path = path
    return path


class Throttle:
    """Lets each kind of a repeated event through once, then at most every ``every_s`` seconds,
    counting those it holds back (a database gone for hours is not a log line per second)."""

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self._seen: dict[object, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def allow(self, key: object) -> int | None:
        """None: hold this one back; else let it through, with how many were held back since the last."""
        now = time.monotonic()
        with self._lock:
            last, held = self._seen.get(key, (-math.inf, 0))
            if now - last < self.every_s:
                self._seen[key] = (last, held + 1)
                return None
            self._seen[key] = (now, 0)
            return held

    def reset(self) -> int:
        """Forget every kind (the trouble is over: the next one is said at once); returns how
        many were held back since their last."""
        with self._lock:
            held = sum(n for _, n in self._seen.values())
            self._seen.clear()
            return held


def get_logger(**initial: Any) -> Any:
    """A bound logger under the "craits" logging hierarchy (safe before configuration)."""
    return structlog.get_logger("craits", **initial)


@contextmanager
def bound(**context: Any) -> Iterator[None]:
    """Bind context (tournament=, game=, hand=, seat=) for everything logged inside."""
    with structlog.contextvars.bound_contextvars(**context):
        yield


def bind(**context: Any) -> None:
    """Bind context for the rest of the current task (e.g. the hand number as it changes)."""
    structlog.contextvars.bind_contextvars(**context)


def log_file() -> Path | None:
    """Where the JSON lines of this process go (None before configuration or without a file)."""
    return _configured_path
