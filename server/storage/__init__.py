"""Storage: the tournament store (SQLite; the interface a PostgreSQL store plugs into) and the replay files."""
