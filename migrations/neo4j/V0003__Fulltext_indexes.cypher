// Full-text indexes over names/aliases (entity linking) and over text (keyword retrieval).
CREATE FULLTEXT INDEX entity_names IF NOT EXISTS
FOR (n:Entity) ON EACH [n.name, n.alias_text, n.ceid];
CREATE FULLTEXT INDEX entity_text IF NOT EXISTS
FOR (n:Entity) ON EACH [n.name, n.summary, n.description, n.text];
CREATE FULLTEXT INDEX chunk_text IF NOT EXISTS
FOR (n:Chunk) ON EACH [n.text];
