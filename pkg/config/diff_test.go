package config

import (
	"reflect"
	"testing"
)

func fleetOf(groups ...Group) *Fleet { return &Fleet{Groups: groups} }

func group(name string, backends ...Backend) Group { return Group{Name: name, Backends: backends} }

func be(name, url string) Backend {
	return Backend{Name: name, URL: url, Transport: TransportStreamableHTTP}
}

func TestDiff(t *testing.T) {
	alpha := be("alpha", "http://h:9101/mcp")
	beta := be("beta", "http://h:9102/mcp")
	gamma := be("gamma", "http://h:9103/mcp")
	alphaMoved := be("alpha", "http://h:9999/mcp")
	alphaSSE := alpha
	alphaSSE.Transport = TransportSSE
	ref := func(g, n string) BackendRef { return BackendRef{Group: g, Name: n} }
	tests := []struct {
		name     string
		old, new *Fleet
		want     Membership
	}{
		{"nil to nil", nil, nil, Membership{}},
		{"nil to fleet adds all", nil, fleetOf(group("default", beta, alpha)),
			Membership{Added: []BackendRef{ref("default", "alpha"), ref("default", "beta")}}},
		{"fleet to nil removes all", fleetOf(group("default", alpha), group("g2", gamma)), nil,
			Membership{Removed: []BackendRef{ref("default", "alpha"), ref("g2", "gamma")}}},
		{"identical", fleetOf(group("default", alpha, beta)), fleetOf(group("default", beta, alpha)), Membership{}},
		{"url change is an update", fleetOf(group("default", alpha, beta)), fleetOf(group("default", alphaMoved, beta)),
			Membership{Updated: []BackendRef{ref("default", "alpha")}}},
		{"transport change is an update", fleetOf(group("default", alpha)), fleetOf(group("default", alphaSSE)),
			Membership{Updated: []BackendRef{ref("default", "alpha")}}},
		{"add, remove and update at once",
			fleetOf(group("default", alpha, beta)),
			fleetOf(group("default", alphaMoved, gamma)),
			Membership{
				Added:   []BackendRef{ref("default", "gamma")},
				Removed: []BackendRef{ref("default", "beta")},
				Updated: []BackendRef{ref("default", "alpha")},
			}},
		{"moving between groups is remove plus add",
			fleetOf(group("a", alpha), group("b")),
			fleetOf(group("a"), group("b", alpha)),
			Membership{Added: []BackendRef{ref("b", "alpha")}, Removed: []BackendRef{ref("a", "alpha")}}},
		{"empty groups are no membership", fleetOf(group("a")), fleetOf(group("a"), group("b")), Membership{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(tc.old, tc.new)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Diff:\n got %+v\nwant %+v", got, tc.want)
			}
			if got.Empty() != (len(tc.want.Added)+len(tc.want.Removed)+len(tc.want.Updated) == 0) {
				t.Fatalf("Empty() = %v for %+v", got.Empty(), got)
			}
		})
	}
}
