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

package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
)

// newTestREST starts an etcd member for the test and returns the Job storage
// on it, configured as the server configures it: v1 in etcd, garbage
// collection on. decorator is generic.UndecoratedStorage (straight to etcd)
// or genericregistry.StorageWithCacher() (through the watch cache).
func newTestREST(t *testing.T, decorator generic.StorageDecorator) (*REST, *StatusREST) {
	t.Helper()
	endpoints := etcdtest.Start(t)

	scheme := testScheme()
	codecs := serializer.NewCodecFactory(scheme)
	prefix := "/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	config := storagebackend.NewDefaultConfig(prefix, codecs.LegacyCodec(batchv1.SchemeGroupVersion))
	config.Transport.ServerList = endpoints
	config.EncodeVersioner = batchv1.SchemeGroupVersion
	// Compaction would only add a goroutine to a short test.
	config.CompactionInterval = 0

	opts := generic.RESTOptions{
		StorageConfig:           config.ForResource(batch.Resource("jobs")),
		Decorator:               decorator,
		EnableGarbageCollection: true,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          batch.GroupName + "/jobs",
	}
	jobs, status, err := NewREST(scheme, opts)
	if err != nil {
		t.Fatalf("NewREST: %v", err)
	}
	// Cleanups run last-in first-out: the store closes before etcd stops.
	t.Cleanup(jobs.Destroy)
	return jobs, status
}

// nsContext is the context of a request in namespace ns ("" for all namespaces).
func nsContext(ns string) context.Context {
	return genericapirequest.WithNamespace(context.Background(), ns)
}

func createJob(t *testing.T, jobs *REST, job *batch.Job) *batch.Job {
	t.Helper()
	obj, err := jobs.Create(nsContext(job.Namespace), job, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s/%s: %v", job.Namespace, job.Name, err)
	}
	return obj.(*batch.Job)
}

func getJob(t *testing.T, jobs *REST, namespace, name string) *batch.Job {
	t.Helper()
	obj, err := jobs.Get(nsContext(namespace), name, &metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting Job %s/%s: %v", namespace, name, err)
	}
	return obj.(*batch.Job)
}

// storedJob is what the store answers for a Job it has just created from
// job: the resourceVersion and creationTimestamp the store set, and the Job
// labels that defaulting copies from the template labels when a Job has none
// (the storage codec defaults what it reads, as kube-apiserver's does).
func storedJob(job, created *batch.Job) *batch.Job {
	want := job.DeepCopy()
	want.ResourceVersion = created.ResourceVersion
	want.CreationTimestamp = created.CreationTimestamp
	if len(want.Labels) == 0 && want.Spec.Template.Labels != nil {
		want.Labels = want.Spec.Template.Labels
	}
	return want
}

// causes returns the causes of an API error with only their type and field,
// which is what the tests compare.
func causes(err error) []metav1.StatusCause {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var out []metav1.StatusCause
	for _, c := range status.Status().Details.Causes {
		out = append(out, metav1.StatusCause{Type: c.Type, Field: c.Field})
	}
	return out
}

var sortCauses = cmpopts.SortSlices(func(a, b metav1.StatusCause) bool {
	if a.Field != b.Field {
		return a.Field < b.Field
	}
	return a.Type < b.Type
})

// checkErr fails the test unless err is what wantErr (an apierrors.Is…
// function, or nil for success) accepts, with exactly wantCauses.
func checkErr(t *testing.T, err error, wantErr func(error) bool, wantCauses []metav1.StatusCause) {
	t.Helper()
	if wantErr == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !wantErr(err) {
		t.Fatalf("got error %v (reason %q), want another", err, apierrors.ReasonForError(err))
	}
	if diff := cmp.Diff(wantCauses, causes(err), sortCauses, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("error causes (-want,+got):\n%s\nerror: %v", diff, err)
	}
}

func TestStorageCreate(t *testing.T) {
	jobs, _ := newTestREST(t, generic.UndecoratedStorage)
	cases := map[string]struct {
		job *batch.Job
		// want is the Job as stored, given the UID the store chose, before
		// the other system fields are filled in.
		want func(uid types.UID) *batch.Job
	}{
		"status cleared, generation 1, selector and template labels generated": {
			job: testJob("generated").UID("").Generation(5).Do(running).Succeeded(1).Internal(),
			want: func(uid types.UID) *batch.Job {
				return testJob("generated").UID(uid).Generated().Generation(1).Internal()
			},
		},
		"Job labels of the user kept": {
			job: testJob("labelled").UID("").Label("team", "a").Internal(),
			want: func(uid types.UID) *batch.Job {
				return testJob("labelled").UID(uid).Label("team", "a").Generated().Generation(1).Internal()
			},
		},
		"manual selector left alone": {
			job: testJob("manual").UID("").ManualSelector(true).Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).TemplateLabel("app", "a").Internal(),
			want: func(uid types.UID) *batch.Job {
				return testJob("manual").UID(uid).ManualSelector(true).Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).TemplateLabel("app", "a").Generation(1).Internal()
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			created := createJob(t, jobs, tc.job)
			if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
				t.Fatalf("created Job lacks system fields: uid %q, resourceVersion %q, creationTimestamp %v", created.UID, created.ResourceVersion, created.CreationTimestamp)
			}
			want := storedJob(tc.want(created.UID), created)
			if diff := cmp.Diff(want, created); diff != "" {
				t.Errorf("created Job (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(created, getJob(t, jobs, created.Namespace, created.Name)); diff != "" {
				t.Errorf("Get after Create (-created,+got):\n%s", diff)
			}
		})
	}
}

func TestStorageCreateErrors(t *testing.T) {
	jobs, _ := newTestREST(t, generic.UndecoratedStorage)
	createJob(t, jobs, testJob("exists").Internal())
	cases := map[string]struct {
		namespace  string
		job        *batch.Job
		wantErr    func(error) bool
		wantCauses []metav1.StatusCause
	}{
		"name taken": {
			job:     testJob("exists").Internal(),
			wantErr: apierrors.IsAlreadyExists,
		},
		"restartPolicy Always": {
			job:     testJob("always").Do(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "Always" }).Internal(),
			wantErr: apierrors.IsInvalid,
			wantCauses: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.template.spec.restartPolicy"},
			},
		},
		"template label conflicting with the generated one": {
			job:     testJob("conflict").TemplateLabel(batch.JobNameLabel, "other").Internal(),
			wantErr: apierrors.IsInvalid,
			wantCauses: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.template.metadata.labels[batch.jobs.dev/job-name]"},
			},
		},
		"selector without manualSelector": {
			job:     testJob("selector").Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).TemplateLabel("app", "a").Internal(),
			wantErr: apierrors.IsInvalid,
			wantCauses: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.selector"},
			},
		},
		"namespace of the object differs from the request's": {
			namespace: "other",
			job:       testJob("elsewhere").Internal(),
			wantErr:   apierrors.IsBadRequest,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ns := tc.namespace
			if ns == "" {
				ns = tc.job.Namespace
			}
			_, err := jobs.Create(nsContext(ns), tc.job, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			checkErr(t, err, tc.wantErr, tc.wantCauses)
			if tc.job.Name != "exists" {
				_, err := jobs.Get(nsContext(tc.job.Namespace), tc.job.Name, &metav1.GetOptions{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("Get after a refused Create: got %v, want NotFound", err)
				}
			}
		})
	}
}

func TestStorageGet(t *testing.T) {
	jobs, _ := newTestREST(t, generic.UndecoratedStorage)
	created := createJob(t, jobs, testJob("j").Internal())
	cases := map[string]struct {
		namespace, name string
		want            *batch.Job
		wantErr         func(error) bool
	}{
		"existing Job":             {namespace: "default", name: "j", want: created},
		"missing Job":              {namespace: "default", name: "missing", wantErr: apierrors.IsNotFound},
		"Job of another namespace": {namespace: "other", name: "j", wantErr: apierrors.IsNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj, err := jobs.Get(nsContext(tc.namespace), tc.name, &metav1.GetOptions{})
			checkErr(t, err, tc.wantErr, nil)
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, obj); diff != "" {
				t.Errorf("Get (-want,+got):\n%s", diff)
			}
		})
	}
}

// writeStatus writes a status through the status subresource.
func writeStatus(t *testing.T, status *StatusREST, job *batch.Job) *batch.Job {
	t.Helper()
	obj, _, err := status.Update(nsContext(job.Namespace), job.Name, rest.DefaultUpdatedObjectInfo(job), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("writing status of Job %s/%s: %v", job.Namespace, job.Name, err)
	}
	return obj.(*batch.Job)
}

func TestStorageList(t *testing.T) {
	decorators := map[string]generic.StorageDecorator{
		"etcd":        generic.UndecoratedStorage,
		"watch cache": genericregistry.StorageWithCacher(),
	}
	for decoratorName, decorator := range decorators {
		t.Run(decoratorName, func(t *testing.T) {
			jobs, status := newTestREST(t, decorator)
			fixtures := []struct {
				job       *batch.Job
				succeeded int32
			}{
				{job: testJob("a").Completions(3).Label("app", "x").Internal()},
				{job: testJob("b").Completions(3).Label("app", "x").Internal(), succeeded: 2},
				{job: testJob("c").Completions(3).Label("app", "y").Internal(), succeeded: 2},
				{job: testJob("d").Completions(3).Do(func(j *batchv1.Job) { j.Namespace = "other" }).Label("app", "x").Internal(), succeeded: 2},
			}
			stored := map[string]*batch.Job{}
			for _, f := range fixtures {
				job := createJob(t, jobs, f.job)
				if f.succeeded > 0 {
					job = writeStatus(t, status, batchtesting.JobFromInternal(job).Do(running).Succeeded(f.succeeded).Internal())
				}
				stored[job.Namespace+"/"+job.Name] = job
			}
			// The watch cache answers only once it is initialized and has
			// seen the writes above.
			err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				obj, err := jobs.List(nsContext(""), &metainternalversion.ListOptions{})
				if err != nil {
					return false, nil
				}
				list := obj.(*batch.JobList)
				seen := 0
				for i := range list.Items {
					if want, ok := stored[list.Items[i].Namespace+"/"+list.Items[i].Name]; ok && want.ResourceVersion == list.Items[i].ResourceVersion {
						seen++
					}
				}
				return seen == len(stored), nil
			})
			if err != nil {
				t.Fatalf("waiting for the storage to list every Job: %v", err)
			}

			cases := map[string]struct {
				namespace string
				label     string
				field     string
				want      []string
			}{
				"namespace":                      {namespace: "default", want: []string{"default/a", "default/b", "default/c"}},
				"all namespaces":                 {want: []string{"default/a", "default/b", "default/c", "other/d"}},
				"label":                          {namespace: "default", label: "app=x", want: []string{"default/a", "default/b"}},
				"label in all namespaces":        {label: "app=x", want: []string{"default/a", "default/b", "other/d"}},
				"status.successful":              {namespace: "default", field: "status.successful=2", want: []string{"default/b", "default/c"}},
				"status.successful not equal":    {namespace: "default", field: "status.successful!=2", want: []string{"default/a"}},
				"status.successful with a label": {namespace: "default", label: "app=x", field: "status.successful=2", want: []string{"default/b"}},
				"metadata.name":                  {namespace: "default", field: "metadata.name=c", want: []string{"default/c"}},
				"metadata.namespace":             {field: "metadata.namespace=other", want: []string{"other/d"}},
				"status.successful nothing":      {namespace: "default", field: "status.successful=7"},
				"label matching no Job":          {label: "app=z"},
			}
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					labelSel, err := labels.Parse(tc.label)
					if err != nil {
						t.Fatalf("parsing label selector: %v", err)
					}
					fieldSel, err := fields.ParseSelector(tc.field)
					if err != nil {
						t.Fatalf("parsing field selector: %v", err)
					}
					obj, err := jobs.List(nsContext(tc.namespace), &metainternalversion.ListOptions{LabelSelector: labelSel, FieldSelector: fieldSel})
					if err != nil {
						t.Fatalf("List: %v", err)
					}
					list := obj.(*batch.JobList)
					var got []string
					for i := range list.Items {
						item := &list.Items[i]
						key := item.Namespace + "/" + item.Name
						got = append(got, key)
						if diff := cmp.Diff(stored[key], item); diff != "" {
							t.Errorf("listed %s differs from the stored Job (-stored,+listed):\n%s", key, diff)
						}
					}
					sort.Strings(got)
					if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("listed Jobs (-want,+got):\n%s", diff)
					}
					if list.ResourceVersion == "" {
						t.Errorf("list has no resourceVersion")
					}
				})
			}
		})
	}
}

// updateCase is one update of a freshly created Job, through the main
// resource or the status subresource.
type updateCase struct {
	// change turns the stored Job into the request.
	change func(*batch.Job)
	// staleResourceVersion updates the Job once before sending the request
	// with the resourceVersion it read at first.
	staleResourceVersion bool
	// missing sends the request for a Job that does not exist.
	missing bool
	// want turns the stored Job into the expected result; resourceVersion
	// is checked apart.
	want       func(*batch.Job)
	wantErr    func(error) bool
	wantCauses []metav1.StatusCause
}

func runUpdateCases(t *testing.T, jobs *REST, updater rest.Updater, cases map[string]updateCase) {
	t.Helper()
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			base := testJob(fmt.Sprintf("update-%d", i))
			if tc.missing {
				base = testJob("missing")
			}
			stored := createJob(t, jobs, base.Internal())
			if tc.missing {
				if _, _, err := jobs.Delete(nsContext(stored.Namespace), stored.Name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil {
					t.Fatalf("deleting: %v", err)
				}
			}
			request := stored.DeepCopy()
			tc.change(request)
			if tc.staleResourceVersion {
				bumped := stored.DeepCopy()
				bumped.Annotations = map[string]string{"bump": "1"}
				if _, _, err := jobs.Update(nsContext(stored.Namespace), stored.Name, rest.DefaultUpdatedObjectInfo(bumped), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{}); err != nil {
					t.Fatalf("bumping the resourceVersion: %v", err)
				}
			}

			obj, created, err := updater.Update(nsContext(request.Namespace), request.Name, rest.DefaultUpdatedObjectInfo(request), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
			checkErr(t, err, tc.wantErr, tc.wantCauses)
			if err != nil {
				if !tc.missing && !tc.staleResourceVersion {
					if diff := cmp.Diff(stored, getJob(t, jobs, stored.Namespace, stored.Name)); diff != "" {
						t.Errorf("a refused update changed the stored Job (-before,+after):\n%s", diff)
					}
				}
				return
			}
			if created {
				t.Errorf("Update reported a create")
			}
			got := obj.(*batch.Job)
			want := stored.DeepCopy()
			tc.want(want)
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion")); diff != "" {
				t.Errorf("updated Job (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(got, getJob(t, jobs, got.Namespace, got.Name)); diff != "" {
				t.Errorf("Get after Update (-updated,+got):\n%s", diff)
			}
		})
	}
}

// setJobLabels replaces the Job labels. Defaulting shares the map of the
// template labels with a Job that had none, so it must not be written in place.
func setJobLabels(j *batch.Job, l map[string]string) { j.Labels = l }

func TestStorageUpdate(t *testing.T) {
	jobs, _ := newTestREST(t, generic.UndecoratedStorage)
	runUpdateCases(t, jobs, jobs, map[string]updateCase{
		"spec change bumps generation": {
			change: func(j *batch.Job) { j.Spec.Parallelism = ptr.To[int32](0) },
			want:   func(j *batch.Job) { j.Spec.Parallelism = ptr.To[int32](0); j.Generation = 2 },
		},
		"metadata-only change keeps generation": {
			change: func(j *batch.Job) { setJobLabels(j, map[string]string{"team": "a"}) },
			want:   func(j *batch.Job) { setJobLabels(j, map[string]string{"team": "a"}) },
		},
		"status in the request ignored": {
			change: func(j *batch.Job) { j.Status.Succeeded = 3; j.Status.Active = 1 },
			want:   func(j *batch.Job) {},
		},
		"generation set by the client ignored": {
			change: func(j *batch.Job) { j.Generation = 10 },
			want:   func(j *batch.Job) {},
		},
		"no resourceVersion: unconditional update": {
			change: func(j *batch.Job) { j.ResourceVersion = ""; j.Spec.Parallelism = ptr.To[int32](0) },
			want:   func(j *batch.Job) { j.Spec.Parallelism = ptr.To[int32](0); j.Generation = 2 },
		},
		"stale resourceVersion: conflict": {
			change:               func(j *batch.Job) { j.Spec.Parallelism = ptr.To[int32](0) },
			staleResourceVersion: true,
			wantErr:              apierrors.IsConflict,
		},
		"missing Job: not found, not created": {
			change:  func(j *batch.Job) { j.ResourceVersion = "" },
			missing: true,
			wantErr: apierrors.IsNotFound,
		},
		"immutable completions": {
			change:  func(j *batch.Job) { j.Spec.Completions = ptr.To[int32](5) },
			wantErr: apierrors.IsInvalid,
			wantCauses: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.completions"},
			},
		},
		"immutable selector": {
			change: func(j *batch.Job) {
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: string(j.UID), "extra": "x"}}
				j.Spec.Template.Labels = map[string]string{batch.ControllerUIDLabel: string(j.UID), "extra": "x"}
				setJobLabels(j, map[string]string{"team": "a"})
			},
			wantErr: apierrors.IsInvalid,
			wantCauses: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.selector"},
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.template"},
			},
		},
	})
}

func TestStorageUpdateStatus(t *testing.T) {
	jobs, status := newTestREST(t, generic.UndecoratedStorage)
	running := func(j *batch.Job) {
		*j = *batchtesting.JobFromInternal(j).Do(running).Internal()
	}
	runUpdateCases(t, jobs, status, map[string]updateCase{
		"status written": {
			change: running,
			want:   running,
		},
		"spec in the request ignored": {
			change: func(j *batch.Job) { running(j); j.Spec.Parallelism = ptr.To[int32](0) },
			want:   running,
		},
		"metadata change kept, generation not bumped": {
			change: func(j *batch.Job) { running(j); setJobLabels(j, map[string]string{"team": "a"}) },
			want:   func(j *batch.Job) { running(j); setJobLabels(j, map[string]string{"team": "a"}) },
		},
		"negative counter": {
			change:  func(j *batch.Job) { running(j); j.Status.Ready = ptr.To[int32](-1) },
			wantErr: apierrors.IsInvalid,
			wantCauses: []metav1.StatusCause{
				{Type: metav1.CauseTypeFieldValueInvalid, Field: "status.ready"},
			},
		},
		"stale resourceVersion: conflict": {
			change:               running,
			staleResourceVersion: true,
			wantErr:              apierrors.IsConflict,
		},
		"missing Job: not found, not created": {
			change:  func(j *batch.Job) { running(j); j.ResourceVersion = "" },
			missing: true,
			wantErr: apierrors.IsNotFound,
		},
	})
}

func TestStorageDelete(t *testing.T) {
	jobs, _ := newTestREST(t, generic.UndecoratedStorage)
	cases := map[string]struct {
		options *metav1.DeleteOptions
		missing bool
		stale   bool
		// wantDeleted is true when the Job is gone at once; otherwise it
		// stays with wantFinalizers for the garbage collector.
		wantDeleted    bool
		wantFinalizers []string
		wantErr        func(error) bool
	}{
		"default propagation (background) deletes at once": {
			options:     &metav1.DeleteOptions{},
			wantDeleted: true,
		},
		"no options": {
			wantDeleted: true,
		},
		"orphan propagation waits for the garbage collector": {
			options:        &metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)},
			wantFinalizers: []string{metav1.FinalizerOrphanDependents},
		},
		"foreground propagation waits for the garbage collector": {
			options:        &metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)},
			wantFinalizers: []string{metav1.FinalizerDeleteDependents},
		},
		"missing Job": {
			options: &metav1.DeleteOptions{},
			missing: true,
			wantErr: apierrors.IsNotFound,
		},
		"stale resourceVersion precondition": {
			stale:   true,
			wantErr: apierrors.IsConflict,
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			job := createJob(t, jobs, testJob(fmt.Sprintf("delete-%d", i)).Internal())
			ctx := nsContext(job.Namespace)
			options := tc.options
			if tc.missing {
				if _, _, err := jobs.Delete(ctx, job.Name, rest.ValidateAllObjectFunc, nil); err != nil {
					t.Fatalf("deleting first: %v", err)
				}
			}
			if tc.stale {
				options = &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To(job.ResourceVersion)}}
				bumped := job.DeepCopy()
				bumped.Annotations = map[string]string{"bump": "1"}
				if _, _, err := jobs.Update(ctx, job.Name, rest.DefaultUpdatedObjectInfo(bumped), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{}); err != nil {
					t.Fatalf("bumping the resourceVersion: %v", err)
				}
			}

			obj, deleted, err := jobs.Delete(ctx, job.Name, rest.ValidateAllObjectFunc, options)
			checkErr(t, err, tc.wantErr, nil)
			if err != nil {
				return
			}
			if deleted != tc.wantDeleted {
				t.Errorf("Delete reported deleted=%v, want %v", deleted, tc.wantDeleted)
			}
			after, getErr := jobs.Get(ctx, job.Name, &metav1.GetOptions{})
			if tc.wantDeleted {
				if !apierrors.IsNotFound(getErr) {
					t.Errorf("Get after Delete: got %v, want NotFound", getErr)
				}
				// The store answers a finished delete with a Status naming the Job.
				want := &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{
					Name: job.Name, Group: batch.GroupName, Kind: "jobs", UID: job.UID,
				}}
				if diff := cmp.Diff(want, obj); diff != "" {
					t.Errorf("Delete answer (-want,+got):\n%s", diff)
				}
				return
			}
			if getErr != nil {
				t.Fatalf("Get after a deferred Delete: %v", getErr)
			}
			got := after.(*batch.Job)
			if diff := cmp.Diff(got, obj); diff != "" {
				t.Errorf("Delete answer differs from the stored Job (-stored,+answer):\n%s", diff)
			}
			if got.DeletionTimestamp == nil {
				t.Errorf("Job waiting for the garbage collector has no deletionTimestamp")
			}
			if diff := cmp.Diff(tc.wantFinalizers, got.Finalizers); diff != "" {
				t.Errorf("finalizers (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStorageResourceInfo(t *testing.T) {
	jobs, status := newTestREST(t, generic.UndecoratedStorage)
	type info struct {
		ShortNames      []string
		Categories      []string
		NamespaceScoped bool
		ResetFields     map[fieldpath.APIVersion]string
		StatusReset     map[fieldpath.APIVersion]string
	}
	want := info{
		ShortNames:      []string{"bjob"},
		Categories:      []string{"all"},
		NamespaceScoped: true,
		ResetFields: map[fieldpath.APIVersion]string{
			"batch.jobs.dev/v1":      ".status",
			"batch.jobs.dev/v1beta1": ".status",
		},
		StatusReset: map[fieldpath.APIVersion]string{
			"batch.jobs.dev/v1":      ".spec",
			"batch.jobs.dev/v1beta1": ".spec",
		},
	}
	got := info{
		ShortNames:      jobs.ShortNames(),
		Categories:      jobs.Categories(),
		NamespaceScoped: jobs.NamespaceScoped(),
		ResetFields:     resetFieldsStrings(jobs.GetResetFields()),
		StatusReset:     resetFieldsStrings(status.GetResetFields()),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resource info (-want,+got):\n%s", diff)
	}
	if _, ok := status.New().(*batch.Job); !ok {
		t.Errorf("StatusREST.New() = %T, want *batch.Job", status.New())
	}
}
