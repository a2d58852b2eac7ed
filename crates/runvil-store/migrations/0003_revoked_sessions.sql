-- runvil's schema, version 3: the 2025-11-25 sessions a client ended (`DELETE`) on one
-- instance, so that every instance sharing the database refuses them until they expire. A
-- session is named by the SHA-256 of the random number sealed in its id, never by the id;
-- `expires` is the session's own expiry, and rows past it are pruned at each new one. Each new
-- row is announced on `runvil_records` as `session` TAB its hash, so every instance adds it to
-- the set it checks each request against.
CREATE TABLE runvil.revoked_sessions (
    hash    text        PRIMARY KEY,
    expires timestamptz NOT NULL
);

CREATE INDEX revoked_sessions_expires ON runvil.revoked_sessions (expires);

CREATE FUNCTION runvil.revoked_sessions_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('runvil_records', 'session' || E'\t' || NEW.hash);
    RETURN NULL;
END
$$;

CREATE TRIGGER revoked_sessions_notify AFTER INSERT ON runvil.revoked_sessions
    FOR EACH ROW EXECUTE FUNCTION runvil.revoked_sessions_notify();
