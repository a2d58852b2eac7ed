-- runvil's schema, version 1: the records (pins, credentials, reviews) and the audit trail.
-- Applied by runvil itself, in one transaction, under an advisory lock (src/migrations.rs).

CREATE SCHEMA IF NOT EXISTS runvil;

-- One record per (kind, key): the key is the one runvil's files use (a namespace for
-- credentials, `NS#...` for pins), readable. `version` grows by one at every change and
-- `changed_at`/`changed_role` are set by the trigger below, whoever writes the row (runvil, or
-- a database administrator approving a tool by hand), so a compare-and-set on `version` sees
-- every change and the record says who wrote it and when. `changed_by` is who the writer says
-- made the change (the runvil instance, the reviewer).
CREATE TABLE runvil.records (
    kind         text        NOT NULL CHECK (kind IN ('pins', 'credentials', 'review')),
    key          text        NOT NULL,
    version      bigint      NOT NULL DEFAULT 1,
    value        text        NOT NULL,
    changed_by   text        NOT NULL,
    changed_at   timestamptz NOT NULL DEFAULT now(),
    changed_role text        NOT NULL DEFAULT session_user,
    PRIMARY KEY (kind, key)
);

CREATE FUNCTION runvil.records_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        NEW.version := OLD.version + 1;
    ELSE
        NEW.version := 1;
    END IF;
    NEW.changed_at := now();
    NEW.changed_role := session_user;
    RETURN NEW;
END
$$;

CREATE TRIGGER records_stamp BEFORE INSERT OR UPDATE ON runvil.records
    FOR EACH ROW EXECUTE FUNCTION runvil.records_stamp();

-- Every change is announced on the channel `runvil_records` as `kind` TAB `key`, delivered
-- when its transaction commits, so each runvil drops what it cached of that record. A key too
-- long for a notice is announced as its kind alone: every record of that kind is dropped.
CREATE FUNCTION runvil.records_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    row runvil.records;
BEGIN
    IF TG_OP = 'DELETE' THEN
        row := OLD;
    ELSE
        row := NEW;
    END IF;
    IF octet_length(row.key) <= 7000 THEN
        PERFORM pg_notify('runvil_records', row.kind || E'\t' || row.key);
    ELSE
        PERFORM pg_notify('runvil_records', row.kind);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER records_notify AFTER INSERT OR UPDATE OR DELETE ON runvil.records
    FOR EACH ROW EXECUTE FUNCTION runvil.records_notify();

-- One row per audit line (the format of version 1, `v`), its fields as columns, with the
-- instance that wrote it and the line's id, which that instance chose: unique, so a line
-- inserted again after a lost answer is not doubled (INSERT ... ON CONFLICT DO NOTHING).
CREATE TABLE runvil.audit (
    id           text        PRIMARY KEY,
    instance     text        NOT NULL,
    v            integer     NOT NULL,
    time         timestamptz NOT NULL,
    identity     text,
    namespace    text,
    tool         text,
    args_sha256  text,
    outcome      text        NOT NULL,
    duration_ms  bigint,
    result_bytes bigint
);

CREATE INDEX audit_time ON runvil.audit (time);
