"""The beginner's bot: always legal_actions[0]. Legal everywhere, but it never announces
"one card" (the announced play's id is one above the plain play's)."""

import sys

from _botlib import first_legal, run

if __name__ == "__main__":
    sys.exit(run(first_legal))
