package tracing_test

import (
	"context"
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/tracing"
)

// A process sets tracing up from its environment, hands the provider to
// its components and flushes it last.
func Example() {
	ctx := context.Background()
	tp, err := tracing.New(ctx, &tracing.Options{ServiceName: "fleetgate-edge",
		Getenv: func(string) string { return "" }}) // os.Getenv by default
	if err != nil {
		panic(err)
	}
	defer tp.Shutdown(ctx)
	_ = tp.TracerProvider() // e.g. edge.Options.TracerProvider
	fmt.Println("tracing on:", tp.Enabled())
	// Output: tracing on: false
}
