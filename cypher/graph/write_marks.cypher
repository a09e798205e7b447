// name: graph/write_marks
// version: 1
// mode: read
// params:
// returns: version
// serves: write path (reconciliation after a crash, issue 16)
// doc: The versions of every write mark still in the graph (at most a few: marks are cleared once their snapshot is recorded in PostgreSQL).
MATCH (m:WriteMark)
RETURN m.version AS version
ORDER BY version
