package job

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// Node assigns the Pod to a node.
func (b *podBuilder) Node(name string) *podBuilder {
	b.pod.Spec.NodeName = name
	return b
}

// ReadySince makes the Pod ready since t.
func (b *podBuilder) ReadySince(t time.Time) *podBuilder {
	return b.Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t)})
}

// RestartCount adds a running container status with n restarts.
func (b *podBuilder) RestartCount(n int32) *podBuilder {
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: "main", RestartCount: n})
	return b
}

// InitRestartCount adds an init container named name with n restarts;
// sidecar makes it a restartable (sidecar) init container.
func (b *podBuilder) InitRestartCount(name string, sidecar bool, n int32) *podBuilder {
	c := corev1.Container{Name: name, Image: "busybox"}
	if sidecar {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, c)
	b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses, corev1.ContainerStatus{Name: name, RestartCount: n})
	return b
}

func TestActivePodsOrder(t *testing.T) {
	job := makeJob("job").Obj()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(name string) *podBuilder {
		return makePod(name, job).Phase(corev1.PodRunning).Node("node")
	}
	cases := []struct {
		name string
		pods []*corev1.Pod
		// want lists the Pod names in the order they should be deleted.
		want []string
	}{
		{
			name: "unassigned before assigned",
			pods: []*corev1.Pod{pod("assigned").Obj(), pod("unassigned").Node("").Obj()},
			want: []string{"unassigned", "assigned"},
		},
		{
			name: "assignment decides before phase",
			pods: []*corev1.Pod{pod("assigned-pending").Phase(corev1.PodPending).Obj(), pod("unassigned-running").Node("").Obj()},
			want: []string{"unassigned-running", "assigned-pending"},
		},
		{
			name: "pending before unknown before running",
			pods: []*corev1.Pod{
				pod("running").Obj(),
				pod("unknown").Phase(corev1.PodUnknown).Obj(),
				pod("pending").Phase(corev1.PodPending).Obj(),
			},
			want: []string{"pending", "unknown", "running"},
		},
		{
			name: "not ready before ready",
			pods: []*corev1.Pod{pod("ready").ReadySince(t0).Obj(), pod("not-ready").Obj()},
			want: []string{"not-ready", "ready"},
		},
		{
			name: "phase decides before readiness",
			pods: []*corev1.Pod{pod("running").Obj(), pod("pending-ready").Phase(corev1.PodPending).ReadySince(t0).Obj()},
			want: []string{"pending-ready", "running"},
		},
		{
			name: "ready more recently first",
			pods: []*corev1.Pod{
				pod("ready-long").ReadySince(t0).Obj(),
				pod("ready-recently").ReadySince(t0.Add(time.Minute)).Obj(),
			},
			want: []string{"ready-recently", "ready-long"},
		},
		{
			name: "unknown ready time first",
			pods: []*corev1.Pod{
				pod("ready-since-t0").ReadySince(t0).Obj(),
				pod("ready-since-unknown").Ready().Obj(),
			},
			want: []string{"ready-since-unknown", "ready-since-t0"},
		},
		{
			name: "ready time decides before restarts",
			pods: []*corev1.Pod{
				pod("restarted-ready-long").ReadySince(t0).RestartCount(5).Obj(),
				pod("ready-recently").ReadySince(t0.Add(time.Minute)).Obj(),
			},
			want: []string{"ready-recently", "restarted-ready-long"},
		},
		{
			name: "more restarts first",
			pods: []*corev1.Pod{pod("restarted-once").RestartCount(1).Obj(), pod("restarted-twice").RestartCount(2).Obj()},
			want: []string{"restarted-twice", "restarted-once"},
		},
		{
			name: "more sidecar restarts first when containers tie",
			pods: []*corev1.Pod{
				pod("sidecar-once").RestartCount(1).InitRestartCount("sidecar", true, 1).Obj(),
				pod("sidecar-twice").RestartCount(1).InitRestartCount("sidecar", true, 2).Obj(),
			},
			want: []string{"sidecar-twice", "sidecar-once"},
		},
		{
			name: "container restarts decide before sidecar restarts",
			pods: []*corev1.Pod{
				pod("sidecar-restarted").InitRestartCount("sidecar", true, 9).Obj(),
				pod("container-restarted").RestartCount(1).Obj(),
			},
			want: []string{"container-restarted", "sidecar-restarted"},
		},
		{
			name: "restarts of plain init containers do not count",
			pods: []*corev1.Pod{
				pod("old-init-restarted").InitRestartCount("init", false, 9).Obj(),
				pod("new").CreationTimestamp(t0.Add(time.Hour)).Obj(),
			},
			want: []string{"new", "old-init-restarted"},
		},
		{
			name: "restarts decide before age",
			pods: []*corev1.Pod{
				pod("new").CreationTimestamp(t0.Add(time.Hour)).Obj(),
				pod("old-restarted").RestartCount(1).Obj(),
			},
			want: []string{"old-restarted", "new"},
		},
		{
			name: "newer first, no creation time before all",
			pods: []*corev1.Pod{
				pod("old").CreationTimestamp(t0).Obj(),
				pod("new").CreationTimestamp(t0.Add(time.Hour)).Obj(),
				pod("no-time").CreationTimestamp(time.Time{}).Obj(),
			},
			want: []string{"no-time", "new", "old"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sort.Sort(activePods(tc.pods))
			var got []string
			for _, p := range tc.pods {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected order (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFilterActivePods(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	job := makeJob("job").Obj()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pods := []*corev1.Pod{
		makePod("pending", job).Obj(),
		makePod("running", job).Phase(corev1.PodRunning).Obj(),
		makePod("unknown", job).Phase(corev1.PodUnknown).Obj(),
		makePod("succeeded", job).Phase(corev1.PodSucceeded).Obj(),
		makePod("failed", job).Phase(corev1.PodFailed).Obj(),
		makePod("terminating", job).Phase(corev1.PodRunning).Deleted(t0).Obj(),
		makePod("failed-deleted", job).Phase(corev1.PodFailed).Deleted(t0).Obj(),
	}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"pending", "running", "unknown"}, names(filterActivePods(logger, pods))); diff != "" {
		t.Errorf("unexpected active pods (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"terminating"}, names(filterTerminatingPods(pods))); diff != "" {
		t.Errorf("unexpected terminating pods (-want,+got):\n%s", diff)
	}
}

func TestIsPodReady(t *testing.T) {
	job := makeJob("job").Obj()
	cases := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "no conditions", pod: makePod("p", job).Obj()},
		{name: "ready", pod: makePod("p", job).Ready().Obj(), want: true},
		{
			name: "ready false",
			pod:  makePod("p", job).Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}).Obj(),
		},
		{
			name: "other condition true",
			pod:  makePod("p", job).Condition(corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}).Obj(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := isPodReady(tc.pod); got != tc.want {
				t.Errorf("isPodReady() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGetPodFromTemplate(t *testing.T) {
	controllerRef := metav1.NewControllerRef(makeJob("job").Obj(), batchv1.SchemeGroupVersion.WithKind("Job"))
	fullTemplate := func() *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{
				// Only labels, annotations and finalizers come from the
				// template's metadata.
				Name:        "ignored",
				Namespace:   "ignored",
				Labels:      map[string]string{batch.JobNameLabel: "job", "app": "a"},
				Annotations: map[string]string{batch.JobCompletionIndexAnnotation: "3"},
				Finalizers:  []string{batch.JobTrackingFinalizer},
			},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox", Args: []string{"true"}}},
			},
		}
	}
	// The API server masks the trailing dash of a generateName prefix, so a
	// 253-character name still takes the dash, one more character does not.
	maxName := strings.Repeat("a", 253)
	tooLong := maxName + "a"
	cases := []struct {
		name          string
		template      *corev1.PodTemplateSpec
		jobName       string
		controllerRef *metav1.OwnerReference
		want          *corev1.Pod
	}{
		{
			name:          "full template",
			template:      fullTemplate(),
			jobName:       "job",
			controllerRef: controllerRef,
			want: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName:    "job-",
					Labels:          map[string]string{batch.JobNameLabel: "job", "app": "a"},
					Annotations:     map[string]string{batch.JobCompletionIndexAnnotation: "3"},
					Finalizers:      []string{batch.JobTrackingFinalizer},
					OwnerReferences: []metav1.OwnerReference{*controllerRef},
				},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox", Args: []string{"true"}}},
				},
			},
		},
		{
			name:     "empty metadata, no controllerRef",
			template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}},
			jobName:  "job",
			want: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName: "job-",
					Labels:       map[string]string{},
					Annotations:  map[string]string{},
					Finalizers:   []string{},
				},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
			},
		},
		{
			name:     "dash after the longest name",
			template: &corev1.PodTemplateSpec{},
			jobName:  maxName,
			want: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName: maxName + "-",
					Labels:       map[string]string{},
					Annotations:  map[string]string{},
					Finalizers:   []string{},
				},
			},
		},
		{
			name:     "no dash after a name that is no valid prefix",
			template: &corev1.PodTemplateSpec{},
			jobName:  tooLong,
			want: &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					GenerateName: tooLong,
					Labels:       map[string]string{},
					Annotations:  map[string]string{},
					Finalizers:   []string{},
				},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := makeJob(tc.jobName).Obj()
			before := tc.template.DeepCopy()
			got := getPodFromTemplate(tc.template, job, tc.controllerRef)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected pod (-want,+got):\n%s", diff)
			}
			// The Pod must not share anything with the template, which is
			// usually the Job's, straight from the informer cache.
			got.Labels["changed"] = "x"
			got.Annotations["changed"] = "x"
			got.Finalizers = append(got.Finalizers[:0], "changed")
			for i := range got.Spec.Containers {
				got.Spec.Containers[i].Image = "changed"
			}
			if diff := cmp.Diff(before, tc.template); diff != "" {
				t.Errorf("changing the pod changed the template (-before,+after):\n%s", diff)
			}
		})
	}
}

func TestRemoveTrackingFinalizerPatch(t *testing.T) {
	job := makeJob("job").Obj()
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []byte
	}{
		{
			name: "tracking finalizer",
			pod:  makePod("p", job).Obj(),
			want: []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.jobs.dev/job-tracking"]}}`),
		},
		{
			name: "tracking finalizer among others",
			pod: func() *corev1.Pod {
				p := makePod("p", job).Obj()
				p.Finalizers = []string{"example.com/keep", batch.JobTrackingFinalizer}
				return p
			}(),
			want: []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.jobs.dev/job-tracking"]}}`),
		},
		{
			name: "no tracking finalizer",
			pod:  makePod("p", job).NoFinalizer().Obj(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := removeTrackingFinalizerPatch(tc.pod)
			if diff := cmp.Diff(string(tc.want), string(got)); diff != "" {
				t.Errorf("unexpected patch (-want,+got):\n%s", diff)
			}
			if tc.want == nil && got != nil {
				t.Errorf("removeTrackingFinalizerPatch() = %q, want nil", got)
			}
		})
	}
}
