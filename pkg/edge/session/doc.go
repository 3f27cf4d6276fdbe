// Package session holds the edge's client sessions: each session's go-sdk
// server (one per session, so that one slow client holds up only its own
// notifications), the served view it was last given (swapped atomically:
// a list sees the old view or the new one, never a mix), the list_changed
// and resources/updated it is owed and the standalone GET or listen
// stream that writes them, its per-session state (its task table, the
// calls of it the edge answers itself), and the registry of them all
// (open, swap, forget, the idle sweep, counts per identity for the
// session caps). What happens to a session is reported through Observer;
// the package imports nothing of the edge above it.
package session
