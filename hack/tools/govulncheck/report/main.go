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

// Command report reads the JSON stream of one govulncheck run
// (-format json) on stdin and prints its findings in three groups: the
// vulnerabilities our code reaches (a vulnerable function called from the
// source, or linked into a binary), those only in a package we import, and
// those only in a module we require. It exits 3 when one of the first group
// is not accepted in the table of SECURITY.md given with -accepted.
//
// govulncheck itself cannot silence a finding, and in JSON mode it exits 0
// whatever it found, so this is where make vulncheck decides.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// message is the part of govulncheck's JSON messages this reads.
type message struct {
	SBOM    *sbom    `json:"SBOM"`
	OSV     *entry   `json:"osv"`
	Finding *finding `json:"finding"`
}

// sbom names what was scanned.
type sbom struct {
	GoVersion string `json:"go_version"`
	Modules   []struct {
		Path string `json:"path"`
	} `json:"modules"`
}

type entry struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

type finding struct {
	OSV          string   `json:"osv"`
	FixedVersion string   `json:"fixed_version"`
	Trace        []*frame `json:"trace"`
}

// frame is one step of a finding's trace: the first is the vulnerable
// symbol (or only its package or module), the last the caller in our code.
type frame struct {
	Module   string    `json:"module"`
	Version  string    `json:"version"`
	Package  string    `json:"package"`
	Function string    `json:"function"`
	Receiver string    `json:"receiver"`
	Position *position `json:"position"`
}

type position struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
}

// level says how close a finding comes to our code.
type level int

const (
	reached level = iota
	imported
	required
)

// vuln gathers the findings of one OSV entry.
type vuln struct {
	id, summary, module, version, fixed string
	level                               level
	example                             string
}

func main() {
	accepted := flag.String("accepted", "", "a file (SECURITY.md) whose table rows starting with | GO-YYYY-NNNN | accept that vulnerability")
	flag.Parse()
	ok, err := run(os.Stdin, os.Stdout, *accepted)
	if err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(3)
	}
}

func run(in io.Reader, out io.Writer, acceptedFile string) (bool, error) {
	accepted := map[string]bool{}
	if acceptedFile != "" {
		var err error
		if accepted, err = readAccepted(acceptedFile); err != nil {
			return false, err
		}
	}
	summaries := map[string]string{}
	vulns := map[string]*vuln{}
	dec := json.NewDecoder(bufio.NewReader(in))
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return false, fmt.Errorf("reading govulncheck's JSON: %w", err)
		}
		if m.SBOM != nil {
			fmt.Fprintf(out, "scanned %d modules and the %s standard library\n", len(m.SBOM.Modules), m.SBOM.GoVersion)
		}
		if m.OSV != nil {
			summaries[m.OSV.ID] = m.OSV.Summary
		}
		if m.Finding != nil && len(m.Finding.Trace) > 0 {
			add(vulns, m.Finding)
		}
	}

	var list []*vuln
	for _, v := range vulns {
		v.summary = summaries[v.id]
		list = append(list, v)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].level != list[j].level {
			return list[i].level < list[j].level
		}
		return list[i].id < list[j].id
	})

	ok := true
	for _, group := range []struct {
		level level
		title string
	}{
		{reached, "reached by our code"},
		{imported, "in an imported package, not called"},
		{required, "in a required module, not imported"},
	} {
		var n int
		for _, v := range list {
			if v.level == group.level {
				n++
			}
		}
		fmt.Fprintf(out, "%s: %d\n", group.title, n)
		for _, v := range list {
			if v.level != group.level {
				continue
			}
			fixed := v.fixed
			if fixed == "" {
				fixed = "no fixed version"
			} else {
				fixed = "fixed in " + fixed
			}
			note := ""
			if v.level == reached {
				if accepted[v.id] {
					note = " [accepted in SECURITY.md]"
				} else {
					ok = false
				}
			}
			fmt.Fprintf(out, "  %s %s@%s (%s)%s: %s\n", v.id, v.module, v.version, fixed, note, v.summary)
			if v.example != "" {
				fmt.Fprintf(out, "      %s\n", v.example)
			}
		}
	}
	return ok, nil
}

// add records f under its OSV entry, keeping the closest level seen and
// the first example of our code reaching it.
func add(vulns map[string]*vuln, f *finding) {
	top := f.Trace[0]
	l := required
	switch {
	case top.Function != "":
		l = reached
	case top.Package != "":
		l = imported
	}
	v := vulns[f.OSV]
	if v == nil {
		v = &vuln{id: f.OSV, module: top.Module, version: top.Version, fixed: f.FixedVersion, level: l}
		vulns[f.OSV] = v
	}
	if l < v.level {
		v.level = l
	}
	if l == reached && v.example == "" {
		v.example = example(f.Trace)
	}
}

// example describes a trace in one line: where our code is, and the
// vulnerable symbol it comes to.
func example(trace []*frame) string {
	sym := name(trace[0])
	if len(trace) == 1 {
		if p := trace[0].Position; p != nil && p.Filename != "" {
			return fmt.Sprintf("%s:%d:%d: %s", p.Filename, p.Line, p.Column, sym)
		}
		return sym + " is in the binary"
	}
	caller := trace[len(trace)-1]
	at := ""
	if p := caller.Position; p != nil {
		at = fmt.Sprintf("%s:%d:%d: ", p.Filename, p.Line, p.Column)
	}
	return fmt.Sprintf("%s%s reaches %s", at, name(caller), sym)
}

func name(f *frame) string {
	pkg := f.Package
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		pkg = pkg[i+1:]
	}
	if f.Receiver != "" {
		return pkg + "." + strings.TrimPrefix(f.Receiver, "*") + "." + f.Function
	}
	return pkg + "." + f.Function
}

var acceptedRow = regexp.MustCompile(`^\|\s*(GO-\d{4}-\d+)\s*\|`)

// readAccepted returns the IDs that start a table row of file.
func readAccepted(file string) (map[string]bool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := acceptedRow.FindStringSubmatch(line); m != nil {
			ids[m[1]] = true
		}
	}
	return ids, nil
}
