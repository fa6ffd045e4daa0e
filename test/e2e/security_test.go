package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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
		// The embedded Job controller: Pods, Events, its Lease.
		"create pods -n default":   "yes",
		"patch pods -n default":    "yes",
		"delete pods -n default":   "yes",
		"watch pods -A":            "yes",
		"create events -n default": "yes",
		"update leases.coordination.k8s.io/batch-apiserver-job-controller -n " + framework.Namespace: "yes",
		"update pods/status -n default":                          "no",
		"list configmaps -n kube-system":                         "no",
		"get secrets -n " + framework.Namespace:                  "no",
		"list secrets -A":                                        "no",
		"update leases.coordination.k8s.io -n kube-system":       "no",
		"create clusterrolebindings.rbac.authorization.k8s.io":   "no",
		"create serviceaccounts/token -n " + framework.Namespace: "no",
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
