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
	"sync"

	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// failureStore keeps, per Job key, the failures counted since the Job's
// last success. The record spaces out replacements of failed Pods and lives
// only in memory, as in kube-controller-manager: a new leader starts
// without it and rebuilds it from the Pods it finds.
type failureStore struct {
	mu    sync.Mutex
	byJob map[string]decide.FailureRecord
}

func newFailureStore() *failureStore {
	return &failureStore{byJob: map[string]decide.FailureRecord{}}
}

// get returns the record of key, the zero record when there is none.
func (s *failureStore) get(key string) decide.FailureRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byJob[key]
	if r.LastFailure != nil {
		// The caller may keep the record; the time must not be shared.
		t := *r.LastFailure
		r.LastFailure = &t
	}
	return r
}

// put replaces the record of key.
func (s *failureStore) put(key string, r decide.FailureRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.LastFailure != nil {
		t := *r.LastFailure
		r.LastFailure = &t
	}
	s.byJob[key] = r
}

// forget drops the record of key, whose Job is gone or finished.
func (s *failureStore) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byJob, key)
}
