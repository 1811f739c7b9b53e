-- Bot errors (issue 30): answers on which a bot's own code failed and its kit answered in its
-- place (Answer.bot_error), counted per seat, with the first one's text for the organizer.
ALTER TABLE craits_seats ADD COLUMN bot_errors INTEGER NOT NULL DEFAULT 0;
ALTER TABLE craits_seats ADD COLUMN bot_error TEXT NOT NULL DEFAULT '';
