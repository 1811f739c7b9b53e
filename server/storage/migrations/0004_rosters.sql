-- Rosters in PostgreSQL (issue 25): a roster's participants (tokens only as salted scrypt
-- hashes), their versions and the roster's settings, keyed by the roster's name so that one
-- database holds many; every upload and every admitted version's built folder (a tar.gz)
-- whole in craits_files by its SHA-256, never overwritten; and, per ladder, the bots a
-- worker plays from those files (its command, and the hash of the folder it runs in).
CREATE TABLE craits_files (
    sha256 TEXT PRIMARY KEY,
    size BIGINT NOT NULL,
    body BYTEA NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE TABLE craits_roster_participants (
    roster TEXT NOT NULL,
    name TEXT NOT NULL,
    email TEXT NOT NULL DEFAULT '',
    team TEXT NOT NULL DEFAULT '',
    token_id TEXT UNIQUE,
    salt BYTEA,
    digest BYTEA,
    revoked BOOLEAN NOT NULL DEFAULT FALSE,
    pinned INTEGER,
    created DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (roster, name)
);
CREATE TABLE craits_roster_versions (
    id BIGSERIAL PRIMARY KEY,
    roster TEXT NOT NULL,
    participant TEXT NOT NULL,
    number INTEGER NOT NULL,
    sha256 TEXT NOT NULL REFERENCES craits_files (sha256),
    size BIGINT NOT NULL,
    filename TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    status TEXT NOT NULL DEFAULT 'building',
    reason TEXT NOT NULL DEFAULT '',
    build_log TEXT NOT NULL DEFAULT '',
    report TEXT NOT NULL DEFAULT '',
    validation TEXT NOT NULL DEFAULT '{}',
    command TEXT NOT NULL DEFAULT '[]',
    built TEXT REFERENCES craits_files (sha256),
    UNIQUE (roster, participant, number),
    FOREIGN KEY (roster, participant) REFERENCES craits_roster_participants (roster, name)
);
CREATE TABLE craits_roster_settings (
    roster TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (roster, key)
);
CREATE TABLE craits_bot_files (
    tournament TEXT NOT NULL REFERENCES craits_tournaments (name) ON DELETE CASCADE,
    bot TEXT NOT NULL,
    files TEXT NOT NULL REFERENCES craits_files (sha256),
    command TEXT NOT NULL,
    PRIMARY KEY (tournament, bot)
);
