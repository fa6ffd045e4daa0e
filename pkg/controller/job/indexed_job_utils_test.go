package job

import (
	"math"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// RawIndex sets the completion index annotation to a raw string, for Pods
// whose index is missing from the label or malformed.
func (b *podBuilder) RawIndex(v string) *podBuilder {
	return b.Annotation(batch.JobCompletionIndexAnnotation, v)
}

// IndexIgnoredFailureCount sets the per-index ignored failure count annotation.
func (b *podBuilder) IndexIgnoredFailureCount(n int) *podBuilder {
	return b.Annotation(batch.JobIndexIgnoredFailureCountAnnotation, strconv.Itoa(n))
}

// podNames returns the names of pods, to compare lists of Pods in a readable diff.
func podNames(pods []*corev1.Pod) []string {
	if len(pods) == 0 {
		return nil
	}
	result := make([]string, len(pods))
	for i, p := range pods {
		result[i] = p.Name
	}
	return result
}

func TestParseIndexesFromString(t *testing.T) {
	cases := map[string]struct {
		in          string
		completions int
		want        orderedIntervals
		// wantString is String() of the result; empty means in itself.
		wantString string
	}{
		"empty": {
			completions: 5,
		},
		"single index": {
			in: "3", completions: 5,
			want: orderedIntervals{{3, 3}},
		},
		"intervals and single indexes": {
			in: "0,2-4,7,8,10-12", completions: 13,
			want: orderedIntervals{{0, 0}, {2, 4}, {7, 8}, {10, 12}},
		},
		"adjacent entries are joined": {
			in: "1,2,3-5,6", completions: 10,
			want:       orderedIntervals{{1, 6}},
			wantString: "1-6",
		},
		"interval of two written as a range": {
			in: "4-5", completions: 10,
			want:       orderedIntervals{{4, 5}},
			wantString: "4,5",
		},
		"last index just inside completions": {
			in: "0-4", completions: 5,
			want: orderedIntervals{{0, 4}},
		},
		"interval cut at completions": {
			in: "0-5,8-10", completions: 10,
			want:       orderedIntervals{{0, 5}, {8, 9}},
			wantString: "0-5,8,9",
		},
		"intervals beyond completions dropped": {
			in: "0-5,8-10", completions: 8,
			want:       orderedIntervals{{0, 5}},
			wantString: "0-5",
		},
		"first index equal to completions dropped": {
			in: "1,5", completions: 5,
			want:       orderedIntervals{{1, 1}},
			wantString: "1",
		},
		"corrupted first and last": {
			in: "0,1-foo,bar", completions: 4,
			want:       orderedIntervals{{0, 0}},
			wantString: "0",
		},
		"corrupted entries between valid ones": {
			in: "0,x,,-3,2", completions: 4,
			want:       orderedIntervals{{0, 0}, {2, 2}},
			wantString: "0,2",
		},
		"zero completions": {
			in: "0-3", completions: 0,
			wantString: "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got := parseIndexesFromString(logger, tc.in, tc.completions)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Unexpected intervals (-want,+got):\n%s", diff)
			}
			wantString := tc.wantString
			if wantString == "" && tc.want != nil {
				wantString = tc.in
			}
			if diff := cmp.Diff(wantString, got.String()); diff != "" {
				t.Errorf("Unexpected String() (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(got, parseIndexesFromString(logger, got.String(), tc.completions)); diff != "" {
				t.Errorf("String() does not parse back to the same intervals (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestOrderedIntervalsTotal(t *testing.T) {
	cases := map[string]struct {
		in   orderedIntervals
		want int
	}{
		"empty":            {want: 0},
		"single index":     {in: orderedIntervals{{3, 3}}, want: 1},
		"several":          {in: orderedIntervals{{0, 0}, {2, 4}, {7, 8}}, want: 6},
		"one big interval": {in: orderedIntervals{{0, 99999}}, want: 100000},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.total()); diff != "" {
				t.Errorf("Unexpected total (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestOrderedIntervalsMerge(t *testing.T) {
	cases := map[string]struct {
		a, b orderedIntervals
		want orderedIntervals
	}{
		"both empty": {},
		"first empty": {
			b:    orderedIntervals{{1, 2}},
			want: orderedIntervals{{1, 2}},
		},
		"second empty": {
			a:    orderedIntervals{{1, 2}},
			want: orderedIntervals{{1, 2}},
		},
		"disjoint interleaved": {
			a:    orderedIntervals{{0, 0}, {6, 7}},
			b:    orderedIntervals{{3, 4}, {10, 10}},
			want: orderedIntervals{{0, 0}, {3, 4}, {6, 7}, {10, 10}},
		},
		"adjacent are joined": {
			a:    orderedIntervals{{0, 2}, {6, 7}},
			b:    orderedIntervals{{3, 5}},
			want: orderedIntervals{{0, 7}},
		},
		"overlapping": {
			a:    orderedIntervals{{0, 4}, {8, 12}},
			b:    orderedIntervals{{3, 9}},
			want: orderedIntervals{{0, 12}},
		},
		"contained": {
			a:    orderedIntervals{{0, 10}},
			b:    orderedIntervals{{2, 3}, {5, 5}},
			want: orderedIntervals{{0, 10}},
		},
		"same first": {
			a:    orderedIntervals{{2, 3}},
			b:    orderedIntervals{{2, 6}},
			want: orderedIntervals{{2, 6}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.a.merge(tc.b)); diff != "" {
				t.Errorf("Unexpected a.merge(b) (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, tc.b.merge(tc.a)); diff != "" {
				t.Errorf("Unexpected b.merge(a) (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestOrderedIntervalsWithOrderedIndexes(t *testing.T) {
	cases := map[string]struct {
		in      orderedIntervals
		indexes []int
		want    orderedIntervals
	}{
		"nothing": {},
		"only new indexes": {
			indexes: []int{0, 1, 2, 5, 7, 8},
			want:    orderedIntervals{{0, 2}, {5, 5}, {7, 8}},
		},
		"new indexes fill a gap": {
			in:      orderedIntervals{{0, 1}, {4, 5}},
			indexes: []int{2, 3},
			want:    orderedIntervals{{0, 5}},
		},
		"new indexes already in": {
			in:      orderedIntervals{{0, 5}},
			indexes: []int{0, 3, 5},
			want:    orderedIntervals{{0, 5}},
		},
		"new indexes around": {
			in:      orderedIntervals{{3, 4}, {6, 6}},
			indexes: []int{2, 7, 8},
			want:    orderedIntervals{{2, 4}, {6, 8}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := append(orderedIntervals(nil), tc.in...)
			if diff := cmp.Diff(tc.want, tc.in.withOrderedIndexes(tc.indexes)); diff != "" {
				t.Errorf("Unexpected intervals (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.in); diff != "" {
				t.Errorf("withOrderedIndexes changed its receiver (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestOrderedIntervalsHas(t *testing.T) {
	intervals := orderedIntervals{{2, 4}, {6, 8}, {10, 10}}
	cases := map[string]struct {
		intervals orderedIntervals
		index     int
		want      bool
	}{
		"empty":                 {index: 4},
		"before all":            {intervals: intervals, index: 1},
		"first of first":        {intervals: intervals, index: 2, want: true},
		"last of first":         {intervals: intervals, index: 4, want: true},
		"in the gap":            {intervals: intervals, index: 5},
		"middle of second":      {intervals: intervals, index: 7, want: true},
		"single index interval": {intervals: intervals, index: 10, want: true},
		"after all":             {intervals: intervals, index: 11},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.intervals.has(tc.index)); diff != "" {
				t.Errorf("Unexpected has(%d) (-want,+got):\n%s", tc.index, diff)
			}
		})
	}
}

func TestGetCompletionIndex(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        int
	}{
		"nil annotations": {want: unknownCompletionIndex},
		"no index":        {annotations: map[string]string{"a": "1"}, want: unknownCompletionIndex},
		"zero":            {annotations: map[string]string{batch.JobCompletionIndexAnnotation: "0"}, want: 0},
		"valid":           {annotations: map[string]string{batch.JobCompletionIndexAnnotation: "12"}, want: 12},
		"negative":        {annotations: map[string]string{batch.JobCompletionIndexAnnotation: "-2"}, want: unknownCompletionIndex},
		"not a number":    {annotations: map[string]string{batch.JobCompletionIndexAnnotation: "x"}, want: unknownCompletionIndex},
		"upstream key is not ours": {
			annotations: map[string]string{"batch.kubernetes.io/job-completion-index": "1"},
			want:        unknownCompletionIndex,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, getCompletionIndex(tc.annotations)); diff != "" {
				t.Errorf("Unexpected index (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestGetIndexes(t *testing.T) {
	job := makeJob("j").Indexed(5).Obj()
	pods := []*corev1.Pod{
		makePod("a", job).Index(3).Obj(),
		makePod("b", job).Index(0).Obj(),
		makePod("c", job).Index(3).Obj(),
		makePod("d", job).Obj(),
		makePod("e", job).RawIndex("-1").Obj(),
		makePod("f", job).RawIndex("x").Obj(),
	}
	if diff := cmp.Diff([]int{0, 3}, sets.List(getIndexes(pods))); diff != "" {
		t.Errorf("Unexpected indexes (-want,+got):\n%s", diff)
	}
}

func TestGetIndexFailureCount(t *testing.T) {
	job := makeJob("j").Indexed(3).BackoffLimitPerIndex(1).Obj()
	cases := map[string]struct {
		pod          *corev1.Pod
		want         int32
		wantAbsolute int32
	}{
		"no annotation": {
			pod: makePod("p", job).Index(0).Obj(),
		},
		"valid value": {
			pod:  makePod("p", job).Index(0).IndexFailureCount(2).Obj(),
			want: 2, wantAbsolute: 2,
		},
		"maxint32": {
			pod:  makePod("p", job).Index(0).Annotation(batch.JobIndexFailureCountAnnotation, strconv.Itoa(math.MaxInt32)).Obj(),
			want: math.MaxInt32, wantAbsolute: math.MaxInt32,
		},
		"beyond int32": {
			pod: makePod("p", job).Index(0).Annotation(batch.JobIndexFailureCountAnnotation, strconv.Itoa(math.MaxInt32+1)).Obj(),
		},
		"negative": {
			pod: makePod("p", job).Index(0).Annotation(batch.JobIndexFailureCountAnnotation, "-1").Obj(),
		},
		"not a number": {
			pod: makePod("p", job).Index(0).Annotation(batch.JobIndexFailureCountAnnotation, "xyz").Obj(),
		},
		"with ignored failures": {
			pod:  makePod("p", job).Index(0).IndexFailureCount(2).IndexIgnoredFailureCount(3).Obj(),
			want: 2, wantAbsolute: 5,
		},
		"only ignored failures": {
			pod:          makePod("p", job).Index(0).IndexIgnoredFailureCount(3).Obj(),
			wantAbsolute: 3,
		},
		"invalid ignored failures": {
			pod:  makePod("p", job).Index(0).IndexFailureCount(1).Annotation(batch.JobIndexIgnoredFailureCountAnnotation, "-4").Obj(),
			want: 1, wantAbsolute: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			if diff := cmp.Diff(tc.want, getIndexFailureCount(logger, tc.pod)); diff != "" {
				t.Errorf("Unexpected failure count (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAbsolute, getIndexAbsoluteFailureCount(logger, tc.pod)); diff != "" {
				t.Errorf("Unexpected absolute failure count (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestGetNewIndexFailureCounts(t *testing.T) {
	ignoreDisruption := batchv1.PodFailurePolicyRule{
		Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
		},
	}
	disrupted := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}
	plain := makeJob("j").Indexed(4).BackoffLimitPerIndex(3).Obj()
	withPolicy := makeJob("j").Indexed(4).BackoffLimitPerIndex(3).PodFailurePolicy(ignoreDisruption).Obj()
	cases := map[string]struct {
		job             *batchv1.Job
		pod             *corev1.Pod
		wantFailures    int32
		wantIgnored     int32
		wantAnnotations map[string]string
	}{
		"first pod of the index": {
			job:             plain,
			wantAnnotations: map[string]string{batch.JobIndexFailureCountAnnotation: "0"},
		},
		"replacing a pod with no failures": {
			job:             plain,
			pod:             makePod("p", plain).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
			wantFailures:    1,
			wantAnnotations: map[string]string{batch.JobIndexFailureCountAnnotation: "1"},
		},
		"replacing a pod with failures": {
			job:             plain,
			pod:             makePod("p", plain).Index(0).IndexFailureCount(3).Phase(corev1.PodFailed).Obj(),
			wantFailures:    4,
			wantAnnotations: map[string]string{batch.JobIndexFailureCountAnnotation: "4"},
		},
		"replacing a pod without the annotation": {
			job:             plain,
			pod:             makePod("p", plain).Index(0).Phase(corev1.PodFailed).Obj(),
			wantFailures:    1,
			wantAnnotations: map[string]string{batch.JobIndexFailureCountAnnotation: "1"},
		},
		"ignored failures are carried over": {
			job:          plain,
			pod:          makePod("p", plain).Index(0).IndexFailureCount(1).IndexIgnoredFailureCount(2).Phase(corev1.PodFailed).Obj(),
			wantFailures: 2, wantIgnored: 2,
			wantAnnotations: map[string]string{
				batch.JobIndexFailureCountAnnotation:        "2",
				batch.JobIndexIgnoredFailureCountAnnotation: "2",
			},
		},
		"failure matching an Ignore rule": {
			job:          withPolicy,
			pod:          makePod("p", withPolicy).Index(3).IndexFailureCount(3).Phase(corev1.PodFailed).Condition(disrupted).Obj(),
			wantFailures: 3, wantIgnored: 1,
			wantAnnotations: map[string]string{
				batch.JobIndexFailureCountAnnotation:        "3",
				batch.JobIndexIgnoredFailureCountAnnotation: "1",
			},
		},
		"failure not matching any rule counts": {
			job:             withPolicy,
			pod:             makePod("p", withPolicy).Index(3).IndexFailureCount(1).Phase(corev1.PodFailed).Obj(),
			wantFailures:    2,
			wantAnnotations: map[string]string{batch.JobIndexFailureCountAnnotation: "2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			gotFailures, gotIgnored := getNewIndexFailureCounts(logger, tc.job, tc.pod)
			if diff := cmp.Diff(tc.wantFailures, gotFailures); diff != "" {
				t.Errorf("Unexpected failure count (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIgnored, gotIgnored); diff != "" {
				t.Errorf("Unexpected ignored failure count (-want,+got):\n%s", diff)
			}
			template := tc.job.Spec.Template.DeepCopy()
			template.Annotations = map[string]string{}
			addIndexFailureCountAnnotation(logger, template, tc.job, tc.pod)
			if diff := cmp.Diff(tc.wantAnnotations, template.Annotations); diff != "" {
				t.Errorf("Unexpected template annotations (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestAddCompletionIndexEnvVariables(t *testing.T) {
	indexEnv := corev1.EnvVar{
		Name: "JOB_COMPLETION_INDEX",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.labels['batch.jobs.dev/job-completion-index']",
		}},
	}
	userEnv := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", Value: "7"}
	other := corev1.EnvVar{Name: "OTHER", Value: "x"}
	cases := map[string]struct {
		spec corev1.PodSpec
		want corev1.PodSpec
	}{
		"containers and init containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init"}},
				Containers:     []corev1.Container{{Name: "a", Env: []corev1.EnvVar{other}}, {Name: "b"}},
			},
			want: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{indexEnv}}},
				Containers: []corev1.Container{
					{Name: "a", Env: []corev1.EnvVar{other, indexEnv}},
					{Name: "b", Env: []corev1.EnvVar{indexEnv}},
				},
			},
		},
		"variable already defined is kept": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{userEnv}}},
				Containers:     []corev1.Container{{Name: "a", Env: []corev1.EnvVar{userEnv, other}}, {Name: "b"}},
			},
			want: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{userEnv}}},
				Containers: []corev1.Container{
					{Name: "a", Env: []corev1.EnvVar{userEnv, other}},
					{Name: "b", Env: []corev1.EnvVar{indexEnv}},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			template := &corev1.PodTemplateSpec{Spec: tc.spec}
			addCompletionIndexEnvVariables(template)
			if diff := cmp.Diff(tc.want, template.Spec); diff != "" {
				t.Errorf("Unexpected pod spec (-want,+got):\n%s", diff)
			}
			// A second call must not add the variable twice.
			addCompletionIndexEnvVariables(template)
			if diff := cmp.Diff(tc.want, template.Spec); diff != "" {
				t.Errorf("Unexpected pod spec after a second call (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestAddCompletionIndexAnnotationAndLabel(t *testing.T) {
	cases := map[string]struct {
		template        corev1.PodTemplateSpec
		index           int
		wantAnnotations map[string]string
		wantLabels      map[string]string
	}{
		"nil maps": {
			index:           0,
			wantAnnotations: map[string]string{batch.JobCompletionIndexAnnotation: "0"},
			wantLabels:      map[string]string{batch.JobCompletionIndexAnnotation: "0"},
		},
		"existing entries kept, stale index replaced": {
			template: *makeJob("j").Obj().Spec.Template.DeepCopy(),
			index:    12,
			wantAnnotations: map[string]string{
				batch.JobCompletionIndexAnnotation: "12",
			},
			wantLabels: map[string]string{
				batch.ControllerUIDLabel:           "j-uid",
				batch.LegacyControllerUIDLabel:     "j-uid",
				batch.JobNameLabel:                 "j",
				batch.LegacyJobNameLabel:           "j",
				batch.JobCompletionIndexAnnotation: "12",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			template := tc.template.DeepCopy()
			addCompletionIndexAnnotation(template, tc.index)
			addCompletionIndexLabel(template, tc.index)
			if diff := cmp.Diff(tc.wantAnnotations, template.Annotations); diff != "" {
				t.Errorf("Unexpected annotations (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLabels, template.Labels); diff != "" {
				t.Errorf("Unexpected labels (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPodGenerateNameWithIndex(t *testing.T) {
	cases := map[string]struct {
		jobName string
		index   int
		want    string
	}{
		"short job name": {
			jobName: "indexed-job", index: 1,
			want: "indexed-job-1-",
		},
		"prefix just fits": {
			// 55 characters + "-1-" = 58 = names.MaxGeneratedNameLength.
			jobName: "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh", index: 1,
			want: "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
		},
		"job name with index suffix one too long": {
			jobName: "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhho", index: 1,
			want: "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
		},
		"job name longer than the limit": {
			jobName: "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooo", index: 1,
			want: "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
		},
		"long index keeps the index": {
			jobName: "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooo", index: 12345,
			want: "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhoooooh-12345-",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, podGenerateNameWithIndex(tc.jobName, tc.index)); diff != "" {
				t.Errorf("Unexpected generateName (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestByCompletionIndex(t *testing.T) {
	job := makeJob("j").Indexed(5).Obj()
	pods := []*corev1.Pod{
		makePod("three", job).Index(3).Obj(),
		makePod("none", job).Obj(),
		makePod("zero", job).Index(0).Obj(),
		makePod("one", job).Index(1).Obj(),
	}
	sort.Sort(byCompletionIndex(pods))
	if diff := cmp.Diff([]string{"none", "zero", "one", "three"}, podNames(pods)); diff != "" {
		t.Errorf("Unexpected order (-want,+got):\n%s", diff)
	}
}

func TestCompletionMode(t *testing.T) {
	cases := map[string]struct {
		job                   *batchv1.Job
		wantMode              string
		wantIndexed           bool
		wantBackoffLimitIndex bool
	}{
		"unset": {
			job:      func() *batchv1.Job { j := makeJob("j").Obj(); j.Spec.CompletionMode = nil; return j }(),
			wantMode: "NonIndexed",
		},
		"NonIndexed": {
			job:      makeJob("j").Obj(),
			wantMode: "NonIndexed",
		},
		"Indexed": {
			job:         makeJob("j").Indexed(3).Obj(),
			wantMode:    "Indexed",
			wantIndexed: true,
		},
		"Indexed with backoffLimitPerIndex": {
			job:                   makeJob("j").Indexed(3).BackoffLimitPerIndex(0).Obj(),
			wantMode:              "Indexed",
			wantIndexed:           true,
			wantBackoffLimitIndex: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantMode, completionModeStr(tc.job)); diff != "" {
				t.Errorf("Unexpected completion mode (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIndexed, isIndexedJob(tc.job)); diff != "" {
				t.Errorf("Unexpected isIndexedJob (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantBackoffLimitIndex, hasBackoffLimitPerIndex(tc.job)); diff != "" {
				t.Errorf("Unexpected hasBackoffLimitPerIndex (-want,+got):\n%s", diff)
			}
		})
	}
}

// idx describes a Pod by completion index and phase for table tests; an
// index of "-" means no index annotation.
type idx struct {
	index string
	phase corev1.PodPhase
}

// podsWithIndexPhase builds Pods of job named "<i>" after their position,
// with the given index annotation (and label, when valid) and phase.
func podsWithIndexPhase(job *batchv1.Job, descs ...idx) []*corev1.Pod {
	pods := make([]*corev1.Pod, 0, len(descs))
	for i, d := range descs {
		b := makePod(strconv.Itoa(i), job).Phase(d.phase)
		if n, err := strconv.Atoi(d.index); err == nil && n >= 0 {
			b.Index(n)
		} else if d.index != "-" {
			b.RawIndex(d.index)
		}
		pods = append(pods, b.Obj())
	}
	return pods
}

func TestCalculateSucceededIndexes(t *testing.T) {
	cases := map[string]struct {
		prevSucceeded string
		completions   int32
		pods          []idx
		// podsWithoutFinalizer are succeeded Pods already counted in the status.
		podsWithoutFinalizer []idx
		wantPrev             orderedIntervals
		wantSucceeded        orderedIntervals
	}{
		"nothing": {
			completions: 3,
		},
		"one index": {
			completions:   2,
			pods:          []idx{{"1", corev1.PodSucceeded}},
			wantSucceeded: orderedIntervals{{1, 1}},
		},
		"duplicates and failures": {
			completions: 11,
			pods: []idx{
				{"2", corev1.PodFailed},
				{"5", corev1.PodSucceeded},
				{"5", corev1.PodSucceeded},
				{"10", corev1.PodFailed},
				{"10", corev1.PodSucceeded},
			},
			wantSucceeded: orderedIntervals{{5, 5}, {10, 10}},
		},
		"active pods do not count": {
			completions: 8,
			pods: []idx{
				{"0", corev1.PodRunning},
				{"1", corev1.PodPending},
				{"2", corev1.PodSucceeded},
				{"3", corev1.PodSucceeded},
				{"5", corev1.PodSucceeded},
				{"6", corev1.PodSucceeded},
				{"7", corev1.PodSucceeded},
			},
			wantSucceeded: orderedIntervals{{2, 3}, {5, 7}},
		},
		"pods without a valid index or out of range": {
			completions: 5,
			pods: []idx{
				{"0", corev1.PodSucceeded},
				{"4", corev1.PodSucceeded},
				{"5", corev1.PodSucceeded},
				{"-", corev1.PodSucceeded},
				{"-2", corev1.PodSucceeded},
				{"x", corev1.PodSucceeded},
			},
			wantSucceeded: orderedIntervals{{0, 0}, {4, 4}},
		},
		"pods without finalizer are already counted": {
			completions:          5,
			pods:                 []idx{{"1", corev1.PodSucceeded}},
			podsWithoutFinalizer: []idx{{"3", corev1.PodSucceeded}},
			wantSucceeded:        orderedIntervals{{1, 1}},
		},
		"prev out of range": {
			prevSucceeded: "0-5,8-10",
			completions:   8,
			wantPrev:      orderedIntervals{{0, 5}},
			wantSucceeded: orderedIntervals{{0, 5}},
		},
		"prev partially out of range": {
			prevSucceeded: "0-5,8-10",
			completions:   10,
			wantPrev:      orderedIntervals{{0, 5}, {8, 9}},
			wantSucceeded: orderedIntervals{{0, 5}, {8, 9}},
		},
		"prev and new separate": {
			prevSucceeded: "0,4,5,10-12",
			completions:   13,
			pods: []idx{
				{"2", corev1.PodSucceeded},
				{"7", corev1.PodSucceeded},
				{"8", corev1.PodSucceeded},
			},
			wantPrev:      orderedIntervals{{0, 0}, {4, 5}, {10, 12}},
			wantSucceeded: orderedIntervals{{0, 0}, {2, 2}, {4, 5}, {7, 8}, {10, 12}},
		},
		"new joins prev": {
			prevSucceeded: "3,4,6",
			completions:   9,
			pods: []idx{
				{"2", corev1.PodSucceeded},
				{"7", corev1.PodSucceeded},
				{"8", corev1.PodSucceeded},
			},
			wantPrev:      orderedIntervals{{3, 4}, {6, 6}},
			wantSucceeded: orderedIntervals{{2, 4}, {6, 8}},
		},
		"new within prev": {
			prevSucceeded: "2-7",
			completions:   10,
			pods: []idx{
				{"0", corev1.PodSucceeded},
				{"3", corev1.PodSucceeded},
				{"9", corev1.PodSucceeded},
			},
			wantPrev:      orderedIntervals{{2, 7}},
			wantSucceeded: orderedIntervals{{0, 0}, {2, 7}, {9, 9}},
		},
		"corrupted prev": {
			prevSucceeded: "0,1-foo,bar",
			completions:   4,
			pods:          []idx{{"3", corev1.PodSucceeded}},
			wantPrev:      orderedIntervals{{0, 0}},
			wantSucceeded: orderedIntervals{{0, 0}, {3, 3}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			job := makeJob("j").Indexed(tc.completions).Status(batchv1.JobStatus{CompletedIndexes: tc.prevSucceeded}).Obj()
			pods := podsWithIndexPhase(job, tc.pods...)
			for _, p := range podsWithIndexPhase(job, tc.podsWithoutFinalizer...) {
				p.Finalizers = nil
				pods = append(pods, p)
			}
			gotPrev, gotSucceeded := calculateSucceededIndexes(logger, job, pods)
			if diff := cmp.Diff(tc.wantPrev, gotPrev); diff != "" {
				t.Errorf("Unexpected indexes from status (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSucceeded, gotSucceeded); diff != "" {
				t.Errorf("Unexpected succeeded indexes (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestIsIndexFailed(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	failIndexOnExit3 := batchv1.PodFailurePolicyRule{
		Action:      batchv1.PodFailurePolicyActionFailIndex,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3}},
	}
	ignoreOnExit4 := batchv1.PodFailurePolicyRule{
		Action:      batchv1.PodFailurePolicyActionIgnore,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{4}},
	}
	limit0 := makeJob("j").Indexed(2).BackoffLimitPerIndex(0).Obj()
	limit1 := makeJob("j").Indexed(2).BackoffLimitPerIndex(1).Obj()
	limit1ReplaceFailed := makeJob("j").Indexed(2).BackoffLimitPerIndex(1).PodReplacementPolicy(batchv1.Failed).Obj()
	withPolicy := makeJob("j").Indexed(2).BackoffLimitPerIndex(1).PodFailurePolicy(failIndexOnExit3, ignoreOnExit4).Obj()
	cases := map[string]struct {
		job  *batchv1.Job
		pod  *corev1.Pod
		want bool
	}{
		"first failure, backoffLimitPerIndex=0": {
			job:  limit0,
			pod:  makePod("p", limit0).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
			want: true,
		},
		"first failure, backoffLimitPerIndex=1": {
			job: limit1,
			pod: makePod("p", limit1).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
		},
		"second failure, backoffLimitPerIndex=1": {
			job:  limit1,
			pod:  makePod("p", limit1).Index(1).IndexFailureCount(1).Phase(corev1.PodFailed).Obj(),
			want: true,
		},
		"running pod beyond the limit": {
			job: limit1,
			pod: makePod("p", limit1).Index(1).IndexFailureCount(1).Phase(corev1.PodRunning).Obj(),
		},
		"succeeded pod beyond the limit": {
			job: limit1,
			pod: makePod("p", limit1).Index(1).IndexFailureCount(1).Phase(corev1.PodSucceeded).Obj(),
		},
		"terminating pod counts as failed": {
			job:  limit1,
			pod:  makePod("p", limit1).Index(1).IndexFailureCount(1).Phase(corev1.PodRunning).Deleted(now).Obj(),
			want: true,
		},
		"terminating pod is not failed with podReplacementPolicy Failed": {
			job: limit1ReplaceFailed,
			pod: makePod("p", limit1ReplaceFailed).Index(1).IndexFailureCount(1).Phase(corev1.PodRunning).Deleted(now).Obj(),
		},
		"FailIndex rule matches below the limit": {
			job:  withPolicy,
			pod:  makePod("p", withPolicy).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).ExitCode("main", 3, now).Obj(),
			want: true,
		},
		"Ignore rule matches beyond the limit": {
			job: withPolicy,
			pod: makePod("p", withPolicy).Index(0).IndexFailureCount(1).Phase(corev1.PodFailed).ExitCode("main", 4, now).Obj(),
		},
		"no rule matches beyond the limit": {
			job:  withPolicy,
			pod:  makePod("p", withPolicy).Index(0).IndexFailureCount(1).Phase(corev1.PodFailed).ExitCode("main", 1, now).Obj(),
			want: true,
		},
		"no rule matches below the limit": {
			job: withPolicy,
			pod: makePod("p", withPolicy).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).ExitCode("main", 1, now).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			if diff := cmp.Diff(tc.want, isIndexFailed(logger, tc.job, tc.pod)); diff != "" {
				t.Errorf("Unexpected isIndexFailed (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestCalculateFailedIndexes(t *testing.T) {
	limit0 := makeJob("j").Indexed(2).BackoffLimitPerIndex(0).Obj()
	limit1 := makeJob("j").Indexed(2).BackoffLimitPerIndex(1).Obj()
	withFailed := func(job *batchv1.Job, failed string) *batchv1.Job {
		job = job.DeepCopy()
		job.Status.FailedIndexes = ptr.To(failed)
		return job
	}
	cases := map[string]struct {
		job  *batchv1.Job
		pods []*corev1.Pod
		want orderedIntervals
	}{
		"nothing": {
			job: limit1,
		},
		"one new index failed": {
			job: limit1,
			pods: []*corev1.Pod{
				makePod("a", limit1).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
				makePod("b", limit1).Index(1).IndexFailureCount(1).Phase(corev1.PodFailed).Obj(),
			},
			want: orderedIntervals{{1, 1}},
		},
		"pod without finalizer is already counted": {
			job: limit0,
			pods: []*corev1.Pod{
				makePod("a", limit0).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).NoFinalizer().Obj(),
			},
		},
		"pod outside completions is ignored": {
			job: limit0,
			pods: []*corev1.Pod{
				makePod("a", limit0).Index(3).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
				makePod("b", limit0).RawIndex("-1").IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
			},
		},
		"extends the failed indexes": {
			job: withFailed(limit0, "0"),
			pods: []*corev1.Pod{
				makePod("a", limit0).Index(1).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
			},
			want: orderedIntervals{{0, 1}},
		},
		"prev failed indexes empty": {
			job: withFailed(limit0, ""),
			pods: []*corev1.Pod{
				makePod("a", limit0).Index(1).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
			},
			want: orderedIntervals{{1, 1}},
		},
		"prev failed indexes outside completions": {
			job: withFailed(limit0, "9"),
			pods: []*corev1.Pod{
				makePod("a", limit0).Index(1).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
			},
			want: orderedIntervals{{1, 1}},
		},
		"prev failed indexes kept without pods": {
			job:  withFailed(limit0, "0,1"),
			want: orderedIntervals{{0, 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			got := calculateFailedIndexes(logger, tc.job, tc.pods)
			if got == nil {
				t.Fatalf("calculateFailedIndexes returned nil")
			}
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("Unexpected failed indexes (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFirstPendingIndexes(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	cases := map[string]struct {
		count, completions int
		replacementPolicy  batchv1.PodReplacementPolicy
		pods               []*corev1.Pod
		succeededIndexes   orderedIntervals
		failedIndexes      *orderedIntervals
		want               []int
	}{
		"count zero": {
			count: 0, completions: 3,
		},
		"count greater than completions": {
			count: 5, completions: 3,
			want: []int{0, 1, 2},
		},
		"count less than completions": {
			count: 2, completions: 5,
			want: []int{0, 1},
		},
		"first pods active": {
			count: 3, completions: 10,
			pods: podsWithIndexPhase(makeJob("j").Obj(), idx{"0", corev1.PodRunning}, idx{"1", corev1.PodPending}),
			want: []int{2, 3, 4},
		},
		"last pods active or succeeded": {
			count: 6, completions: 6,
			pods:             podsWithIndexPhase(makeJob("j").Obj(), idx{"6", corev1.PodPending}),
			succeededIndexes: orderedIntervals{{4, 5}},
			want:             []int{0, 1, 2, 3},
		},
		"all done": {
			count: 3, completions: 4,
			pods:             podsWithIndexPhase(makeJob("j").Obj(), idx{"0", corev1.PodRunning}),
			succeededIndexes: orderedIntervals{{1, 3}},
			want:             []int{},
		},
		"mixed, with pods without a valid index": {
			count: 5, completions: 20,
			pods: podsWithIndexPhase(makeJob("j").Obj(),
				idx{"3", corev1.PodPending},
				idx{"5", corev1.PodRunning},
				idx{"8", corev1.PodPending},
				idx{"-", corev1.PodRunning},
				idx{"-3", corev1.PodRunning},
			),
			succeededIndexes: orderedIntervals{{2, 4}, {9, 9}},
			want:             []int{0, 1, 6, 7, 10},
		},
		"with failed indexes": {
			count: 5, completions: 20,
			pods:             podsWithIndexPhase(makeJob("j").Obj(), idx{"3", corev1.PodPending}, idx{"9", corev1.PodPending}),
			succeededIndexes: orderedIntervals{{1, 1}, {5, 5}, {9, 9}},
			failedIndexes:    &orderedIntervals{{2, 2}, {6, 7}},
			want:             []int{0, 4, 8, 10, 11},
		},
		"failed and terminated pods leave their index pending": {
			count: 3, completions: 4,
			pods: append(podsWithIndexPhase(makeJob("j").Obj(), idx{"0", corev1.PodFailed}, idx{"2", corev1.PodRunning}),
				makePod("t", makeJob("j").Obj()).Index(1).Phase(corev1.PodRunning).Deleted(now).Obj()),
			want: []int{0, 1, 3},
		},
		"terminating pods hold their index with podReplacementPolicy Failed": {
			count: 3, completions: 4,
			replacementPolicy: batchv1.Failed,
			pods: append(podsWithIndexPhase(makeJob("j").Obj(), idx{"0", corev1.PodFailed}, idx{"2", corev1.PodRunning}),
				makePod("t", makeJob("j").Obj()).Index(1).Phase(corev1.PodRunning).Deleted(now).Obj()),
			want: []int{0, 3},
		},
		"terminal pods with a deletion timestamp do not hold their index": {
			count: 3, completions: 4,
			replacementPolicy: batchv1.Failed,
			pods: []*corev1.Pod{
				makePod("t", makeJob("j").Obj()).Index(1).Phase(corev1.PodFailed).Deleted(now).Obj(),
			},
			want: []int{0, 1, 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			jb := makeJob("j").Indexed(int32(tc.completions))
			if tc.replacementPolicy != "" {
				jb.PodReplacementPolicy(tc.replacementPolicy)
			}
			jobCtx := &syncJobCtx{
				job:              jb.Obj(),
				pods:             tc.pods,
				activePods:       filterActivePods(logger, tc.pods),
				succeededIndexes: tc.succeededIndexes,
				failedIndexes:    tc.failedIndexes,
			}
			if diff := cmp.Diff(tc.want, firstPendingIndexes(jobCtx, tc.count, tc.completions)); diff != "" {
				t.Errorf("Unexpected pending indexes (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestAppendDuplicatedIndexPodsForRemoval(t *testing.T) {
	job := makeJob("j").Indexed(6).Obj()
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	newer := old.Add(time.Minute)
	cases := map[string]struct {
		pods     []*corev1.Pod
		rm, left []*corev1.Pod
		wantRm   []string
		wantLeft []string
	}{
		"nothing": {},
		"all unique": {
			pods: []*corev1.Pod{
				makePod("none", job).Obj(),
				makePod("2", job).Index(2).Obj(),
				makePod("5", job).Index(5).Phase(corev1.PodRunning).Obj(),
				makePod("6", job).Index(6).Phase(corev1.PodRunning).Obj(),
			},
			wantRm:   []string{"none", "6"},
			wantLeft: []string{"2", "5"},
		},
		"index just inside completions is kept": {
			pods:     []*corev1.Pod{makePod("5", job).Index(5).Obj()},
			wantLeft: []string{"5"},
		},
		"duplicates keep the pod furthest along": {
			pods: []*corev1.Pod{
				makePod("5", job).Index(5).Obj(),
				makePod("0-running-new", job).Index(0).Phase(corev1.PodRunning).CreationTimestamp(newer).Obj(),
				makePod("3-pending", job).Index(3).Obj(),
				makePod("0-running-old", job).Index(0).Phase(corev1.PodRunning).CreationTimestamp(old).Obj(),
				makePod("3-running", job).Index(3).Phase(corev1.PodRunning).Obj(),
				makePod("0-pending", job).Index(0).Obj(),
				makePod("6", job).Index(6).Phase(corev1.PodRunning).Obj(),
				makePod("7", job).Index(7).Obj(),
			},
			wantRm:   []string{"0-pending", "0-running-new", "3-pending", "6", "7"},
			wantLeft: []string{"0-running-old", "3-running", "5"},
		},
		"ready pod is kept over a not ready one": {
			pods: []*corev1.Pod{
				makePod("1-ready", job).Index(1).Phase(corev1.PodRunning).Ready().Obj(),
				makePod("1-not-ready", job).Index(1).Phase(corev1.PodRunning).Obj(),
			},
			wantRm:   []string{"1-not-ready"},
			wantLeft: []string{"1-ready"},
		},
		"pods without a valid index are removed": {
			pods: []*corev1.Pod{
				makePod("none", job).Obj(),
				makePod("invalid", job).RawIndex("invalid").Phase(corev1.PodRunning).Obj(),
				makePod("negative", job).RawIndex("-2").Phase(corev1.PodRunning).Obj(),
				makePod("0", job).Index(0).Obj(),
				makePod("1-pending-a", job).Index(1).CreationTimestamp(newer).Obj(),
				makePod("1-pending-b", job).Index(1).CreationTimestamp(newer.Add(time.Minute)).Obj(),
				makePod("1-running", job).Index(1).Phase(corev1.PodRunning).Obj(),
			},
			wantRm:   []string{"none", "invalid", "negative", "1-pending-b", "1-pending-a"},
			wantLeft: []string{"0", "1-running"},
		},
		"appends to the given lists": {
			pods: []*corev1.Pod{
				makePod("2-a", job).Index(2).CreationTimestamp(newer).Obj(),
				makePod("2-b", job).Index(2).CreationTimestamp(old).Obj(),
			},
			rm:       []*corev1.Pod{makePod("earlier-rm", job).Obj()},
			left:     []*corev1.Pod{makePod("earlier-left", job).Obj()},
			wantRm:   []string{"earlier-rm", "2-a"},
			wantLeft: []string{"earlier-left", "2-b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rm, left := appendDuplicatedIndexPodsForRemoval(tc.rm, tc.left, tc.pods, 6)
			if diff := cmp.Diff(tc.wantRm, podNames(rm)); diff != "" {
				t.Errorf("Unexpected pods to remove (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLeft, podNames(left)); diff != "" {
				t.Errorf("Unexpected pods to keep (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestGetPodsWithDelayedDeletionPerIndex(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)
	limit0 := makeJob("j").Indexed(2).BackoffLimitPerIndex(0).Obj()
	limit1 := makeJob("j").Indexed(3).BackoffLimitPerIndex(1).Obj()
	limit4 := makeJob("j").Indexed(2).BackoffLimitPerIndex(4).Obj()
	cases := map[string]struct {
		job                  *batchv1.Job
		pods                 []*corev1.Pod
		expectedRmFinalizers []string
		want                 map[int]string
	}{
		"failed pods of indexes not failed are kept": {
			job: limit1,
			pods: []*corev1.Pod{
				makePod("a", limit1).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
				makePod("b", limit1).Index(1).IndexFailureCount(1).Phase(corev1.PodFailed).Obj(),
				makePod("c", limit1).Index(2).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
			},
			want: map[int]string{0: "a", 2: "c"},
		},
		"pod without finalizer is already being deleted": {
			job: limit0,
			pods: []*corev1.Pod{
				makePod("a", limit0).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).NoFinalizer().Obj(),
			},
		},
		"pod with expected finalizer removal is already being deleted": {
			job: limit4,
			pods: []*corev1.Pod{
				makePod("a", limit4).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
			},
			expectedRmFinalizers: []string{"a-uid"},
		},
		"pod with index outside completions": {
			job: limit0,
			pods: []*corev1.Pod{
				makePod("a", limit0).Index(4).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
			},
		},
		"index with an active replacement": {
			job: limit1,
			pods: []*corev1.Pod{
				makePod("a1", limit1).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
				makePod("a2", limit1).Index(0).IndexFailureCount(1).Phase(corev1.PodRunning).Obj(),
			},
		},
		"index that succeeded": {
			job: limit1,
			pods: []*corev1.Pod{
				makePod("a1", limit1).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
				makePod("a2", limit1).Index(0).IndexFailureCount(1).Phase(corev1.PodSucceeded).Obj(),
			},
		},
		"running and succeeded pods are not delayed": {
			job: limit1,
			pods: []*corev1.Pod{
				makePod("a", limit1).Index(0).Phase(corev1.PodRunning).Obj(),
				makePod("b", limit1).Index(1).Phase(corev1.PodSucceeded).Obj(),
			},
		},
		"terminating pod counts as failed": {
			job: limit1,
			pods: []*corev1.Pod{
				makePod("a", limit1).Index(1).IndexFailureCount(0).Phase(corev1.PodRunning).Deleted(now).Obj(),
			},
			want: map[int]string{1: "a"},
		},
		"of several failed pods the one with most failures is kept": {
			job: limit4,
			pods: []*corev1.Pod{
				makePod("a1", limit4).Index(0).IndexFailureCount(0).Phase(corev1.PodFailed).Obj(),
				makePod("a3", limit4).Index(0).IndexFailureCount(2).Phase(corev1.PodFailed).Obj(),
				makePod("a2", limit4).Index(0).IndexFailureCount(1).Phase(corev1.PodFailed).Obj(),
			},
			want: map[int]string{0: "a3"},
		},
		"ignored failures count too": {
			job: limit4,
			pods: []*corev1.Pod{
				makePod("a1", limit4).Index(0).IndexFailureCount(1).Phase(corev1.PodFailed).Obj(),
				makePod("a2", limit4).Index(0).IndexFailureCount(1).IndexIgnoredFailureCount(1).Phase(corev1.PodFailed).Obj(),
			},
			want: map[int]string{0: "a2"},
		},
		"of several failed pods with equal counts the last to finish is kept": {
			job: limit4,
			pods: []*corev1.Pod{
				makePod("a1", limit4).Index(0).IndexFailureCount(1).Phase(corev1.PodFailed).ExitCode("main", 1, now.Add(-time.Second)).Obj(),
				makePod("a3", limit4).Index(0).IndexFailureCount(1).Phase(corev1.PodFailed).ExitCode("main", 1, now).Obj(),
				makePod("a2", limit4).Index(0).IndexFailureCount(1).Phase(corev1.PodFailed).ExitCode("main", 1, now.Add(-2*time.Second)).Obj(),
			},
			want: map[int]string{0: "a3"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			_, succeeded := calculateSucceededIndexes(logger, tc.job, tc.pods)
			jobCtx := &syncJobCtx{
				job:                  tc.job,
				pods:                 tc.pods,
				activePods:           filterActivePods(logger, tc.pods),
				succeededIndexes:     succeeded,
				failedIndexes:        calculateFailedIndexes(logger, tc.job, tc.pods),
				expectedRmFinalizers: sets.New[types.UID](),
			}
			for _, uid := range tc.expectedRmFinalizers {
				jobCtx.expectedRmFinalizers.Insert(types.UID(uid))
			}
			var got map[int]string
			for ix, p := range getPodsWithDelayedDeletionPerIndex(logger, jobCtx) {
				if got == nil {
					got = map[int]string{}
				}
				got[ix] = p.Name
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Unexpected pods with delayed deletion (-want,+got):\n%s", diff)
			}
		})
	}
}
