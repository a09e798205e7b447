-- V0015 masked passwords inside key=value connection strings in the change log. The same
-- text may also wait in the verification queue (a pending edge's address, a pending entity's
-- env) and in a write intent that an interrupted ingest left behind (write_intent_changes'
-- before/after; the intent's change blob, change_log rows in COPY text format): mask it there
-- too, with the pattern of substrate/connectors/endpoints.py (KV_PASSWORD). A backslash, quote
-- or tab ends the masked run, so JSON and COPY text stay valid. Idempotent.

-- a pending item that becomes equal to another pending one once masked is that item again
-- (verification_queue_pending_once): the older one stays
DELETE FROM verification_queue q USING verification_queue o
WHERE q.status = 'pending' AND o.status = 'pending' AND q.tenant_id = o.tenant_id
  AND q.id > o.id AND q.record::text ~* '(password|pwd|passwd)\s*='
  AND regexp_replace(q.record::text, '((?:^|[;?&\s"])(?:password|pwd|passwd)\s*=\s*)[^;&\s"\\]+', '\1***', 'gi')
    = regexp_replace(o.record::text, '((?:^|[;?&\s"])(?:password|pwd|passwd)\s*=\s*)[^;&\s"\\]+', '\1***', 'gi');

UPDATE verification_queue
SET record = regexp_replace(record::text,
      '((?:^|[;?&\s"])(?:password|pwd|passwd)\s*=\s*)[^;&\s"\\]+', '\1***', 'gi')::jsonb
WHERE record::text ~* '(password|pwd|passwd)\s*=';

UPDATE write_intent_changes
SET before = CASE WHEN before IS NULL THEN NULL ELSE regexp_replace(before::text,
      '((?:^|[;?&\s"])(?:password|pwd|passwd)\s*=\s*)[^;&\s"\\]+', '\1***', 'gi')::jsonb END,
    after = CASE WHEN after IS NULL THEN NULL ELSE regexp_replace(after::text,
      '((?:^|[;?&\s"])(?:password|pwd|passwd)\s*=\s*)[^;&\s"\\]+', '\1***', 'gi')::jsonb END
WHERE before::text ~* '(password|pwd|passwd)\s*=' OR after::text ~* '(password|pwd|passwd)\s*=';

UPDATE write_intents
SET changes = convert_to(regexp_replace(convert_from(changes, 'UTF8'),
      '((?:^|[;?&\s"])(?:password|pwd|passwd)\s*=\s*)[^;&\s"\\]+', '\1***', 'gi'), 'UTF8')
WHERE changes IS NOT NULL AND convert_from(changes, 'UTF8') ~* '(password|pwd|passwd)\s*=';
