-- Craits tournaments and ladders in PostgreSQL: the SQLite store's tables, keyed by the
-- tournament's name so that one database holds many, plus each game's replay.
CREATE TABLE craits_tournaments (
    name TEXT PRIMARY KEY,
    source_text TEXT NOT NULL,
    source_path TEXT NOT NULL,
    schedule_digest TEXT NOT NULL,
    settings TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    finished_at DOUBLE PRECISION
);
CREATE TABLE craits_bots (
    tournament TEXT NOT NULL REFERENCES craits_tournaments (name) ON DELETE CASCADE,
    name TEXT NOT NULL,
    position INTEGER NOT NULL,
    kind TEXT NOT NULL,
    token TEXT NOT NULL,
    PRIMARY KEY (tournament, name)
);
CREATE TABLE craits_games (
    tournament TEXT NOT NULL REFERENCES craits_tournaments (name) ON DELETE CASCADE,
    game_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    table_no INTEGER NOT NULL,
    deal INTEGER NOT NULL,
    rotation INTEGER NOT NULL,
    seed BIGINT NOT NULL,
    seats TEXT NOT NULL,
    PRIMARY KEY (tournament, game_id),
    UNIQUE (tournament, ordinal)
);
CREATE TABLE craits_results (
    tournament TEXT NOT NULL,
    game_id TEXT NOT NULL,
    recorded_at DOUBLE PRECISION NOT NULL,
    digest TEXT NOT NULL,
    replay_path TEXT,
    lower_wins BOOLEAN NOT NULL,
    team_placings TEXT,
    aborted TEXT NOT NULL DEFAULT '',
    worker TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (tournament, game_id),
    FOREIGN KEY (tournament, game_id) REFERENCES craits_games (tournament, game_id) ON DELETE CASCADE
);
CREATE TABLE craits_seats (
    tournament TEXT NOT NULL,
    game_id TEXT NOT NULL,
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    total NUMERIC NOT NULL,
    "placing" INTEGER NOT NULL,
    status TEXT NOT NULL,
    decisions INTEGER NOT NULL,
    timeouts INTEGER NOT NULL,
    strikes INTEGER NOT NULL,
    illegal INTEGER NOT NULL,
    malformed INTEGER NOT NULL,
    disconnects INTEGER NOT NULL,
    default_actions INTEGER NOT NULL,
    think_s DOUBLE PRECISION NOT NULL,
    transport_s DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tournament, game_id, seat),
    FOREIGN KEY (tournament, game_id) REFERENCES craits_results (tournament, game_id) ON DELETE CASCADE
);
CREATE TABLE craits_hands (
    tournament TEXT NOT NULL,
    game_id TEXT NOT NULL,
    number INTEGER NOT NULL,
    dealer INTEGER NOT NULL,
    reason TEXT NOT NULL,
    scores TEXT NOT NULL,
    pressures TEXT NOT NULL,
    PRIMARY KEY (tournament, game_id, number),
    FOREIGN KEY (tournament, game_id) REFERENCES craits_results (tournament, game_id) ON DELETE CASCADE
);
CREATE TABLE craits_replays (
    tournament TEXT NOT NULL,
    game_id TEXT NOT NULL,
    body BYTEA NOT NULL,
    PRIMARY KEY (tournament, game_id),
    FOREIGN KEY (tournament, game_id) REFERENCES craits_results (tournament, game_id) ON DELETE CASCADE
);
-- A replay is JSON lines with hashes (hundreds of KB): lz4 stores it in a few ms where the
-- default pglz takes tens (a server built without lz4 keeps pglz).
DO $$
BEGIN
    ALTER TABLE craits_replays ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'lz4 is not available: replays are compressed with pglz';
END
$$;
