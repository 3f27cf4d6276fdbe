package region

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// MaxName bounds a region name; MaxRegions the regions of one fleet.
const (
	MaxName    = 32
	MaxRegions = 16
)

// ErrName is wrapped by errors about a region name or list.
var ErrName = errors.New("region: bad region name")

// CheckName reports whether name can name a region: 1 to MaxName of
// [a-z0-9-], starting with a letter or digit. It becomes a subject token, a
// stream and bucket name suffix and a JetStream domain, so nothing else is
// allowed.
func CheckName(name string) error {
	if name == "" || len(name) > MaxName {
		return fmt.Errorf("%w: length %d, want 1..%d", ErrName, len(name), MaxName)
	}
	for i, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0
		if !ok {
			return fmt.Errorf("%w: %q: byte %d is not [a-z0-9-]", ErrName, name, i)
		}
	}
	return nil
}

// ParseList parses a comma-separated list of region names (a flag value):
// each checked, no duplicates, at most MaxRegions, returned sorted. The
// empty string is the empty list.
func ParseList(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	if len(s) > MaxRegions*(MaxName+1) {
		return nil, fmt.Errorf("%w: list of %d bytes", ErrName, len(s))
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxRegions {
		return nil, fmt.Errorf("%w: %d regions, at most %d", ErrName, len(parts), MaxRegions)
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if err := CheckName(p); err != nil {
			return nil, err
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("%w: %q listed twice", ErrName, p)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// StreamName is the event stream of region name.
func StreamName(name string) string { return "FLEETGATE_EVENTS_" + strings.ToUpper(name) }

// SnapshotBucket is the snapshot bucket of region name.
func SnapshotBucket(name string) string { return "fleetgate_snapshots_" + name }

// SubjectPrefix is the subject prefix of region name's events.
func SubjectPrefix(name string) string { return "fleetgate." + name + ".events" }

// Domain is the JetStream domain of region name's NATS.
func Domain(name string) string { return name }

// LogOptions are the event log options of region name, nil for "" (the
// single-region defaults). replicas is the deployment's stream replicas
// (0: default).
func LogOptions(name string, replicas int) *events.LogOptions {
	if name == "" {
		if replicas == 0 {
			return nil
		}
		return &events.LogOptions{Replicas: replicas}
	}
	return &events.LogOptions{
		Stream:         StreamName(name),
		SubjectPrefix:  SubjectPrefix(name),
		SnapshotBucket: SnapshotBucket(name),
		Replicas:       replicas,
	}
}

// EdgeLogs are the event logs an edge of a fleet of these regions reads in
// its own region's NATS (its region's log and the mirrors of the others):
// natsnode.Options.EdgeLogs of a region's embedded node.
func EdgeLogs(regions []string) []natsnode.LogNames {
	out := make([]natsnode.LogNames, 0, len(regions))
	for _, r := range regions {
		// Subjects: the local region's stream binds them (wake-ups for
		// its edges); a mirror binds none and its readers poll.
		out = append(out, natsnode.LogNames{Stream: StreamName(r), SnapshotBucket: SnapshotBucket(r), Subjects: SubjectPrefix(r) + ".>"})
	}
	return out
}
