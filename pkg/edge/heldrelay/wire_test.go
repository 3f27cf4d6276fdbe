package heldrelay

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSubject(t *testing.T) {
	for edge, want := range map[string]string{
		"edge-a":   "fleetgate.held.edge-a",
		"host_1-x": "fleetgate.held.host_1-x",
	} {
		if got := Subject(edge); got != want {
			t.Errorf("Subject(%q) = %q, want %q", edge, got, want)
		}
	}
	for _, edge := range []string{"a.b", "a*", "a>", "with space", "", strings.Repeat("x", 65)} {
		got := Subject(edge)
		if rest := strings.TrimPrefix(got, SubjectPrefix+"."); rest == got || !tokenRE.MatchString(rest) || rest == edge {
			t.Errorf("Subject(%q) = %q: want one plain token under %s", edge, got, SubjectPrefix)
		}
	}
	if Subject("a.b") == Subject("a_b") {
		t.Error("two ids share a subject")
	}
}

func TestDecodeRetry(t *testing.T) {
	ok := `{"identity":"ident\u0000alice","tool":"t","backend":"b","state":"fg1.x","responses":{"input-1":{}},"wait_ms":5}`
	r, err := DecodeRetry([]byte(ok))
	if err != nil || r.Identity != "ident\x00alice" || r.Wait() != 5*time.Millisecond {
		t.Fatalf("DecodeRetry: %+v, %v", r, err)
	}
	for name, in := range map[string]string{
		"unknown member":          `{"identity":"","tool":"t","backend":"b","state":"s","x":1}`,
		"trailing data":           ok + `{}`,
		"no state":                `{"identity":"","tool":"t","backend":"b","state":""}`,
		"no tool":                 `{"identity":"","tool":"","backend":"b","state":"s"}`,
		"responses not an object": `{"identity":"","tool":"t","backend":"b","state":"s","responses":[1]}`,
		"state too long":          `{"identity":"","tool":"t","backend":"b","state":"` + strings.Repeat("s", maxState+1) + `"}`,
		"too large":               `{"identity":"` + strings.Repeat("i", MaxRetry) + `"}`,
	} {
		if _, err := DecodeRetry([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v; want ErrMalformed", name, err)
		}
	}
	if (&Retry{WaitMillis: int64(time.Hour / time.Millisecond)}).Wait() != MaxWait || (&Retry{}).Wait() != MaxWait {
		t.Error("a wait over MaxWait, or none, not bounded by MaxWait")
	}
}

func TestDecodeOutcome(t *testing.T) {
	for _, in := range []string{`{"result":{"content":[]},"final":true}`, `{"code":-32602,"message":"no"}`} {
		if _, err := DecodeOutcome([]byte(in)); err != nil {
			t.Errorf("DecodeOutcome(%s): %v", in, err)
		}
	}
	for _, in := range []string{`{}`, `{"result":[]}`, `{"code":-1,"result":{}}`, `{"code":-1,"final":true}`, `{"result":{},"more":1}`} {
		if _, err := DecodeOutcome([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeOutcome(%s): %v; want ErrMalformed", in, err)
		}
	}
}

// FuzzDecodeRetry: any bytes decode to a retry within the bounds, or are
// refused with ErrMalformed; a retry decoded encodes and decodes alike.
func FuzzDecodeRetry(f *testing.F) {
	f.Add([]byte(`{"identity":"ident\u0000alice","tool":"t","backend":"b","state":"fg1.x","responses":{"input-1":{}},"wait_ms":5}`))
	f.Add([]byte(`{"tool":"t","backend":"b","state":"s","responses":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRetry(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("refusal %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(r.State) > maxState || len(r.Identity) > maxIdentity || r.Wait() > MaxWait || r.Wait() <= 0 {
			t.Fatalf("decoded out of bounds: %+v", r)
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeRetry(again); err != nil {
			t.Fatalf("re-encoded retry refused: %v", err)
		}
	})
}

// FuzzDecodeOutcome: any bytes decode to an outcome with either a result
// object or an error, or are refused with ErrMalformed.
func FuzzDecodeOutcome(f *testing.F) {
	f.Add([]byte(`{"result":{"content":[]},"final":true}`))
	f.Add([]byte(`{"code":-32602,"message":"no"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := DecodeOutcome(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("refusal %v does not wrap ErrMalformed", err)
			}
			return
		}
		if (o.Code == 0) == (len(o.Result) == 0) {
			t.Fatalf("outcome %+v: want a result or an error, not both or neither", o)
		}
	})
}

// FuzzUnseal: whatever arrives on an edge's subject, opening it ends in
// the content a group's edge sealed for this edge or a refusal.
func FuzzUnseal(f *testing.F) {
	sealed, _ := seal(testKey, retryAAD(Subject("e")), []byte(`{"tool":"t"}`))
	f.Add(sealed)
	f.Add([]byte(envelopePrefix))
	f.Add([]byte(`{"identity":"ident\u0000alice"}`))
	rl := New(Options{Edge: "e", Key: testKey})
	f.Fuzz(func(t *testing.T, b []byte) {
		plain, _, err := rl.unseal(b)
		switch {
		case err != nil && !errors.Is(err, ErrUnsealed) && !errors.Is(err, ErrMalformed):
			t.Fatalf("refusal %v wraps neither ErrUnsealed nor ErrMalformed", err)
		case err == nil && string(plain) != `{"tool":"t"}`:
			t.Fatalf("opened %q, which no edge sealed", plain)
		}
	})
}
