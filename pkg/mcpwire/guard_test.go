package mcpwire

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readGuarded(data string, sse bool, l Limits) ([]byte, error) {
	return io.ReadAll(Guard(io.NopCloser(strings.NewReader(data)), sse, l))
}

func TestGuardJSON(t *testing.T) {
	if _, err := readGuarded(`{"a":[[["x"]]]}`, false, Limits{MaxDepth: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := readGuarded(`{"a":[[[["x"]]]]}`, false, Limits{MaxDepth: 4}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("too deep: %v", err)
	}
	if _, err := readGuarded(`"[[[[[[[["`, false, Limits{MaxDepth: 2}); err != nil {
		t.Fatalf("brackets in a string: %v", err)
	}
	if _, err := readGuarded(strings.Repeat(" ", 101), false, Limits{MaxMessage: 100}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
}

func TestGuardSSE(t *testing.T) {
	ok := "id: [[[[[[\r\nevent: message\ndata: {\"a\":[1]}\n\n: comment {{{{{{{\ndata: [[\ndata: ]]\n\n"
	if _, err := readGuarded(ok, true, Limits{MaxDepth: 2, MaxMessage: 40}); err != nil {
		t.Fatalf("fields other than data, and per-event depth: %v", err)
	}
	deep := "data: [[[\n\n"
	if _, err := readGuarded(deep, true, Limits{MaxDepth: 2}); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("too deep: %v", err)
	}
	// Each event is a message of its own: many small events pass a limit
	// that their total would not.
	many := strings.Repeat("data: {\"x\":1}\n\n", 1000)
	if _, err := readGuarded(many, true, Limits{MaxMessage: 64}); err != nil {
		t.Fatalf("many small events: %v", err)
	}
	big := "data: \"" + strings.Repeat("x", 100) + "\"\n\n"
	if _, err := readGuarded(big, true, Limits{MaxMessage: 64}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("large event: %v", err)
	}
	// A stream that never ends a line is still one message.
	endless := io.MultiReader(strings.NewReader("data: "), bytes.NewReader(bytes.Repeat([]byte("1"), 1<<20)))
	if _, err := io.ReadAll(Guard(io.NopCloser(endless), true, Limits{MaxMessage: 1 << 16})); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("endless line: %v", err)
	}
}

// FuzzGuardSSE: the guard never panics, and any event it lets through
// whole has data nested no deeper than the limit.
func FuzzGuardSSE(f *testing.F) {
	for _, s := range []string{"data: {}\n\n", "id: 1\r\ndata: [[\r\n\r\n", "data:[\ndata:]\n\n", ": x\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := Limits{MaxDepth: 3, MaxMessage: 256}
		out, err := io.ReadAll(Guard(io.NopCloser(bytes.NewReader(data)), true, l))
		// Read a byte at a time, the verdict is the same.
		_, berr := io.ReadAll(Guard(io.NopCloser(iotest.OneByteReader(bytes.NewReader(data))), true, l))
		if errors.Is(err, ErrTooDeep) != errors.Is(berr, ErrTooDeep) || errors.Is(err, ErrTooLarge) != errors.Is(berr, ErrTooLarge) {
			t.Fatalf("whole: %v; a byte at a time: %v", err, berr)
		}
		if err != nil {
			return
		}
		if !bytes.Equal(out, data) {
			t.Fatal("guard changed the bytes")
		}
	})
}
