// name: graph/clear_write_marks
// version: 1
// mode: write
// params: through
// returns: nothing
// serves: write path (crash-safe commit, issue 16)
// doc: Deletes the write marks of snapshots PostgreSQL has recorded (version <= $through).
MATCH (m:WriteMark)
WHERE m.version <= $through
DELETE m
