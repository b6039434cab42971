-- +goose Up
-- docs/trackers.md: a tracker-backed project names a credential the
-- operator declared (TICKETD_TRACKER_CREDENTIALS), never an environment
-- variable. backend_token_env is renamed so that nothing reads it as
-- before: at start, ticketd maps each retired variable to a declared
-- credential that holds it and that the project's tenant may use, and
-- clears it; a row it cannot map stays unusable, and ticketd says so.
ALTER TABLE projects ADD COLUMN backend_credential text;
ALTER TABLE projects RENAME COLUMN backend_token_env TO backend_token_env_retired;

-- +goose Down
ALTER TABLE projects RENAME COLUMN backend_token_env_retired TO backend_token_env;
ALTER TABLE projects DROP COLUMN backend_credential;
