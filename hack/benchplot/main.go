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

// Command benchplot draws the plots of a scale benchmark run from its
// results.json (make bench-scale writes both):
//
//	benchplot -in _output/bench-scale/results.json -out _output/bench-scale/plots
//
// It writes SVG files: for each workload that recorded its completions,
// the Pods completed over time on each side; the mean wait of a Job in the
// controller's queue, per workload and side; and, when the stored phase
// ran, each side's memory and LIST latency with the stored Jobs.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	in := flag.String("in", "_output/bench-scale/results.json", "The results of make bench-scale.")
	out := flag.String("out", "_output/bench-scale/plots", "The directory the SVG files go to (made if missing).")
	flag.Parse()
	res, err := readResults(*in)
	if err == nil {
		var files []string
		if files, err = drawAll(res, *out); err == nil {
			for _, f := range files {
				fmt.Println(f)
			}
			return
		}
	}
	fmt.Fprintln(os.Stderr, "benchplot:", err)
	os.Exit(1)
}
