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

package integration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// Defect 5 of issue 9: /readyz said ok up to half a second before the watch
// cache was initialized, and watches in that window got 429 "storage is
// (re)initializing". /readyz now waits for the storage-readiness hook, as
// kube-apiserver's does, so a watch opened the moment the server is ready
// (the framework returns on the first 200 from /readyz) is served.
func TestReadyMeansWatchCacheReady(t *testing.T) {
	ts := framework.StartServer(t)
	client := newTestClient(t, ts)
	ctx := testContext(t)

	w, err := client.BatchV1().Jobs(testNamespace(t)).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch right after /readyz turned ok: %v", err)
	}
	w.Stop()

	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	if err != nil {
		t.Fatalf("/readyz?verbose: %v\n%s", err, body)
	}
	if !strings.Contains(string(body), "[+]poststarthook/storage-readiness ok\n") {
		t.Errorf("/readyz?verbose does not report the storage-readiness hook:\n%s", body)
	}
}
