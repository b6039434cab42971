package mcpedge

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// checkSeeds are messages on which the one pass and the oracle could part:
// every rule's edge, and the ways encoding/json reads an envelope that a
// hand-written reader could get wrong (escaped and case-folded keys, the
// last of a repeated member, null members, values of the wrong kind).
var checkSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"\ud83d\ude00"}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments": 5 }}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, `{"id":1,"method":"tools/call"}`,
	`{"id":1,"method":"tools/call","params":[]}`, `{"id":1,"method":"tools/call","params":{}}`,
	`{"a":1,"a":2}`, `[1]`, ` [`, `"\ud800"`, `{"x":"\\ud800"}`, "{\"x\":\"\xff\"}", `{"jsonrpc":"2.0","method":"ping"}`,
	``, ` `, `null`, ` null `, `nul`, `true`, `1`, `-0`, `01`, `1.`, `1e`, `1e+`, `-`, `.5`, `"x"`, `{}`, `{`, `}`, `{"a"}`,
	`{"a":1,}`, `{,}`, `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":1} x`, `{"a":1}{}`, "{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\u12G4"}`,
	`{"a":"\ud800\udc00"}`, `{"a":"\udc00\ud800"}`, `{"a":"\ud800\ud800\udc00"}`, `{"a":"\ud800\u00"}`, `{"a":"\ud800\\udc00"}`,
	`{"id":null,"method":"ping"}`, `{"id":"a\"b","method":"ping"}`, `{"id":1.5,"method":"ping"}`, `{"id":-0,"method":"ping"}`,
	`{"id":9007199254740992,"method":"ping"}`, `{"id":-9007199254740993,"method":"ping"}`, `{"id":{},"method":"ping"}`,
	`{"id":true,"method":"ping"}`, `{"id":[1],"method":"ping"}`, `{"id":1,"method":null}`, `{"id":1,"method":7}`,
	`{"id":1,"method":["ping"]}`, `{"id":1,"method":"resources/list"}`, `{"id":1,"method":"notifications/x"}`,
	`{"id":1,"method":"tools/\u0063all","params":{"n\u0061me":"t\u00e9","arguments":{}}}`,
	`{"\u0069d":2,"method":"ping"}`, `{"id":1,"\u0069d":2,"method":"ping"}`, `{"id":1,"method":"ping","x":{"a":1,"a":2},"id":3}`,
	`{"x":{"a":1,"a":2},"id":1,"id":2,"method":"tools/call","method":"ping","params":{"name":"a"},"params":{"name":"b"}}`,
	`{"x":{"a":1,"a":2},"id":1,"method":"tools/call","params":{"name":"a","arguments":{}},"params":{"name":"b","arguments":[]}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","arguments":null,"_META":{"IO.modelcontextprotocol/protocolversion":"2026-07-28"}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","arguments":null,"_meta":{"io.modelcontextprotocol/protocolVerſion":"2026-07-28"}}}`,
	`{"id":1,"method":"tools/call","params":{"name":"a","arguments":null,"_m\u0065ta":{"io.modelcontextprotocol/protocolVersion":"2026-07-29"}}}`,
	`{"id":1,"method":"tools/call","params":{"arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_Meta":null}}`,
	`{"id":1,"method":"tools/call","params":{"arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_Meta":{}}}`,
	`{"id":1,"method":"tools/call","params":{"arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_Meta":1}}`,
	`{"id":1,"method":"tools/call","params":{"arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","Io.modelcontextprotocol/protocolVersion":null}}}`,
	`{"id":1,"method":"tools/call","params":{"arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","Io.modelcontextprotocol/protocolVersion":5}}}`,
	`{"id":1,"method":"tools/call","params":{"arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026\u002d07-28"}}}`,
	`{"id":1,"method":"tools/call","params":{"arguments":null,"_meta":[{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}]}}`,
	`{"id":1,"method":"tools/call","params":{"arguments":null,"_meta":"2026-07-28","x":{"_meta":{}}}}`,
	`{"id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}},"params":null}`,
	`{"id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"_meta":null,"a":"\ud800"}}`,
	`{"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"x"}},"a":{"b":1,"b":1}}`,
	"{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\xff\",\"arguments\":{}}}",
	"{\"id\":1,\"method\":\"p\xffing\"}", "{\"\xff\":1,\"\xfe\":2,\"id\":1,\"method\":\"ping\"}",
	"{\"id\":1,\"method\":\"ping\",\"p\":{\"\xff\":1,\"\xfe\":2}}", `{"id":1,"method":"ping","p":{"\ud800":1,"\udbff":2}}`,
	`{"id":1,"method":"ping","p":{"é":1,"\u00e9":2}}`, `{"id":1,"method":"ping","p":{"a":1,"A":2}}`,
	`{"id":1,"method":"tools/call","params":{"name":"x","arguments":{"text":"😀 café \\ud800 \"quoted\"","nested":{"name":1,"NAME":2}}}}`,
	"\t\r\n {\"id\" : 1 , \"method\" : \"tools/call\" , \"params\" : { \"name\" : \"x\" , \"arguments\" : { } } } \n",
}

// bigObject is an object of n distinct keys, then key again: past
// smallObject the duplicate check uses a map.
func bigObject(n int, key string) string {
	var b strings.Builder
	b.WriteString(`{"id":1,"method":"ping","params":{`)
	for i := range n {
		b.WriteString(`"k` + strconv.Itoa(i) + `\u0030":0,`)
	}
	b.WriteString(`"` + key + `":1}}`)
	return b.String()
}

// allSeeds are checkSeeds, messages nested about as deeply as encoding/json
// allows, objects past smallObject keys, and the fuzz corpus in testdata.
func allSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var seeds [][]byte
	for _, s := range append(checkSeeds, duplicateSeeds...) {
		seeds = append(seeds, []byte(s))
	}
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		seeds = append(seeds,
			[]byte(strings.Repeat(`{"a":`, depth)+"1"+strings.Repeat("}", depth)),
			[]byte(`{"id":1,"method":"ping","params":`+strings.Repeat("[", depth-1)+strings.Repeat("]", depth-1)+"}"))
	}
	seeds = append(seeds, []byte(bigObject(40, "k7\\u0030")), []byte(bigObject(40, "k70")), []byte(bigObject(40, "id")))
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "*", "*"))
	if err != nil {
		tb.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if q, ok := strings.CutPrefix(line, "[]byte("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(q, ")")); err == nil {
					seeds = append(seeds, []byte(s))
				}
			}
		}
	}
	return seeds
}

// matchesOracle fails tb unless CheckMessage answers msg exactly as the
// oracle does: the same Call and the same Reply, byte for byte.
func matchesOracle(tb testing.TB, msg []byte) {
	tb.Helper()
	orig := bytes.Clone(msg)
	call, reply := CheckMessage(msg)
	want, wantReply := oracleCheckMessage(msg)
	if !bytes.Equal(msg, orig) {
		tb.Fatalf("CheckMessage changed its input %q", orig)
	}
	if !reflect.DeepEqual(call, want) || !reflect.DeepEqual(reply, wantReply) {
		tb.Fatalf("CheckMessage(%q)\n = %#v, %s\nthe oracle %#v, %s", msg, call, replyText(reply), want, replyText(wantReply))
	}
}

func replyText(r *Reply) string {
	if r == nil {
		return "<nil>"
	}
	return strconv.Itoa(int(r.Code)) + " " + string(r.Body)
}

// TestCheckMessageMatchesOracle runs every seed through both.
func TestCheckMessageMatchesOracle(t *testing.T) {
	t.Parallel()
	for _, msg := range allSeeds(t) {
		matchesOracle(t, msg)
	}
}

// FuzzCheckMessageMatchesOracle: on any input, the one pass gives the
// answer the several passes gave. The deeply nested seeds stay out: each
// is 20-60 KB, and minimizing what the fuzzer derives from them stalls it.
func FuzzCheckMessageMatchesOracle(f *testing.F) {
	for _, msg := range allSeeds(f) {
		if len(msg) <= 4<<10 {
			f.Add(msg)
		}
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		matchesOracle(t, msg)
	})
}

// benchMessages are a create_ticket call as the go-sdk client sends it, an
// ~800-byte one with escapes and non-ASCII text, and one of about 64 KiB.
func benchMessages() []struct {
	name string
	msg  []byte
} {
	call := func(description string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"create_ticket","arguments":{` +
			`"operation_id":"0190f3c4-6b1e-7cc2-9a51-3f6e2d8b4c10","project_id":"support","title":"Printer on the third floor is on fire",` +
			`"description":"` + description + `","priority":"urgent","labels":["hardware","printer","facilities","urgent-response"]},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p-42"}}}`)
	}
	line := "Smoke is coming out of the paper tray; \u00e9t\u00e9 \\u00e9. "
	return []struct {
		name string
		msg  []byte
	}{
		{"CreateTicket", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{` +
			`"operation_id":"0190f3c4-6b1e-7cc2-9a51-3f6e2d8b4c10","project_id":"support","title":"Printer on fire","labels":["hardware"]},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)},
		{"800B", call(strings.Repeat(line, 10))},
		{"64KiB", call(strings.Repeat(line, 64<<10/len(line)))},
	}
}

// BenchmarkCheckMessage measures the guard on each of benchMessages, in
// one pass and, as the oracle, in the passes it took before.
func BenchmarkCheckMessage(b *testing.B) {
	for _, m := range benchMessages() {
		for _, impl := range []struct {
			name  string
			check func([]byte) (Call, *Reply)
		}{{"OnePass", CheckMessage}, {"Oracle", oracleCheckMessage}} {
			b.Run(m.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(m.msg)))
				b.ReportAllocs()
				for b.Loop() {
					if _, reply := impl.check(m.msg); reply != nil {
						b.Fatalf("refused: %s", reply.Body)
					}
				}
			})
		}
	}
}
