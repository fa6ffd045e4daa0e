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
)

// BenchmarkStrategyCreate measures what the strategy adds to a create: drop
// disabled fields, generate the selector, validate and warn. Storage and
// serving are left out; test/bench measures the server whole.
func BenchmarkStrategyCreate(b *testing.B) {
	strategy := NewStrategy(testScheme())
	ctx := context.Background()
	base := testJob("j").Internal()
	b.ReportAllocs()
	for b.Loop() {
		job := base.DeepCopy()
		strategy.PrepareForCreate(ctx, job)
		if errs := strategy.Validate(ctx, job); len(errs) != 0 {
			b.Fatal(errs)
		}
		strategy.WarningsOnCreate(ctx, job)
	}
}
