package fastpath

import (
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/edge/internal/jsontest"
)

func TestParseListen(t *testing.T) {
	for body, want := range map[string]uint8{
		jsontest.ListenBody("1", `{"toolsListChanged":true}`):                                                       ListTools,
		jsontest.ListenBody("1", `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}`): 7,
		jsontest.ListenBody("1", `{"toolsListChanged":false}`):                                                      0,
		jsontest.ListenBody("1", `{"toolsListChanged":1}`):                                                          0,
		jsontest.ListenBody("1", `{"resourceSubscriptions":["x"],"toolsListChanged":true}`):                         0,
		jsontest.ListenBody("1", `{"toolsListChanged":true,"toolsListChanged":true}`):                               0,
		jsontest.ListenBody("01", `{"toolsListChanged":true}`):                                                      0,
		strings.Replace(jsontest.ListenBody("1", `{"toolsListChanged":true}`), `"name":"raw"`, `"name":7`, 1):       0,
		strings.TrimSuffix(jsontest.ListenBody("1", `{"toolsListChanged":true}`), "}") + `,"extra":1}`:              0,
	} {
		lr, ok := ParseListen([]byte(body), "2026-07-28")
		if got := map[bool]uint8{true: lr.Subs, false: 0}[ok]; got != want {
			t.Errorf("%s: subs %b (ok %v), want %b", body, lr.Subs, ok, want)
		}
	}
}
