package sessionstore

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := openStore(t, startNode(t), &Options{Metrics: NewMetrics(reg)})
	ctx := testContext(t)
	rec := newRecord(newID(), t0)
	rev, err := s.Create(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	if rev, err = s.Update(ctx, rec, rev); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Touch(ctx, rec, rev, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, rec, rev); !errors.Is(err, ErrConflict) { // stale: Touch moved it
		t.Fatalf("stale Update: %v", err)
	}
	if _, _, err := s.Get(ctx, "bad id!"); !errors.Is(err, ErrBadID) {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}

	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName() + labels(m)
			switch {
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				got[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	want := map[string]float64{
		"fleetgate_session_records_written_total{kind=create}":            1,
		"fleetgate_session_records_written_total{kind=update}":            1,
		"fleetgate_session_records_written_total{kind=touch}":             1,
		"fleetgate_session_records_written_total{kind=delete}":            1,
		"fleetgate_session_record_write_seconds{kind=create}":             1,
		"fleetgate_session_record_write_seconds{kind=touch}":              1,
		"fleetgate_session_store_errors_total{op=update,reason=conflict}": 1,
		"fleetgate_session_store_errors_total{op=get,reason=bad_id}":      1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if n := len(got); n != 10 {
		t.Errorf("%d series, want 10 (4 write counters, 4 histograms, 2 error counters): %v", n, got)
	}
}

func labels(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	s := "{"
	for i, l := range m.GetLabel() {
		if i > 0 {
			s += ","
		}
		s += l.GetName() + "=" + l.GetValue()
	}
	return s + "}"
}

// A nil *Metrics records nothing and does not panic.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.wrote(kindCreate, time.Millisecond)
	m.failed(kindCreate, ErrExists)
}
