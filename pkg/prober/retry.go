package prober

import "time"

// retry paces the connect attempts while a backend is down. The first
// retry after a failure comes after first (a blip is retried soon); later
// attempts fall on the probe schedule of the outage, its first failure plus
// a whole number of periods, so a backend that comes back is reconnected
// at the next period at the latest, however long it was down (no backoff
// that grows while it is down). It is pure: the caller passes the time.
type retry struct {
	first, period time.Duration
	start         time.Time // first failure of the outage; zero: none
	n             int       // failures in the outage
}

// next records a failure at now and returns how long to wait before the
// next attempt.
func (r *retry) next(now time.Time) time.Duration {
	if r.start.IsZero() {
		r.start, r.n = now, 0
	}
	r.n++
	if r.n == 1 || r.period <= 0 {
		return r.first
	}
	k := now.Sub(r.start)/r.period + 1
	return max(r.start.Add(k*r.period).Sub(now), r.first)
}

// reset ends the outage: a session worked.
func (r *retry) reset() { r.start, r.n = time.Time{}, 0 }
