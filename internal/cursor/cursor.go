// Package cursor makes opaque, tamper-evident pagination cursors. A cursor is
// bound to its scope (tenant and filters): one forged, edited, or carried to
// another tenant or filter fails to decode instead of paging through the
// wrong rows.
package cursor

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is returned for a cursor this codec did not issue for the scope.
var ErrInvalid = errors.New("invalid cursor")

const macLen = 16

// Codec signs and verifies cursors with an HMAC key.
type Codec struct {
	key []byte
}

// New returns a codec keyed with key. An empty key gets a random one, which
// is fine for one process; replicas that share cursors need a shared key.
func New(key []byte) Codec {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			panic(fmt.Sprintf("cursor key: %v", err)) // crypto/rand never fails on supported platforms
		}
	}
	return Codec{key: key}
}

// Encode returns an opaque cursor for position within scope.
func (c Codec) Encode(scope string, position any) (string, error) {
	payload, err := json.Marshal(position)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(c.mac(scope, payload)), nil
}

// Decode verifies a cursor issued for scope and unmarshals its position.
func (c Codec) Decode(scope, s string, position any) error {
	enc := base64.RawURLEncoding
	p, m, ok := strings.Cut(s, ".")
	if !ok {
		return ErrInvalid
	}
	payload, err := enc.DecodeString(p)
	if err != nil {
		return ErrInvalid
	}
	mac, err := enc.DecodeString(m)
	if err != nil || !hmac.Equal(mac, c.mac(scope, payload)) {
		return ErrInvalid
	}
	if err := json.Unmarshal(payload, position); err != nil {
		return ErrInvalid
	}
	return nil
}

func (c Codec) mac(scope string, payload []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write(payload)
	return h.Sum(nil)[:macLen]
}
