-- Why a box was stopped, when it was not its user (its disk bound).
ALTER TABLE boxes ADD COLUMN note TEXT NOT NULL DEFAULT '';
