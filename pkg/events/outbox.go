package events

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// Outbox key layout: outbox/<8-byte big-endian key> holds an OutboxEntry;
// meta/next the next key; meta/lastgen the generation of the last event
// this outbox saw stored; meta/id the outbox's random instance id, which
// prefixes every Nats-Msg-Id it hands out.
var (
	outboxPrefix = []byte("outbox/")
	outboxUpper  = []byte("outbox0") // '0' sorts right after '/'
	metaNext     = []byte("meta/next")
	metaID       = []byte("meta/id")
	metaLastGen  = []byte("meta/lastgen")
)

// OutboxOptions configure an outbox. A nil *OutboxOptions means defaults.
type OutboxOptions struct {
	// MaxEventBytes bounds an entry at Append, so that the relay never
	// holds an event no server accepts: a larger catalog event is replaced
	// by an empty catalog and a health change saying why (see
	// ReasonTooLarge); other kinds are dropped. Default 7 MiB. The relay
	// applies the same rule against the server's max_payload.
	MaxEventBytes int
}

// Outbox is the writer's durable queue: an event appended to it is synced
// to Pebble before Append returns, and stays there until the relay has
// stored it in the event log.
type Outbox struct {
	db       *pebble.DB
	id       string
	maxBytes int

	mu      sync.Mutex
	next    uint64 // key of the next appended entry
	head    uint64 // key of the oldest pending entry (== next when empty)
	lastGen uint64
	depth   int
	closed  bool
	// tooLarge counts events replaced at Append for their size.
	tooLarge uint64
	wake     chan struct{}
}

type outboxEntry struct {
	key   uint64
	entry *eventspb.OutboxEntry
}

// OpenOutbox opens (or creates) the outbox in dir. One process per dir.
func OpenOutbox(dir string, o *OutboxOptions) (*Outbox, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		return nil, fmt.Errorf("open outbox %s: %w", dir, err)
	}
	ob := &Outbox{db: db, maxBytes: 7 << 20, wake: make(chan struct{}, 1)}
	if o != nil && o.MaxEventBytes > 0 {
		ob.maxBytes = o.MaxEventBytes
	}
	if err := ob.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open outbox %s: %w", dir, err)
	}
	return ob, nil
}

func (o *Outbox) load() error {
	id, err := o.get(metaID)
	if errors.Is(err, pebble.ErrNotFound) {
		id = []byte(rand.Text()[:12])
		if err := o.db.Set(metaID, id, pebble.Sync); err != nil {
			return fmt.Errorf("write instance id: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("read instance id: %w", err)
	}
	o.id = string(id)
	next, err := o.get(metaNext)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		o.next = 1
	case err != nil:
		return fmt.Errorf("read next key: %w", err)
	case len(next) != 8:
		return fmt.Errorf("read next key: corrupt value of %d bytes", len(next))
	default:
		o.next = binary.BigEndian.Uint64(next)
	}
	lg, err := o.get(metaLastGen)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read last generation: %w", err)
	case len(lg) != 8:
		return fmt.Errorf("read last generation: corrupt value of %d bytes", len(lg))
	default:
		o.lastGen = binary.BigEndian.Uint64(lg)
	}
	it, err := o.db.NewIter(&pebble.IterOptions{LowerBound: outboxPrefix, UpperBound: outboxUpper})
	if err != nil {
		return fmt.Errorf("count pending: %w", err)
	}
	defer it.Close()
	// Keys are contiguous and removal always takes a prefix, so the
	// pending entries are exactly head..next-1.
	o.head = o.next
	if it.First() {
		o.head = binary.BigEndian.Uint64(it.Key()[len(outboxPrefix):])
	}
	if err := it.Error(); err != nil {
		return err
	}
	o.depth = int(o.next - o.head)
	return nil
}

func (o *Outbox) get(key []byte) ([]byte, error) {
	v, closer, err := o.db.Get(key)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

func entryKey(k uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), outboxPrefix...), k)
}

// Append durably queues events in order. When it returns nil every event
// is synced to disk and will be published exactly once.
func (o *Outbox) Append(evs ...*eventspb.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return errorf(CodeClosed, 0, nil, "outbox append")
	}
	b := o.db.NewBatch()
	defer b.Close()
	next := o.next
	for _, ev := range evs {
		v, err := o.entry(ev, next)
		if err != nil {
			return err
		}
		if len(v) > o.maxBytes {
			// One oversized event must not refuse the whole batch (and
			// with it every other backend's events): it is replaced by
			// its too-large stand-ins, or dropped when it has none.
			o.tooLarge++
			for _, sub := range tooLargeReplacement(ev, "", len(v), o.maxBytes) {
				sv, err := o.entry(sub, next)
				if err != nil {
					return err
				}
				if err := b.Set(entryKey(next), sv, nil); err != nil {
					return fmt.Errorf("outbox append: %w", err)
				}
				next++
			}
			continue
		}
		if err := b.Set(entryKey(next), v, nil); err != nil {
			return fmt.Errorf("outbox append: %w", err)
		}
		next++
	}
	if err := b.Set(metaNext, binary.BigEndian.AppendUint64(nil, next), nil); err != nil {
		return fmt.Errorf("outbox append: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("outbox append: commit: %w", err)
	}
	o.depth += int(next - o.next)
	o.next = next
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

func (o *Outbox) entry(ev *eventspb.Event, key uint64) ([]byte, error) {
	v, err := proto.Marshal(&eventspb.OutboxEntry{MsgId: fmt.Sprintf("%s-%d", o.id, key), Event: ev})
	if err != nil {
		return nil, fmt.Errorf("outbox append %s %s/%s: %w", Kind(ev), ev.Group, ev.Backend, err)
	}
	return v, nil
}

// TooLarge counts the events Append replaced because they exceeded
// MaxEventBytes.
func (o *Outbox) TooLarge() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tooLarge
}

// Depth is the number of events waiting to be relayed.
func (o *Outbox) Depth() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.depth
}

// peek returns up to n pending entries in order. Iteration starts at the
// oldest pending key, so deleted entries are never walked over.
func (o *Outbox) peek(n int) ([]outboxEntry, error) {
	o.mu.Lock()
	head := o.head
	o.mu.Unlock()
	it, err := o.db.NewIter(&pebble.IterOptions{LowerBound: entryKey(head), UpperBound: outboxUpper})
	if err != nil {
		return nil, fmt.Errorf("outbox peek: %w", err)
	}
	defer it.Close()
	var out []outboxEntry
	for it.First(); it.Valid() && len(out) < n; it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("outbox peek: %w", err)
		}
		e := &eventspb.OutboxEntry{}
		key := binary.BigEndian.Uint64(it.Key()[len(outboxPrefix):])
		if err := proto.Unmarshal(v, e); err != nil {
			return nil, fmt.Errorf("outbox peek: entry %d: %w", key, err)
		}
		out = append(out, outboxEntry{key: key, entry: e})
	}
	return out, it.Error()
}

// LastGeneration is the generation of the last event this outbox saw
// stored in the log (0 if none).
func (o *Outbox) LastGeneration() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lastGen
}

// remove deletes every entry up to and including key and records gen as
// the last stored generation, in one synced batch.
func (o *Outbox) remove(key, gen uint64) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if key < o.head || key >= o.next {
		return fmt.Errorf("outbox remove through %d: pending keys are %d..%d", key, o.head, o.next-1)
	}
	b := o.db.NewBatch()
	defer b.Close()
	for k := o.head; k <= key; k++ {
		if err := b.Delete(entryKey(k), nil); err != nil {
			return fmt.Errorf("outbox remove through %d: %w", key, err)
		}
	}
	if err := b.Set(metaLastGen, binary.BigEndian.AppendUint64(nil, gen), nil); err != nil {
		return fmt.Errorf("outbox remove through %d: %w", key, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("outbox remove through %d: commit: %w", key, err)
	}
	o.depth -= int(key - o.head + 1)
	o.head = key + 1
	o.lastGen = gen
	return nil
}

// Close closes the outbox; pending entries stay on disk.
func (o *Outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	return o.db.Close()
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...any)  {}
func (quietPebble) Errorf(string, ...any) {}
func (quietPebble) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
