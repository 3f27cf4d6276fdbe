package config_test

import (
	"errors"
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/config"
)

func Example() {
	fleet, err := config.Load("testdata/fleet.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range fleet.Groups {
		for _, b := range g.Backends {
			fmt.Println(g.Name, b.Name, b.URL, b.Transport)
		}
	}
	fmt.Println("probe every", fleet.Health.Interval, "separator", fleet.Aggregation.Separator)

	// An admin PUT: change a copy, then diff to know which probers to touch.
	next := fleet.Clone()
	if err := next.Put("default", config.Backend{Name: "gamma", URL: "http://127.0.0.1:9103/mcp"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", config.Diff(fleet, next))

	// A bad config gives one line naming the file, line and field.
	_, err = config.Parse("config.yaml", []byte("groups:\n  - name: default\n    backends:\n      - name: alpha\n        url: ht!tp://x\n"))
	var fe *config.FieldError
	fmt.Println(errors.As(err, &fe), fe.Line, fe.Field)
	fmt.Println(err)
	// Output:
	// default alpha http://127.0.0.1:9101/mcp streamable-http
	// default beta http://127.0.0.1:9102/mcp streamable-http
	// probe every 5s separator _
	// {Added:[{Group:default Name:gamma}] Removed:[] Updated:[]}
	// true 5 groups[0].backends[0].url
	// config.yaml:5: groups[0].backends[0].url: "ht!tp://x" is not an http(s) URL
}
