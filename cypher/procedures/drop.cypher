// name: procedures/drop
// version: 1
// mode: write
// params: name, database
// returns: (none)
// serves: issue 4 "Cypher as the product's stored logic" (Neo4j Browser procedures)
// doc: Drop one Cypher-defined procedure custom.<name>; run on the system database (APOC Extended).
CALL apoc.custom.dropProcedure($name, $database)
