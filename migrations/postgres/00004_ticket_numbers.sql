-- +goose Up
-- Ticket numbers come from one sequence per project (docs/perf.md), no longer
-- from projects.next_number: that row update locked the project until
-- COMMIT, so every create in a project waited for the previous one's WAL
-- flush. nextval holds nothing across the transaction. A sequence is not
-- transactional, so a create that rolls back leaves a gap, and a number is
-- never handed out twice.
--
-- number_seq names the project's sequence (in the projects table's schema).
-- Every new project row gets a fresh name from the default and its sequence
-- from the trigger below, whoever inserts it: the service, a seeding tool or
-- an operator's INSERT.
ALTER TABLE projects ADD COLUMN number_seq text NOT NULL
    DEFAULT ('ticket_numbers_' || replace(gen_random_uuid()::text, '-', ''));

-- Existing projects continue where next_number stood.
-- +goose StatementBegin
DO $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT number_seq, next_number FROM projects LOOP
        EXECUTE format('CREATE SEQUENCE %I AS bigint START WITH %s', p.number_seq, p.next_number);
    END LOOP;
END
$$;
-- +goose StatementEnd

ALTER TABLE projects DROP COLUMN next_number;

-- +goose StatementBegin
CREATE FUNCTION projects_create_number_seq() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE SEQUENCE %I.%I AS bigint', TG_TABLE_SCHEMA, NEW.number_seq);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER projects_create_number_seq AFTER INSERT ON projects
    FOR EACH ROW EXECUTE FUNCTION projects_create_number_seq();

-- +goose Down
DROP TRIGGER projects_create_number_seq ON projects;
DROP FUNCTION projects_create_number_seq();
ALTER TABLE projects ADD COLUMN next_number bigint NOT NULL DEFAULT 1 CHECK (next_number >= 1);
-- +goose StatementBegin
DO $$
DECLARE
    p record;
    next bigint;
BEGIN
    FOR p IN SELECT tenant_id, id, number_seq FROM projects LOOP
        EXECUTE format('SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM %I', p.number_seq) INTO next;
        UPDATE projects SET next_number = next WHERE tenant_id = p.tenant_id AND id = p.id;
        EXECUTE format('DROP SEQUENCE %I', p.number_seq);
    END LOOP;
END
$$;
-- +goose StatementEnd
ALTER TABLE projects DROP COLUMN number_seq;
