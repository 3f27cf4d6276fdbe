package admission

// FirstNewProtocol is the first protocol version without sessions
// (subscriptions/listen in place of the standalone GET stream).
const FirstNewProtocol = "2026-07-28"

// ValidVersion reports whether v has the form of an MCP protocol version,
// a date YYYY-MM-DD (digits only; the month and day are not checked
// against a calendar: a version is a name, compared as one).
func ValidVersion(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if i == 4 || i == 7 {
			continue
		}
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// NewProtocol reports whether v is a valid version of the session-less
// generation (2026-07-28 or later). Versions of the same form order as
// strings; anything else is not new (and the gate refuses it).
func NewProtocol(v string) bool {
	return ValidVersion(v) && v >= FirstNewProtocol
}
