#!/usr/bin/env bash
# Turn a machine into a Craits worker: fetch the project (and the bots' files, at the same
# relative paths as on the organizer's machine, or give their folder with --files), set it
# up, and play the queued games until stopped (SIGTERM finishes the games in hand).
#     CRAITS_STORE=postgresql://craits:PASSWORD@DB-HOST:5432/craits bash deploy/worker-host.sh [--concurrency N]
# Run from any folder: the worker's paths (--files, --log-dir, default logs/) are taken from
# the folder it is started in, as `craits worker`'s own are.
set -euo pipefail
: "${CRAITS_STORE:?set CRAITS_STORE=postgresql://user:password@db-host:5432/database}"
root="$(cd "$(dirname "$0")/.." && pwd)"
make -C "$root" setup >/dev/null
exec "$root/.venv/bin/craits" worker "$@"
