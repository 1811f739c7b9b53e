"""Broken: answers with a legal action but a made-up decision id."""

import sys

from _botlib import announcing, run

if __name__ == "__main__":
    sys.exit(run(announcing, echo=lambda request: request.decision_id + 1000))
