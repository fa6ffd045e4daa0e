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

package install

import (
	"bytes"
	encodingjson "encoding/json"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	upstreambatchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
)

// protobufPrefix starts every protobuf-encoded Kubernetes object.
var protobufPrefix = []byte("k8s\x00")

// fullyPopulatedJobs returns n Jobs of the given external type that
// together set every field of the Job's own types (no nil pointer, no empty
// slice, string or number in at least one of them): randfill with no nil
// chance and one or two elements per collection, with apimachinery's meta
// fuzzer functions (valid ObjectMeta, whole-second times).
func fullyPopulatedJobs[T runtime.Object](t *testing.T, gv schema.GroupVersion, n int) []T {
	t.Helper()
	scheme := runtime.NewScheme()
	Install(scheme)
	src := rand.NewSource(int64(n))
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, src, serializer.NewCodecFactory(scheme)).
		NilChance(0).NumElements(1, 2)
	r := rand.New(src)
	var jobs []T
	covered := map[string]bool{}
	for range n {
		job := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
		f.Fill(job)
		normalize(r, reflect.ValueOf(job))
		job.GetObjectKind().SetGroupVersionKind(gv.WithKind("Job"))
		coverage(reflect.ValueOf(job).Elem(), reflect.TypeFor[T]().Elem().Name(), covered)
		jobs = append(jobs, job)
	}
	for path, ok := range covered {
		if !ok {
			t.Errorf("%s is zero in every fuzzed Job: the round trips do not cover it", path)
		}
	}
	return jobs
}

var timeType = reflect.TypeFor[metav1.Time]()

// normalize sets every empty map and slice under v to nil (neither
// protobuf nor JSON's omitempty tells an empty collection from none, and
// the meta fuzzer makes some empty ones), and gives every nil *metav1.Time a
// whole-second time (randfill leaves them nil: Time fills itself, and does
// nothing on a nil receiver).
func normalize(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() && v.Type().Elem() == timeType && v.CanSet() {
			v.Set(reflect.ValueOf(&metav1.Time{Time: time.Unix(r.Int63n(1000*365*24*60*60), 0)}))
		}
		if !v.IsNil() {
			normalize(r, v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				normalize(r, v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 && !v.IsNil() && v.CanSet() {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		for i := 0; i < v.Len(); i++ {
			normalize(r, v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 && !v.IsNil() && v.CanSet() {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		// Map values are not addressable: copy, normalize, store back.
		iter := v.MapRange()
		for iter.Next() {
			val := reflect.New(iter.Value().Type()).Elem()
			val.Set(iter.Value())
			normalize(r, val)
			v.SetMapIndex(iter.Key(), val)
		}
	}
}

// coverage records for each field path of the Job's own types whether it
// is set (a non-nil pointer, a non-empty slice, a non-zero value; types of
// other packages, ObjectMeta or the pod template, as a whole) in v.
func coverage(v reflect.Value, path string, covered map[string]bool) {
	set := !v.IsZero()
	covered[path] = covered[path] || set
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			coverage(v.Elem(), path+"*", covered)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			coverage(v.Index(i), path+"[]", covered)
		}
	case reflect.Struct:
		pkg := v.Type().PkgPath()
		if pkg != reflect.TypeFor[batchv1.Job]().PkgPath() && pkg != reflect.TypeFor[batchv1beta1.Job]().PkgPath() {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			field := v.Type().Field(i)
			if field.Type == reflect.TypeFor[metav1.TypeMeta]() {
				continue // set by the test, not the fuzzer
			}
			coverage(v.Field(i), path+"."+field.Name, covered)
		}
	}
}

// roundTrip encodes job with s and decodes it into a new object of its type.
func roundTrip[T runtime.Object](t *testing.T, s runtime.Serializer, job T) (T, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Encode(job, &buf); err != nil {
		t.Fatalf("encoding: %v", err)
	}
	into := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
	obj, _, err := s.Decode(buf.Bytes(), nil, into)
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	return obj.(T), buf.Bytes()
}

func testProtobufRoundTrip[T runtime.Object](t *testing.T, gv schema.GroupVersion) {
	scheme := runtime.NewScheme()
	Install(scheme)
	pb := protobuf.NewSerializer(scheme, scheme)
	js := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{})
	for i, job := range fullyPopulatedJobs[T](t, gv, 20) {
		got, data := roundTrip(t, pb, job)
		if !bytes.HasPrefix(data, protobufPrefix) {
			t.Fatalf("job %d: protobuf encoding does not start with %q: %q", i, protobufPrefix, data[:min(len(data), 16)])
		}
		if diff := cmp.Diff(job, got); diff != "" {
			t.Errorf("job %d: protobuf round trip (-want +got):\n%s", i, diff)
		}
		got, _ = roundTrip(t, js, job)
		if diff := cmp.Diff(job, got); diff != "" {
			t.Errorf("job %d: JSON round trip (-want +got):\n%s", i, diff)
		}
	}
}

// TestProtobufRoundTripV1 encodes fully populated v1 Jobs in protobuf and
// in JSON and decodes them equal to themselves.
func TestProtobufRoundTripV1(t *testing.T) {
	testProtobufRoundTrip[*batchv1.Job](t, batchv1.SchemeGroupVersion)
}

// TestProtobufRoundTripV1beta1 is TestProtobufRoundTripV1 for v1beta1.
func TestProtobufRoundTripV1beta1(t *testing.T) {
	testProtobufRoundTrip[*batchv1beta1.Job](t, batchv1beta1.SchemeGroupVersion)
}

// TestProtobufRoundTripJobList round-trips a list of fully populated Jobs
// in both versions.
func TestProtobufRoundTripJobList(t *testing.T) {
	scheme := runtime.NewScheme()
	Install(scheme)
	pb := protobuf.NewSerializer(scheme, scheme)

	v1List := &batchv1.JobList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}}
	v1List.SetGroupVersionKind(batchv1.SchemeGroupVersion.WithKind("JobList"))
	for _, job := range fullyPopulatedJobs[*batchv1.Job](t, batchv1.SchemeGroupVersion, 20) {
		job.TypeMeta = metav1.TypeMeta{} // items carry no TypeMeta in protobuf
		v1List.Items = append(v1List.Items, *job)
	}
	got, _ := roundTrip(t, pb, v1List)
	if diff := cmp.Diff(v1List, got); diff != "" {
		t.Errorf("v1 JobList protobuf round trip (-want +got):\n%s", diff)
	}

	betaList := &batchv1beta1.JobList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	betaList.SetGroupVersionKind(batchv1beta1.SchemeGroupVersion.WithKind("JobList"))
	for _, job := range fullyPopulatedJobs[*batchv1beta1.Job](t, batchv1beta1.SchemeGroupVersion, 20) {
		job.TypeMeta = metav1.TypeMeta{}
		betaList.Items = append(betaList.Items, *job)
	}
	gotBeta, _ := roundTrip(t, pb, betaList)
	if diff := cmp.Diff(betaList, gotBeta); diff != "" {
		t.Errorf("v1beta1 JobList protobuf round trip (-want +got):\n%s", diff)
	}
}

// TestProtobufWireCompatibleWithUpstream checks that our v1 protobuf uses
// k8s.io/api/batch/v1's field numbers: the message inside our protobuf
// encoding of a fully populated Job decodes with upstream's Job into the
// same content, and upstream's encoding of that Job decodes with ours into
// the original. The contents are compared through JSON, which both types
// share field for field.
func TestProtobufWireCompatibleWithUpstream(t *testing.T) {
	scheme := runtime.NewScheme()
	Install(scheme)
	pb := protobuf.NewSerializer(scheme, scheme)
	for i, job := range fullyPopulatedJobs[*batchv1.Job](t, batchv1.SchemeGroupVersion, 20) {
		var buf bytes.Buffer
		if err := pb.Encode(job, &buf); err != nil {
			t.Fatalf("job %d: encoding: %v", i, err)
		}
		data := buf.Bytes()
		if !bytes.HasPrefix(data, protobufPrefix) {
			t.Fatalf("job %d: no protobuf prefix", i)
		}
		var unknown runtime.Unknown
		if err := unknown.Unmarshal(data[len(protobufPrefix):]); err != nil {
			t.Fatalf("job %d: reading the envelope: %v", i, err)
		}
		if want := (runtime.TypeMeta{APIVersion: "batch.jobs.dev/v1", Kind: "Job"}); unknown.TypeMeta != want {
			t.Errorf("job %d: envelope TypeMeta %v, want %v", i, unknown.TypeMeta, want)
		}

		upstream := &upstreambatchv1.Job{}
		if err := upstream.Unmarshal(unknown.Raw); err != nil {
			t.Fatalf("job %d: decoding our protobuf with k8s.io/api/batch/v1: %v", i, err)
		}
		want := job.DeepCopy()
		want.TypeMeta = metav1.TypeMeta{}
		if diff := cmp.Diff(want, viaJSON(t, upstream)); diff != "" {
			t.Errorf("job %d: our protobuf read by k8s.io/api/batch/v1 (-ours +upstream's reading):\n%s", i, diff)
		}

		// The other way: upstream's encoding, spec.scheduling (field 17) and
		// its scheduling.k8s.io/v1alpha3 messages included, decodes with ours
		// into the original.
		if job.Spec.Scheduling == nil || upstream.Spec.Scheduling == nil {
			t.Fatalf("job %d: spec.scheduling is not populated on both sides, so field 17 goes untested", i)
		}
		upstreamData, err := upstream.Marshal()
		if err != nil {
			t.Fatalf("job %d: encoding with k8s.io/api/batch/v1: %v", i, err)
		}
		ours := &batchv1.Job{}
		if err := ours.Unmarshal(upstreamData); err != nil {
			t.Fatalf("job %d: decoding k8s.io/api/batch/v1's protobuf with ours: %v", i, err)
		}
		if diff := cmp.Diff(want, ours); diff != "" {
			t.Errorf("job %d: k8s.io/api/batch/v1's protobuf read by ours (-want +got):\n%s", i, diff)
		}
	}
}

// viaJSON reads upstream's Job into ours through JSON, refusing any field
// ours does not have.
func viaJSON(t *testing.T, upstream *upstreambatchv1.Job) *batchv1.Job {
	t.Helper()
	data, err := encodingjson.Marshal(upstream)
	if err != nil {
		t.Fatalf("encoding upstream's Job as JSON: %v", err)
	}
	dec := encodingjson.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	ours := &batchv1.Job{}
	if err := dec.Decode(ours); err != nil {
		t.Fatalf("reading upstream's JSON into our Job: %v", err)
	}
	return ours
}
