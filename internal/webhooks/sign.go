package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// secretPrefix marks a Standard Webhooks signing secret.
const secretPrefix = "whsec_"

// newSecret returns a fresh whsec_ secret holding 32 random bytes.
func newSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// Sign returns the webhook-signature header value for one request:
// "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)), the
// key being the base64 after the secret's whsec_ prefix.
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil {
		return "", fmt.Errorf("decode webhook secret: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}
