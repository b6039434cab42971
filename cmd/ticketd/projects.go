package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/tickets"
)

// projects creates and lists a tenant's projects from the command line, so
// a new tenant gets its first project before its agent connects, without
// an admin token and a REST call.
func projects(ctx context.Context, self string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("projects: want a subcommand: create or list (see ticketd projects -h)")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		_, err := io.WriteString(stdout, projectsUsage)
		return err
	case "create":
		return createProject(ctx, args[1:], getenv, stdout)
	case "list":
		return listProjects(ctx, self, args[1:], getenv, stdout, stderr)
	default:
		return fmt.Errorf("projects: unknown subcommand %q (want create or list)", args[0])
	}
}

const projectsUsage = `Usage:
  ticketd projects create --tenant T --id ID --key KEY --name NAME
                            give a tenant a project (a new tenant's first step)
  ticketd projects list --tenant T
                            list a tenant's projects

Run "ticketd projects create -h" or "ticketd projects list -h" for their flags.
`

func createProject(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("projects create", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant the project belongs to: the tenant claim of its agents' tokens (required)")
	id := fs.String("id", "", "project ID agents pass as project_id: 1-64 of a-z 0-9 - _ (required)")
	key := fs.String("key", "", "ticket key prefix, e.g. SUP for SUP-1: 1-10 of A-Z 0-9, starting with a letter (required)")
	name := fs.String("name", "", "human-readable name (required)")
	cfg, err := parseConfig(fs, groupDB|groupMigrate|groupDev|groupTracker, args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, f := range []struct{ flag, value string }{{"tenant", *tenant}, {"id", *id}, {"key", *key}, {"name", *name}} {
		if f.value == "" {
			return fmt.Errorf("projects create: --%s is required (see ticketd projects create -h)", f.flag)
		}
	}
	if err := checkTenant(*tenant); err != nil {
		return fmt.Errorf("projects create: %w", err)
	}
	svc, closeStore, err := openProjects(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	p, err := svc.CreateProject(ctx, *tenant, tickets.Project{ID: *id, Key: *key, Name: *name})
	if err != nil {
		return fmt.Errorf("projects create: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "created project %s (key %s, %q) for tenant %s; its tickets are %s-1, %s-2, …\n",
		p.ID, p.Key, p.Name, *tenant, p.Key, p.Key)
	return err
}

func listProjects(ctx context.Context, self string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("projects list", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant whose projects to list (required)")
	cfg, err := parseConfig(fs, groupDB|groupMigrate|groupDev|groupTracker, args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if *tenant == "" {
		return errors.New("projects list: --tenant is required (see ticketd projects list -h)")
	}
	if err := checkTenant(*tenant); err != nil {
		return fmt.Errorf("projects list: %w", err)
	}
	svc, closeStore, err := openProjects(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	list, err := svc.ListProjects(ctx, *tenant)
	if err != nil {
		return fmt.Errorf("projects list: %w", err)
	}
	if len(list) == 0 {
		// The advice goes to stderr, so stdout stays a plain table.
		_, err := fmt.Fprintf(stderr, "tenant %s has no projects, so its agents cannot create tickets yet; %s\n", *tenant, firstProjectHint(self, *tenant, cfg))
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tNAME\tCREATED")
	for _, p := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, p.Key, p.Name, p.CreatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// checkTenant holds a tenant named on the command line to the rule tokens
// follow, so no project is made for a tenant no token can carry.
func checkTenant(tenant string) error {
	if !authn.ValidTenant(tenant) {
		return fmt.Errorf("--tenant %q must be 1-64 characters of A-Z a-z 0-9 . _ - (the tenant claim of the tokens)", tenant)
	}
	return nil
}

// openProjects opens the database, migrated unless --migrate=false (a new
// deployment's first command may well be creating its first project), and
// returns the service on it and how to close it.
func openProjects(ctx context.Context, cfg *config) (*tickets.Service, func(), error) {
	store, svc, _, _, err := openStore(ctx, cfg, tickets.Options{}, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, err
	}
	return svc, func() { _ = store.Close() }, nil
}

// firstProjectHint is the command, as self is run, that gives tenant its
// first project in cfg's database.
func firstProjectHint(self, tenant string, cfg *config) string {
	cmd := self + " projects create"
	if cfg.Dev {
		cmd += " --dev"
		if filepath.Clean(cfg.DataDir) != defaultDataDir {
			cmd += " --data-dir " + shellQuote(cfg.DataDir)
		}
	}
	return fmt.Sprintf("create one with: %s --tenant %s --id support --key SUP --name Support", cmd, shellQuote(tenant))
}

// hasNoProject reports whether the database in cfg exists and holds no
// project for tenant. Anything short of a clear answer (no database yet, a
// database that does not answer) is not reported: the caller only advises.
func hasNoProject(ctx context.Context, cfg *config, tenant string) bool {
	dialect, _, err := db.ParseURL(cfg.DatabaseURL)
	if err != nil || dialect == db.SQLite && !sqliteFileExists(cfg.DatabaseURL) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	store, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return false
	}
	defer store.Close()
	list, err := tickets.NewService(store.Gorm, tickets.Options{}).ListProjects(ctx, tenant)
	return err == nil && len(list) == 0
}

// sqliteFileExists reports whether the file a sqlite:// URL names exists;
// opening it would create it, and advice must not leave files behind.
func sqliteFileExists(rawURL string) bool {
	path, _, _ := strings.Cut(strings.TrimPrefix(rawURL, "sqlite://"), "?")
	_, err := os.Stat(path)
	return err == nil
}
