package dashboard_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// paintJS returns, for the timeline segments of a backend's row, each
// one's status, the colour it is painted with (its background colour, or
// the first colour of its background image: unknown is hatched) and the
// legend's entry for that status with its swatch's colour.
const paintJS = `(() => {
  const paint = (st) => {
    const c = st.backgroundColor;
    if (c && c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c;
    const m = (st.backgroundImage || '').match(/rgba?\([^)]*\)/);
    return m ? m[0] : '';
  };
  const row = document.querySelector('tr[data-backend=%q]');
  if (!row) return [];
  return [...row.querySelectorAll('.timeline .tl')].map((el) => {
    const lg = document.querySelector('#backends-card .legend .lg.' + el.dataset.status);
    return { status: el.dataset.status, paint: paint(getComputedStyle(el)),
      legend: lg ? lg.textContent : '', legendPaint: lg ? paint(getComputedStyle(lg, '::before')) : '' };
  });
})()`

type painted struct {
	Status      string `json:"status"`
	Paint       string `json:"paint"`
	Legend      string `json:"legend"`
	LegendPaint string `json:"legendPaint"`
}

// The page's timeline is every status the controller reported, in order:
// a backend driven healthy, unknown (one failed probe), unhealthy (two;
// no event: neither is advertised), degraded (recovering; advertised
// again) and healthy (no event: both are advertised) shows those five
// segments, each painted as the legend's swatch for its status, and the
// row's status is the admin API's at each step.
func TestBrowserTimeline(t *testing.T) {
	exec := chromiumPath(t)
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	f := startFleet(t)
	ctx := browser(t, exec)
	f.bus.wait(t, 0, 30*time.Second, func(ev *eventspb.Event) bool {
		return ev.Backend == "search" && ev.GetHealthChanged().GetAdvertisable()
	})
	row := `document.querySelector('tr[data-backend="search"]')`
	within(t, ctx, 30*time.Second, "the page, search healthy",
		chromedp.Navigate(f.admin+"/ui"),
		chromedp.WaitVisible(chromedp.CSS("#token-input")),
		chromedp.SendKeys(chromedp.CSS("#token-input"), f.token),
		chromedp.Click(chromedp.CSS("#login-form button[type=submit]")),
		poll(row+`?.dataset.status === 'healthy'`, 20*time.Second),
	)

	// Down: unknown after one failed probe, unhealthy after two.
	f.backends["search"].Stop()
	within(t, ctx, 30*time.Second, "search unhealthy",
		poll(row+`.dataset.status === 'unhealthy' && `+row+`.querySelector('.timeline .tl:last-child').dataset.status === 'unhealthy'`, 30*time.Second))
	// Back: degraded while recovering, then healthy.
	if err := f.backends["search"].Restart(); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, 30*time.Second, "search healthy again",
		poll(row+`.dataset.status === 'healthy' && `+row+`.querySelector('.timeline .tl:last-child').dataset.status === 'healthy' && `+
			`[...`+row+`.querySelectorAll('.timeline .tl')].some((el) => el.dataset.status === 'degraded')`, 30*time.Second))

	segs, err := chromedp.Run(ctx, chromedp.Evaluate[[]painted](fmt.Sprintf(paintJS, "search")))
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, s := range segs {
		statuses = append(statuses, s.Status)
	}
	t.Logf("search's timeline: %s", strings.Join(statuses, ", "))
	// Before the first healthy: the time before the log began (absent)
	// and the backend's first moments (unknown).
	first := slices.Index(statuses, "healthy")
	if first < 0 || !slices.Equal(statuses[first:], []string{"healthy", "unknown", "unhealthy", "degraded", "healthy"}) {
		t.Fatalf("search's timeline %v, want ... healthy, unknown, unhealthy, degraded, healthy", statuses)
	}
	for _, s := range statuses[:first] {
		if s != "absent" && s != "unknown" {
			t.Errorf("search's timeline begins %v", statuses[:first])
		}
	}
	legend := map[string]string{"healthy": "healthy", "unknown": "unknown", "unhealthy": "unhealthy", "degraded": "degraded", "absent": "not configured"}
	paints := map[string]string{}
	for _, s := range segs {
		if s.Legend != legend[s.Status] || s.Paint == "" || s.Paint != s.LegendPaint {
			t.Errorf("a %s segment is painted %q, its legend entry %q with %q", s.Status, s.Paint, s.Legend, s.LegendPaint)
		}
		if p, ok := paints[s.Status]; ok && p != s.Paint {
			t.Errorf("two %s segments painted %q and %q", s.Status, p, s.Paint)
		}
		paints[s.Status] = s.Paint
	}
	seen := map[string]string{}
	for st, p := range paints {
		if other, ok := seen[p]; ok {
			t.Errorf("%s and %s are both painted %s", st, other, p)
		}
		seen[p] = st
	}
}
