// name: operations/indexes
// version: 1
// mode: read
// params:
// returns: name, type, state, population, labels, properties, dimensions
// serves: issue 14 "substrate doctor" (index state, vector dimensions)
// doc: Every index with its state (ONLINE, POPULATING, FAILED), population percent and, for vector indexes, the dimensions.
SHOW INDEXES YIELD name, type, state, populationPercent, labelsOrTypes, properties, options
RETURN name, type, state, populationPercent AS population, labelsOrTypes AS labels, properties,
       options.indexConfig.`vector.dimensions` AS dimensions
ORDER BY name
