-- +goose Up
-- Jira backends (DESIGN §22): the project key is kept in backend_repository
-- and the site in backend_api_url (where the issues live, and the root
-- requests go to); backend_options holds the rest (issue_type, status_map,
-- priority_map) as JSON.
ALTER TABLE projects DROP CONSTRAINT IF EXISTS projects_backend_kind_check;
ALTER TABLE projects ADD CONSTRAINT projects_backend_kind_check CHECK (backend_kind IN ('github', 'jira'));
ALTER TABLE projects ADD COLUMN backend_options text;

-- +goose Down
ALTER TABLE projects DROP COLUMN backend_options;
ALTER TABLE projects DROP CONSTRAINT projects_backend_kind_check;
ALTER TABLE projects ADD CONSTRAINT projects_backend_kind_check CHECK (backend_kind IN ('github'));
