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

// Package etcdtest starts an embedded etcd member for a test. It lives apart
// from package embeddedetcd so that production code does not import testing.
package etcdtest

import (
	"context"
	"testing"

	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
)

// Start starts an etcd member on free loopback ports with its data in a
// temporary directory of t, and returns its client endpoints. The member is
// stopped when the test and its subtests finish. It is tuned for tests: no
// fsync, a small snapshot count and backend quota, and only error logs,
// written through t.
func Start(t testing.TB) []string {
	t.Helper()
	s, err := embeddedetcd.Start(context.Background(), TestConfig(t))
	if err != nil {
		t.Fatalf("starting embedded etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stopping embedded etcd: %v", err)
		}
	})
	return s.Endpoints()
}

// TestConfig returns the configuration Start uses, for tests that need to
// change it or to stop and restart the member themselves.
func TestConfig(t testing.TB) embeddedetcd.Config {
	return embeddedetcd.Config{
		DataDir:           t.TempDir(),
		Logger:            zaptest.NewLogger(t, zaptest.Level(zapcore.ErrorLevel)).Named("etcd"),
		SnapshotCount:     1000,
		QuotaBackendBytes: 256 << 20,
		UnsafeNoFsync:     true,
	}
}
