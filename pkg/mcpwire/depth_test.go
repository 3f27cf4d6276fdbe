package mcpwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestDepth(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		depth int
		err   error
	}{
		{`{}`, 0, 1, nil},
		{`"[[["`, 0, 0, nil},
		{`"a\"[["`, 0, 0, nil},
		{`[[{"a":[1,"]"]}]]`, 0, 4, nil},
		{`[[[]]]`, 2, 3, ErrTooDeep},
		{`[[[]]]`, 3, 3, nil},
		{`]`, 0, 0, ErrUnbalanced},
		{`[`, 0, 1, ErrUnbalanced},
		{`"abc`, 0, 0, ErrUnbalanced},
		{`"abc\`, 0, 0, ErrUnbalanced},
		{`{"a":"\\"}`, 0, 1, nil},
	} {
		d, err := Depth([]byte(tc.in), tc.limit)
		if d != tc.depth || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("Depth(%q, %d) = %d, %v; want %d, %v", tc.in, tc.limit, d, err, tc.depth, tc.err)
		}
	}
}

// TestDepthHostile: four MiB of '[' and a balanced nesting 200,000 deep are
// refused at the limit, in one pass.
func TestDepthHostile(t *testing.T) {
	open := bytes.Repeat([]byte("["), 4<<20)
	if err := Check(open, MaxDepth); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("4 MiB of [: %v", err)
	}
	balanced := append(bytes.Repeat([]byte("["), 200000), bytes.Repeat([]byte("]"), 200000)...)
	var de *DepthError
	if err := Check(balanced, MaxDepth); !errors.As(err, &de) || de.Offset != MaxDepth {
		t.Fatalf("balanced 200,000: %v", err)
	}
	if d, err := Depth(balanced, 0); err != nil || d != 200000 {
		t.Fatalf("no limit: %d, %v", d, err)
	}
}

func TestReadBody(t *testing.T) {
	b, err := ReadBody(strings.NewReader("12345"), 5)
	if err != nil || string(b) != "12345" {
		t.Fatalf("at the limit: %q, %v", b, err)
	}
	b, err = ReadBody(strings.NewReader("123456"), 5)
	if !errors.Is(err, ErrTooLarge) || len(b) != 6 {
		t.Fatalf("over the limit: %q, %v", b, err)
	}
}

func TestLimitReader(t *testing.T) {
	b, err := io.ReadAll(LimitReader(strings.NewReader("12345"), 5))
	if err != nil || string(b) != "12345" {
		t.Fatalf("at the limit: %q, %v", b, err)
	}
	b, err = io.ReadAll(LimitReader(strings.NewReader("123456"), 5))
	if !errors.Is(err, ErrTooLarge) || string(b) != "12345" {
		t.Fatalf("over the limit: %q, %v", b, err)
	}
	r := LimitReader(iotest.OneByteReader(strings.NewReader("123456")), 5)
	if b, err = io.ReadAll(r); !errors.Is(err, ErrTooLarge) || string(b) != "12345" {
		t.Fatalf("over the limit, a byte at a time: %q, %v", b, err)
	}
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("the error is not kept: %v", err)
	}
}

// jsonDepth is the nesting of valid JSON by encoding/json's tokenizer.
func jsonDepth(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
			deepest = max(deepest, depth)
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}

// FuzzDepth compares Depth with encoding/json on valid JSON, and the
// Guard's verdict with Depth's on the same bytes.
func FuzzDepth(f *testing.F) {
	for _, s := range []string{`{}`, `[1,[2,[3]]]`, `{"a":"[\"]"}`, `"\\"`, `[[[[[[`, `]]`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Depth(data, 0)
		if json.Valid(data) {
			if err != nil {
				t.Fatalf("valid JSON refused: %v", err)
			}
			if want := jsonDepth(data); d != want {
				t.Fatalf("depth %d, encoding/json %d", d, want)
			}
		}
		limit := 3
		_, cerr := Depth(data, limit)
		g := Guard(io.NopCloser(bytes.NewReader(data)), false, Limits{MaxDepth: limit})
		_, gerr := io.ReadAll(g)
		if errors.Is(cerr, ErrTooDeep) != errors.Is(gerr, ErrTooDeep) && !errors.Is(cerr, ErrUnbalanced) {
			t.Fatalf("Depth says %v, Guard says %v", cerr, gerr)
		}
	})
}
