"""Broken: ignores errors and crashes when a request comes again (repeated_request)."""

import sys

from _botlib import announcing, run


def choose(request):  # type: ignore[no-untyped-def]
    if request.repeated_request:
        raise RuntimeError(f"decision {request.decision_id} was already answered")
    return announcing(request)


if __name__ == "__main__":
    sys.exit(run(choose))
