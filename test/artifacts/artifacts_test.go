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

package artifacts

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/install"
	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/server"
)

const (
	namespace      = "batch-system"
	serviceAccount = "batch-apiserver"
	appName        = "batch-apiserver"
	apiGroup       = "batch.jobs.dev"
	caPlaceholder  = "${CA_BUNDLE}"
)

// repoRoot is the repository root, seen from this package's directory, where
// go test runs the tests.
var repoRoot = filepath.Join("..", "..")

// apiServiceGVK is decoded as unstructured: k8s.io/kube-aggregator is not a
// dependency of the main module.
var apiServiceGVK = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}

var (
	scheme = newScheme()
	// strictDecoder fails on unknown and duplicate fields, so that a typo in
	// a manifest fails here and not silently in a cluster.
	strictDecoder = serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	install.Install(s)
	return s
}

// document is one YAML document of a manifest file.
type document struct {
	// file is the path relative to the repository root.
	file string
	// obj is the typed object; nil for an APIService.
	obj runtime.Object
	u   *unstructured.Unstructured
}

func (d document) key() string {
	return objectKey(d.u.GetKind(), d.u.GetNamespace(), d.u.GetName())
}

func objectKey(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// loadDocuments decodes every YAML document of every .yaml file under dir
// (relative to the repository root), strictly, and fails the test on any
// error. Documents holding only comments are skipped.
func loadDocuments(t *testing.T, dir string) []document {
	t.Helper()
	var docs []document
	err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		// Not a Kubernetes object: TestKustomization checks it.
		if d.Name() == kustomizationFile {
			return nil
		}
		// Not a Kubernetes object: promtool's unit tests of the rules
		// (make test-monitoring).
		if d.Name() == "rules_test.yaml" {
			return nil
		}
		rel, err := filepath.Rel(repoRoot, path)
		if err != nil {
			return err
		}
		fileDocs, err := decodeFile(path, filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		docs = append(docs, fileDocs...)
		return nil
	})
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	return docs
}

func decodeFile(path, rel string) ([]document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var docs []document
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for i := 0; ; i++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", rel, i, err)
		}
		doc, ok, err := decodeDocument(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", rel, i, err)
		}
		if ok {
			doc.file = rel
			docs = append(docs, doc)
		}
	}
}

func decodeDocument(raw []byte) (document, bool, error) {
	js, err := utilyaml.ToJSON(raw)
	if err != nil {
		return document{}, false, err
	}
	if s := string(bytes.TrimSpace(js)); s == "null" || s == "" {
		return document{}, false, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return document{}, false, err
	}
	gvk := u.GroupVersionKind()
	if gvk == apiServiceGVK {
		return document{u: u}, true, checkAPIServiceFields(u)
	}
	if gvk == kueueConfigurationGVK {
		return document{u: u}, true, checkKueueConfiguration(u)
	}
	// The Prometheus Operator's kinds: make test-monitoring checks the
	// rules with promtool, and the e2e tier checks every metric they name.
	if gvk.Group == "monitoring.coreos.com" {
		return document{u: u}, true, nil
	}
	if !scheme.Recognizes(gvk) {
		return document{}, false, fmt.Errorf("%s %q: kind not known to the test; decode and check it here", gvk, u.GetName())
	}
	obj, _, err := strictDecoder.Decode(raw, nil, nil)
	if err != nil {
		return document{}, false, fmt.Errorf("%s %q: %w", gvk, u.GetName(), err)
	}
	return document{obj: obj, u: u}, true, nil
}

// kueueConfigurationGVK is Kueue's own configuration, of which
// artifacts/kueue ships the entries batch.jobs.dev Jobs need.
var kueueConfigurationGVK = schema.GroupVersionKind{Group: "config.kueue.x-k8s.io", Version: "v1beta2", Kind: "Configuration"}

// checkKueueConfiguration wants exactly the two entries that make Kueue
// know batch.jobs.dev Jobs: the external framework, and MultiKueue's
// generic adapter for it.
func checkKueueConfiguration(u *unstructured.Unstructured) error {
	want := map[string]any{
		"apiVersion":   "config.kueue.x-k8s.io/v1beta2",
		"kind":         "Configuration",
		"integrations": map[string]any{"externalFrameworks": []any{"Job.v1.batch.jobs.dev"}},
		"multiKueue":   map[string]any{"externalFrameworks": []any{map[string]any{"name": "Job.v1.batch.jobs.dev"}}},
	}
	if diff := cmp.Diff(want, u.Object); diff != "" {
		return fmt.Errorf("Kueue Configuration entries (-want,+got):\n%s", diff)
	}
	return nil
}

// checkAPIServiceFields is the strict decoding of an APIService: only the
// fields of apiregistration.k8s.io/v1 this project uses are allowed, which
// also rules out insecureSkipTLSVerify.
func checkAPIServiceFields(u *unstructured.Unstructured) error {
	allowed := map[string][]string{
		"":             {"apiVersion", "kind", "metadata", "spec"},
		"metadata":     {"name", "labels", "annotations"},
		"spec":         {"group", "version", "groupPriorityMinimum", "versionPriority", "service", "caBundle"},
		"spec.service": {"namespace", "name", "port"},
	}
	for path, keys := range allowed {
		m := u.Object
		if path != "" {
			var found bool
			var err error
			m, found, err = unstructured.NestedMap(u.Object, strings.Split(path, ".")...)
			if err != nil || !found {
				return fmt.Errorf("APIService %q: %s missing or not an object", u.GetName(), path)
			}
		}
		for k := range m {
			if !slices.Contains(keys, k) {
				return fmt.Errorf("APIService %q: unexpected field %q in %q", u.GetName(), k, path)
			}
		}
	}
	return nil
}

// index maps each object's key to its document and fails on duplicates.
func index(t *testing.T, docs []document) map[string]document {
	t.Helper()
	m := map[string]document{}
	for _, d := range docs {
		if prev, ok := m[d.key()]; ok {
			t.Fatalf("%s defined twice: in %s and %s", d.key(), prev.file, d.file)
		}
		m[d.key()] = d
	}
	return m
}

// mustGet returns the typed object of kind/ns/name.
func mustGet[T runtime.Object](t *testing.T, objs map[string]document, kind, ns, name string) T {
	t.Helper()
	d, ok := objs[objectKey(kind, ns, name)]
	if !ok {
		t.Fatalf("%s not found in artifacts/deploy", objectKey(kind, ns, name))
	}
	obj, ok := d.obj.(T)
	if !ok {
		t.Fatalf("%s decoded as %T", d.key(), d.obj)
	}
	return obj
}

func deployObjects(t *testing.T) map[string]document {
	t.Helper()
	return index(t, loadDocuments(t, "artifacts/deploy"))
}

// TestEveryDocumentDecodes decodes every manifest under artifacts/, the
// examples included, strictly into its type.
func TestEveryDocumentDecodes(t *testing.T) {
	docs := loadDocuments(t, "artifacts")
	if len(docs) == 0 {
		t.Fatal("no documents found under artifacts/")
	}
	for _, d := range docs {
		t.Logf("%s: %s", d.file, d.key())
	}
}

// TestFileContents pins which objects each file holds: the e2e harness and
// the README apply these files by name.
func TestFileContents(t *testing.T) {
	got := map[string][]string{}
	for _, d := range loadDocuments(t, "artifacts/deploy") {
		got[d.file] = append(got[d.file], d.key())
	}
	want := map[string][]string{
		"artifacts/deploy/namespace.yaml":      {"Namespace batch-system"},
		"artifacts/deploy/serviceaccount.yaml": {"ServiceAccount batch-system/batch-apiserver"},
		"artifacts/deploy/rbac.yaml": {
			"ClusterRoleBinding batch-apiserver:system:auth-delegator",
			"RoleBinding kube-system/batch-apiserver:extension-apiserver-authentication-reader",
			"ClusterRole batch-apiserver",
			"ClusterRoleBinding batch-apiserver",
			"Role batch-system/batch-apiserver:leader-election",
			"RoleBinding batch-system/batch-apiserver:leader-election",
			"Role batch-system/batch-apiserver:serving-secret",
			"RoleBinding batch-system/batch-apiserver:serving-secret",
			"ClusterRole batch-apiserver:apiservices",
			"ClusterRoleBinding batch-apiserver:apiservices",
		},
		"artifacts/deploy/clusterroles-aggregated.yaml": {
			"ClusterRole batch-apiserver:aggregate-to-admin",
			"ClusterRole batch-apiserver:aggregate-to-edit",
			"ClusterRole batch-apiserver:aggregate-to-view",
		},
		"artifacts/deploy/service.yaml":    {"Service batch-system/batch-apiserver"},
		"artifacts/deploy/deployment.yaml": {"Deployment batch-system/batch-apiserver"},
		"artifacts/deploy/pdb.yaml":        {"PodDisruptionBudget batch-system/batch-apiserver"},
		"artifacts/deploy/apiservice.yaml": {"APIService v1.batch.jobs.dev", "APIService v1beta1.batch.jobs.dev"},
		"artifacts/deploy/etcd.yaml": {
			"Service batch-system/etcd",
			"StatefulSet batch-system/etcd",
			"PodDisruptionBudget batch-system/etcd",
			"NetworkPolicy batch-system/etcd",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects per file (-want +got):\n%s", diff)
	}
}

// TestNamespaces checks that every namespaced object is in batch-system,
// except the binding to the authentication reader Role, which must be in
// kube-system.
func TestNamespaces(t *testing.T) {
	got := map[string]string{}
	for key, d := range deployObjects(t) {
		if ns := d.u.GetNamespace(); ns != "" && ns != namespace {
			got[key] = ns
		}
	}
	want := map[string]string{
		"RoleBinding kube-system/batch-apiserver:extension-apiserver-authentication-reader": "kube-system",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects outside %s (-want +got):\n%s", namespace, diff)
	}
}

// TestRBACBindings checks every binding: what it grants, and that it grants
// it to the batch-system/batch-apiserver ServiceAccount and nobody else.
func TestRBACBindings(t *testing.T) {
	objs := deployObjects(t)
	sa := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: namespace}}
	type binding struct {
		RoleRef  rbacv1.RoleRef
		Subjects []rbacv1.Subject
	}
	clusterRole := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	role := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
	}
	want := map[string]binding{
		"ClusterRoleBinding batch-apiserver:system:auth-delegator":                          {clusterRole("system:auth-delegator"), sa},
		"ClusterRoleBinding batch-apiserver":                                                {clusterRole("batch-apiserver"), sa},
		"RoleBinding kube-system/batch-apiserver:extension-apiserver-authentication-reader": {role("extension-apiserver-authentication-reader"), sa},
		"RoleBinding batch-system/batch-apiserver:leader-election":                          {role("batch-apiserver:leader-election"), sa},
		"RoleBinding batch-system/batch-apiserver:serving-secret":                           {role("batch-apiserver:serving-secret"), sa},
		"ClusterRoleBinding batch-apiserver:apiservices":                                    {clusterRole("batch-apiserver:apiservices"), sa},
	}
	got := map[string]binding{}
	for key, d := range objs {
		switch b := d.obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			got[key] = binding{b.RoleRef, b.Subjects}
		case *rbacv1.RoleBinding:
			got[key] = binding{b.RoleRef, b.Subjects}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
}

// TestRBACNoWildcards checks that no role in artifacts/deploy uses "*".
func TestRBACNoWildcards(t *testing.T) {
	for key, d := range deployObjects(t) {
		var rules []rbacv1.PolicyRule
		switch r := d.obj.(type) {
		case *rbacv1.ClusterRole:
			if r.AggregationRule != nil {
				t.Errorf("%s: aggregation rule; the built-in roles aggregate ours, not the other way round", key)
			}
			rules = r.Rules
		case *rbacv1.Role:
			rules = r.Rules
		default:
			continue
		}
		for i, rule := range rules {
			for _, list := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources, rule.ResourceNames, rule.NonResourceURLs} {
				for _, v := range list {
					if strings.Contains(v, "*") {
						t.Errorf("%s: rule %d has the wildcard %q", key, i, v)
					}
				}
			}
		}
	}
}

// expand flattens rules into sorted "verb group/resource" strings, "core"
// standing for the legacy group.
func expand(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if g == "" {
				g = "core"
			}
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					p := v + " " + g + "/" + res
					if len(r.ResourceNames) > 0 {
						p += " " + strings.Join(r.ResourceNames, ",")
					}
					out = append(out, p)
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// perms is the expansion of one rule, for building expectations.
func perms(groups, resources []string, verbs ...string) []string {
	return expand([]rbacv1.PolicyRule{{APIGroups: groups, Resources: resources, Verbs: verbs}})
}

func concat(lists ...[]string) []string {
	out := slices.Concat(lists...)
	sort.Strings(out)
	return out
}

// TestServerPermissions pins exactly what the server's own identity may do
// in the host cluster, beyond auth delegation: what k8s.io/apiserver v0.37.2's
// admission plugins and priority and fairness read, and what the embedded
// Job controller needs.
func TestServerPermissions(t *testing.T) {
	objs := deployObjects(t)
	read := []string{"get", "list", "watch"}

	cr := mustGet[*rbacv1.ClusterRole](t, objs, "ClusterRole", "", "batch-apiserver")
	wantCluster := concat(
		// NamespaceLifecycle, webhooks, admission policies.
		perms([]string{""}, []string{"namespaces"}, read...),
		perms([]string{"admissionregistration.k8s.io"}, []string{
			"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
			"validatingadmissionpolicies", "validatingadmissionpolicybindings",
			"mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
		}, read...),
		// API priority and fairness.
		perms([]string{"flowcontrol.apiserver.k8s.io"}, []string{"flowschemas", "prioritylevelconfigurations"}, read...),
		perms([]string{"flowcontrol.apiserver.k8s.io"}, []string{"flowschemas/status"}, "patch"),
		// The embedded Job controller.
		perms([]string{""}, []string{"pods"}, "create", "delete", "list", "watch", "patch"),
		perms([]string{"", "events.k8s.io"}, []string{"events"}, "create", "patch"),
		perms([]string{apiGroup}, []string{"jobs/finalizers"}, "update"),
		// Its Workloads and PodGroups (WorkloadWithJob).
		perms([]string{"scheduling.k8s.io"}, []string{"workloads", "podgroups"}, "create", "list", "watch", "patch", "delete"),
	)
	if diff := cmp.Diff(wantCluster, expand(cr.Rules)); diff != "" {
		t.Errorf("ClusterRole batch-apiserver permissions (-want +got):\n%s", diff)
	}

	// Leader election, in batch-system only.
	role := mustGet[*rbacv1.Role](t, objs, "Role", namespace, "batch-apiserver:leader-election")
	wantRole := perms([]string{"coordination.k8s.io"}, []string{"leases"}, "get", "create", "update")
	if diff := cmp.Diff(wantRole, expand(role.Rules)); diff != "" {
		t.Errorf("Role %s/batch-apiserver:leader-election permissions (-want +got):\n%s", namespace, diff)
	}

	// The serving and etcd Secrets: those two by name; create cannot be
	// limited by name, so it is limited to batch-system.
	secretRole := mustGet[*rbacv1.Role](t, objs, "Role", namespace, "batch-apiserver:serving-secret")
	wantSecret := concat(
		expand([]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"batch-apiserver-serving", "batch-apiserver-etcd"}, Verbs: []string{"get", "update"}}}),
		perms([]string{""}, []string{"secrets"}, "create"),
	)
	if diff := cmp.Diff(wantSecret, expand(secretRole.Rules)); diff != "" {
		t.Errorf("Role %s/batch-apiserver:serving-secret permissions (-want +got):\n%s", namespace, diff)
	}

	// The caBundle of the two APIServices, by name.
	apiServices := mustGet[*rbacv1.ClusterRole](t, objs, "ClusterRole", "", "batch-apiserver:apiservices")
	wantAPIServices := expand([]rbacv1.PolicyRule{{
		APIGroups: []string{"apiregistration.k8s.io"}, Resources: []string{"apiservices"},
		ResourceNames: []string{"v1.batch.jobs.dev", "v1beta1.batch.jobs.dev"}, Verbs: []string{"get", "patch", "update"},
	}})
	if diff := cmp.Diff(wantAPIServices, expand(apiServices.Rules)); diff != "" {
		t.Errorf("ClusterRole batch-apiserver:apiservices permissions (-want +got):\n%s", diff)
	}
}

// TestAggregatedClusterRoles checks that the built-in admin, edit and view
// roles gain, through the aggregation labels, exactly the verbs Kubernetes
// gives them on batch/v1 jobs and jobs/status (bootstrappolicy: view reads
// jobs and jobs/status; edit adds create, update, patch, delete and
// deletecollection on jobs; admin has what edit has; nobody writes status).
func TestAggregatedClusterRoles(t *testing.T) {
	// The roles upstream aggregates into each built-in role: edit includes
	// view, admin includes edit.
	includes := map[string][]string{
		"view":  {"view"},
		"edit":  {"edit", "view"},
		"admin": {"admin", "edit", "view"},
	}
	got := map[string][]string{}
	for _, d := range loadDocuments(t, "artifacts/deploy") {
		cr, ok := d.obj.(*rbacv1.ClusterRole)
		if !ok || d.file != "artifacts/deploy/clusterroles-aggregated.yaml" {
			continue
		}
		for builtin, from := range includes {
			for _, f := range from {
				if cr.Labels["rbac.authorization.k8s.io/aggregate-to-"+f] == "true" {
					got[builtin] = append(got[builtin], expand(cr.Rules)...)
				}
			}
		}
	}
	for k := range got {
		sort.Strings(got[k])
		got[k] = slices.Compact(got[k])
	}
	read := []string{"get", "list", "watch"}
	readWrite := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	viewer := concat(perms([]string{apiGroup}, []string{"jobs", "jobs/status"}, read...))
	editor := concat(
		perms([]string{apiGroup}, []string{"jobs"}, readWrite...),
		perms([]string{apiGroup}, []string{"jobs/status"}, read...),
	)
	want := map[string][]string{"view": viewer, "edit": editor, "admin": editor}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("permissions the built-in roles gain (-want +got):\n%s", diff)
	}
}

// probe is what matters of a probe here.
type probe struct {
	Scheme corev1.URIScheme
	Path   string
	Port   intstr.IntOrString
}

func summarizeProbe(p *corev1.Probe) *probe {
	if p == nil || p.HTTPGet == nil {
		return nil
	}
	return &probe{Scheme: p.HTTPGet.Scheme, Path: p.HTTPGet.Path, Port: p.HTTPGet.Port}
}

// TestDeployment checks the properties of the Deployment the installation
// relies on.
func TestDeployment(t *testing.T) {
	objs := deployObjects(t)
	d := mustGet[*appsv1.Deployment](t, objs, "Deployment", namespace, appName)
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]

	type summary struct {
		Replicas          int32
		Selector          map[string]string
		PodLabels         map[string]string
		ServiceAccount    string
		AntiAffinity      []corev1.WeightedPodAffinityTerm
		RequiredAffinity  bool
		Image             string
		ContainerPorts    []corev1.ContainerPort
		Startup           *probe
		Liveness          *probe
		Readiness         *probe
		SecretVolumes     []string
		MaxUnavailable    string
		ResourceRequests  []corev1.ResourceName
		ResourceLimits    []corev1.ResourceName
		ReadOnlyRootFS    bool
		PodSecurityIssues []string
	}
	got := summary{
		Replicas:          ptrValue(d.Spec.Replicas),
		PodLabels:         d.Spec.Template.Labels,
		ServiceAccount:    spec.ServiceAccountName,
		Image:             c.Image,
		ContainerPorts:    c.Ports,
		Startup:           summarizeProbe(c.StartupProbe),
		Liveness:          summarizeProbe(c.LivenessProbe),
		Readiness:         summarizeProbe(c.ReadinessProbe),
		ResourceRequests:  sortedResourceNames(c.Resources.Requests),
		ResourceLimits:    sortedResourceNames(c.Resources.Limits),
		ReadOnlyRootFS:    c.SecurityContext != nil && ptrValue(c.SecurityContext.ReadOnlyRootFilesystem),
		PodSecurityIssues: restrictedViolations(spec),
	}
	if d.Spec.Selector != nil {
		got.Selector = d.Spec.Selector.MatchLabels
	}
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		got.AntiAffinity = a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		got.RequiredAffinity = len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
	}
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		got.MaxUnavailable = ru.MaxUnavailable.String()
	}
	// The serving certificate is read through the API, not mounted.
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			got.SecretVolumes = append(got.SecretVolumes, v.Secret.SecretName)
		}
	}

	podLabels := map[string]string{"app": appName}
	port := intstr.FromInt32(8443)
	want := summary{
		Replicas:       2,
		Selector:       podLabels,
		PodLabels:      podLabels,
		ServiceAccount: serviceAccount,
		AntiAffinity: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				TopologyKey:   corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: podLabels},
			},
		}},
		Image:            deploymentImage,
		ContainerPorts:   []corev1.ContainerPort{{Name: "https", ContainerPort: 8443, Protocol: corev1.ProtocolTCP}},
		Startup:          &probe{Scheme: corev1.URISchemeHTTPS, Path: "/livez", Port: port},
		Liveness:         &probe{Scheme: corev1.URISchemeHTTPS, Path: "/livez", Port: port},
		Readiness:        &probe{Scheme: corev1.URISchemeHTTPS, Path: "/readyz", Port: port},
		MaxUnavailable:   "0",
		ResourceRequests: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		ResourceLimits:   []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		ReadOnlyRootFS:   true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Deployment (-want +got):\n%s", diff)
	}
}

// TestDeploymentArgs parses the container's arguments with batch-apiserver's
// own flags: every flag exists, the server runs in aggregated mode against
// the example etcd, and serves on 0.0.0.0:8443 the certificate of its
// self-managed Secret, which it writes into the emptyDir at /tmp.
func TestDeploymentArgs(t *testing.T) {
	objs := deployObjects(t)
	d := mustGet[*appsv1.Deployment](t, objs, "Deployment", namespace, appName)
	sts := mustGet[*appsv1.StatefulSet](t, objs, "StatefulSet", namespace, "etcd")
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.Command) != 0 {
		t.Errorf("container command = %q, want the image's entrypoint (batch-apiserver)", c.Command)
	}

	o := server.NewOptions(io.Discard)
	cmd := &cobra.Command{}
	o.AddFlags(cmd)
	if err := cmd.ParseFlags(c.Args); err != nil {
		t.Fatalf("batch-apiserver does not accept the Deployment's arguments: %v", err)
	}
	if err := o.Complete(); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}

	type summary struct {
		Standalone  bool
		EtcdServers []string
		EtcdPrefix  string
		BindAddress string
		BindPort    int
		CertFile    string
		KeyFile     string
		CertDir     string
		EtcdSecret  string
		Secret      string
		Service     string
		APIServices []string
	}
	ro := o.RecommendedOptions
	got := summary{
		Standalone:  o.Standalone(),
		EtcdServers: ro.Etcd.StorageConfig.Transport.ServerList,
		EtcdPrefix:  ro.Etcd.StorageConfig.Prefix,
		BindAddress: ro.SecureServing.BindAddress.String(),
		BindPort:    ro.SecureServing.BindPort,
		CertFile:    ro.SecureServing.ServerCert.CertKey.CertFile,
		KeyFile:     ro.SecureServing.ServerCert.CertKey.KeyFile,
		CertDir:     ro.SecureServing.ServerCert.CertDirectory,
		EtcdSecret:  o.EtcdSecret.Secret,
		Secret:      o.ServingSecret.Secret,
		Service:     o.ServingSecret.Service,
		APIServices: o.ServingSecret.APIServices,
	}
	// Every member of the example etcd, by its stable name.
	var members []string
	for i := range ptrValue(sts.Spec.Replicas) {
		members = append(members, fmt.Sprintf("https://%s-%d.%s.%s.svc:2379", sts.Name, i, sts.Spec.ServiceName, sts.Namespace))
	}
	want := summary{
		Standalone:  false,
		EtcdServers: members,
		EtcdPrefix:  "/registry/batch.jobs.dev",
		BindAddress: "0.0.0.0",
		BindPort:    8443,
		CertDir:     "/tmp/batch-apiserver-serving",
		EtcdSecret:  "batch-apiserver-etcd",
		Secret:      "batch-apiserver-serving",
		Service:     appName,
		APIServices: []string{"v1.batch.jobs.dev", "v1beta1.batch.jobs.dev"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parsed Deployment arguments (-want +got):\n%s", diff)
	}
}

// TestServiceAndPDB checks that the Service and the PodDisruptionBudget
// select the Deployment's Pods and that the Service reaches the container.
func TestServiceAndPDB(t *testing.T) {
	objs := deployObjects(t)
	d := mustGet[*appsv1.Deployment](t, objs, "Deployment", namespace, appName)
	svc := mustGet[*corev1.Service](t, objs, "Service", namespace, appName)
	pdb := mustGet[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", namespace, appName)

	type summary struct {
		ServiceType     corev1.ServiceType
		ServiceSelector map[string]string
		ServicePorts    []corev1.ServicePort
		PDBMinAvailable string
		PDBSelector     map[string]string
	}
	got := summary{
		ServiceType:     svc.Spec.Type,
		ServiceSelector: svc.Spec.Selector,
		ServicePorts:    svc.Spec.Ports,
	}
	if pdb.Spec.MinAvailable != nil {
		got.PDBMinAvailable = pdb.Spec.MinAvailable.String()
	}
	if pdb.Spec.Selector != nil {
		got.PDBSelector = pdb.Spec.Selector.MatchLabels
	}
	want := summary{
		ServiceType:     corev1.ServiceTypeClusterIP,
		ServiceSelector: d.Spec.Template.Labels,
		ServicePorts: []corev1.ServicePort{{
			Name: "https", Protocol: corev1.ProtocolTCP, Port: 443,
			TargetPort: intstr.FromInt32(d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort),
		}},
		PDBMinAvailable: "1",
		PDBSelector:     d.Spec.Template.Labels,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Service and PodDisruptionBudget (-want +got):\n%s", diff)
	}
	if got := svc.Spec.Ports[0].TargetPort.IntValue(); got != 8443 {
		t.Errorf("Service targetPort = %d, want 8443", got)
	}
}

// TestAPIServices checks both APIServices: group, versions and priorities,
// the Service they point at (the one in service.yaml), and no caBundle
// (the server writes it). checkAPIServiceFields, run on every document, already refuses
// any other field, insecureSkipTLSVerify among them.
func TestAPIServices(t *testing.T) {
	objs := deployObjects(t)
	svc := mustGet[*corev1.Service](t, objs, "Service", namespace, appName)

	type summary struct {
		Group                string
		Version              string
		GroupPriorityMinimum int64
		VersionPriority      int64
		ServiceNamespace     string
		ServiceName          string
		ServicePort          int64
		CABundle             string
		InsecureSkipTLS      bool
	}
	summarize := func(u *unstructured.Unstructured) summary {
		s := summary{}
		s.Group, _, _ = unstructured.NestedString(u.Object, "spec", "group")
		s.Version, _, _ = unstructured.NestedString(u.Object, "spec", "version")
		s.GroupPriorityMinimum, _, _ = unstructured.NestedInt64(u.Object, "spec", "groupPriorityMinimum")
		s.VersionPriority, _, _ = unstructured.NestedInt64(u.Object, "spec", "versionPriority")
		s.ServiceNamespace, _, _ = unstructured.NestedString(u.Object, "spec", "service", "namespace")
		s.ServiceName, _, _ = unstructured.NestedString(u.Object, "spec", "service", "name")
		s.ServicePort, _, _ = unstructured.NestedInt64(u.Object, "spec", "service", "port")
		s.CABundle, _, _ = unstructured.NestedString(u.Object, "spec", "caBundle")
		_, s.InsecureSkipTLS, _ = unstructured.NestedFieldNoCopy(u.Object, "spec", "insecureSkipTLSVerify")
		return s
	}
	got := map[string]summary{}
	for key, d := range objs {
		if d.u.GroupVersionKind() == apiServiceGVK {
			got[key] = summarize(d.u)
		}
	}
	apiService := func(version string, priority int64) summary {
		return summary{
			Group: apiGroup, Version: version,
			GroupPriorityMinimum: 1000, VersionPriority: priority,
			ServiceNamespace: svc.Namespace, ServiceName: svc.Name, ServicePort: int64(svc.Spec.Ports[0].Port),
		}
	}
	want := map[string]summary{
		"APIService v1.batch.jobs.dev":      apiService("v1", 15),
		"APIService v1beta1.batch.jobs.dev": apiService("v1beta1", 10),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("APIServices (-want +got):\n%s", diff)
	}
	for key, d := range got {
		if d.ServicePort != 443 {
			t.Errorf("%s: service port %d, want 443", key, d.ServicePort)
		}
	}
}

// TestEtcd checks the example etcd: a headless Service that publishes
// members before they are ready, a StatefulSet that starts them together on
// PersistentVolumeClaims (no emptyDir), and an --initial-cluster naming every
// member.
func TestEtcd(t *testing.T) {
	objs := deployObjects(t)
	svc := mustGet[*corev1.Service](t, objs, "Service", namespace, "etcd")
	sts := mustGet[*appsv1.StatefulSet](t, objs, "StatefulSet", namespace, "etcd")
	pdb := mustGet[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", namespace, "etcd")
	spec := sts.Spec.Template.Spec

	type summary struct {
		ClusterIP           string
		PublishNotReady     bool
		ServiceSelector     map[string]string
		ServiceName         string
		Replicas            int32
		PodManagement       appsv1.PodManagementPolicyType
		ClaimTemplates      []string
		EmptyDirVolumes     []string
		DataMountFromClaim  bool
		InitialCluster      string
		PDBMaxUnavailable   string
		ResourceRequests    []corev1.ResourceName
		ResourceLimits      []corev1.ResourceName
		PodSecurityIssues   []string
		ReadOnlyRootFS      bool
		ContainerCount      int
		ContainerDataDirArg string
		// TLS holds every flag of etcd's TLS, and URLs its scheme.
		TLS        map[string]string
		URLSchemes []string
		// SecretKeys are the keys of the mounted Secret.
		SecretKeys []string
	}
	c := spec.Containers[0]
	got := summary{
		ClusterIP:         svc.Spec.ClusterIP,
		PublishNotReady:   svc.Spec.PublishNotReadyAddresses,
		ServiceSelector:   svc.Spec.Selector,
		ServiceName:       sts.Spec.ServiceName,
		Replicas:          ptrValue(sts.Spec.Replicas),
		PodManagement:     sts.Spec.PodManagementPolicy,
		ResourceRequests:  sortedResourceNames(c.Resources.Requests),
		ResourceLimits:    sortedResourceNames(c.Resources.Limits),
		PodSecurityIssues: restrictedViolations(spec),
		ReadOnlyRootFS:    c.SecurityContext != nil && ptrValue(c.SecurityContext.ReadOnlyRootFilesystem),
		ContainerCount:    len(spec.Containers),
	}
	if pdb.Spec.MaxUnavailable != nil {
		got.PDBMaxUnavailable = pdb.Spec.MaxUnavailable.String()
	}
	for _, pvc := range sts.Spec.VolumeClaimTemplates {
		got.ClaimTemplates = append(got.ClaimTemplates, pvc.Name)
	}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			got.EmptyDirVolumes = append(got.EmptyDirVolumes, v.Name)
		}
		if v.Secret != nil {
			for _, item := range v.Secret.Items {
				got.SecretKeys = append(got.SecretKeys, v.Secret.SecretName+"/"+item.Key)
			}
		}
	}
	args := slices.Concat(c.Command, c.Args)
	got.TLS = map[string]string{}
	for _, a := range args {
		name, value, _ := strings.Cut(a, "=")
		switch name {
		case "--cert-file", "--key-file", "--trusted-ca-file", "--client-cert-auth",
			"--peer-cert-file", "--peer-key-file", "--peer-trusted-ca-file", "--peer-client-cert-auth",
			"--auto-tls", "--peer-auto-tls":
			got.TLS[name] = value
		case "--listen-client-urls", "--advertise-client-urls", "--listen-peer-urls", "--initial-advertise-peer-urls":
			scheme, _, _ := strings.Cut(value, "://")
			got.URLSchemes = append(got.URLSchemes, name+" "+scheme)
		}
		if v, ok := strings.CutPrefix(a, "--initial-cluster="); ok {
			got.InitialCluster = v
		}
		if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
			got.ContainerDataDirArg = v
			for _, m := range c.VolumeMounts {
				if strings.HasPrefix(v, m.MountPath+"/") && slices.Contains(got.ClaimTemplates, m.Name) {
					got.DataMountFromClaim = true
				}
			}
		}
	}

	var members []string
	for i := range ptrValue(sts.Spec.Replicas) {
		name := fmt.Sprintf("%s-%d", sts.Name, i)
		members = append(members, fmt.Sprintf("%s=https://%s.%s.%s.svc:2380", name, name, svc.Name, namespace))
	}
	want := summary{
		ClusterIP:           corev1.ClusterIPNone,
		PublishNotReady:     true,
		ServiceSelector:     sts.Spec.Template.Labels,
		ServiceName:         svc.Name,
		Replicas:            3,
		PodManagement:       appsv1.ParallelPodManagement,
		ClaimTemplates:      []string{"data"},
		DataMountFromClaim:  true,
		InitialCluster:      strings.Join(members, ","),
		PDBMaxUnavailable:   "1",
		ResourceRequests:    []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		ResourceLimits:      []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		ReadOnlyRootFS:      true,
		ContainerCount:      1,
		ContainerDataDirArg: "/var/lib/etcd/data",
		TLS: map[string]string{
			"--cert-file": "/etc/etcd/pki/tls.crt", "--key-file": "/etc/etcd/pki/tls.key",
			"--trusted-ca-file": "/etc/etcd/pki/ca.crt", "--client-cert-auth": "",
			"--peer-cert-file": "/etc/etcd/pki/tls.crt", "--peer-key-file": "/etc/etcd/pki/tls.key",
			"--peer-trusted-ca-file": "/etc/etcd/pki/ca.crt", "--peer-client-cert-auth": "",
		},
		URLSchemes: []string{
			"--listen-client-urls https", "--advertise-client-urls https",
			"--listen-peer-urls https", "--initial-advertise-peer-urls https",
		},
		// Never signing-ca.key: the CA's key stays with batch-apiserver.
		SecretKeys: []string{"batch-apiserver-etcd/ca.crt", "batch-apiserver-etcd/tls.crt", "batch-apiserver-etcd/tls.key"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("example etcd (-want +got):\n%s", diff)
	}
}

// restrictedViolations lists where a Pod spec breaks the Pod Security
// "restricted" profile that namespace.yaml enforces (the checks that apply
// to these manifests; the admission plugin has the full list).
func restrictedViolations(spec corev1.PodSpec) []string {
	var out []string
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		out = append(out, "host namespaces")
	}
	allowedVolume := func(v corev1.Volume) bool {
		s := v.VolumeSource
		return s.ConfigMap != nil || s.CSI != nil || s.DownwardAPI != nil || s.EmptyDir != nil ||
			s.Ephemeral != nil || s.PersistentVolumeClaim != nil || s.Projected != nil || s.Secret != nil
	}
	for _, v := range spec.Volumes {
		if !allowedVolume(v) {
			out = append(out, "volume "+v.Name+": type not allowed")
		}
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	podSeccomp := psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		out = append(out, "pod runAsUser 0")
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		sc := c.SecurityContext
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if ptrValue(sc.Privileged) {
			out = append(out, c.Name+": privileged")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			out = append(out, c.Name+": allowPrivilegeEscalation not false")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			out = append(out, c.Name+": capabilities do not drop ALL")
		}
		if sc.Capabilities != nil && len(sc.Capabilities.Add) > 0 {
			out = append(out, c.Name+": adds capabilities")
		}
		if !ptrValue(sc.RunAsNonRoot) && !(sc.RunAsNonRoot == nil && ptrValue(psc.RunAsNonRoot)) {
			out = append(out, c.Name+": runAsNonRoot not true")
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			out = append(out, c.Name+": runAsUser 0")
		}
		containerSeccomp := sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
		if !containerSeccomp && !(sc.SeccompProfile == nil && podSeccomp) {
			out = append(out, c.Name+": seccomp profile not RuntimeDefault")
		}
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				out = append(out, c.Name+": host port")
			}
		}
	}
	return out
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for name, q := range l {
		if !q.IsZero() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
