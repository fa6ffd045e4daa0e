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

package upgrade

import (
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// everything selects every object.
var everything = labels.Everything()

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(data), "\n")
}

// klogTime reads the time of a klog text line ("I1207 17:21:30.123456 ...").
// klog leaves the year out: this year's is taken, which is right for the
// few minutes a test runs but for a run across New Year's midnight.
func klogTime(t *testing.T, line string) time.Time {
	t.Helper()
	if len(line) < 21 {
		t.Fatalf("not a klog line: %q", line)
	}
	ts, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
	if err != nil {
		t.Fatalf("not a klog line: %q: %v", line, err)
	}
	return ts.AddDate(time.Now().Year(), 0, 0)
}

func TestKlogTime(t *testing.T) {
	got := klogTime(t, `I1207 17:21:30.123456   12345 runner.go:338] "Starting the Job controller"`)
	want := time.Date(time.Now().Year(), 12, 7, 17, 21, 30, 123456000, time.Local)
	if !got.Equal(want) {
		t.Errorf("klogTime = %v, want %v", got, want)
	}
}
