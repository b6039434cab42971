package authn

import "strings"

// MaxAuthorization bounds an Authorization header: a JWT from any common
// identity provider is a few KiB, and a larger one is refused before any
// parsing, so a huge bad token costs nothing to turn away (docs/contract.md#fair-share).
const MaxAuthorization = 16 << 10

// BearerToken extracts the token of an RFC 6750 §2.1 Authorization header,
// the one parser of every HTTP transport: the scheme "Bearer" in any case,
// exactly one space, then a b64token (letters, digits, "-._~+/", then any
// "="). Anything else, such as a tab after the scheme, a second space or a
// token with spaces in it, is no token at all, on /mcp and /api/v1 alike.
func BearerToken(header string) (string, bool) {
	if len(header) > MaxAuthorization || len(header) < len("Bearer x") || !strings.EqualFold(header[:6], "Bearer") || header[6] != ' ' {
		return "", false
	}
	token := header[7:]
	body := strings.TrimRight(token, "=")
	if body == "" {
		return "", false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return "", false
		}
	}
	return token, true
}
