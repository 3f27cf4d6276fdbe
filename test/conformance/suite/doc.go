// Package suite runs the official MCP conformance suite's command line
// (@modelcontextprotocol/conformance, server mode) and reads what it
// reports: the scenarios of a suite, each scenario's checks against one
// URL (run one process per scenario, with a deadline, so a scenario that
// hangs costs its deadline and no more), and a baseline of scenarios known
// to fail through a gateway that a run is judged against.
//
//	cli := &suite.CLI{Node: "node", Script: ".../dist/index.js"}
//	names, err := cli.Scenarios(ctx, "active")
//	res := cli.Run(ctx, names[0], "http://127.0.0.1:8080/mcp", nil)
//	fmt.Println(res.Passed(), res.Reason())
//
// Everything read from the suite is bounded: its output, the size of a
// checks file, the number of checks and scenarios, the length of texts.
package suite
