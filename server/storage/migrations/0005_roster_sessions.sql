-- The participants' web pages (issue 36): their sessions, kept here so that logging out,
-- renewing or revoking a token ends them in every web process on this database (keyed by the
-- SHA-256 of the cookie: the database holds no live cookie); and the wrong tokens counted per
-- address, so that parallel guesses meet one count.
CREATE TABLE craits_roster_sessions (
    roster TEXT NOT NULL,
    id TEXT NOT NULL,
    participant TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    expires DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (roster, id)
);
CREATE INDEX craits_roster_sessions_participant ON craits_roster_sessions (roster, participant);
CREATE TABLE craits_roster_logins (
    roster TEXT NOT NULL,
    address TEXT NOT NULL,
    count INTEGER NOT NULL,
    since DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (roster, address)
);
