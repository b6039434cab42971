package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/tickets"
)

// The dev principal and the data dev mode seeds.
const (
	devSecretFile = "hs256.secret"
	// devCursorSecretFile keeps the key signing list cursors, so a cursor
	// outlives a restart and works in every process on the same data
	// directory (a stdio agent's, the server's).
	devCursorSecretFile = "cursor.secret"
	// devApprovalSecretFile keeps the approval state key across restarts,
	// so an elicitation asked before a restart can still be answered.
	devApprovalSecretFile = "approval.secret"
	devTenant             = "demo"
	// devSubject is the agent's, whose token the banner prints;
	// devPersonSubject the person's, who signs in to the console with the
	// banner's link and approves there: two subjects, so four-eyes approval
	// works in dev too.
	devSubject       = "agent"
	devPersonSubject = "dev"
)

// defaultTokenTTL is how long `ticketd token` and the dev banner's tokens
// last: they end up in agents' configurations, which people set once, and a
// token that dies within the day breaks the agent with little explanation.
const defaultTokenTTL = 30 * 24 * time.Hour

var (
	devProject = tickets.Project{ID: "support", Key: "SUP", Name: "Support"}
	// devScopes are the agent token's: it reads and writes, and can never
	// approve its own writes.
	devScopes = []string{authn.ScopeRead, authn.ScopeWrite}
	// devPerson is who the console sign-in link signs in: a person, who
	// reads, writes, approves and administers.
	devPerson = authn.Principal{Tenant: devTenant, Subject: devPersonSubject,
		Scopes: []string{authn.ScopeRead, authn.ScopeWrite, authn.ScopeApprove, authn.ScopeAdmin}}
)

// devSecret returns the HS256 secret kept in dir, generating it on first
// use. Keeping it on disk means tokens printed by one start keep working
// after a restart. The file holds 64 hex characters, used verbatim as the
// secret, so `TICKETD_JWT_HS256_SECRET=$(cat .ticketd/hs256.secret)` gives a
// non-dev server the same key.
func devSecret(dir string) (secret []byte, path string, err error) {
	return devKey(dir, devSecretFile)
}

// devCursorKey returns the cursor key kept in dir, generated on first use
// as devSecret's is.
func devCursorKey(dir string) ([]byte, error) {
	key, _, err := devKey(dir, devCursorSecretFile)
	return key, err
}

// devKey returns the key kept in dir under file, generating it on first use.
func devKey(dir, file string) (secret []byte, path string, err error) {
	path = filepath.Join(dir, file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, path, fmt.Errorf("dev data directory: %w", err)
	}
	secret, err = readDevSecret(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, path, err
	}
	if err := createDevSecret(dir, path); err != nil {
		return nil, path, err
	}
	secret, err = readDevSecret(path)
	return secret, path, err
}

// createDevSecret writes a new secret to a temporary file and links it into
// place, so a crash never leaves a half-written secret and, of two processes
// starting at once, one wins and both use its secret.
func createDevSecret(dir, path string) error {
	key := make([]byte, 32)
	// crypto/rand.Read never returns an error: it crashes the program
	// rather than hand out a weak key.
	_, _ = rand.Read(key)
	// CreateTemp makes the file with mode 0600.
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("create dev secret: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(key) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write dev secret: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create dev secret %s: %w", path, err)
	}
	return nil
}

// readDevSecret reads the secret at path and refuses one that others can
// read, since anyone holding it can mint tokens for any tenant. (Windows has
// no Unix permission bits to check.)
func readDevSecret(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" && info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("dev secret %s is accessible to other users (mode %s): run chmod 600 %s", path, info.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read dev secret: %w", err)
	}
	secret := bytes.TrimSpace(data)
	if len(secret) < 32 {
		return nil, fmt.Errorf("dev secret %s is shorter than 32 bytes: delete it and a new one is generated", path)
	}
	return secret, nil
}

// seedDev gives dev mode something to file tickets against. It is
// idempotent: the project from an earlier start is kept as it is.
func seedDev(ctx context.Context, svc *tickets.Service) error {
	if _, err := svc.CreateProject(ctx, devTenant, devProject); err != nil && !errors.Is(err, tickets.ErrExists) {
		return fmt.Errorf("seed dev project: %w", err)
	}
	return nil
}

// mintDevToken mints the agent's token the dev banner prints, valid
// defaultTokenTTL from now.
func mintDevToken(cfg authn.Config, now time.Time) (string, error) {
	tok, err := authn.MintHS256(cfg.HS256Secret, authn.TokenRequest{
		Issuer:      cfg.Issuer,
		Audience:    cfg.Audience,
		TenantClaim: cfg.TenantClaim,
		Tenant:      devTenant,
		Subject:     devSubject,
		Scopes:      devScopes,
		TTL:         defaultTokenTTL,
	}, now)
	if err != nil {
		return "", fmt.Errorf("mint dev token: %w", err)
	}
	return tok, nil
}

// banner is what the dev banner shows.
type banner struct {
	Self      string    // the command that runs this binary (selfCommand)
	BaseURL   string    // where this server answers
	PublicURL string    // the configured public URL (the tokens' audience derives from it)
	DataDir   string    // the dev data directory
	Token     string    // the agent's token
	Expires   time.Time // when Token expires
	// SignInCode is the person's single-use console sign-in code
	// (console.SignInCodes).
	SignInCode string
}

// vscodeConfig is .vscode/mcp.json. The token is an input VS Code prompts
// for and keeps in its secret storage, so the file (often committed) never
// holds it. Structs, not maps, keep the keys in the order people expect.
type vscodeConfig struct {
	Inputs  []vscodeInput           `json:"inputs"`
	Servers map[string]vscodeServer `json:"servers"`
}

type vscodeInput struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

type vscodeServer struct {
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// vscodeTokenInput is the id of the VS Code input holding the token.
const vscodeTokenInput = "ticketd-token"

// consoleSignInPath is the console's sign-in page; a #code=… (or
// #token=…) fragment on it signs in without pasting (the console's script
// posts it).
const consoleSignInPath = "/console/signin"

// printDevBanner writes the paste-ready setup for a dev server. It goes to
// stdout, never to the log: this is the one place the agent's token is
// shown, on purpose, first, bare on its own line and only once; every
// command after it reads $TOKEN. The person's console link carries a
// single-use sign-in code, never a token, so the agent's credential and the
// person's stay apart (docs/approval.md).
func printDevBanner(w io.Writer, b banner) error {
	mcpURL := b.BaseURL + "/mcp"
	vscode, err := json.MarshalIndent(vscodeConfig{
		Inputs: []vscodeInput{{Type: "promptString", ID: vscodeTokenInput, Description: "ticketd bearer token", Password: true}},
		Servers: map[string]vscodeServer{"ticketd": {
			Type: "http", URL: mcpURL, Headers: map[string]string{"Authorization": "Bearer ${input:" + vscodeTokenInput + "}"},
		}},
	}, "  ", "  ")
	if err != nil {
		return fmt.Errorf("dev banner: %w", err)
	}
	devFlags := "--dev"
	if filepath.Clean(b.DataDir) != defaultDataDir {
		devFlags += " --data-dir " + shellQuote(b.DataDir)
	}
	tokenCmd := b.Self + " token " + devFlags + " --tenant demo --subject you"
	// The token's audience derives from the public URL, so a server on
	// another address needs it named or its tokens are refused.
	if b.PublicURL != "http://"+defaultAddr {
		tokenCmd += " --public-url " + shellQuote(b.PublicURL)
	}
	projectCmd := b.Self + " projects create " + devFlags + " --tenant acme --id support --key SUP --name Support"
	_, err = fmt.Fprintf(w, `
ticketd is running in development mode.

Agent token for MCP clients (tenant %[3]s, subject %[7]s, scopes %[8]s; expires %[9]s):

%[10]s

Keep both in your shell for the commands below and in docs/:
  export TOKEN='<the token above>'
  export BASE=%[2]s

Console sign-in link for you, a person (subject %[15]s, scopes %[16]s).
It signs in once, within %[17]s, and carries no token. Approvals (urgent tickets, large bulk
updates) are decided there by a person, never with the agent's token:
  %[18]s

MCP endpoint:  %[1]s
REST API:      %[2]s/api/v1
Tenant %[3]q has project %[4]q (key %[5]s). Data and secret: %[6]s

Claude Code:
  claude mcp add --transport http ticketd %[1]s --header "Authorization: Bearer $TOKEN"

VS Code (.vscode/mcp.json; VS Code asks for the token once and keeps it out of the file):
  %[11]s

REST (curl; run the POST twice: the retry answers the same ticket with Idempotent-Replayed: true):
  curl -s -H "Authorization: Bearer $TOKEN" %[2]s/api/v1/projects
  curl -si -X POST %[2]s/api/v1/tickets -H "Authorization: Bearer $TOKEN" -H "Idempotency-Key: %[12]s" -H "Content-Type: application/json" -d '{"project_id":"support","title":"Printer on fire"}'

Another agent token:  %[13]s
A new tenant needs a project before its agent can file tickets:
  %[14]s

`, mcpURL, b.BaseURL, devTenant, devProject.ID, devProject.Key, b.DataDir, devSubject, strings.Join(devScopes, " "),
		b.Expires.UTC().Truncate(time.Second).Format(time.RFC3339), b.Token, vscode, uuid.NewString(), tokenCmd, projectCmd,
		devPerson.Subject, strings.Join(devPerson.Scopes, " "), fmt.Sprintf("%d minutes", int(console.SignInCodeTTL.Minutes())), b.BaseURL+consoleSignInPath+"#code="+b.SignInCode)
	return err
}

// selfCommand is how to run this binary again, for commands the banner and
// hints print: the path it was started by, or `go run ./cmd/ticketd` when
// `go run` built it: into a temporary directory that is gone once it exits
// (…/go-build…/b001/exe/ticketd), or, from Go 1.24 on, into the build cache
// (…/go-build/xx/<hash>-d/ticketd), where it is an internal file.
func selfCommand(arg0 string) string {
	dir := filepath.Base(filepath.Dir(arg0))
	if strings.Contains(arg0, "go-build") && (dir == "exe" || strings.HasSuffix(dir, "-d")) {
		return "go run ./cmd/ticketd"
	}
	return shellQuote(arg0)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
