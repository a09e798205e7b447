// name: procedures/install
// version: 1
// mode: write
// params: signature, statement, database, description
// returns: (none)
// serves: issue 4 "Cypher as the product's stored logic" (Neo4j Browser procedures)
// doc: Install (or replace) one read-only Cypher-defined procedure custom.<name>; run on the system database (APOC Extended).
CALL apoc.custom.installProcedure($signature, $statement, $database, 'read', $description)
