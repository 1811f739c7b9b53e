-- Why workers refused games (a bot's program or files missing on their machine): each
-- (worker, reason) once, with how many games and when last, for the organizer to say.
CREATE TABLE craits_refusals (
    tournament TEXT NOT NULL REFERENCES craits_tournaments (name) ON DELETE CASCADE,
    worker TEXT NOT NULL,
    reason TEXT NOT NULL,
    games INTEGER NOT NULL,
    last_game TEXT NOT NULL,
    last_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (tournament, worker, reason)
);
