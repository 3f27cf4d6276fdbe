package leader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// errConflict is wrapped by store errors meaning "the key is not at the
// expected revision": someone else wrote it.
var errConflict = errors.New("lease revision conflict")

// errNoLease is returned by store.Get for an absent or deleted key.
var errNoLease = errors.New("no lease")

// store is the lease's storage: one key with revisions and compare-and-set.
// kvStore implements it over a NATS KV bucket; tests use an in-memory one.
type store interface {
	Get(ctx context.Context) (Observation, error)
	Create(ctx context.Context, l Lease) (uint64, error)
	Update(ctx context.Context, l Lease, rev uint64) (uint64, error)
	Delete(ctx context.Context, rev uint64) error
}

type kvStore struct {
	kv  jetstream.KeyValue
	key string
}

// openStore binds to the bucket, creating it (history 1, file storage,
// the given replicas) if it does not exist.
func openStore(ctx context.Context, js jetstream.JetStream, bucket, key string, replicas int) (*kvStore, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      bucket,
			Description: "fleetgate controller leader lease",
			History:     1,
			Replicas:    replicas,
			Storage:     jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) { // created meanwhile, or differently
			kv, err = js.KeyValue(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open lease bucket %q: %w", bucket, err)
	}
	return &kvStore{kv: kv, key: key}, nil
}

func (s *kvStore) Get(ctx context.Context) (Observation, error) {
	e, err := s.kv.Get(ctx, s.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return Observation{}, errNoLease
	}
	if err != nil {
		return Observation{}, fmt.Errorf("get lease %q: %w", s.key, err)
	}
	o := Observation{Found: true, Revision: e.Revision()}
	// An undecodable value is observed as a zero Lease: a foreign lease
	// that expires after the observer's own TTL.
	_ = json.Unmarshal(e.Value(), &o.Lease)
	return o, nil
}

func (s *kvStore) Create(ctx context.Context, l Lease) (uint64, error) {
	v, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	rev, err := s.kv.Create(ctx, s.key, v)
	return rev, casError("create lease", s.key, err)
}

func (s *kvStore) Update(ctx context.Context, l Lease, rev uint64) (uint64, error) {
	v, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	next, err := s.kv.Update(ctx, s.key, v, rev)
	return next, casError(fmt.Sprintf("update lease at revision %d", rev), s.key, err)
}

func (s *kvStore) Delete(ctx context.Context, rev uint64) error {
	err := s.kv.Delete(ctx, s.key, jetstream.LastRevision(rev))
	return casError(fmt.Sprintf("delete lease at revision %d", rev), s.key, err)
}

// casError wraps err, adding errConflict when it reports that the key was
// not at the expected revision.
func casError(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) ||
		errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return fmt.Errorf("%s %q: %w: %w", op, key, errConflict, err)
	}
	return fmt.Errorf("%s %q: %w", op, key, err)
}
