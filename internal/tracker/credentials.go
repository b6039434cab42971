package tracker

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Credential is a tracker token the operator declared
// (TICKETD_TRACKER_CREDENTIALS): a name projects use, the environment
// variable that holds the token, and the tenants that may use it.
type Credential struct {
	Name    string
	Env     string
	Tenants []string // empty: every tenant
}

// Allows reports whether tenant may use c.
func (c Credential) Allows(tenant string) bool {
	return len(c.Tenants) == 0 || slices.Contains(c.Tenants, tenant)
}

// Credentials are the declared credentials, in declaration order.
type Credentials []Credential

// For returns the credential called name if tenant may use it. A
// credential bound to other tenants is as absent as an undeclared one.
func (cs Credentials) For(name, tenant string) (Credential, bool) {
	for _, c := range cs {
		if c.Name == name && c.Allows(tenant) {
			return c, true
		}
	}
	return Credential{}, false
}

// ForEnv returns the credential, usable by tenant, whose token is in the
// variable env: what a project stored with a (retired) token_env maps to.
func (cs Credentials) ForEnv(env, tenant string) (Credential, bool) {
	for _, c := range cs {
		if c.Env == env && c.Allows(tenant) {
			return c, true
		}
	}
	return Credential{}, false
}

// Names lists the names of the credentials tenant may use.
func (cs Credentials) Names(tenant string) []string {
	var out []string
	for _, c := range cs {
		if c.Allows(tenant) {
			out = append(out, c.Name)
		}
	}
	return out
}

var (
	credentialName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	envName        = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
)

// ReservedEnvPrefix is the prefix of ticketd's own settings, which hold its
// secrets (the JWT key, the database URL): never a tracker's token.
const ReservedEnvPrefix = "TICKETD_"

// ParseCredentials reads TICKETD_TRACKER_CREDENTIALS: comma-separated
// NAME=ENV_VAR, each optionally followed by @tenant1|tenant2. It refuses
// a variable of ticketd's own (TICKETD_*), a name declared twice, and
// anything malformed, saying which entry.
func ParseCredentials(text string) (Credentials, error) {
	var out Credentials
	for entry := range strings.SplitSeq(text, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, rest, ok := strings.Cut(entry, "=")
		env, tenants, bound := strings.Cut(rest, "@")
		name, env = strings.TrimSpace(name), strings.TrimSpace(env)
		switch {
		case !ok || !credentialName.MatchString(name):
			return nil, fmt.Errorf("entry %q: want NAME=ENV_VAR[@tenant|…], NAME of letters, digits, '.', '-' or '_'", entry)
		case !envName.MatchString(env):
			return nil, fmt.Errorf("entry %q: %q is not an environment variable name", entry, env)
		case strings.HasPrefix(strings.ToUpper(env), ReservedEnvPrefix):
			return nil, fmt.Errorf("entry %q: %s is one of ticketd's own settings, never a tracker token", entry, env)
		case slices.ContainsFunc(out, func(c Credential) bool { return c.Name == name }):
			return nil, fmt.Errorf("entry %q: credential %s is declared twice", entry, name)
		}
		c := Credential{Name: name, Env: env}
		if bound {
			for t := range strings.SplitSeq(tenants, "|") {
				if t = strings.TrimSpace(t); t != "" {
					c.Tenants = append(c.Tenants, t)
				}
			}
			if len(c.Tenants) == 0 {
				return nil, fmt.Errorf("entry %q: no tenant after @", entry)
			}
		}
		out = append(out, c)
	}
	return out, nil
}
