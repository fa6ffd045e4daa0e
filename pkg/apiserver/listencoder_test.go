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
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
)

// jsonSerializers returns the compact JSON serializer of the generic
// server's codec factory for an API group (the streaming list encoders on)
// and the same wrapped by newParallelListSerializer.
func jsonSerializers(t testing.TB) (generic, parallel runtime.Serializer) {
	t.Helper()
	factory := serializer.NewCodecFactory(Scheme, serializer.WithStreamingCollectionEncodingToJSON())
	find := func(ns runtime.NegotiatedSerializer) runtime.Serializer {
		for _, info := range ns.SupportedMediaTypes() {
			if info.MediaType == runtime.ContentTypeJSON {
				return info.Serializer
			}
		}
		t.Fatal("no JSON serializer")
		return nil
	}
	return find(factory), find(newParallelListSerializer(factory))
}

// fuzzedJobLists keeps the lists fuzzedJobList made, by size: filling
// thousands of Jobs at random costs seconds under -race, and a run with
// -count=N would pay it N times for the same lists. The tests only encode
// them.
var fuzzedJobLists sync.Map

// fuzzedJobList returns a v1 JobList of n Jobs filled at random, one name
// with the characters encoding/json escapes; the same n gives the same
// list, which callers must not change.
func fuzzedJobList(n int) *batchv1.JobList {
	if list, ok := fuzzedJobLists.Load(n); ok {
		return list.(*batchv1.JobList)
	}
	list, _ := fuzzedJobLists.LoadOrStore(n, newFuzzedJobList(n))
	return list.(*batchv1.JobList)
}

func newFuzzedJobList(n int) *batchv1.JobList {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(int64(n)), Codecs).NumElements(0, 2)
	list := &batchv1.JobList{
		TypeMeta: metav1.TypeMeta{Kind: "JobList", APIVersion: batchv1.SchemeGroupVersion.String()},
		ListMeta: metav1.ListMeta{ResourceVersion: "12345", Continue: "<next&page>"},
		Items:    make([]batchv1.Job, n),
	}
	for i := range list.Items {
		f.Fill(&list.Items[i])
	}
	if n > 0 {
		list.Items[n/2].Name = "<a&b>\u2028é"
	}
	return list
}

func TestParallelListEncoderBytes(t *testing.T) {
	generic, parallel := jsonSerializers(t)
	sizes := []int{0, 1, parallelListMin - 1, parallelListMin, 4 * listChunkItems, 4*listChunkItems + 1, 3*parallelListMin + 7}
	if testing.Short() {
		// Each boundary once: below and at the parallel threshold, and
		// a list of several chunks whose last one is short.
		sizes = []int{0, 1, parallelListMin - 1, parallelListMin, parallelListMin + listChunkItems + 1}
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n, " items"), func(t *testing.T) {
			sameBytes(t, generic, parallel, fuzzedJobList(n))
		})
	}
	t.Run("v1beta1", func(t *testing.T) {
		list := &batchv1beta1.JobList{TypeMeta: metav1.TypeMeta{Kind: "JobList", APIVersion: batchv1beta1.SchemeGroupVersion.String()}}
		for i := range parallelListMin + 1 {
			list.Items = append(list.Items, batchv1beta1.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("job-", i), Namespace: "ns"}})
		}
		sameBytes(t, generic, parallel, list)
	})
}

// sameBytes encodes obj with both serializers and fails t unless the bytes
// are the same.
func sameBytes(t *testing.T, generic, parallel runtime.Serializer, obj runtime.Object) {
	t.Helper()
	var want, got bytes.Buffer
	if err := generic.Encode(obj, &want); err != nil {
		t.Fatal(err)
	}
	if err := parallel.Encode(obj, &got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want.Bytes(), got.Bytes()) {
		t.Errorf("the parallel encoder's bytes differ from the generic encoder's (-generic +parallel):\n%s", cmp.Diff(want.String(), got.String()))
	}
}

// failingWriter fails every write after the first limit bytes.
type failingWriter struct {
	limit, written int
}

var errWriterGone = errors.New("client gone")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.written+len(p) > w.limit {
		return 0, errWriterGone
	}
	w.written += len(p)
	return len(p), nil
}

func TestParallelListEncoderWriteError(t *testing.T) {
	_, parallel := jsonSerializers(t)
	list := fuzzedJobList(3 * parallelListMin)
	for _, limit := range []int{0, 10, 1 << 20} {
		err := parallel.Encode(list, &failingWriter{limit: limit})
		if !errors.Is(err, errWriterGone) {
			t.Errorf("writer failing after %d bytes: Encode returned %v, want the writer's error", limit, err)
		}
	}
}

// BenchmarkJobListJSON encodes a LIST of 10 000 Jobs as the stored-Jobs
// benchmark's, with the generic encoder and the parallel one.
func BenchmarkJobListJSON(b *testing.B) {
	generic, parallel := jsonSerializers(b)
	list := &batchv1.JobList{TypeMeta: metav1.TypeMeta{Kind: "JobList", APIVersion: batchv1.SchemeGroupVersion.String()}}
	job := fuzzedJobList(1).Items[0]
	for i := range 10_000 {
		j := *job.DeepCopy()
		j.Name = fmt.Sprint("stored-", i)
		list.Items = append(list.Items, j)
	}
	for name, s := range map[string]runtime.Serializer{"generic": generic, "parallel": parallel} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := s.Encode(list, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
