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
	base := testJob("j").Obj()
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
