package prober_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/prober"
)

func ExampleProber() {
	b := demobackend.New("alpha", nil)
	if err := b.Start("127.0.0.1:0"); err != nil {
		panic(err)
	}
	defer b.Stop()

	obs := make(chan health.Observation, 16)
	cats := make(chan prober.Catalog, 4)
	p := prober.New(prober.Target{Group: "default", Name: "alpha", URL: b.URL()}, prober.Sink{
		// Hand off without blocking the prober (drop if the reader lags).
		Observe: func(_ prober.Target, o health.Observation) {
			select {
			case obs <- o:
			default:
			}
		},
		Catalog: func(_ prober.Target, c prober.Catalog) { cats <- c },
	}, &prober.Options{Policy: health.Policy{Interval: time.Minute, Timeout: 2 * time.Second}})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()

	fmt.Println("probe:", (<-obs).Result)
	c := <-cats
	fmt.Printf("catalog: %d tools, %d resources, %d prompts\n", len(c.Tools), len(c.Resources), len(c.Prompts))
	fmt.Println(string(c.Tools[0]))

	cancel()
	fmt.Println("run:", <-done)
	// Output:
	// probe: ok
	// catalog: 2 tools, 1 resources, 1 prompts
	// {"description":"Add two numbers.","inputSchema":{"properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"type":"object"},"name":"add"}
	// run: <nil>
}
