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
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
)

// The in-process client refuses exactly the puts the gRPC client refuses,
// with the same error, and what it stores is what a gRPC client reads.
func TestInProcessClientKeepsTheGRPCSendLimit(t *testing.T) {
	member, err := Start(context.Background(), Config{
		DataDir:       t.TempDir(),
		Logger:        zaptest.NewLogger(t, zaptest.Level(zapcore.ErrorLevel)),
		UnsafeNoFsync: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = member.Close() })
	overGRPC, err := kubernetes.New(clientv3.Config{Endpoints: member.Endpoints(), DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = overGRPC.Close() })
	inProcess := newInProcessClient(v3client.New(member.etcd.Server))
	t.Cleanup(func() { _ = inProcess.Close() })

	ctx := context.Background()
	key := "/registry/batch.jobs.dev/jobs/default/a-job-with-a-long-enough-name"
	// Around the limit, in steps smaller than the varint size changes.
	for _, size := range []int{1 << 10, ClientSendLimit - 200, ClientSendLimit - 140, ClientSendLimit - 120, ClientSendLimit - 100, ClientSendLimit - 80, ClientSendLimit, ClientSendLimit + 1} {
		for _, getOnFailure := range []bool{false, true} {
			name := fmt.Sprintf("%d bytes, GetOnFailure %v", size, getOnFailure)
			value := bytes.Repeat([]byte{'x'}, size)
			opts := kubernetes.PutOptions{GetOnFailure: getOnFailure}
			_, wantErr := overGRPC.Kubernetes.OptimisticPut(ctx, key+"-a", value, 0, opts)
			_, gotErr := inProcess.Kubernetes.OptimisticPut(ctx, key+"-b", value, 0, opts)
			if diff := cmp.Diff(errString(wantErr), errString(gotErr)); diff != "" {
				t.Errorf("%s: error (-over gRPC +in process):\n%s", name, diff)
			}
			if gotErr != nil {
				continue
			}
			got, err := overGRPC.Kubernetes.Get(ctx, key+"-b", kubernetes.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got.KV == nil || !bytes.Equal(got.KV.Value, value) {
				t.Errorf("%s: a gRPC client does not read back what the in-process client stored", name)
			}
			for _, k := range []string{key + "-a", key + "-b"} {
				if _, err := overGRPC.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
