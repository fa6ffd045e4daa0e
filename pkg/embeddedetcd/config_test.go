/*
Copyright The batch-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package embeddedetcd

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLoopbackURL(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		want    *url.URL
		wantErr bool
	}{
		{name: "empty means a free port", raw: "", want: nil},
		{name: "IPv4 loopback", raw: "http://127.0.0.1:2379", want: &url.URL{Scheme: "http", Host: "127.0.0.1:2379"}},
		{name: "other IPv4 loopback", raw: "http://127.0.0.2:2379", want: &url.URL{Scheme: "http", Host: "127.0.0.2:2379"}},
		{name: "IPv6 loopback", raw: "http://[::1]:2379", want: &url.URL{Scheme: "http", Host: "[::1]:2379"}},
		{name: "trailing slash", raw: "http://127.0.0.1:2379/", want: &url.URL{Scheme: "http", Host: "127.0.0.1:2379"}},
		{name: "https", raw: "https://127.0.0.1:2379", wantErr: true},
		{name: "unix socket", raw: "unix://etcd.sock", wantErr: true},
		{name: "host name", raw: "http://localhost:2379", wantErr: true},
		{name: "all interfaces", raw: "http://0.0.0.0:2379", wantErr: true},
		{name: "routable address", raw: "http://10.0.0.1:2379", wantErr: true},
		{name: "no port", raw: "http://127.0.0.1", wantErr: true},
		{name: "port out of range", raw: "http://127.0.0.1:65536", wantErr: true},
		{name: "path", raw: "http://127.0.0.1:2379/etcd", wantErr: true},
		{name: "query", raw: "http://127.0.0.1:2379?x=1", wantErr: true},
		{name: "user", raw: "http://u@127.0.0.1:2379", wantErr: true},
		{name: "unparsable", raw: "http://[::1", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLoopbackURL("client", tc.raw)
			if tc.wantErr {
				if !errors.Is(err, errInvalidConfig) {
					t.Fatalf("parseLoopbackURL(%q) error = %v, want one wrapping errInvalidConfig", tc.raw, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseLoopbackURL(%q): %v", tc.raw, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseLoopbackURL(%q) mismatch (-want +got):\n%s", tc.raw, diff)
			}
		})
	}
}

func TestStartRejectsInvalidConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{name: "no data dir", cfg: Config{}},
		{name: "bad client URL", cfg: Config{DataDir: t.TempDir(), ClientURL: "http://0.0.0.0:2379"}},
		{name: "bad peer URL", cfg: Config{DataDir: t.TempDir(), PeerURL: "https://127.0.0.1:2380"}},
		{name: "bad log level", cfg: Config{DataDir: t.TempDir(), LogLevel: "loud"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(context.Background(), tc.cfg)
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, errInvalidConfig) {
				t.Fatalf("Start() error = %v, want one wrapping errInvalidConfig", err)
			}
		})
	}
}

// TestRaftLogKeptInMemory checks how many writes the member keeps in its
// in-memory raft log: fewer when alone (no follower ever catches up from
// it), etcd's defaults with peers, and what the caller asks either way.
func TestRaftLogKeptInMemory(t *testing.T) {
	peer := &url.URL{Scheme: "http", Host: "127.0.0.1:2380"}
	client := url.URL{Scheme: "http", Host: "127.0.0.1:2379"}
	type kept struct{ SnapshotCount, CatchUp uint64 }
	cases := []struct {
		name string
		cfg  Config
		peer *url.URL
		want kept
	}{
		{name: "lone member", want: kept{LoneMemberSnapshotCount, LoneMemberSnapshotCatchUpEntries}},
		{name: "member with peers", peer: peer, want: kept{10000, 5000}},
		{name: "lone member, count asked", cfg: Config{SnapshotCount: 300}, want: kept{300, LoneMemberSnapshotCatchUpEntries}},
		{name: "member with peers, count asked", cfg: Config{SnapshotCount: 300}, peer: peer, want: kept{300, 5000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.DataDir = t.TempDir()
			ec := embedConfig(tc.cfg, nil, client, tc.peer)
			got := kept{ec.SnapshotCount, ec.SnapshotCatchUpEntries}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("raft log kept (-want +got):\n%s", diff)
			}
		})
	}
}
