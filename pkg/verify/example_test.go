package verify_test

import (
	"context"
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/verify"
)

func ExampleRun() {
	b := demobackend.New("alpha", &demobackend.Options{ExtraTools: 250, PageSize: 100})
	if err := b.Start("127.0.0.1:0"); err != nil {
		panic(err)
	}
	defer b.Stop()

	// First pass: nothing to compare against; the report carries the digest.
	rep, err := verify.Run(context.Background(), verify.Options{URL: b.URL()})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Pages, len(rep.Cursors), rep.Tools, rep.Verdict, rep.ExitCode())

	// Second pass: expect that digest.
	rep, err = verify.Run(context.Background(), verify.Options{URL: b.URL(), ExpectDigest: rep.Digest})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Verdict, rep.ExitCode())
	// Output:
	// 3 3 252 unverifiable 3
	// converged 0
}
