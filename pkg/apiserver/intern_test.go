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

package apiserver

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchfuzzer "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/fuzzer"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// storedJob is a finished Job as the registry stores it.
func storedJob(name string, uid types.UID) *batch.Job {
	labels := func() map[string]string {
		return map[string]string{batch.ControllerUIDLabel: string(uid), batch.JobNameLabel: name, "controller-uid": string(uid), "job-name": name}
	}
	now := metav1.Unix(1_700_000_000, 0)
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "stored", UID: uid, ResourceVersion: "7", Labels: labels(),
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "writer", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch.jobs.dev/v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:template":{}}}`),
			}},
		},
		Spec: batch.JobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: string(uid)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels(), Annotations: map[string]string{"example.com/run-for": "1s"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  map[string]string{"type": "kwok", "zone": "a"},
					Containers:    []corev1.Container{{Name: "main", Image: "busybox", TerminationMessagePath: "/dev/termination-log"}},
				},
			},
			ManagedBy: ptr.To("example.com/dispatcher"),
		},
		Status: batch.JobStatus{
			Succeeded:  1,
			Conditions: []batch.JobCondition{{Type: batch.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now}},
		},
	}
}

// storageCodecs returns the generic apiserver's storage codec of Jobs and
// ours, which interns what it decodes.
func storageCodecs(tb testing.TB) (plain, interning runtime.Codec) {
	tb.Helper()
	plain, _, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType: runtime.ContentTypeProtobuf, StorageSerializer: Codecs,
		StorageVersion: batchv1.SchemeGroupVersion, MemoryVersion: batch.SchemeGroupVersion,
	})
	if err != nil {
		tb.Fatal(err)
	}
	if interning, _, err = NewStorageCodec(runtime.ContentTypeProtobuf); err != nil {
		tb.Fatal(err)
	}
	return plain, interning
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestInternDecoder(t *testing.T) {
	plain, codec := storageCodecs(t)
	decode := func(c runtime.Codec, job *batch.Job) *batch.Job {
		t.Helper()
		data, err := runtime.Encode(c, job)
		if err != nil {
			t.Fatal(err)
		}
		obj, err := runtime.Decode(c, data)
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*batch.Job)
	}

	a := decode(codec, storedJob("a", "uid-a"))
	b := decode(codec, storedJob("b", "uid-b"))
	if diff := cmp.Diff(decode(plain, storedJob("a", "uid-a")), a); diff != "" {
		t.Errorf("interning changed the decoded Job (-plain +interned):\n%s", diff)
	}

	// Within one Job: the UID and name of the labels are the metadata's.
	if !sameString(string(a.UID), a.Labels[batch.ControllerUIDLabel]) || !sameString(string(a.UID), a.Spec.Selector.MatchLabels[batch.ControllerUIDLabel]) ||
		!sameString(string(a.UID), a.Spec.Template.Labels["controller-uid"]) || !sameString(a.Name, a.Spec.Template.Labels[batch.JobNameLabel]) {
		t.Errorf("the UID and name in the labels of one Job are copies of their own")
	}
	// Across Jobs: keys, defaults, reasons, managedBy and managedFields.
	for what, pair := range map[string][2]string{
		"namespace":        {a.Namespace, b.Namespace},
		"label key":        {keyOf(a.Labels, "uid-a"), keyOf(b.Labels, "uid-b")},
		"container image":  {a.Spec.Template.Spec.Containers[0].Image, b.Spec.Template.Spec.Containers[0].Image},
		"restart policy":   {string(a.Spec.Template.Spec.RestartPolicy), string(b.Spec.Template.Spec.RestartPolicy)},
		"managedBy":        {*a.Spec.ManagedBy, *b.Spec.ManagedBy},
		"condition reason": {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
		"manager":          {a.ManagedFields[0].Manager, b.ManagedFields[0].Manager},
	} {
		if !sameString(pair[0], pair[1]) {
			t.Errorf("%s %q: two Jobs hold copies of their own", what, pair[0])
		}
	}
	if &a.ManagedFields[0].FieldsV1.GetRawBytes()[0] != &b.ManagedFields[0].FieldsV1.GetRawBytes()[0] {
		t.Errorf("equal managedFields bodies of two Jobs are copies of their own")
	}
	if sameString(a.Name, b.Name) || sameString(string(a.UID), string(b.UID)) {
		t.Errorf("different values share one string")
	}
	// Maps: the Job's labels are its template's; the annotations and node
	// selector are those of the other Job; different labels are not.
	for what, pair := range map[string][2]map[string]string{
		"job and template labels of one job": {a.Labels, a.Spec.Template.Labels},
		"template annotations of two jobs":   {a.Spec.Template.Annotations, b.Spec.Template.Annotations},
		"node selectors of two jobs":         {a.Spec.Template.Spec.NodeSelector, b.Spec.Template.Spec.NodeSelector},
	} {
		if !sameMap(pair[0], pair[1]) {
			t.Errorf("%s: equal maps are copies of their own", what)
		}
	}
	if sameMap(a.Labels, b.Labels) || sameMap(a.Labels, a.Spec.Selector.MatchLabels) {
		t.Errorf("different maps are one")
	}

	// Pointers and slices: equal ones of two Jobs are one; the selectors,
	// which hold each Job's UID, are not; nor is an unequal container list.
	for what, pair := range map[string][2]any{
		"containers":           {a.Spec.Template.Spec.Containers, b.Spec.Template.Spec.Containers},
		"pod security context": {a.Spec.Template.Spec.SecurityContext, b.Spec.Template.Spec.SecurityContext},
		"managedBy":            {a.Spec.ManagedBy, b.Spec.ManagedBy},
		"backoffLimit":         {a.Spec.BackoffLimit, b.Spec.BackoffLimit},
		"conditions":           {a.Status.Conditions, b.Status.Conditions},
		"managedFields":        {a.ManagedFields, b.ManagedFields},
	} {
		if !sameRef(pair[0], pair[1]) {
			t.Errorf("%s: equal values of two Jobs are copies of their own", what)
		}
	}
	other := storedJob("c", "uid-c")
	other.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	c := decode(codec, other)
	if sameRef(a.Spec.Selector, b.Spec.Selector) || sameRef(a.Spec.Template.Spec.Containers, c.Spec.Template.Spec.Containers) {
		t.Errorf("different values are one")
	}
	if !sameRef(a.Status.Conditions, c.Status.Conditions) {
		t.Errorf("a Job with another image does not share the equal conditions")
	}
	// Appending to a shared slice, as to a shallow copy of a cached Job,
	// copies it rather than writing into the others' array.
	shallow := *a
	shallow.Status.Conditions = append(shallow.Status.Conditions, batch.JobCondition{Type: batch.JobFailed})
	if sameRef(shallow.Status.Conditions, b.Status.Conditions) || len(b.Status.Conditions) != 1 || cap(b.Status.Conditions) != 1 {
		t.Errorf("appending to a shared slice wrote into another Job's")
	}

	// A deep copy owns its bytes: writing it leaves the shared body alone.
	c = a.DeepCopy()
	// GetRawBytes hands out the bytes themselves, so the write lands in
	// the copy's own body.
	c.ManagedFields[0].FieldsV1.GetRawBytes()[0] = 'X'
	if got := b.ManagedFields[0].FieldsV1.GetRawString(); got != `{"f:spec":{"f:template":{}}}` {
		t.Errorf("writing a deep copy changed another Job's managedFields: %s", got)
	}
	c.Labels["written"] = "yes"
	c.Spec.Template.Spec.NodeSelector["written"] = "yes"
	if _, ok := a.Spec.Template.Labels["written"]; ok {
		t.Errorf("writing a deep copy's labels changed the template labels it was decoded with")
	}
	if _, ok := b.Spec.Template.Spec.NodeSelector["written"]; ok {
		t.Errorf("writing a deep copy's node selector changed another Job's")
	}
}

// sameRef tells whether two pointers, or two non-empty slices, are one.
func sameRef(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Type() == vb.Type() && !va.IsNil() && va.UnsafePointer() == vb.UnsafePointer()
}

func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// TestInternMapKey: the key of a map is its content, whatever the order
// of insertion, and no two different maps share one (a separator in a key
// or value cannot make one map look like another).
func TestInternMapKey(t *testing.T) {
	table := newInternTable()
	key := func(m map[string]string) string { return string(table.mapKey(m)) }
	if key(map[string]string{"a": "1", "b": "2"}) != key(map[string]string{"b": "2", "a": "1"}) {
		t.Errorf("equal maps have different keys")
	}
	different := []map[string]string{
		{},
		{"": ""},
		{"a": ""},
		{"": "a"},
		{"ab": "c"},
		{"a": "bc"},
		{"a": "b", "c": ""},
		{"a\x01b": "c"},
		{"a": "\x01bc"},
	}
	seen := map[string]int{}
	for i, m := range different {
		k := key(m)
		if j, ok := seen[k]; ok {
			t.Errorf("maps %v and %v have one key", different[j], m)
		}
		seen[k] = i
	}
}

// keyOf returns the key of m whose value is v.
func keyOf(m map[string]string, v string) string {
	for k, s := range m {
		if s == v && k != "controller-uid" {
			return k
		}
	}
	return ""
}

func TestInternTableGenerations(t *testing.T) {
	table := newInternTable()
	table.mu.Lock()
	defer table.mu.Unlock()
	first := table.str(string([]byte("kept")))
	once := table.str(string([]byte("once")))
	// A generation later "kept" is still in use, "once" is not.
	for i := range internGeneration {
		table.str(fmt.Sprint("fill-", i))
	}
	if got := table.str(string([]byte("kept"))); !sameString(got, first) {
		t.Errorf("a string seen in the previous generation was not shared")
	}
	for i := range internGeneration {
		table.str(fmt.Sprint("more-", i))
	}
	if got := table.str(string([]byte("kept"))); !sameString(got, first) {
		t.Errorf("a string kept in use for three generations was not shared")
	}
	if got := table.str(string([]byte("once"))); sameString(got, once) {
		t.Errorf("a string not seen for two generations is still in the table")
	}
	if n := len(table.strings) + len(table.oldStrings); n > 2*internGeneration {
		t.Errorf("the table holds %d strings, more than two generations (%d)", n, 2*internGeneration)
	}
}

// BenchmarkStorageDecode is the cost the interning adds to each object the
// watch cache decodes.
func BenchmarkStorageDecode(b *testing.B) {
	plain, interning := storageCodecs(b)
	data, err := runtime.Encode(plain, storedJob("a", "uid-a"))
	if err != nil {
		b.Fatal(err)
	}
	for name, codec := range map[string]runtime.Codec{"plain": plain, "interning": interning} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := runtime.Decode(codec, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestInternDecoderRandomJobs decodes Jobs filled at random with one
// interning codec, each also as an exact copy and as a copy with another
// name and status, so that whole templates are shared. Once all are in,
// every Job must still equal its plain decode: sharing may neither change
// a value nor let a later decode change an earlier one.
func TestInternDecoderRandomJobs(t *testing.T) {
	plain, interning := storageCodecs(t)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, batchfuzzer.Funcs), rand.NewSource(1), Codecs).NumElements(1, 2)
	jobs := 300
	if testing.Short() {
		jobs = 60
	}
	var blobs [][]byte
	for i := range jobs {
		job := &batch.Job{}
		f.Fill(job)
		variant := job.DeepCopy()
		variant.Name, variant.UID = fmt.Sprint("variant-", i), types.UID(fmt.Sprint("uid-", i))
		variant.Status = batch.JobStatus{Succeeded: int32(i)}
		for _, obj := range []*batch.Job{job, job, variant} {
			data, err := runtime.Encode(plain, obj)
			if err != nil {
				t.Fatalf("encoding fuzzed job %d: %v", i, err)
			}
			blobs = append(blobs, data)
		}
	}
	decoded := make([]*batch.Job, len(blobs))
	for i, data := range blobs {
		obj, err := runtime.Decode(interning, data)
		if err != nil {
			t.Fatalf("decoding job %d: %v", i, err)
		}
		decoded[i] = obj.(*batch.Job)
	}
	shared, candidates := 0, 0
	for i, data := range blobs {
		want, err := runtime.Decode(plain, data)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, decoded[i]); diff != "" {
			t.Fatalf("job %d differs from its plain decode (-plain +interned):\n%s", i, diff)
		}
		if i%3 == 2 && len(decoded[i].Spec.Template.Spec.Containers) > 0 {
			candidates++
			if sameRef(decoded[i].Spec.Template.Spec.Containers, decoded[i-2].Spec.Template.Spec.Containers) {
				shared++
			}
		}
	}
	// The fuzzer leaves about half the templates without containers; the
	// others hold nothing the encoding refuses (this seed's quantities are
	// all small), so each variant shares its original's list.
	if candidates < jobs/3 || shared != candidates {
		t.Errorf("%d of %d variants with containers share their original's; want all of at least %d", shared, candidates, jobs/3)
	}
}
