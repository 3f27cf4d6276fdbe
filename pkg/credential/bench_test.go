package credential

import (
	"net/http"
	"testing"
)

type nopTransport struct{}

func (nopTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200}, nil
}

// BenchmarkTransport is the cost a backend's headers add to one request:
// the resolved values set on a clone of the request.
func BenchmarkTransport(b *testing.B) {
	b.Setenv("CRED_BENCH_AUTHORIZATION", "Bearer "+secret)
	for _, bc := range []struct {
		name string
		h    Headers
	}{{"none", nil}, {"one", Headers{"Authorization": {Env: "CRED_BENCH_AUTHORIZATION"}}}} {
		b.Run(bc.name, func(b *testing.B) {
			tr := NewTransport(nopTransport{}, bc.h, &TransportOptions{URL: "http://127.0.0.1:9101/mcp"})
			req, _ := http.NewRequest("POST", "http://127.0.0.1:9101/mcp", nil)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Mcp-Session-Id", "abc")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tr.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
