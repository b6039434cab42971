package jira

import (
	"encoding/base64"
	"strings"
)

// authorization is the Authorization header of a credential's value: an
// Atlassian account's email:api_token goes as Basic auth (Jira Cloud),
// anything else as a Bearer token (a Data Center personal access token).
// A value is email:api_token when what precedes its first ':' looks like
// an address; a PAT has no '@'. The rest of the boundary (the guarded
// transports, the client bound to the site, bounded answers, the per-host
// cap and breaker) is the GitHub adapter's too: internal/tracker/trackerhttp.
func authorization(secret string) string {
	if user, _, ok := strings.Cut(secret, ":"); ok && strings.Contains(user, "@") {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(secret))
	}
	return "Bearer " + secret
}
