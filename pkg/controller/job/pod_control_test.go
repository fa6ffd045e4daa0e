package job

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// drainEvents returns the events recorded so far.
func drainEvents(r *record.FakeRecorder) []string {
	var events []string
	for {
		select {
		case e := <-r.Events:
			events = append(events, e)
		default:
			return events
		}
	}
}

// nameGeneratingClient returns a fake clientset holding objs that, like the
// API server, names Pods created with only generateName (the fake tracker
// does not).
func nameGeneratingClient(objs ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objs...)
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			pod.Name = pod.GenerateName + "x7k2p"
		}
		// Not handled: the tracker stores the now named Pod.
		return false, nil, nil
	})
	return client
}

func TestRealPodControlCreatePods(t *testing.T) {
	job := makeJob("job").Obj()
	controllerRef := metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))
	podFromJob := func(generateName string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				GenerateName:    generateName,
				Labels:          job.Spec.Template.Labels,
				Annotations:     map[string]string{},
				Finalizers:      []string{},
				OwnerReferences: []metav1.OwnerReference{*controllerRef},
			},
			Spec: job.Spec.Template.Spec,
		}
	}
	namespaceTerminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    403,
		Reason:  metav1.StatusReasonForbidden,
		Message: `pods "job-" is forbidden: unable to create new content in namespace ns because it is being terminated`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "ns"}}},
	}}
	cases := []struct {
		name          string
		template      *corev1.PodTemplateSpec
		controllerRef *metav1.OwnerReference
		generateName  string
		createErr     error
		wantReason    metav1.StatusReason
		wantErr       bool
		wantPods      []corev1.Pod
		wantEvents    []string
	}{
		{
			name:          "created",
			template:      &job.Spec.Template,
			controllerRef: controllerRef,
			wantPods:      []corev1.Pod{*podFromJob("job-")},
			wantEvents:    []string{"Normal SuccessfulCreate Created pod: job-x7k2p"},
		},
		{
			name:          "generateName overrides the Job's name",
			template:      &job.Spec.Template,
			controllerRef: controllerRef,
			generateName:  "job-3-",
			wantPods:      []corev1.Pod{*podFromJob("job-3-")},
			wantEvents:    []string{"Normal SuccessfulCreate Created pod: job-3-x7k2p"},
		},
		{
			name:          "create refused",
			template:      &job.Spec.Template,
			controllerRef: controllerRef,
			createErr:     apierrors.NewForbidden(podsResource, "", fmt.Errorf("exceeded quota: pods")),
			wantReason:    metav1.StatusReasonForbidden,
			wantErr:       true,
			wantEvents:    []string{`Warning FailedCreate Error creating: pods is forbidden: exceeded quota: pods`},
		},
		{
			name:          "create timed out",
			template:      &job.Spec.Template,
			controllerRef: controllerRef,
			createErr:     apierrors.NewTimeoutError("request did not complete within 34s", 0),
			wantReason:    metav1.StatusReasonTimeout,
			wantErr:       true,
			wantEvents:    []string{`Warning FailedCreate Error creating: Timeout: request did not complete within 34s`},
		},
		{
			name:          "namespace terminating: no event",
			template:      &job.Spec.Template,
			controllerRef: controllerRef,
			createErr:     namespaceTerminating,
			wantReason:    metav1.StatusReasonForbidden,
			wantErr:       true,
		},
		{
			name:          "template without labels is not created",
			template:      &corev1.PodTemplateSpec{Spec: job.Spec.Template.Spec},
			controllerRef: controllerRef,
			wantErr:       true,
		},
		{
			name:     "no controllerRef is not created",
			template: &job.Spec.Template,
			wantErr:  true,
		},
		{
			name:     "controllerRef not blocking owner deletion is not created",
			template: &job.Spec.Template,
			controllerRef: func() *metav1.OwnerReference {
				ref := controllerRef.DeepCopy()
				ref.BlockOwnerDeletion = nil
				return ref
			}(),
			wantErr: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := nameGeneratingClient()
			if tc.createErr != nil {
				client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.createErr
				})
			}
			recorder := record.NewFakeRecorder(10)
			pc := newRealPodControl(client, recorder)

			err := pc.createPods(ctx, "ns", tc.template, job, tc.controllerRef, tc.generateName)
			if (err != nil) != tc.wantErr {
				t.Fatalf("createPods() error = %v, want error: %v", err, tc.wantErr)
			}
			if got := apierrors.ReasonForError(err); got != tc.wantReason {
				t.Errorf("createPods() error reason = %q, want %q", got, tc.wantReason)
			}
			// The Pods as sent to the API server (actions are recorded before
			// any reactor runs).
			var sent []corev1.Pod
			for _, a := range client.Actions() {
				if c, ok := a.(clienttesting.CreateAction); ok && tc.createErr == nil {
					if c.GetNamespace() != "ns" {
						t.Errorf("pod created in namespace %q, want ns", c.GetNamespace())
					}
					sent = append(sent, *c.GetObject().(*corev1.Pod))
				}
			}
			if diff := cmp.Diff(tc.wantPods, sent); diff != "" {
				t.Errorf("unexpected pods created (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, drainEvents(recorder)); diff != "" {
				t.Errorf("unexpected events (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestRealPodControlCreatePodsKeepsNamespaceTerminatingCause(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	job := makeJob("job").Obj()
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    403,
			Reason:  metav1.StatusReasonForbidden,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
		}}
	})
	pc := newRealPodControl(client, record.NewFakeRecorder(10))
	err := pc.createPods(ctx, "ns", &job.Spec.Template, job, metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job")), "")
	// The caller ignores this error to stop creating Pods quietly.
	if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Errorf("createPods() error = %v, want one with cause %s", err, corev1.NamespaceTerminatingCause)
	}
}

func TestRealPodControlDeletePod(t *testing.T) {
	job := makeJob("job").Obj()
	cases := []struct {
		name       string
		existing   []runtime.Object
		deleteErr  error
		wantReason metav1.StatusReason
		wantPods   []string
		wantEvents []string
	}{
		{
			name:       "deleted",
			existing:   []runtime.Object{makePod("p", job).Obj(), makePod("other", job).Obj()},
			wantPods:   []string{"other"},
			wantEvents: []string{"Normal SuccessfulDelete Deleted pod: p"},
		},
		{
			name:       "already gone: NotFound returned, no event",
			existing:   []runtime.Object{makePod("other", job).Obj()},
			wantReason: metav1.StatusReasonNotFound,
			wantPods:   []string{"other"},
		},
		{
			name:       "delete refused",
			existing:   []runtime.Object{makePod("p", job).Obj()},
			deleteErr:  apierrors.NewForbidden(podsResource, "p", fmt.Errorf("denied")),
			wantReason: metav1.StatusReasonForbidden,
			wantPods:   []string{"p"},
			wantEvents: []string{`Warning FailedDelete Error deleting: pods "p" is forbidden: denied`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewClientset(tc.existing...)
			if tc.deleteErr != nil {
				client.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.deleteErr
				})
			}
			recorder := record.NewFakeRecorder(10)
			pc := newRealPodControl(client, recorder)

			err := pc.deletePod(ctx, "ns", "p", job)
			if got := apierrors.ReasonForError(err); got != tc.wantReason {
				t.Errorf("deletePod() error = %v, want reason %q", err, tc.wantReason)
			}
			pods, err := client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range pods.Items {
				names = append(names, p.Name)
			}
			if diff := cmp.Diff(tc.wantPods, names); diff != "" {
				t.Errorf("unexpected remaining pods (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, drainEvents(recorder)); diff != "" {
				t.Errorf("unexpected events (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestRealPodControlPatchPod(t *testing.T) {
	job := makeJob("job").Obj()
	cases := []struct {
		name           string
		existing       []runtime.Object
		wantReason     metav1.StatusReason
		wantFinalizers []string
	}{
		{
			name: "tracking finalizer removed, others kept",
			existing: []runtime.Object{func() *corev1.Pod {
				p := makePod("p", job).Phase(corev1.PodSucceeded).Obj()
				p.Finalizers = []string{"example.com/keep", batch.JobTrackingFinalizer}
				return p
			}()},
			wantFinalizers: []string{"example.com/keep"},
		},
		{
			name:       "pod gone",
			wantReason: metav1.StatusReasonNotFound,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewClientset(tc.existing...)
			recorder := record.NewFakeRecorder(10)
			pc := newRealPodControl(client, recorder)

			patch := removeTrackingFinalizerPatch(makePod("p", job).Obj())
			err := pc.patchPod(ctx, "ns", "p", patch)
			if got := apierrors.ReasonForError(err); got != tc.wantReason {
				t.Fatalf("patchPod() error = %v, want reason %q", err, tc.wantReason)
			}
			var gotTypes []types.PatchType
			for _, a := range client.Actions() {
				if p, ok := a.(clienttesting.PatchAction); ok {
					gotTypes = append(gotTypes, p.GetPatchType())
				}
			}
			if diff := cmp.Diff([]types.PatchType{types.StrategicMergePatchType}, gotTypes); diff != "" {
				t.Errorf("unexpected patch types (-want,+got):\n%s", diff)
			}
			if tc.wantReason != "" {
				return
			}
			pod, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantFinalizers, pod.Finalizers); diff != "" {
				t.Errorf("unexpected finalizers (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff([]string(nil), drainEvents(recorder)); diff != "" {
				t.Errorf("patching recorded events (-want,+got):\n%s", diff)
			}
		})
	}
}
