-- Secret deals (issue 35): each tournament's and ladder's deal key, 256 bits its game seeds
-- come from (HMAC-SHA256 of the key and the game's labels). Only the organizer's runner and
-- workers read it; a row from before has none and keeps the seeds it was stored with.
ALTER TABLE craits_tournaments ADD COLUMN deal_key BYTEA;
