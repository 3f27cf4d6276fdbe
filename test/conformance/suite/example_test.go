package suite_test

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/test/conformance/suite"
)

// A suite run judged against a baseline; here the suite's CLI is played by
// a shell script.
func Example() {
	cli := &suite.CLI{Node: "/bin/sh", Script: "testdata/fakesuite.sh", Env: []string{"FAKE_SCENARIOS=ping tools-list"}}
	ctx := context.Background()
	names, err := cli.Scenarios(ctx, "active")
	if err != nil {
		panic(err)
	}
	direct := cli.RunSuite(ctx, "active", names, "http://127.0.0.1:1/mcp", &suite.SuiteOptions{Timeout: 10 * time.Second})
	fmt.Println(names, direct["ping"].Passed())
	v := suite.Judge(names, direct, direct, suite.Baseline{"ping": "was broken"}, false)
	fmt.Println(v.OK(), v.NowPassing)
	// Output:
	// [ping tools-list] true
	// true [ping]
}
