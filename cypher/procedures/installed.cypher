// name: procedures/installed
// version: 1
// mode: read
// params: database
// returns: type, name, description, statement
// serves: issue 4 "Cypher as the product's stored logic" (idempotent install)
// doc: Cypher-defined procedures and functions stored for a database; run on the system database (CALL ... YIELD ... RETURN only).
CALL apoc.custom.show($database) YIELD type, name, description, statement
RETURN type, name, description, statement
