"""A correct bot: announces "one card" whenever offered, else plays the first legal action.

``--linger`` keeps the process alive after the stream ends (a bot that never exits).
"""

import sys
import time

from _botlib import announcing, run

if __name__ == "__main__":
    code = run(announcing)
    if "--linger" in sys.argv:
        time.sleep(120)
    sys.exit(code)
