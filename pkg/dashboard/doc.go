// Package dashboard is the controller's web page: the fleet's backends
// with their status and health timeline (package timeline: the log's
// health events and every status change the controller reported, which
// the log does not carry when advertisability does not change), the
// generation log with each
// event's details, the authorization policy in force, and per edge its
// sessions with protocol, applied generation and convergence verdict
// (a session without a request for Options.IdleAfter is counted idle,
// apart from the verdicts),
// and, in a multi-region fleet, each region's log as the controller's
// NATS holds it (head generation, mirror lag and activity). It updates
// live from a server-sent event stream.
//
// The page is static (HTML, CSS and vanilla JavaScript embedded in the
// binary, no third-party code); every piece of data comes from the admin
// API, read with fetch() and an Authorization header the page asks for
// and keeps in sessionStorage. The shell (OpenPaths) holds no data and is
// the only part served without the admin token; the Host check of
// package adminauth applies to it as to the rest.
//
//	dash, err := dashboard.New(&dashboard.Options{Reader: ctl.Reader(), Log: log, Sessions: kv, Statuses: ctl.StatusHistory()})
//	h := adminauth.Guard(dash.Handler(ctl.Handler(reg)), adminauth.Options{Token: tok, Open: dashboard.OpenPaths()})
//	go dash.Run(ctx) // follows the log and the session bucket; ends every stream when ctx ends
//
// Endpoints (all but the shell need the admin token when one is set):
//
//	GET /ui, /ui/...          the page shell and its assets
//	GET /v1/stream            server-sent events: hello, event, status, reset, sessions
//	GET /v1/edges             session records by edge: counts, verdicts, classes, one page of sessions
//	GET /v1/timeline          each backend's status over a window, in runs (window=1h)
//	GET /v1/events/recent     the newest events of the log (limit, before)
//	GET /v1/regions           a multi-region fleet's logs here (Options.Regions; 404 without)
//
// The stream is bounded: at most Options.MaxStreams at once (503 beyond),
// each with a queue of Options.StreamBuffer frames; a client that falls
// that far behind is dropped (it reconnects and reloads), and a write
// that blocks longer than Options.WriteTimeout ends the stream. Session
// records are indexed up to Options.MaxSessions; the bucket is scanned
// again every Options.Rescan, which also forgets records that expired
// (a watcher of the bucket does not see expiries).
package dashboard
