package admission

import "time"

// LogLimiter says whether a refusal of one client may be logged now: at
// most once per Every per key, in bounded memory (MaxKeys keys; when full,
// the memory starts over, so a flood of keys costs at most one line per
// key per Every, and never more memory). The clock is the caller's.
type LogLimiter struct {
	Every   time.Duration
	MaxKeys int
	last    map[string]time.Time
}

// NewLogLimiter returns a limiter; every <= 0 means a minute, maxKeys <= 0
// means 4096.
func NewLogLimiter(every time.Duration, maxKeys int) *LogLimiter {
	if every <= 0 {
		every = time.Minute
	}
	if maxKeys <= 0 {
		maxKeys = 4096
	}
	return &LogLimiter{Every: every, MaxKeys: maxKeys, last: map[string]time.Time{}}
}

// Allow reports whether key may be logged at now, and if so notes it.
// Not safe for concurrent use.
func (l *LogLimiter) Allow(key string, now time.Time) bool {
	if t, ok := l.last[key]; ok && now.Sub(t) < l.Every {
		return false
	}
	if len(l.last) >= l.MaxKeys {
		clear(l.last)
	}
	l.last[key] = now
	return true
}
