package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
	"github.com/fleetgate/fleetgate/pkg/dashboard"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// emptyLog stands in for *events.Reader and *events.Log.
type emptyLog struct{}

func (emptyLog) Watch() (<-chan struct{}, func())               { return make(chan struct{}), func() {} }
func (emptyLog) State() *events.State                           { return events.NewState() }
func (emptyLog) Bounds(context.Context) (uint64, uint64, error) { return 1, 0, nil }
func (emptyLog) Events(context.Context, uint64, int) ([]events.EventJSON, error) {
	return nil, nil
}
func (emptyLog) Event(context.Context, uint64) (*eventspb.Event, error) { return nil, events.ErrPurged }

// The controller serves the page in front of its admin API: the shell
// without the token, the data with it.
func Example() {
	api := http.NotFoundHandler() // the controller's admin API: ctl.Handler(reg)
	d, err := dashboard.New(&dashboard.Options{Reader: emptyLog{}, Log: emptyLog{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := adminauth.Guard(d.Handler(api), adminauth.Options{Token: []byte("s3cret"), Open: dashboard.OpenPaths()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()

	for _, path := range []string{"/ui/", "/v1/edges"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1"+path, nil))
		fmt.Println(path, w.Code)
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// /ui/ 200
	// /v1/edges 401
	// <nil>
}
