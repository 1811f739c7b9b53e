-- A competition on many machines (issue 41).
--
-- How a ladder's last run ended (running, or stopped: why, after how many new rounds, when),
-- as its folder's ladder.json says it, for `ladder standings` on any machine.
ALTER TABLE craits_tournaments ADD COLUMN run_state TEXT;
-- The workers the queue knows (procrastinate_workers: an id and a heartbeat), by the name
-- they were given and the application_name their connections carry: a worker whose
-- heartbeat stops and whose connections are gone was killed, and is named at once; gone_at
-- and games say when it was found gone and which games in hand went back to the queue.
CREATE TABLE craits_workers (
    queue_id BIGINT PRIMARY KEY,
    name TEXT NOT NULL,
    tag TEXT NOT NULL,
    host TEXT NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    gone_at DOUBLE PRECISION,
    gone_why TEXT NOT NULL DEFAULT '',
    games TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX craits_workers_gone ON craits_workers (gone_at);
