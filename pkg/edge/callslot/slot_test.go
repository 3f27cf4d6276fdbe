package callslot

import (
	"context"
	"fmt"
	"net/http"
	"testing"
)

func header(token string) http.Header {
	h := http.Header{}
	if token != "" {
		h.Set(Header, token)
	}
	return h
}

// TestHeldWhileCallsRun: the slots of a request are given back when the
// request is over and its last call has ended, whichever comes last;
// calls of a request over are cancelled, and a call that begins after it
// is over begins cancelled.
func TestHeldWhileCallsRun(t *testing.T) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, tb *Table, token string, done func(), released *int)
	}{
		{"answered: the call ends first", func(t *testing.T, tb *Table, token string, done func(), released *int) {
			ctx, end := tb.Begin(context.Background(), header(token))
			end()
			if *released != 0 {
				t.Fatal("given back while the request is not over")
			}
			done()
			if *released != 1 || ctx.Err() == nil {
				t.Fatalf("released %d, ctx %v", *released, ctx.Err())
			}
		}},
		{"client gone: the request is over first", func(t *testing.T, tb *Table, token string, done func(), released *int) {
			ctx, end := tb.Begin(context.Background(), header(token))
			done()
			if ctx.Err() == nil {
				t.Fatal("the call of a request over is not cancelled")
			}
			if *released != 0 {
				t.Fatal("given back while its call runs")
			}
			end()
			if *released != 1 {
				t.Fatalf("released %d after the call ended", *released)
			}
		}},
		{"a batch: the last call gives back", func(t *testing.T, tb *Table, token string, done func(), released *int) {
			_, end1 := tb.Begin(context.Background(), header(token))
			_, end2 := tb.Begin(context.Background(), header(token))
			done()
			end1()
			if *released != 0 {
				t.Fatal("given back while a call of the batch runs")
			}
			end2()
			end2() // twice: nothing more
			done()
			if *released != 1 {
				t.Fatalf("released %d", *released)
			}
		}},
		{"a call after the request is over", func(t *testing.T, tb *Table, token string, done func(), released *int) {
			done()
			ctx, end := tb.Begin(context.Background(), header(token))
			if ctx.Err() == nil {
				t.Fatal("a call beginning after its request is over runs")
			}
			end()
			if *released != 1 {
				t.Fatalf("released %d", *released)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tb Table
			released := 0
			token, done := tb.Hold(func() { released++ })
			c.run(t, &tb, token, done, &released)
			if n := tb.Len(); n != 0 {
				t.Fatalf("%d requests still held", n)
			}
		})
	}
}

// TestNoHeader: a request that holds no slots runs its calls as they are.
func TestNoHeader(t *testing.T) {
	var tb Table
	ctx := context.Background()
	got, end := tb.Begin(ctx, header(""))
	end()
	if got != ctx {
		t.Fatal("a call without slots got another context")
	}
}

func ExampleTable() {
	var tb Table
	token, done := tb.Hold(func() { fmt.Println("slots given back") })
	h := http.Header{}
	h.Set(Header, token) // the go-sdk hands the request's header to the call
	ctx, end := tb.Begin(context.Background(), h)
	_ = ctx // the call runs with ctx
	end()
	done() // the response is written: the slots are given back
	// Output: slots given back
}
