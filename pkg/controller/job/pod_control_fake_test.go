package job

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// fakePodControl is a podControl that records what the controller asked for
// instead of doing it (upstream's controller.FakePodControl). Set err to make
// every call fail after being recorded, createLimit to make creations beyond
// that many fail without being recorded.
type fakePodControl struct {
	sync.Mutex
	// templates holds a copy of each template created from, with
	// GenerateName set to the generateName argument, as upstream's fake does.
	templates      []corev1.PodTemplateSpec
	controllerRefs []metav1.OwnerReference
	generateNames  []string
	deletePodNames []string
	patchedNames   []string
	patches        [][]byte

	err             error
	createLimit     int
	createCallCount int
}

var _ podControl = &fakePodControl{}

func (f *fakePodControl) createPods(_ context.Context, _ string, template *corev1.PodTemplateSpec, _ *batchv1.Job, controllerRef *metav1.OwnerReference, generateName string) error {
	f.Lock()
	defer f.Unlock()
	f.createCallCount++
	if f.createLimit != 0 && f.createCallCount > f.createLimit {
		return fmt.Errorf("not creating pod, limit %d already reached (create call %d)", f.createLimit, f.createCallCount)
	}
	t := template.DeepCopy()
	t.GenerateName = generateName
	f.templates = append(f.templates, *t)
	if controllerRef != nil {
		f.controllerRefs = append(f.controllerRefs, *controllerRef)
	}
	f.generateNames = append(f.generateNames, generateName)
	return f.err
}

func (f *fakePodControl) deletePod(_ context.Context, _, name string, _ *batchv1.Job) error {
	f.Lock()
	defer f.Unlock()
	f.deletePodNames = append(f.deletePodNames, name)
	return f.err
}

func (f *fakePodControl) patchPod(_ context.Context, _, name string, data []byte) error {
	f.Lock()
	defer f.Unlock()
	f.patchedNames = append(f.patchedNames, name)
	f.patches = append(f.patches, data)
	return f.err
}

// clear forgets everything recorded and the create limit, keeping err.
func (f *fakePodControl) clear() {
	f.Lock()
	defer f.Unlock()
	f.templates = nil
	f.controllerRefs = nil
	f.generateNames = nil
	f.deletePodNames = nil
	f.patchedNames = nil
	f.patches = nil
	f.createLimit = 0
	f.createCallCount = 0
}
