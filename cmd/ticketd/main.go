// Command ticketd is a retry-safe ticketing server for AI agents: MCP over
// Streamable HTTP and stdio, and a REST API for operators.
//
// Run `ticketd -h` for the subcommands and `ticketd serve -h` for the
// settings, each of which is an environment variable and a flag.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ticketd/ticketd/internal/buildinfo"
)

func main() {
	// SIGTERM is what container runtimes and systemd send; SIGINT is Ctrl-C.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "ticketd: %v\n", err)
		os.Exit(1)
	}
}

const usage = `ticketd: a retry-safe ticketing server for AI agents (MCP and REST).

Usage:
  ticketd [serve] [flags]   serve MCP (/mcp) and REST (/api/v1) over HTTP (the default)
  ticketd serve --dev       zero-setup local server: SQLite, generated secret, demo data, a ready token
  ticketd migrate [flags]   apply database migrations and print the schema version
  ticketd projects create --tenant T --id ID --key KEY --name NAME
                            give a tenant a project (a new tenant's first step)
  ticketd projects list --tenant T
                            list a tenant's projects
  ticketd prune [--older-than 720h] [--dry-run]
                            delete succeeded operation records past the retention window
  ticketd token [flags]     mint an HS256 token from the configured secret (valid 30 days by default)
  ticketd stdio [flags]     serve MCP over stdin/stdout for one principal (TICKETD_TOKEN)
  ticketd version           print the version

Every setting is an environment variable (TICKETD_*) and a flag; flags win.
Run "ticketd COMMAND -h" for a command's settings.
`

// run is the whole program with its dependencies passed in, so tests drive
// it in-process: args[0] is the program name, getenv replaces os.Getenv, and
// cancelling ctx is a graceful shutdown.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd, rest := "serve", args[1:]
	if len(rest) > 0 {
		switch rest[0] {
		case "-h", "-help", "--help", "help":
			_, err := io.WriteString(stdout, usage)
			return err
		}
		// A flag first means the default command: `ticketd --dev` serves.
		if rest[0] != "" && rest[0][0] != '-' {
			cmd, rest = rest[0], rest[1:]
		}
	}
	switch cmd {
	case "serve":
		return serve(ctx, selfCommand(args[0]), rest, getenv, stdout, stderr)
	case "migrate":
		return migrate(ctx, rest, getenv, stdout)
	case "projects":
		return projects(ctx, selfCommand(args[0]), rest, getenv, stdout, stderr)
	case "prune":
		return prune(ctx, rest, getenv, stdout, stderr)
	case "token":
		return token(ctx, selfCommand(args[0]), rest, getenv, stdout, stderr)
	case "stdio":
		return stdio(ctx, rest, getenv, stdin, stdout, stderr)
	case "version":
		_, err := fmt.Fprintf(stdout, "ticketd %s\n", buildinfo.Version())
		return err
	default:
		return fmt.Errorf("unknown command %q (want serve, migrate, projects, prune, token, stdio or version; see ticketd -h)", cmd)
	}
}
