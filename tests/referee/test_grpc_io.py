"""gRPC's I/O layer is chosen before grpc is imported, and a user's own choice wins.

See ``craits.grpc_io``: the referee and the Python kit set ``GRPC_EXPERIMENTS`` for the I/O
layer that answers their small messages sooner, where the installed grpcio is known to have
the switch; a bot the referee launches gets the user's environment, not the referee's choice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from craits import grpc_io

ROOT = Path(__file__).resolve().parents[2]
VERSION = grpc_io.grpcio_version()
IN_RANGE = VERSION is not None and grpc_io.TESTED[0] <= VERSION < grpc_io.TESTED[1]


def _python(code: str, **env: str) -> str:
    """Run ``code`` in a fresh interpreter whose environment has no GRPC_EXPERIMENTS (nor GRPC_VERBOSITY) but ``env``'s."""
    clean = {k: v for k, v in os.environ.items() if k not in ("GRPC_EXPERIMENTS", "GRPC_VERBOSITY")}
    clean["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


SEEN = "import os, grpc; print(repr(os.environ.get('GRPC_EXPERIMENTS')))"


@pytest.mark.parametrize("package", ["server.transport", "server.checker", "server.cli", "craits_bot"])
def test_the_referee_and_the_kit_choose_the_io_layer_before_grpc_is_imported(package: str) -> None:
    expected = repr(grpc_io.EXPERIMENTS) if IN_RANGE else "None"
    assert _python(f"import {package}; {SEEN}") == expected


def test_a_users_own_choice_wins_even_an_empty_one() -> None:
    assert _python(f"import server.transport; {SEEN}", GRPC_EXPERIMENTS="") == "''"
    assert _python(f"import craits_bot; {SEEN}", GRPC_EXPERIMENTS="-event_engine_client") == "'-event_engine_client'"


def test_nothing_is_chosen_once_grpc_is_imported() -> None:
    assert _python(f"import grpc, server.transport; {SEEN}") == "None"


BOT_ENV = (
    "import json; from server.transport.launcher import bot_env; "
    "print(json.dumps(bot_env('127.0.0.1:1', 't', 'b').get('GRPC_EXPERIMENTS')))"
)


def test_a_launched_bot_gets_the_users_environment_not_the_referees_choice() -> None:
    assert json.loads(_python(BOT_ENV)) is None
    assert json.loads(_python(BOT_ENV, GRPC_EXPERIMENTS="-event_engine_listener")) == "-event_engine_listener"


def test_the_installed_grpcio_version_is_read_without_importing_it() -> None:
    from importlib import metadata

    assert tuple(int(part) for part in metadata.version("grpcio").split(".")[:2]) == VERSION
    assert _python("import sys, craits.grpc_io; print('grpc' in sys.modules)") == "False"


def test_the_kit_imports_neither_grpc_nor_asyncio_until_it_opens_a_grpc_stream() -> None:
    """A bot the referee launches on frames pays neither import (a third of the kit's start-up)."""
    seen = "import sys, craits_bot.runner; print([m for m in ('grpc', 'asyncio') if m in sys.modules])"
    assert _python(seen) == "[]"


QUIET = "import os, grpc; print(repr(os.environ.get('GRPC_VERBOSITY')))"


@pytest.mark.parametrize("package", ["server.transport", "server.cli", "craits_bot"])
def test_grpcs_own_info_lines_are_quieted_unless_the_user_chose(package: str) -> None:
    # (a failed TLS handshake: gRPC's "I... Handshake failed" line before the kit's own words)
    assert _python(f"import {package}; {QUIET}") == repr(grpc_io.VERBOSITY)
    assert _python(f"import {package}; {QUIET}", GRPC_VERBOSITY="DEBUG") == "'DEBUG'"
    assert json.loads(_python(BOT_ENV.replace("GRPC_EXPERIMENTS", "GRPC_VERBOSITY"))) is None
