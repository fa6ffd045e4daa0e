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

// Command protoc is the subset of protoc that k8s.io/code-generator's
// go-to-protobuf runs, in pure Go, so that hack/update-codegen.sh needs
// nothing but Go modules:
//
//	protoc -I DIR [-I DIR...] --NAME_out=[PARAMS:]OUTDIR FILE.proto...
//
// It compiles the files with github.com/bufbuild/protocompile, sends a
// CodeGeneratorRequest to the plugin protoc-gen-NAME found on PATH (for
// go-to-protobuf, code-generator's protoc-gen-gogo) and writes the files of
// its CodeGeneratorResponse under OUTDIR, as protoc does. Imports are looked
// up in the -I directories in order; google/protobuf/*.proto are built in.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// version is what --version prints; go-to-protobuf does not check it.
const version = "libprotoc 3.21.12 (batch-apiserver hack/protoc, bufbuild/protocompile)"

type output struct {
	plugin string // protoc-gen-<name>
	param  string
	dir    string
}

type invocation struct {
	includes []string
	outputs  []output
	files    []string
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "protoc: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	inv, err := parseArgs(args)
	if err != nil {
		return err
	}
	if inv == nil { // --version
		fmt.Println(version)
		return nil
	}
	if len(inv.includes) == 0 {
		inv.includes = []string{"."}
	}
	names := make([]string, 0, len(inv.files))
	for _, f := range inv.files {
		name, err := virtualName(f, inv.includes)
		if err != nil {
			return err
		}
		names = append(names, name)
	}

	compiler := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: inv.includes}),
		SourceInfoMode: protocompile.SourceInfoStandard,
		MaxParallelism: 1,
	}
	compiled, err := compiler.Compile(context.Background(), names...)
	if err != nil {
		return err
	}

	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: names}
	generate := map[string]bool{}
	for _, n := range names {
		generate[n] = true
	}
	seen := map[string]bool{}
	var add func(f protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, descriptorProto(f, generate[f.Path()]))
	}
	for _, f := range compiled {
		add(f)
	}

	for _, out := range inv.outputs {
		if out.param != "" {
			req.Parameter = proto.String(out.param)
		} else {
			req.Parameter = nil
		}
		if err := runPlugin(out, req); err != nil {
			return err
		}
	}
	return nil
}

// parseArgs reads protoc's command line; it returns nil for --version.
func parseArgs(args []string) (*invocation, error) {
	inv := &invocation{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func(flag string) (string, error) {
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v, nil
			}
			if v, ok := strings.CutPrefix(a, flag); ok && v != "" && !strings.HasPrefix(flag, "--") {
				return v, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("missing value for %s", flag)
			}
			i++
			return args[i], nil
		}
		switch {
		case a == "--version":
			return nil, nil
		case strings.HasPrefix(a, "-I"):
			v, err := value("-I")
			if err != nil {
				return nil, err
			}
			inv.includes = append(inv.includes, filepath.SplitList(v)...)
		case a == "--proto_path" || strings.HasPrefix(a, "--proto_path="):
			v, err := value("--proto_path")
			if err != nil {
				return nil, err
			}
			inv.includes = append(inv.includes, filepath.SplitList(v)...)
		case strings.HasPrefix(a, "--") && strings.Contains(a, "_out="):
			flag, v, _ := strings.Cut(a, "=")
			name := strings.TrimSuffix(strings.TrimPrefix(flag, "--"), "_out")
			out := output{plugin: "protoc-gen-" + name, dir: v}
			if param, dir, ok := strings.Cut(v, ":"); ok {
				out.param, out.dir = param, dir
			}
			inv.outputs = append(inv.outputs, out)
		case strings.HasPrefix(a, "-"):
			return nil, fmt.Errorf("unsupported flag %q (this protoc implements what go-to-protobuf uses: -I, --NAME_out, files)", a)
		default:
			inv.files = append(inv.files, a)
		}
	}
	if len(inv.files) == 0 {
		return nil, errors.New("no input files")
	}
	if len(inv.outputs) == 0 {
		return nil, errors.New("no --NAME_out given")
	}
	return inv, nil
}

// virtualName is the name protoc gives a file named on the command line: its
// path relative to the first -I directory that contains it.
func virtualName(file string, includes []string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	for _, inc := range includes {
		incAbs, err := filepath.Abs(inc)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(incAbs, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		return filepath.ToSlash(rel), nil
	}
	return "", fmt.Errorf("%s: File does not reside within any path specified using --proto_path (or -I)", file)
}

// descriptorProto is the FileDescriptorProto protoc gives a plugin: source
// code info only for the files to generate, json_name on every field.
func descriptorProto(f protoreflect.FileDescriptor, withSourceInfo bool) *descriptorpb.FileDescriptorProto {
	var fdp *descriptorpb.FileDescriptorProto
	if r, ok := f.(linker.Result); ok {
		fdp = proto.Clone(r.FileDescriptorProto()).(*descriptorpb.FileDescriptorProto)
	} else {
		fdp = protodesc.ToFileDescriptorProto(f)
	}
	if !withSourceInfo {
		fdp.SourceCodeInfo = nil
	}
	setJSONNames(fdp.GetMessageType(), f.Messages())
	return fdp
}

func setJSONNames(msgs []*descriptorpb.DescriptorProto, descs protoreflect.MessageDescriptors) {
	for _, m := range msgs {
		d := descs.ByName(protoreflect.Name(m.GetName()))
		if d == nil {
			continue
		}
		for _, fld := range m.GetField() {
			if fld.JsonName == nil {
				if fd := d.Fields().ByName(protoreflect.Name(fld.GetName())); fd != nil {
					fld.JsonName = proto.String(fd.JSONName())
				}
			}
		}
		setJSONNames(m.GetNestedType(), d.Messages())
	}
}

// runPlugin runs protoc-gen-<name> on req and writes its files under out.dir.
func runPlugin(out output, req *pluginpb.CodeGeneratorRequest) error {
	in, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return err
	}
	path, err := exec.LookPath(out.plugin)
	if err != nil {
		return fmt.Errorf("%s: program not found or is not executable: %w", out.plugin, err)
	}
	var stdout bytes.Buffer
	cmd := exec.Command(path)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", out.plugin, err)
	}
	resp := &pluginpb.CodeGeneratorResponse{}
	if err := proto.Unmarshal(stdout.Bytes(), resp); err != nil {
		return fmt.Errorf("%s: reading its response: %w", out.plugin, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("%s: %s", out.plugin, resp.GetError())
	}
	for _, f := range resp.GetFile() {
		if f.GetInsertionPoint() != "" {
			return fmt.Errorf("%s: insertion points are not supported (file %s)", out.plugin, f.GetName())
		}
		name := filepath.FromSlash(f.GetName())
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s: output file %q is outside the output directory", out.plugin, f.GetName())
		}
		dest := filepath.Join(out.dir, name)
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dest, []byte(f.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
