"""The environment variables and defaults the stores and workers read, in a module that imports
nothing: the command line names them in its help without loading a database driver."""

STORE_ENV = "CRAITS_STORE"
"""The environment variable that names the store when no ``--store`` does."""
CACHE_ENV = "CRAITS_CACHE"
"""The folder a worker keeps the bots it fetched in, when ``--cache`` does not name one."""
CACHE_MAX = 2 * 2**30
"""How many bytes of unpacked bots a cache keeps, when ``--cache-max`` does not say."""
DATABASE_WAIT_ENV = "CRAITS_DATABASE_WAIT_S"
"""Seconds a worker, and the organizer's ``tournament run|resume --store``, wait for a lost database."""
