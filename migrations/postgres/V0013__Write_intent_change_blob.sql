-- A write intent's change rows as one value: the rows of change_log in COPY text format
-- (snapshot_version = the intent's version). Completing the intent copies them into
-- change_log in the transaction that records the snapshot, so a bulk ingest writes (parses,
-- indexes, later vacuums) each change row once instead of inserting it into
-- write_intent_changes and moving it. Stored uncompressed (EXTERNAL): written once, read at
-- most once (by the reconciler after a crash). write_intent_changes stays for intents
-- recorded by an older writer.
ALTER TABLE write_intents ADD COLUMN IF NOT EXISTS changes bytea;
ALTER TABLE write_intents ALTER COLUMN changes SET STORAGE EXTERNAL;
