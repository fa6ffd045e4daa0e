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

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The parts of results.json the plots read; test/scale writes it.
type results struct {
	Sides map[string]sideResults `json:"sides"`
}

type sideResults struct {
	MixDefaults *workload `json:"mix_defaults"`
	MixEqual    *workload `json:"mix_equal_qps"`
	Large       *workload `json:"large_job"`
	Failures    *workload `json:"failures"`
	Stored      *stored   `json:"stored"`
}

type workload struct {
	Outcome struct {
		CompletedOverTime []completionPoint `json:"completed_over_time"`
	} `json:"outcome"`
	Phase struct {
		JobQueueWaitMean float64 `json:"job_queue_wait_mean_seconds"`
		JobQueueKeys     float64 `json:"job_queue_keys"`
	} `json:"phase"`
}

type completionPoint struct {
	Seconds float64 `json:"seconds"`
	Pods    int64   `json:"pods_succeeded"`
}

type stored struct {
	Jobs         int     `json:"stored_jobs"`
	ServerRSSMiB float64 `json:"server_rss_mib"`
	HeapInUseMiB float64 `json:"server_heap_inuse_mib"`
	FullListP99  float64 `json:"full_list_p99_seconds"`
	PageListP99  float64 `json:"page_list_p99_seconds"`
}

// workloads are the per-Job workloads in the order they run, with the
// titles the plots give them.
var workloads = []struct {
	key, title string
	of         func(sideResults) *workload
}{
	{"mix_defaults", "batch mix, each side's default client rate", func(s sideResults) *workload { return s.MixDefaults }},
	{"mix_equal_qps", "batch mix, equal client rates", func(s sideResults) *workload { return s.MixEqual }},
	{"large_job", "one large Indexed Job", func(s sideResults) *workload { return s.Large }},
	{"failures", "Jobs with failures", func(s sideResults) *workload { return s.Failures }},
}

// sideNames are the sides as the plots name them, in the order drawn.
var sideNames = []struct{ key, name string }{
	{"kcm", "kube-controller-manager (batch/v1)"},
	{"ours", "batch-apiserver (batch.jobs.dev/v1)"},
}

// sideColors tell the sides apart in every plot.
var sideColors = map[string]color.Color{
	"kcm":  color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff},
	"ours": color.RGBA{R: 0x1b, G: 0x9e, B: 0x77, A: 0xff},
}

func readResults(path string) (*results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Sides) == 0 {
		return nil, fmt.Errorf("%s: no side measured", path)
	}
	return &r, nil
}

// drawAll writes every plot res has data for into dir and returns the
// files written, in order.
func drawAll(res *results, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	save := func(p *plot.Plot, name string) error {
		file := filepath.Join(dir, name)
		if err := p.Save(8*vg.Inch, 4.5*vg.Inch, file); err != nil {
			return fmt.Errorf("writing %s: %w", file, err)
		}
		files = append(files, file)
		return nil
	}
	for _, w := range workloads {
		p, err := completedPlot(res, w.title, w.of)
		if err != nil {
			return nil, err
		}
		if p != nil {
			if err := save(p, w.key+"-completed.svg"); err != nil {
				return nil, err
			}
		}
	}
	plots := []struct {
		name string
		draw func(*results) (*plot.Plot, error)
	}{
		{"queue-wait.svg", queueWaitPlot},
		{"stored-memory.svg", storedMemoryPlot},
		{"stored-list.svg", storedListPlot},
	}
	for _, pl := range plots {
		p, err := pl.draw(res)
		if err != nil {
			return nil, err
		}
		if p != nil {
			if err := save(p, pl.name); err != nil {
				return nil, err
			}
		}
	}
	if len(files) == 0 {
		return nil, errors.New("nothing to draw: the results have no completions over time, queue waits or stored Jobs")
	}
	return files, nil
}

// completedPlot draws the Pods completed over time of one workload, a
// step line per side that recorded it; nil when no side did.
func completedPlot(res *results, title string, of func(sideResults) *workload) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Pods completed: " + title
	p.X.Label.Text = "seconds after the first create"
	p.Y.Label.Text = "Pods succeeded (of finished Jobs)"
	p.Legend.Top, p.Legend.Left = true, true
	drawn := false
	for _, side := range sideNames {
		s, ok := res.Sides[side.key]
		if !ok {
			continue
		}
		w := of(s)
		if w == nil || len(w.Outcome.CompletedOverTime) == 0 {
			continue
		}
		pts := w.Outcome.CompletedOverTime
		xys := make(plotter.XYs, 0, len(pts)+1)
		xys = append(xys, plotter.XY{X: 0, Y: 0})
		for _, pt := range pts {
			xys = append(xys, plotter.XY{X: pt.Seconds, Y: float64(pt.Pods)})
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", title, side.key, err)
		}
		line.StepStyle = plotter.PreStep
		line.Color = sideColors[side.key]
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(side.name, line)
		drawn = true
	}
	if !drawn {
		return nil, nil
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// queueWaitPlot draws, per workload, each side's mean wait of a due Job
// for a worker: the freshness of the status it delivered. A workload no
// side measured is left out; nil when none did.
func queueWaitPlot(res *results) (*plot.Plot, error) {
	var names []string
	values := map[string]plotter.Values{}
	for _, w := range workloads {
		measured := false
		row := map[string]float64{}
		for _, side := range sideNames {
			s, ok := res.Sides[side.key]
			if !ok {
				continue
			}
			if wl := w.of(s); wl != nil && wl.Phase.JobQueueKeys > 0 {
				row[side.key] = wl.Phase.JobQueueWaitMean
				measured = true
			}
		}
		if !measured {
			continue
		}
		names = append(names, w.key)
		for _, side := range sideNames {
			values[side.key] = append(values[side.key], row[side.key])
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "Mean wait of a due Job for a worker"
	p.Y.Label.Text = "seconds"
	if err := addBars(p, names, values); err != nil {
		return nil, err
	}
	return p, nil
}

// storedMemoryPlot draws each side's Job server memory with the stored
// Jobs; nil when the stored phase did not run.
func storedMemoryPlot(res *results) (*plot.Plot, error) {
	return storedPlot(res, "Job server memory with the stored Jobs", "MiB",
		[]string{"RSS, settled", "Go heap in use"},
		func(st *stored) []float64 { return []float64{st.ServerRSSMiB, st.HeapInUseMiB} })
}

// storedListPlot draws the p99 of each side's LISTs of the stored Jobs;
// nil when the stored phase did not run.
func storedListPlot(res *results) (*plot.Plot, error) {
	return storedPlot(res, "LIST of the stored Jobs through kube-apiserver, p99", "seconds",
		[]string{"whole list", "pages of 500"},
		func(st *stored) []float64 { return []float64{st.FullListP99, st.PageListP99} })
}

func storedPlot(res *results, title, unit string, names []string, figures func(*stored) []float64) (*plot.Plot, error) {
	values := map[string]plotter.Values{}
	jobs := 0
	for _, side := range sideNames {
		s, ok := res.Sides[side.key]
		if !ok || s.Stored == nil {
			continue
		}
		values[side.key] = figures(s.Stored)
		jobs = max(jobs, s.Stored.Jobs)
	}
	if len(values) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (%d Jobs)", title, jobs)
	p.Y.Label.Text = unit
	if err := addBars(p, names, values); err != nil {
		return nil, err
	}
	return p, nil
}

// addBars adds a group of bars per name, one bar per side that has values
// (values[side][i] belongs to names[i]), and a legend of the sides.
func addBars(p *plot.Plot, names []string, values map[string]plotter.Values) error {
	width := vg.Points(24)
	var sides []string
	for _, side := range sideNames {
		if _, ok := values[side.key]; ok {
			sides = append(sides, side.key)
		}
	}
	for i, key := range sides {
		bars, err := plotter.NewBarChart(values[key], width)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		bars.Color = sideColors[key]
		bars.LineStyle.Width = 0
		bars.Offset = width * vg.Length(2*i-len(sides)+1) / 2
		p.Add(bars)
		p.Legend.Add(sideNames[slices.IndexFunc(sideNames, func(s struct{ key, name string }) bool { return s.key == key })].name, bars)
	}
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	// Room at both ends for the outer bars, and above them for the
	// legend.
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.3
	p.Legend.Top = true
	return nil
}
