-- A password inside a key=value connection string ("Server=sqldata;User Id=sa;Password=...")
-- was recorded as written in the change log's before/after properties (an entity's env, an
-- edge's address): mask it as the connectors now do (substrate/connectors/endpoints.py,
-- KV_PASSWORD). On the JSON text; a backslash or quote ends the masked run, so the text stays
-- valid JSON. Idempotent.
UPDATE change_log
SET before = CASE WHEN before IS NULL THEN NULL ELSE regexp_replace(before::text,
      '((?:^|[;?&\s"])(?:password|pwd|passwd)\s*=\s*)[^;&\s"\\]+', '\1***', 'gi')::jsonb END,
    after = CASE WHEN after IS NULL THEN NULL ELSE regexp_replace(after::text,
      '((?:^|[;?&\s"])(?:password|pwd|passwd)\s*=\s*)[^;&\s"\\]+', '\1***', 'gi')::jsonb END
WHERE before::text ~* '(password|pwd|passwd)\s*=' OR after::text ~* '(password|pwd|passwd)\s*=';
