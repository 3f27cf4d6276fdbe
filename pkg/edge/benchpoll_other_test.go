//go:build !linux

package edge

import "errors"

type streamPoller struct{}

func newStreamPoller() (*streamPoller, error) {
	return nil, errors.New("FLEETGATE_BENCH_CLIENT=poll needs Linux's epoll")
}

func (*streamPoller) openPolledSession(string, func()) (func(), error) {
	return nil, errors.ErrUnsupported
}
