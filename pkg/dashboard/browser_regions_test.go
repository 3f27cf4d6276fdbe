package dashboard_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetgate/fleetgate/pkg/region"
)

// fakeRegions stands for region.Statuses of a two-region controller: a
// changes what the next call reports.
type fakeRegions struct {
	mu   sync.Mutex
	list []region.Status
}

func (f *fakeRegions) statuses(context.Context) []region.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]region.Status(nil), f.list...)
}

func (f *fakeRegions) set(i int, change func(*region.Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.list[i])
}

// The Regions panel in Chromium: two regions with their heads, and a
// change of head and an error of the mirror shown within 2 s, with no
// event in the log to prompt it (the page reads /v1/regions every 1.5 s).
func TestBrowserRegionsPanel(t *testing.T) {
	exec := chromiumPath(t)
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	fr := &fakeRegions{list: []region.Status{
		{Region: "a", Local: true, Head: 41},
		{Region: "b", Head: 17, OriginHead: 19, Lag: ptr(uint64(2)), MirrorActive: 800 * time.Millisecond},
	}}
	f := startFleetRegions(t, fr.statuses)
	ctx := browser(t, exec)
	within(t, ctx, 30*time.Second, "the panel shows both regions",
		chromedp.Navigate(f.admin+"/ui"),
		chromedp.WaitVisible(chromedp.CSS("#token-input")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), f.token),
		chromedp.Click(chromedp.CSS("#login-form button[type=submit]")),
		poll(`document.querySelector('#live').dataset.status === 'live'`, 20*time.Second),
		poll(`!document.querySelector('#regions-card').hidden && document.querySelectorAll('#regions tbody tr').length === 2`, 10*time.Second),
		poll(`document.querySelector('#regions tr[data-region="a"] .head').textContent === '41' &&
			document.querySelector('#regions tr[data-region="a"] .pill').textContent === 'local' &&
			document.querySelector('#regions tr[data-region="b"] .head').textContent === '17' &&
			document.querySelector('#regions tr[data-region="b"] .lag').textContent === '2' &&
			document.querySelector('#regions tr[data-region="b"] .pill').textContent === 'lagging'`, 5*time.Second),
	)
	screenshot(t, ctx, "dashboard-regions.png")

	for _, c := range []struct {
		what   string
		change func(*region.Status)
		i      int
		expr   string
	}{
		{"b's head moves on", func(s *region.Status) { s.Head, s.Lag = 19, ptr(uint64(0)) }, 1,
			`document.querySelector('#regions tr[data-region="b"] .head').textContent === '19' &&
			document.querySelector('#regions tr[data-region="b"] .pill').textContent === 'mirror'`},
		{"b's origin unreachable", func(s *region.Status) { s.Lag, s.OriginError = nil, "no responders" }, 1,
			`document.querySelector('#regions tr[data-region="b"] .lag').textContent === '?' &&
			document.querySelector('#regions tr[data-region="b"] .pill').textContent === 'origin unreachable'`},
		{"b's mirror fails", func(s *region.Status) { s.MirrorError, s.OriginError = "consumer create timed out", "" }, 1,
			`document.querySelector('#regions tr[data-region="b"] .err').textContent === 'consumer create timed out' &&
			document.querySelector('#regions tr[data-region="b"] .pill').textContent === 'error'`},
	} {
		fr.set(c.i, c.change)
		start := time.Now()
		within(t, ctx, 3*time.Second, c.what, poll(c.expr, 2*time.Second))
		t.Logf("%s: shown after %s", c.what, time.Since(start).Round(time.Millisecond))
	}
}

func ptr[T any](v T) *T { return &v }
