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

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// securityRBAC gives bob read access to Jobs in one namespace and binds
// carol to the built-in edit role there (which reaches jobs.batch.jobs.dev
// only through the aggregated ClusterRoles of artifacts/deploy). viewer and
// nsadmin, reached by impersonation, get the built-in view and admin.
const securityRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: job-reader
rules:
- apiGroups: ["batch.jobs.dev"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bob-job-reader
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: job-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: carol-edit
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: viewer-view
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: viewer}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: nsadmin-admin
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: nsadmin}]
`

// TestSecurityThroughAggregator checks who may do what with Jobs, through
// kube-apiserver and straight at batch-apiserver's port.
func TestSecurityThroughAggregator(t *testing.T) {
	const ns = "e2e-security"
	admin := createNamespace(t, ns)
	admin.MustRunStdin(t, jobYAML("existing", nil), "create", "-f", "-")
	admin.MustRunStdin(t, securityRBAC, "apply", "-f", "-")
	jobsPath := "/apis/batch.jobs.dev/v1/namespaces/" + ns + "/jobs"

	t.Run("anonymous refused by kube-apiserver", func(t *testing.T) {
		code, status := rawGet(t, cluster.ClusterCA.CertPEM, "", cluster.HostURL+jobsPath, nil)
		wantRefused(t, code, status, "system:anonymous")
	})
	t.Run("anonymous refused by batch-apiserver directly", func(t *testing.T) {
		code, status := rawGet(t, cluster.BatchCA.CertPEM, "", cluster.BatchURL+jobsPath, nil)
		wantRefused(t, code, status, "system:anonymous")
	})
	t.Run("front-proxy headers without the proxy certificate are ignored", func(t *testing.T) {
		forged := map[string]string{"X-Remote-User": "e2e-admin", "X-Remote-Group": "system:masters"}
		code, status := rawGet(t, cluster.BatchCA.CertPEM, "", cluster.BatchURL+jobsPath, forged)
		wantRefused(t, code, status, "system:anonymous")
		// A client certificate of the cluster CA is a user, not a proxy.
		code, status = rawGet(t, cluster.BatchCA.CertPEM, "alice", cluster.BatchURL+jobsPath, forged)
		wantRefused(t, code, status, "alice")
		mustNotContain(t, status, "e2e-admin")
	})
	t.Run("client certificate of the cluster CA works directly", func(t *testing.T) {
		// batch-apiserver trusts the client CA it reads from
		// kube-system/extension-apiserver-authentication and asks the host
		// to authorize: system:masters may.
		code, status := rawGet(t, cluster.BatchCA.CertPEM, "e2e-admin", cluster.BatchURL+jobsPath, nil)
		if code != http.StatusOK || !strings.Contains(status, `"kind":"JobList"`) {
			t.Errorf("admin list straight at batch-apiserver: %d %s", code, status)
		}
	})
	t.Run("unknown token unauthorized", func(t *testing.T) {
		res := cluster.AnonymousKubectl().In(ns).MustFail(t, "get", "bjob", "--token=not-a-token")
		mustContain(t, res.Stderr, "Unauthorized")
	})

	t.Run("alice without RBAC gets 403", func(t *testing.T) {
		alice := cluster.KubectlAs("alice").In(ns)
		res := alice.MustFail(t, "get", "bjob")
		mustContain(t, res.Stderr, `Error from server (Forbidden)`, `User "alice" cannot list resource "jobs" in API group "batch.jobs.dev" in the namespace "e2e-security"`)
		res = alice.MustFailStdin(t, jobYAML("by-alice", nil), "create", "-f", "-")
		mustContain(t, res.Stderr, `User "alice" cannot create resource "jobs" in API group "batch.jobs.dev"`)
		// Discovery is open to every authenticated user.
		stepAPIResources(t, alice)
	})

	t.Run("bob with a namespaced Role reads and cannot write", func(t *testing.T) {
		bob := cluster.KubectlAs("bob").In(ns)
		eventually(t, 30*time.Second, "bob may list jobs", func() (bool, string) {
			res, err := bob.Run("get", "bjob", "-o", "name")
			if err != nil {
				return false, err.Error()
			}
			return res.ExitCode == 0 && strings.TrimSpace(res.Stdout) == "job.batch.jobs.dev/existing", res.Combined()
		})
		mustContain(t, bob.MustRun(t, "get", "bjob", "existing", "-o", "jsonpath={.metadata.name}"), "existing")
		res := bob.MustFailStdin(t, jobYAML("by-bob", nil), "create", "-f", "-")
		mustContain(t, res.Stderr, `User "bob" cannot create resource "jobs" in API group "batch.jobs.dev" in the namespace "e2e-security"`)
		res = bob.MustFail(t, "delete", "bjob", "existing")
		mustContain(t, res.Stderr, `User "bob" cannot delete resource "jobs"`)
		res = bob.MustFail(t, "patch", "bjob", "existing", "--subresource=status", "--type=merge", "-p", `{"status":{"active":1}}`)
		// kubectl reads the subresource before it patches it.
		mustContain(t, res.Stderr, `User "bob" cannot get resource "jobs/status"`)
		res = bob.In("default").MustFail(t, "get", "bjob")
		mustContain(t, res.Stderr, `User "bob" cannot list resource "jobs" in API group "batch.jobs.dev" in the namespace "default"`)
	})

	t.Run("carol bound to edit creates through the aggregated ClusterRoles", func(t *testing.T) {
		carol := cluster.KubectlAs("carol").In(ns)
		// The clusterrole-aggregation controller fills edit in.
		eventually(t, time.Minute, "carol may create jobs", func() (bool, string) {
			res, err := carol.RunStdin(jobYAML("by-carol", nil), "create", "-f", "-")
			if err != nil {
				return false, err.Error()
			}
			return res.ExitCode == 0, res.Combined()
		})
		carol.MustRun(t, "label", "bjob", "by-carol", "owner=carol")
		carol.MustRunStdin(t, jobYAML("by-carol-ssa", nil), "apply", "--server-side", "-f", "-")
		// Status belongs to controllers: edit does not grant it.
		res := carol.MustFail(t, "patch", "bjob", "by-carol", "--subresource=status", "--type=merge", "-p", `{"status":{"active":1}}`)
		mustContain(t, res.Stderr, `User "carol" cannot patch resource "jobs/status"`)
		carol.MustRun(t, "delete", "bjob", "by-carol", "by-carol-ssa")
	})

	t.Run("view and admin through impersonation", func(t *testing.T) {
		viewer := cluster.Kubectl().In(ns)
		eventually(t, time.Minute, "viewer may list jobs", func() (bool, string) {
			res, err := viewer.Run("get", "bjob", "--as=viewer", "-o", "name")
			if err != nil {
				return false, err.Error()
			}
			return res.ExitCode == 0 && strings.Contains(res.Stdout, "existing"), res.Combined()
		})
		res := viewer.MustFailStdin(t, jobYAML("by-viewer", nil), "create", "--as=viewer", "-f", "-")
		mustContain(t, res.Stderr, `User "viewer" cannot create resource "jobs"`)

		eventually(t, time.Minute, "nsadmin may create jobs", func() (bool, string) {
			res, err := viewer.RunStdin(jobYAML("by-nsadmin", nil), "create", "--as=nsadmin", "-f", "-")
			if err != nil {
				return false, err.Error()
			}
			return res.ExitCode == 0, res.Combined()
		})
		want := map[string]string{
			"list jobs.batch.jobs.dev --as=viewer":                        "yes",
			"watch jobs.batch.jobs.dev --as=viewer":                       "yes",
			"delete jobs.batch.jobs.dev --as=viewer":                      "no",
			"deletecollection jobs.batch.jobs.dev --as=nsadmin":           "yes",
			"patch jobs.batch.jobs.dev --subresource=status --as=nsadmin": "no",
			"get jobs.batch.jobs.dev --subresource=status --as=viewer":    "yes",
		}
		for q, answer := range want {
			res, err := viewer.Run(append([]string{"auth", "can-i"}, strings.Fields(q)...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(res.Stdout); got != answer {
				t.Errorf("auth can-i %s: %q, want %q (%s)", q, got, answer, res.Stderr)
			}
		}
	})
}

// TestServiceAccountPermissions checks what artifacts/deploy/rbac.yaml gives
// batch-apiserver's ServiceAccount: what the server needs (it runs with it
// in this cluster, so a missing rule would already have broken the other
// tests), and nothing of what it must not have.
func TestServiceAccountPermissions(t *testing.T) {
	sa := "--as=system:serviceaccount:" + framework.Namespace + ":" + framework.ServiceAccountName
	k := cluster.Kubectl()
	want := map[string]string{
		"create tokenreviews.authentication.k8s.io":                       "yes",
		"create subjectaccessreviews.authorization.k8s.io":                "yes",
		"get configmap/extension-apiserver-authentication -n kube-system": "yes",
		"watch namespaces": "yes",
		"list validatingwebhookconfigurations.admissionregistration.k8s.io": "yes",
		"list flowschemas.flowcontrol.apiserver.k8s.io":                     "yes",
		// The embedded Job controller: Pods, Events, its Lease (named
		// after the server identity, and the Lease of releases before the
		// identity, which it reads: any Lease of its own namespace).
		"create pods -n default":   "yes",
		"patch pods -n default":    "yes",
		"delete pods -n default":   "yes",
		"watch pods -A":            "yes",
		"create events -n default": "yes",
		"update leases.coordination.k8s.io -n " + framework.Namespace:                             "yes",
		"get leases.coordination.k8s.io/batch-apiserver-job-controller -n " + framework.Namespace: "yes",
		"update pods/status -n default":                                                           "no",
		"list configmaps -n kube-system":                                                          "no",
		"get secrets -n " + framework.Namespace:                                                   "no",
		"list secrets -A":                                                                         "no",
		"update leases.coordination.k8s.io -n kube-system":                                        "no",
		"create clusterrolebindings.rbac.authorization.k8s.io":                                    "no",
		"create serviceaccounts/token -n " + framework.Namespace:                                  "no",
	}
	for q, answer := range want {
		res, err := k.Run(append([]string{"auth", "can-i", sa}, strings.Fields(q)...)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(res.Stdout); got != answer {
			t.Errorf("batch-apiserver's ServiceAccount: can-i %s = %q, want %q (%s)", q, got, answer, res.Stderr)
		}
	}
}

// rawGet sends a GET trusting ca, as user (a client certificate of the
// cluster CA, or none when empty) with extra headers, and returns the
// status code and body.
func rawGet(t testing.TB, ca []byte, user, url string, headers map[string]string) (int, string) {
	t.Helper()
	var certFile, keyFile string
	if user != "" {
		certFile, keyFile = cluster.PKIFile(user+".crt"), cluster.PKIFile(user+".key")
	}
	client, err := framework.HTTPClient(ca, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var compact strings.Builder
	if json.Valid(body) {
		var v any
		_ = json.Unmarshal(body, &v)
		b, _ := json.Marshal(v)
		compact.Write(b)
	} else {
		compact.Write(body)
	}
	return resp.StatusCode, compact.String()
}

// wantRefused fails unless the request was refused (401, or 403 naming who).
func wantRefused(t testing.TB, code int, body, who string) {
	t.Helper()
	switch code {
	case http.StatusUnauthorized:
	case http.StatusForbidden:
		if !strings.Contains(body, who) {
			t.Errorf("403 does not name %s: %s", who, body)
		}
	default:
		t.Errorf("got %d, want 401 or 403: %s", code, body)
	}
}

// statusSpecRBAC lets alice change Jobs but not their status, and bob their
// status but not the rest of them.
const statusSpecRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: job-spec-editor
rules:
- apiGroups: ["batch.jobs.dev"]
  resources: ["jobs"]
  verbs: ["get", "list", "update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: job-status-writer
rules:
- apiGroups: ["batch.jobs.dev"]
  resources: ["jobs/status"]
  verbs: ["get", "update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: alice-job-spec-editor
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: job-spec-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bob-job-status-writer
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: job-status-writer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
`

// securityExternalController is the spec.managedBy of the Jobs of
// TestStatusAndSpecPermissionsAreSeparate: no Job controller writes their
// status, so only the test's users do.
const securityExternalController = "example.com/e2e-security"

// TestStatusAndSpecPermissionsAreSeparate checks that the jobs and
// jobs/status permissions are enforced apart, through kube-apiserver and
// straight at batch-apiserver (which then asks the host to authorize):
// alice, who may update jobs but not jobs/status, cannot change a status,
// and her updates of the Job change its spec and leave its status alone;
// bob, who may update jobs/status only, cannot change the spec, and his
// status updates change only the status.
func TestStatusAndSpecPermissionsAreSeparate(t *testing.T) {
	const ns = "e2e-status-spec"
	admin := createNamespace(t, ns)
	admin.MustRunStdin(t, statusSpecRBAC, "apply", "-f", "-")
	adminJobs := cluster.Dynamic.Resource(framework.OurJobs.GVR).Namespace(ns)

	for _, route := range []struct {
		name, url, job string
		ca             []byte
	}{
		{name: "through the aggregator", url: cluster.HostURL, ca: cluster.ClusterCA.CertPEM, job: "split-aggregated"},
		{name: "straight at batch-apiserver", url: cluster.BatchURL, ca: cluster.BatchCA.CertPEM, job: "split-direct"},
	} {
		t.Run(route.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			name := route.job
			alice := userJobs(t, route.url, route.ca, "alice", ns)
			bob := userJobs(t, route.url, route.ca, "bob", ns)

			created := mustFromUnstructured(t, must(t)(adminJobs.Create(ctx, mustToUnstructured(t, splitJob(name)), metav1.CreateOptions{})))
			if diff := cmp.Diff(batchv1.JobStatus{}, created.Status); diff != "" {
				t.Fatalf("status of the new Job (-want +got):\n%s", diff)
			}
			// RBAC reaches the authorizers a little after it is written.
			eventually(t, time.Minute, "alice may get the Job and bob its status", func() (bool, string) {
				if _, err := alice.Get(ctx, name, metav1.GetOptions{}); err != nil {
					return false, "alice: " + err.Error()
				}
				if _, err := bob.Get(ctx, name, metav1.GetOptions{}, "status"); err != nil {
					return false, "bob: " + err.Error()
				}
				return true, ""
			})

			// The Job as it must stay where nobody may change it.
			type view struct {
				Generation int64
				Spec       batchv1.JobSpec
				Status     batchv1.JobStatus
			}
			viewOf := func(j *batchv1.Job) view { return view{Generation: j.Generation, Spec: j.Spec, Status: j.Status} }
			want := viewOf(created)
			checkStored := func(t *testing.T, what string) {
				t.Helper()
				stored := mustFromUnstructured(t, must(t)(adminJobs.Get(ctx, name, metav1.GetOptions{})))
				if diff := cmp.Diff(want, viewOf(stored)); diff != "" {
					t.Errorf("stored Job after %s (-want +got):\n%s", what, diff)
				}
			}

			t.Run("alice cannot write the status", func(t *testing.T) {
				job := mustFromUnstructured(t, must(t)(alice.Get(ctx, name, metav1.GetOptions{})))
				job.Status.Active = 1
				_, err := alice.UpdateStatus(ctx, mustToUnstructured(t, job), metav1.UpdateOptions{})
				wantForbidden(t, err, name, `User "alice" cannot update resource "jobs/status" in API group "batch.jobs.dev" in the namespace "`+ns+`"`)
				_, err = alice.Patch(ctx, name, types.MergePatchType, []byte(`{"status":{"active":1}}`), metav1.PatchOptions{}, "status")
				wantForbidden(t, err, name, `User "alice" cannot patch resource "jobs/status" in API group "batch.jobs.dev" in the namespace "`+ns+`"`)
				checkStored(t, "alice's status writes")
			})

			t.Run("alice's update changes the spec and not the status", func(t *testing.T) {
				job := mustFromUnstructured(t, must(t)(alice.Get(ctx, name, metav1.GetOptions{})))
				job.Spec.Parallelism = ptr.To[int32](2)
				job.Status.Active = 5
				job.Status.Ready = ptr.To[int32](5)
				updated := mustFromUnstructured(t, must(t)(alice.Update(ctx, mustToUnstructured(t, job), metav1.UpdateOptions{})))
				want.Generation++
				want.Spec.Parallelism = ptr.To[int32](2)
				if diff := cmp.Diff(want, viewOf(updated)); diff != "" {
					t.Errorf("Job alice's update returned (-want +got):\n%s", diff)
				}
				checkStored(t, "alice's update")
			})

			t.Run("bob cannot write the Job", func(t *testing.T) {
				job := mustFromUnstructured(t, must(t)(bob.Get(ctx, name, metav1.GetOptions{}, "status")))
				job.Spec.Parallelism = ptr.To[int32](3)
				_, err := bob.Update(ctx, mustToUnstructured(t, job), metav1.UpdateOptions{})
				wantForbidden(t, err, name, `User "bob" cannot update resource "jobs" in API group "batch.jobs.dev" in the namespace "`+ns+`"`)
				_, err = bob.Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"parallelism":3}}`), metav1.PatchOptions{})
				wantForbidden(t, err, name, `User "bob" cannot patch resource "jobs" in API group "batch.jobs.dev" in the namespace "`+ns+`"`)
				checkStored(t, "bob's writes of the Job")
			})

			t.Run("bob's status update changes the status and not the spec", func(t *testing.T) {
				job := mustFromUnstructured(t, must(t)(bob.Get(ctx, name, metav1.GetOptions{}, "status")))
				job.Spec.Parallelism = ptr.To[int32](3)
				job.Spec.Completions = ptr.To[int32](9)
				job.Status.Active = 1
				job.Status.Ready = ptr.To[int32](1)
				updated := mustFromUnstructured(t, must(t)(bob.UpdateStatus(ctx, mustToUnstructured(t, job), metav1.UpdateOptions{})))
				want.Status.Active = 1
				want.Status.Ready = ptr.To[int32](1)
				if diff := cmp.Diff(want, viewOf(updated)); diff != "" {
					t.Errorf("Job bob's status update returned (-want +got):\n%s", diff)
				}
				checkStored(t, "bob's status update")
			})
		})
	}
}

// splitJob is a Job no controller of the cluster runs.
func splitJob(name string) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: framework.OurJobs.APIVersion(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](1),
			Completions: ptr.To[int32](4),
			ManagedBy:   ptr.To(securityExternalController),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "docker.io/library/busybox:1.36", Command: []string{"true"}}},
			}},
		},
	}
}

// userJobs is a client of the Jobs in ns as user (a client certificate of
// the cluster CA) at url, trusting ca.
func userJobs(t testing.TB, url string, ca []byte, user, ns string) dynamic.ResourceInterface {
	t.Helper()
	client, err := dynamic.NewForConfig(&rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{
		CAData:   ca,
		CertFile: cluster.PKIFile(user + ".crt"),
		KeyFile:  cluster.PKIFile(user + ".key"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return client.Resource(framework.OurJobs.GVR).Namespace(ns)
}

// wantForbidden fails unless err is a 403 Status for the Job name whose
// message says msg.
func wantForbidden(t testing.TB, err error, name, msg string) {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Errorf("got %v, want a 403 Status saying %s", err, msg)
		return
	}
	type result struct {
		Code    int32
		Reason  metav1.StatusReason
		Details *metav1.StatusDetails
		Message string
	}
	s := status.Status()
	want := result{
		Code:    http.StatusForbidden,
		Reason:  metav1.StatusReasonForbidden,
		Details: &metav1.StatusDetails{Group: "batch.jobs.dev", Kind: "jobs", Name: name},
		Message: `jobs.batch.jobs.dev "` + name + `" is forbidden: ` + msg,
	}
	if diff := cmp.Diff(want, result{Code: s.Code, Reason: s.Reason, Details: s.Details, Message: s.Message}); diff != "" {
		t.Errorf("refusal (-want +got):\n%s", diff)
	}
}

// must returns a function that fails the test on a non-nil error and
// otherwise returns the value.
func must(t testing.TB) func(*unstructured.Unstructured, error) *unstructured.Unstructured {
	return func(u *unstructured.Unstructured, err error) *unstructured.Unstructured {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
}

func mustToUnstructured(t testing.TB, job *batchv1.Job) *unstructured.Unstructured {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

func mustFromUnstructured(t testing.TB, u *unstructured.Unstructured) *batchv1.Job {
	t.Helper()
	var job batchv1.Job
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job); err != nil {
		t.Fatal(err)
	}
	return &job
}

// standaloneLogVerbosity is the klog verbosity of
// TestStandaloneLogsHoldNoSecrets: the highest level anything logs at
// (request and response dumps of client-go are at 8 and above).
const standaloneLogVerbosity = "10"

// TestStandaloneLogsHoldNoSecrets runs the standalone binary at the highest
// log verbosity, lists, creates, gets, watches and deletes Jobs with the
// admin kubeconfig, and checks that the log holds no PEM block, none of the
// kubeconfig's client certificate and key data, no line of a PEM body of the
// certificates and keys in <data dir>/pki, and no bearer token.
func TestStandaloneLogsHoldNoSecrets(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := filepath.Join(dir, "data")
	s, err := framework.StartStandalone(ctx, bins.BatchAPIServer, dataDir, dir, "-v="+standaloneLogVerbosity)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	k := framework.Kubectl{Bin: bins.Kubectl, Kubeconfig: s.Kubeconfig, Namespace: "default"}

	watch, err := k.Start(time.Minute, "get", "bjob", "--watch", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	k.MustRun(t, "get", "bjob")
	k.MustRunStdin(t, jobYAML("logged", nil), "create", "-f", "-")
	if _, err := watch.WaitForLine(ctx, func(l string) bool { return l == "job.batch.jobs.dev/logged" }); err != nil {
		t.Fatal(err)
	}
	watch.Stop()
	k.MustRun(t, "get", "bjob", "logged", "-o", "yaml")
	k.MustRun(t, "delete", "bjob", "logged")
	// Stopping the server flushes its log.
	s.Stop()

	raw, err := os.ReadFile(s.Process.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(raw)
	// The verbosity took: client-go's and the server's request logs are there.
	for _, want := range []string{`"HTTP" verb="LIST" URI="/apis/batch.jobs.dev/v1/namespaces/default/jobs`, `verb="POST" URI="/apis/batch.jobs.dev/v1/namespaces/default/jobs`, `verb="WATCH"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log at -v=%s does not contain %q; last lines:\n%s", standaloneLogVerbosity, want, framework.Tail(s.Process.LogFile, 40))
		}
	}

	secrets := map[string]string{}
	cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name, auth := range cfg.AuthInfos {
		secrets["kubeconfig "+name+" client-certificate-data"] = base64.StdEncoding.EncodeToString(auth.ClientCertificateData)
		secrets["kubeconfig "+name+" client-key-data"] = base64.StdEncoding.EncodeToString(auth.ClientKeyData)
	}
	files, err := filepath.Glob(filepath.Join(dataDir, "pki", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for {
			var block *pem.Block
			if block, data = pem.Decode(data); block == nil {
				break
			}
			body := base64.StdEncoding.EncodeToString(block.Bytes)
			for i := 0; i < len(body); i += 64 {
				line := body[i:min(i+64, len(body))]
				if len(line) >= 16 {
					secrets[filepath.Base(file)+" PEM body line "+strconv.Itoa(i/64)] = line
				}
			}
		}
	}
	if len(secrets) < 10 {
		t.Fatalf("found only %d secrets to look for: %v", len(secrets), files)
	}
	secrets["a PEM block"] = "BEGIN "
	for what, secret := range secrets {
		if i := strings.Index(log, secret); i >= 0 {
			t.Errorf("the log holds %s, at:\n%s", what, excerpt(log, i))
		}
	}
	bearer := regexp.MustCompile(`(?i)authorization: *bearer +([^\s"\]\\,]+)`)
	for _, m := range bearer.FindAllStringSubmatchIndex(log, -1) {
		if token := log[m[2]:m[3]]; token != "<masked>" {
			t.Errorf("the log holds a bearer token, at:\n%s", excerpt(log, m[0]))
		}
	}
}

// excerpt is the line of s around index i, cut to a few hundred bytes.
func excerpt(s string, i int) string {
	start := strings.LastIndexByte(s[:i], '\n') + 1
	end := strings.IndexByte(s[i:], '\n')
	if end < 0 {
		end = len(s)
	} else {
		end += i
	}
	start, end = max(start, i-200), min(end, i+200)
	return s[start:end]
}
