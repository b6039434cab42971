package tickets

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodeLabels reads what json.Unmarshal reads, the same way, for any
// column: the plain arrays ticketd writes, and anything else.
func FuzzDecodeLabelsIsJSONUnmarshal(f *testing.F) {
	for _, seed := range []string{`[]`, `["hardware"]`, `["hardware","office"]`, `["b\u00fcro","\u003ctag\u003e"]`,
		`["a\"b"]`, `[ "a" ]`, `["a",]`, `["a""b"]`, `[`, `]`, `"a"`, `null`, ``, `["` + "\xff" + `"]`, `["` + "\x01" + `"]`,
		`["a"],["b"]`, `[""]`, `["",""]`, `["\ufffd"]`, "[\"\u2028\"]", `[1]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		want := []string{}
		wantErr := json.Unmarshal([]byte(raw), &want)
		got, err := decodeLabels(raw)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeLabels(%q) error %v, json.Unmarshal's %v", raw, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeLabels(%q) = %#v, json.Unmarshal reads %#v", raw, got, want)
		}
	})
}
