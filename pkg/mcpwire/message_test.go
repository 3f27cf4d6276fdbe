package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestID(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want ID
		json string
	}{
		{`7`, IntID(7), `7`},
		{` -12 `, IntID(-12), `-12`},
		{`"7"`, StringID("7"), `"7"`},
		{`"\u0061"`, StringID("a"), `"a"`},
		{`""`, StringID(""), `""`},
		{`null`, ID{}, `null`},
		{`7.0`, ID{v: "7.0"}, `7.0`},
	} {
		id, err := ParseID([]byte(tc.raw))
		if err != nil || id != tc.want || id.String() != tc.json {
			t.Errorf("ParseID(%s) = %#v (%s), %v; want %#v", tc.raw, id, id, err, tc.want)
		}
	}
	for _, raw := range []string{`{}`, `[1]`, `true`, ``, `"x`} {
		if _, err := ParseID([]byte(raw)); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("ParseID(%s): %v", raw, err)
		}
	}
	if IntID(7) == StringID("7") || !(ID{}).IsZero() || StringID("").IsZero() {
		t.Error("7 and \"7\" are different ids; the zero ID is none, \"\" is one")
	}
}

func TestFindResponse(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		id         ID
		result     string // the result found, or "error" for an error response
		err        error
	}{
		{"one", `{"jsonrpc":"2.0","id":3,"result":{"x":1}}`, IntID(3), `{"x":1}`, nil},
		{"string id", `{"jsonrpc":"2.0","id":"fleetgate-1","result":[]}`, StringID("fleetgate-1"), `[]`, nil},
		{"null result", `{"jsonrpc":"2.0","id":3,"result":null}`, IntID(3), `null`, nil},
		{"error", `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}`, IntID(3), "error", nil},
		{"batch", ` [ {"jsonrpc":"2.0","method":"n"} , {"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":3,"result":[1,"]"]} ] `, IntID(3), `[1,"]"]`, nil},
		{"other id", `{"jsonrpc":"2.0","id":4,"result":{}}`, IntID(3), "", ErrNoResponse},
		{"string for a number", `{"jsonrpc":"2.0","id":"3","result":{}}`, IntID(3), "", ErrNoResponse},
		{"a request with the id", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, IntID(3), "", ErrNoResponse},
		{"empty batch", `[]`, IntID(3), "", ErrNoResponse},
		{"null", `null`, IntID(3), "", ErrNoResponse},
		{"neither result nor error", `{"jsonrpc":"2.0","id":3}`, IntID(3), "", ErrInvalidMessage},
		{"not an object", `[1]`, IntID(3), "", ErrInvalidMessage},
		{"object id", `{"jsonrpc":"2.0","id":{},"result":1}`, IntID(3), "", ErrInvalidMessage},
		{"bad code", `{"jsonrpc":"2.0","id":3,"error":{"code":"x"}}`, IntID(3), "", ErrInvalidMessage},
		{"not JSON", `{"id":3,"result":}`, IntID(3), "", ErrInvalidMessage},
		{"empty", ``, IntID(3), "", ErrInvalidMessage},
		{"unbalanced", `{"id":3,"result":[}`, IntID(3), "", ErrUnbalanced},
		{"too deep", `{"id":3,"result":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`, IntID(3), "", ErrTooDeep},
		{"no id sought", `{"jsonrpc":"2.0","result":1}`, ID{}, "", ErrNoResponse},
	} {
		m, err := FindResponse([]byte(tc.data), tc.id)
		switch {
		case tc.err != nil:
			if !errors.Is(err, tc.err) || m != nil {
				t.Errorf("%s: %v, %v; want %v", tc.name, m, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.result == "error":
			if m.Error == nil || m.Error.Code != -32601 || m.Error.Message != "no" {
				t.Errorf("%s: error %+v", tc.name, m.Error)
			}
		case string(m.Result) != tc.result || m.ID != tc.id || m.JSONRPC != "2.0":
			t.Errorf("%s: %+v, want result %s", tc.name, m, tc.result)
		}
	}
}

// TestMessagesBatch: a batch is decoded a message at a time, in order,
// and a message that does not decode ends it with an error.
func TestMessagesBatch(t *testing.T) {
	var ids []string
	for m, err := range Messages([]byte(`[{"id":1,"method":"a"},{"id":"x","result":1},{"method":"n","params":{}},{"id":2,"result":[]},7,{"id":3}]`)) {
		if err != nil {
			if !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("error %v", err)
			}
			ids = append(ids, "error")
			break
		}
		ids = append(ids, m.ID.String())
	}
	if got := strings.Join(ids, " "); got != `1 "x" null 2 error` {
		t.Fatalf("messages %s", got)
	}
	// A large batch of small messages, and the response last.
	big := append(append([]byte("["), bytes.Repeat([]byte(`{"method":"n"},`), 100000)...), `{"id":9,"result":true}]`...)
	if m, err := FindResponse(big, IntID(9)); err != nil || string(m.Result) != "true" {
		t.Fatalf("large batch: %v, %v", m, err)
	}
}

// refMessage is a JSON-RPC message as plain encoding/json decodes it.
type refMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Params  json.RawMessage `json:"params"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
}

// refFind finds the response to id by decoding data whole with
// encoding/json; ok is false when the reference has no verdict (data does
// not decode so, or an id is of another type).
func refFind(data []byte, id ID) (m *refMessage, found, ok bool) {
	var msgs []*refMessage
	if d := trimSpace(data); len(d) > 0 && d[0] == '[' {
		if json.Unmarshal(data, &msgs) != nil {
			return nil, false, false
		}
	} else {
		var one *refMessage
		if json.Unmarshal(data, &one) != nil {
			return nil, false, false
		}
		msgs = []*refMessage{one}
	}
	for _, m := range msgs {
		if m == nil {
			continue
		}
		mid, err := ParseID(m.ID)
		if len(m.ID) > 0 && err != nil {
			return nil, false, false
		}
		if m.Method == "" && mid == id {
			return m, true, true
		}
	}
	return nil, false, true
}

// FuzzFindResponse compares FindResponse with a whole decode by plain
// encoding/json where that has a verdict; on anything else it must not
// panic, and must refuse what is not valid JSON or nested too deep.
func FuzzFindResponse(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `[{"id":"a","error":{"code":1,"message":"m"}},{"id":1,"result":[]}]`,
		`{"id":1,"method":"ping"}`, `[null,{"id":1.0,"result":1}]`, `{"ID":1,"Result":2}`, `{"id":1,"result":1,"id":2}`, `[[{}]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, id := range []ID{IntID(1), StringID("a")} {
			m, err := FindResponse(data, id)
			if m != nil && (err != nil || m.ID != id || m.Method != "") {
				t.Fatalf("FindResponse(%s) = %+v, %v", id, m, err)
			}
			if !json.Valid(data) || Check(data, MaxDepth) != nil {
				if err == nil || errors.Is(err, ErrNoResponse) {
					t.Fatalf("FindResponse(%s) took invalid data: %v", id, err)
				}
				continue
			}
			want, found, ok := refFind(data, id)
			if !ok {
				continue
			}
			switch {
			case !found:
				if !errors.Is(err, ErrNoResponse) {
					t.Fatalf("FindResponse(%s): %+v, %v; encoding/json finds none", id, m, err)
				}
			case want.Result == nil && want.Error == nil:
				if !errors.Is(err, ErrInvalidMessage) {
					t.Fatalf("FindResponse(%s): %+v, %v for an empty response", id, m, err)
				}
			case err != nil:
				t.Fatalf("FindResponse(%s): %v; encoding/json finds %+v", id, err, want)
			case !bytes.Equal(m.Result, want.Result) || !sameError(m.Error, want.Error):
				t.Fatalf("FindResponse(%s): %+v; encoding/json: %+v", id, m, want)
			}
		}
	})
}

func sameError(a, b *Error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Code == b.Code && a.Message == b.Message && bytes.Equal(a.Data, b.Data)
}
