-- +goose Up
-- Jira backends (DESIGN §22): the project key is kept in backend_repository
-- and the site in backend_api_url; backend_options holds the rest as JSON.
-- SQLite cannot change a column's CHECK in place, so the github-only column
-- is renamed (it keeps its CHECK, and every new row leaves it NULL) and
-- backend_kind is added anew with both kinds.
ALTER TABLE projects RENAME COLUMN backend_kind TO backend_kind_github_only;
ALTER TABLE projects ADD COLUMN backend_kind text CHECK (backend_kind IN ('github', 'jira'));
UPDATE projects SET backend_kind = backend_kind_github_only;
UPDATE projects SET backend_kind_github_only = NULL;
ALTER TABLE projects ADD COLUMN backend_options text;

-- +goose Down
ALTER TABLE projects DROP COLUMN backend_options;
UPDATE projects SET backend_kind_github_only = backend_kind WHERE backend_kind = 'github';
ALTER TABLE projects DROP COLUMN backend_kind;
ALTER TABLE projects RENAME COLUMN backend_kind_github_only TO backend_kind;
