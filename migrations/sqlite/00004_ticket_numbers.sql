-- +goose Up
-- PostgreSQL's 00004 moves ticket numbers to a sequence per project, so that
-- creates in one project stop queueing on the project row (docs/perf.md).
-- SQLite keeps projects.next_number: it runs one write transaction at a
-- time, so the row update serialises nothing its writer lock does not
-- already, and a rolled-back create returns its number. This version exists
-- so a schema version names the same step on both engines.
SELECT 1;

-- +goose Down
SELECT 1;
