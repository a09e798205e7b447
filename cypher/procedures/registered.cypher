// name: procedures/registered
// version: 1
// mode: read
// params: prefix
// returns: name, description
// serves: issue 4 "Cypher as the product's stored logic" (wait until installed procedures are callable)
// doc: Procedures the database can call now whose name starts with $prefix (custom.* appear after APOC's refresh).
SHOW PROCEDURES YIELD name, description
WHERE name STARTS WITH $prefix
RETURN name, description
