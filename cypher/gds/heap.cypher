// name: gds/heap
// version: 1
// mode: read
// params:
// returns: free, max
// serves: GDS jobs: the memory check before a projection and an algorithm run
// doc: The Neo4j JVM heap free and at most, in bytes (gds.debug.sysInfo).
CALL gds.debug.sysInfo() YIELD key, value
WITH collect([key, value]) AS pairs
RETURN toInteger([p IN pairs WHERE p[0] = 'heapFreeInBytes'][0][1]) AS free,
       toInteger([p IN pairs WHERE p[0] = 'heapMaxInBytes'][0][1]) AS max
