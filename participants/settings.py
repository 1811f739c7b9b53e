"""The keys and defaults of a roster's settings and comparisons, in a module that imports nothing:
``craits roster`` and ``craits compare`` name them in their help without loading the roster's
machinery (its database, the checker, the referee)."""

FAULTY_KEY = "validation_faults"
"""``craits roster set ROSTER validation_faults=warn|refuse``: see ``participants.admission.VALIDATION_FAULTS``."""
LIMIT_KEYS = {"build_time_s": "time_s", "build_memory": "memory", "build_processes": "processes",
              "build_output": "output", "build_disk": "disk", "build_files": "files", "packed": "packed",
              "unpacked": "unpacked", "files": "files", "scrimmage_games_per_hour": "scrimmage_games_per_hour",
              "uploads_per_hour": "uploads_per_hour", "uploads_per_day": "uploads_per_day",
              "output_budget": "output_budget"}
"""``craits roster set`` keys: the build's (``participants.admission.BuildLimits``), the upload's
(``participants.unpack.Bounds``), the scrimmages' quota, the uploads' (``participants.admission.upload_quota``) and the ladder's bots' output budget
(``Limits.output_budget`` in server/transport/sandbox.py)."""
UPLOADS_PER_HOUR = 20
UPLOADS_PER_DAY = 100
"""Each participant's uploads (versions stored, whatever their verdict) by default: a build
costs the machine up to its time limit, and a student fixing a bug needs a few an hour."""
DEFAULT_PANEL = ("default", "random")
"""The house bots at a comparison's table when ``--against`` does not say."""
DEFAULT_GAMES = 120
"""The most games a comparison plays when ``--games`` does not say."""
