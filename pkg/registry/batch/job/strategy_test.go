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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/install"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// testJobUID is the UID of the Jobs testJob builds, as the store would have
// set it before Validate runs.
const testJobUID = types.UID("5a1c9e0b-3d7f-4e2a-8b6c-9f0e1d2c3b4a")

var testJobStart = metav1.NewTime(time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC))

// testJob starts a valid, non-indexed, one-pod Job in namespace "default"
// for the strategy and storage tests: defaulted as it leaves the decoder,
// with UID testJobUID (as the store sets it before Validate runs) and
// without the selector and template labels the strategy generates
// (Generated adds them).
func testJob(name string) *batchtesting.JobBuilder {
	return batchtesting.MakeJob(name).UID(testJobUID).Selector(nil).TemplateLabels(nil).
		Containers(defaultedContainer("main")).
		Do(func(j *batchv1.Job) {
			spec := &j.Spec.Template.Spec
			spec.DNSPolicy = corev1.DNSClusterFirst
			spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
			spec.SchedulerName = corev1.DefaultSchedulerName
			spec.SecurityContext = &corev1.PodSecurityContext{}
		})
}

// running gives the Job the status of a started Job with one active pod.
func running(j *batchv1.Job) {
	j.Status.StartTime = &testJobStart
	j.Status.Active = 1
	j.Status.Ready = ptr.To[int32](0)
	j.Status.Terminating = ptr.To[int32](0)
	j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
}

// testScheme returns a scheme with the batch.jobs.dev types.
func testScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}

// byTypeAndField compares field.ErrorLists by Type and Field only, in any order.
var byTypeAndField = []cmp.Option{
	cmpopts.IgnoreFields(field.Error{}, "BadValue", "Detail", "Origin", "CoveredByDeclarative",
		"FromImperative", "ShortCircuit", "ShortCircuitedInDeclarative", "ValidationStabilityLevel"),
	cmpopts.SortSlices(func(a, b *field.Error) bool {
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Type < b.Type
	}),
	cmpopts.EquateEmpty(),
}

// fieldErrs builds an expected ErrorList from (type, field) pairs.
func fieldErrs(pairs ...any) field.ErrorList {
	var list field.ErrorList
	for i := 0; i < len(pairs); i += 2 {
		list = append(list, &field.Error{Type: pairs[i].(field.ErrorType), Field: pairs[i+1].(string)})
	}
	return list
}

func TestStrategyPrepareForCreate(t *testing.T) {
	cases := map[string]struct {
		job  *batch.Job
		want *batch.Job
	}{
		"status cleared and generation set to 1": {
			job:  testJob("j").Generation(7).Do(running).Succeeded(3).Internal(),
			want: testJob("j").Generation(1).Internal(),
		},
		"a new Job without generation gets 1": {
			job:  testJob("j").Internal(),
			want: testJob("j").Generation(1).Internal(),
		},
		"spec and metadata left alone": {
			job:  testJob("j").Label("app", "a").Parallelism(3).Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).Internal(),
			want: testJob("j").Label("app", "a").Parallelism(3).Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).Generation(1).Internal(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewStrategy(testScheme()).PrepareForCreate(context.Background(), tc.job)
			if diff := cmp.Diff(tc.want, tc.job); diff != "" {
				t.Errorf("PrepareForCreate (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStrategyValidateGeneratesSelector(t *testing.T) {
	const selectorLabelsPath = "spec.template.metadata.labels"
	cases := map[string]struct {
		job      *batch.Job
		want     *batch.Job
		wantErrs field.ErrorList
	}{
		"selector and four template labels generated from UID and name": {
			job:  testJob("j").Internal(),
			want: testJob("j").Generated().Internal(),
		},
		"manualSelector unset generates as false does": {
			job:  testJob("j").Do(func(j *batchv1.Job) { j.Spec.ManualSelector = nil }).Internal(),
			want: testJob("j").Do(func(j *batchv1.Job) { j.Spec.ManualSelector = nil }).Generated().Internal(),
		},
		"other template labels kept": {
			job:  testJob("j").TemplateLabel("app", "a").Internal(),
			want: testJob("j").TemplateLabel("app", "a").Generated().Internal(),
		},
		"user-set labels with the generated values kept": {
			job:  testJob("j").TemplateLabel(batch.JobNameLabel, "j").TemplateLabel(batch.LegacyControllerUIDLabel, string(testJobUID)).Internal(),
			want: testJob("j").Generated().Internal(),
		},
		"user-set prefixed job-name left alone and rejected": {
			job:      testJob("j").TemplateLabel(batch.JobNameLabel, "other").Internal(),
			want:     testJob("j").Generated().TemplateLabel(batch.JobNameLabel, "other").Internal(),
			wantErrs: fieldErrs(field.ErrorTypeInvalid, selectorLabelsPath+"[batch.jobs.dev/job-name]"),
		},
		"user-set legacy job-name left alone and rejected": {
			job:      testJob("j").TemplateLabel(batch.LegacyJobNameLabel, "other").Internal(),
			want:     testJob("j").Generated().TemplateLabel(batch.LegacyJobNameLabel, "other").Internal(),
			wantErrs: fieldErrs(field.ErrorTypeInvalid, selectorLabelsPath+"[job-name]"),
		},
		"user-set prefixed controller-uid left alone and rejected": {
			job:  testJob("j").TemplateLabel(batch.ControllerUIDLabel, "wrong").Internal(),
			want: testJob("j").Generated().TemplateLabel(batch.ControllerUIDLabel, "wrong").Internal(),
			wantErrs: fieldErrs(
				field.ErrorTypeInvalid, selectorLabelsPath+"[batch.jobs.dev/controller-uid]",
				// The generated selector no longer matches the template either.
				field.ErrorTypeInvalid, selectorLabelsPath,
			),
		},
		"user-set legacy controller-uid left alone and rejected": {
			job:      testJob("j").TemplateLabel(batch.LegacyControllerUIDLabel, "wrong").Internal(),
			want:     testJob("j").Generated().TemplateLabel(batch.LegacyControllerUIDLabel, "wrong").Internal(),
			wantErrs: fieldErrs(field.ErrorTypeInvalid, selectorLabelsPath+"[controller-uid]"),
		},
		// As upstream: without manualSelector a selector of the user's own
		// is completed with controller-uid, then refused as not generated.
		"user selector kept, controller-uid added, rejected as not generated": {
			job: testJob("j").Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).TemplateLabel("app", "a").Internal(),
			want: testJob("j").TemplateLabel("app", "a").Generated().
				Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a", batch.ControllerUIDLabel: string(testJobUID)}}).Internal(),
			wantErrs: fieldErrs(field.ErrorTypeInvalid, "spec.selector"),
		},
		"user selector with matchExpressions only gets matchLabels added and is rejected": {
			job: testJob("j").Do(func(j *batchv1.Job) {
				j.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}
			}).TemplateLabel("app", "a").Internal(),
			want: testJob("j").TemplateLabel("app", "a").Generated().Do(func(j *batchv1.Job) {
				j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}
			}).Internal(),
			wantErrs: fieldErrs(field.ErrorTypeInvalid, "spec.selector"),
		},
		"user selector equal to the generated one accepted": {
			job:  testJob("j").Selector(&metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: string(testJobUID)}}).Internal(),
			want: testJob("j").Generated().Internal(),
		},
		"user selector with a wrong controller-uid left alone and rejected": {
			job:  testJob("j").Selector(&metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: "wrong"}}).Internal(),
			want: testJob("j").Generated().Selector(&metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: "wrong"}}).Internal(),
			wantErrs: fieldErrs(
				field.ErrorTypeInvalid, "spec.selector",
				field.ErrorTypeInvalid, selectorLabelsPath,
			),
		},
		"manualSelector true: selector and labels are the user's": {
			job:  testJob("j").ManualSelector(true).Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).TemplateLabel("app", "a").Internal(),
			want: testJob("j").ManualSelector(true).Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).TemplateLabel("app", "a").Internal(),
		},
		"manualSelector true without a selector: nothing generated, selector required": {
			job:  testJob("j").ManualSelector(true).TemplateLabel("app", "a").Internal(),
			want: testJob("j").ManualSelector(true).TemplateLabel("app", "a").Internal(),
			wantErrs: fieldErrs(
				field.ErrorTypeRequired, "spec.selector",
				// A nil selector matches nothing, so not the template either (as upstream).
				field.ErrorTypeInvalid, selectorLabelsPath,
			),
		},
		"manualSelector true with a selector not matching the template": {
			job:      testJob("j").ManualSelector(true).Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).TemplateLabel("app", "b").Internal(),
			want:     testJob("j").ManualSelector(true).Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}).TemplateLabel("app", "b").Internal(),
			wantErrs: fieldErrs(field.ErrorTypeInvalid, selectorLabelsPath),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := NewStrategy(testScheme()).Validate(context.Background(), tc.job)
			if diff := cmp.Diff(tc.want, tc.job); diff != "" {
				t.Errorf("Job after Validate (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrs, errs, byTypeAndField...); diff != "" {
				t.Errorf("Validate errors (-want,+got):\n%s\ngot: %v", diff, errs)
			}
		})
	}
}

func TestStrategyPrepareForUpdate(t *testing.T) {
	// The store copies the stored generation onto the new object before
	// PrepareForUpdate, so every new object here carries the old generation.
	old := testJob("j").Generated().Generation(3).Do(running)
	cases := map[string]struct {
		job  *batch.Job
		want *batch.Job
	}{
		"spec change bumps generation": {
			job:  testJob("j").Generated().Generation(3).Parallelism(2).Internal(),
			want: testJob("j").Generated().Generation(4).Parallelism(2).Do(running).Internal(),
		},
		"metadata-only change keeps generation": {
			job:  testJob("j").Generated().Generation(3).Label("app", "a").Internal(),
			want: testJob("j").Generated().Generation(3).Label("app", "a").Do(running).Internal(),
		},
		"status in the request replaced by the stored status": {
			job:  testJob("j").Generated().Generation(3).Succeeded(5).Internal(),
			want: old.Internal(),
		},
		"status change alone keeps generation": {
			job:  testJob("j").Generated().Generation(3).Do(running).Succeeded(1).Internal(),
			want: old.Internal(),
		},
		"spec change with a status change: generation bumped, status kept": {
			job:  testJob("j").Generated().Generation(3).Parallelism(0).Succeeded(1).Internal(),
			want: testJob("j").Generated().Generation(4).Parallelism(0).Do(running).Internal(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewStrategy(testScheme()).PrepareForUpdate(context.Background(), tc.job, old.Internal())
			if diff := cmp.Diff(tc.want, tc.job); diff != "" {
				t.Errorf("PrepareForUpdate (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStatusStrategyPrepareForUpdate(t *testing.T) {
	old := testJob("j").Generated().Generation(3).Do(running)
	cases := map[string]struct {
		job  *batch.Job
		want *batch.Job
	}{
		"status written": {
			job:  testJob("j").Generated().Generation(3).Do(running).Succeeded(1).Internal(),
			want: testJob("j").Generated().Generation(3).Do(running).Succeeded(1).Internal(),
		},
		"spec change replaced by the stored spec, generation kept": {
			job:  testJob("j").Generated().Generation(3).Parallelism(5).Do(running).Succeeded(1).Internal(),
			want: testJob("j").Generated().Generation(3).Do(running).Succeeded(1).Internal(),
		},
		"selector and template labels cannot be dropped through status": {
			job:  testJob("j").Generation(3).Do(running).Internal(),
			want: old.Internal(),
		},
		"metadata change kept": {
			job:  testJob("j").Generated().Generation(3).Label("app", "a").Do(running).Internal(),
			want: testJob("j").Generated().Generation(3).Label("app", "a").Do(running).Internal(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewStatusStrategy(NewStrategy(testScheme())).PrepareForUpdate(context.Background(), tc.job, old.Internal())
			if diff := cmp.Diff(tc.want, tc.job); diff != "" {
				t.Errorf("PrepareForUpdate (-want,+got):\n%s", diff)
			}
		})
	}
}

// resetFieldsStrings renders reset fields as version -> set, which cmp can diff.
func resetFieldsStrings(fields map[fieldpath.APIVersion]*fieldpath.Set) map[fieldpath.APIVersion]string {
	out := map[fieldpath.APIVersion]string{}
	for v, set := range fields {
		out[v] = set.String()
	}
	return out
}

func TestGetResetFields(t *testing.T) {
	strategy := NewStrategy(testScheme())
	cases := map[string]struct {
		strategy rest.ResetFieldsStrategy
		want     map[fieldpath.APIVersion]string
	}{
		"main resource resets status": {
			strategy: strategy,
			want: map[fieldpath.APIVersion]string{
				"batch.jobs.dev/v1":      ".status",
				"batch.jobs.dev/v1beta1": ".status",
			},
		},
		"status subresource resets spec": {
			strategy: NewStatusStrategy(strategy),
			want: map[fieldpath.APIVersion]string{
				"batch.jobs.dev/v1":      ".spec",
				"batch.jobs.dev/v1beta1": ".spec",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, resetFieldsStrings(tc.strategy.GetResetFields())); diff != "" {
				t.Errorf("GetResetFields (-want,+got):\n%s", diff)
			}
		})
	}
}

// strategyTraits are the constant answers of a strategy.
type strategyTraits struct {
	NamespaceScoped          bool
	AllowCreateOnUpdate      bool
	AllowUnconditionalUpdate bool
	GarbageCollectionPolicy  rest.GarbageCollectionPolicy
}

func TestStrategyTraits(t *testing.T) {
	ctx := context.Background()
	strategy := NewStrategy(testScheme())
	statusStrategy := NewStatusStrategy(strategy)
	want := strategyTraits{
		NamespaceScoped:          true,
		AllowCreateOnUpdate:      false,
		AllowUnconditionalUpdate: true,
		GarbageCollectionPolicy:  rest.DeleteDependents,
	}
	cases := map[string]strategyTraits{
		"main": {
			NamespaceScoped:          strategy.NamespaceScoped(),
			AllowCreateOnUpdate:      strategy.AllowCreateOnUpdate(ctx),
			AllowUnconditionalUpdate: strategy.AllowUnconditionalUpdate(ctx),
			GarbageCollectionPolicy:  strategy.DefaultGarbageCollectionPolicy(ctx),
		},
		"status": {
			NamespaceScoped:          statusStrategy.NamespaceScoped(),
			AllowCreateOnUpdate:      statusStrategy.AllowCreateOnUpdate(ctx),
			AllowUnconditionalUpdate: statusStrategy.AllowUnconditionalUpdate(ctx),
			GarbageCollectionPolicy:  statusStrategy.DefaultGarbageCollectionPolicy(ctx),
		},
	}
	for name, got := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("traits (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStrategyWarningsOnUpdate(t *testing.T) {
	// A deprecated node label in the template gives exactly one warning
	// whenever the spec is checked.
	deprecated := map[string]string{"beta.kubernetes.io/arch": "amd64"}
	old := testJob("j").Generated().Generation(3).NodeSelector(deprecated)
	cases := map[string]struct {
		job          *batch.Job
		wantWarnings int
	}{
		"spec change warns about the new spec": {
			job:          testJob("j").Generated().Generation(3).NodeSelector(deprecated).Parallelism(2).Internal(),
			wantWarnings: 1,
		},
		"metadata-only change does not warn": {
			job: testJob("j").Generated().Generation(3).NodeSelector(deprecated).Label("app", "a").Internal(),
		},
		"status-only change does not warn": {
			job: testJob("j").Generated().Generation(3).NodeSelector(deprecated).Succeeded(1).Internal(),
		},
		"spec change without deprecated fields does not warn": {
			job: testJob("j").Generated().Generation(3).Parallelism(2).Internal(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			strategy := NewStrategy(testScheme())
			oldJob := old.Internal()
			// The store runs PrepareForUpdate first; it decides the generation.
			strategy.PrepareForUpdate(ctx, tc.job, oldJob)
			if got := strategy.WarningsOnUpdate(ctx, tc.job, oldJob); len(got) != tc.wantWarnings {
				t.Errorf("WarningsOnUpdate = %q, want %d warnings", got, tc.wantWarnings)
			}
			if got := NewStatusStrategy(strategy).WarningsOnUpdate(ctx, tc.job, oldJob); got != nil {
				t.Errorf("StatusStrategy.WarningsOnUpdate = %q, want none", got)
			}
		})
	}
}

func TestJobToSelectableFields(t *testing.T) {
	cases := map[string]struct {
		job  *batch.Job
		want fields.Set
	}{
		"new Job": {
			job:  testJob("a").Internal(),
			want: fields.Set{"metadata.name": "a", "metadata.namespace": "default", "status.successful": "0"},
		},
		"succeeded pods counted": {
			job:  testJob("b").Do(func(j *batchv1.Job) { j.Namespace = "other" }).Succeeded(12).Internal(),
			want: fields.Set{"metadata.name": "b", "metadata.namespace": "other", "status.successful": "12"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, JobToSelectableFields(tc.job)); diff != "" {
				t.Errorf("JobToSelectableFields (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestGetAttrs(t *testing.T) {
	job := testJob("a").Label("app", "x").Succeeded(2).Internal()
	gotLabels, gotFields, err := GetAttrs(job)
	if err != nil {
		t.Fatalf("GetAttrs: %v", err)
	}
	if diff := cmp.Diff(labels.Set{"app": "x"}, gotLabels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(fields.Set{"metadata.name": "a", "metadata.namespace": "default", "status.successful": "2"}, gotFields); diff != "" {
		t.Errorf("fields (-want,+got):\n%s", diff)
	}

	if _, _, err := GetAttrs(&corev1.Pod{}); err == nil {
		t.Errorf("GetAttrs(Pod): got no error, want one")
	}
}

func TestMatchJob(t *testing.T) {
	job := testJob("a").Label("app", "x").Succeeded(2).Internal()
	cases := map[string]struct {
		label string
		field string
		want  bool
	}{
		"everything":                 {want: true},
		"label matches":              {label: "app=x", want: true},
		"label does not match":       {label: "app=y"},
		"name matches":               {field: "metadata.name=a", want: true},
		"name does not match":        {field: "metadata.name=b"},
		"namespace matches":          {field: "metadata.namespace=default", want: true},
		"successful matches":         {field: "status.successful=2", want: true},
		"successful does not match":  {field: "status.successful=0"},
		"successful not-equal":       {field: "status.successful!=0", want: true},
		"label and field both match": {label: "app=x", field: "metadata.name=a,status.successful=2", want: true},
		"label matches, field not":   {label: "app=x", field: "status.successful=3"},
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
			predicate := MatchJob(labelSel, fieldSel)
			got, err := predicate.Matches(job)
			if err != nil {
				t.Fatalf("Matches: %v", err)
			}
			if got != tc.want {
				t.Errorf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}
