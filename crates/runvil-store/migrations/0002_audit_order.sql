-- runvil's schema, version 2: the order rows were kept in, for `runvil audit --store --follow`.
-- `seq` grows with each row inserted (an identity column: given by the database, never by
-- an instance), so a reader that printed every row up to N asks for the rows past N. Values
-- may be skipped (a row sent again and not kept takes one), and a row may be committed after
-- a later one: the reader looks again for the numbers it skipped for a while (read.rs in the
-- Host says how long).
ALTER TABLE runvil.audit ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
CREATE UNIQUE INDEX audit_seq ON runvil.audit (seq);
