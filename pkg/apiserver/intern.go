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
	"encoding/binary"
	"reflect"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Why the storage codec interns.
//
// Every object the watch cache holds was decoded from etcd on its own: a
// stored Job carries its UID six times (metadata, two labels, the selector,
// two template labels), its name five times, the same label keys, container
// defaults ("File", "/dev/termination-log", "ClusterFirst", ...),
// condition reasons and messages as every other Job, and the managedFields
// entries of a client that creates Jobs of one shape are byte for byte the
// same each time. So are small maps: a Job's labels and its template's
// labels once defaulted, and the template's annotations and node selector
// across the Jobs of one workload. Decoded, each copy is an allocation of
// its own; with 150 000 finished Jobs kept, those copies are a third of the
// server's heap. The decoder below points equal strings, equal
// managedFields bodies and equal string maps of what it decodes at one
// copy. Objects read from storage are never written in place (the cacher
// and the registry deep-copy before changing one), and a deep copy gets
// bytes and maps of its own, so sharing them is safe.

const (
	// internGeneration is how many distinct strings one generation of the
	// table holds before it is retired: a value seen again within two
	// generations (every label key, every default) stays shared for as
	// long as it keeps coming; one seen once (a UID, a resourceVersion)
	// leaves the table two generations later. A few MB at most.
	internGeneration = 1 << 16
	// internBytesGeneration is the same for byte strings (managedFields
	// bodies), which are larger and fewer.
	internBytesGeneration = 1 << 12
	// internMapGeneration is the same for string maps; a map's entry in
	// the table is keyed by its whole content.
	internMapGeneration = 1 << 12
	// internMapMaxLen is the largest map shared as a whole; a larger one
	// only gets the table's strings.
	internMapMaxLen = 16
)

// internTable hands out one shared copy of each string and byte string it
// is given, keeping what it has seen in two generations.
type internTable struct {
	mu                    sync.Mutex
	strings, oldStrings   map[string]string
	byteStrs, oldByteStrs map[string][]byte
	maps, oldMaps         map[string]map[string]string
	// keys and key are scratch space for mapKey.
	keys []string
	key  []byte
}

func newInternTable() *internTable {
	return &internTable{strings: map[string]string{}, byteStrs: map[string][]byte{}, maps: map[string]map[string]string{}}
}

// str returns the table's copy of s. The caller holds t.mu.
func (t *internTable) str(s string) string {
	if s == "" {
		return s
	}
	if c, ok := t.strings[s]; ok {
		return c
	}
	c, ok := t.oldStrings[s]
	if !ok {
		c = s
	}
	if len(t.strings) >= internGeneration {
		t.oldStrings, t.strings = t.strings, make(map[string]string, len(t.strings))
	}
	t.strings[c] = c
	return c
}

// bytes returns the table's copy of b. The caller holds t.mu.
func (t *internTable) bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	if c, ok := t.byteStrs[string(b)]; ok {
		return c
	}
	c, ok := t.oldByteStrs[string(b)]
	if !ok {
		c = b
	}
	if len(t.byteStrs) >= internBytesGeneration {
		t.oldByteStrs, t.byteStrs = t.byteStrs, make(map[string][]byte, len(t.byteStrs))
	}
	t.byteStrs[string(c)] = c
	return c
}

// stringMap returns the table's map equal to m, or else m rebuilt with the
// table's strings, which the table keeps from then on. The caller holds
// t.mu.
func (t *internTable) stringMap(m map[string]string) map[string]string {
	if len(m) > internMapMaxLen {
		return t.rebuild(m)
	}
	t.key = t.mapKey(m)
	if c, ok := t.maps[string(t.key)]; ok {
		return c
	}
	c, ok := t.oldMaps[string(t.key)]
	if !ok {
		c = t.rebuild(m)
	}
	if len(t.maps) >= internMapGeneration {
		t.oldMaps, t.maps = t.maps, make(map[string]map[string]string, len(t.maps))
	}
	t.maps[string(t.key)] = c
	return c
}

// rebuild returns a copy of m whose keys and values are the table's
// strings: the keys of a map cannot be changed in place. The caller holds
// t.mu.
func (t *internTable) rebuild(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, s := range m {
		c[t.str(k)] = t.str(s)
	}
	return c
}

// mapKey encodes m's entries, sorted by key, each string after its length,
// into t.key's space: equal maps, and only they, have equal keys.
func (t *internTable) mapKey(m map[string]string) []byte {
	t.keys = t.keys[:0]
	for k := range m {
		t.keys = append(t.keys, k)
	}
	slices.Sort(t.keys)
	key := t.key[:0]
	for _, k := range t.keys {
		key = binary.AppendUvarint(key, uint64(len(k)))
		key = append(key, k...)
		key = binary.AppendUvarint(key, uint64(len(m[k])))
		key = append(key, m[k]...)
	}
	return key
}

// object points the strings, byte strings and string maps of obj at the
// table's copies.
func (t *internTable) object(obj runtime.Object) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.value(v.Elem())
}

var stringMapType = reflect.TypeFor[map[string]string]()

// value interns what v holds; v is settable.
func (t *internTable) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); s != "" {
			v.SetString(t.str(s))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			t.value(v.Elem())
		}
	case reflect.Struct:
		for _, i := range internFields(v.Type()) {
			t.value(v.Field(i))
		}
	case reflect.Slice:
		if v.Len() == 0 {
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(t.bytes(v.Bytes()))
			return
		}
		for i := range v.Len() {
			t.value(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 || v.Type() != stringMapType {
			return
		}
		// The decoded map is left to the collector.
		v.Set(reflect.ValueOf(t.stringMap(v.Interface().(map[string]string))))
	}
}

// internFieldsByType caches internFields: reflect.Type → []int.
var internFieldsByType sync.Map

// internFields returns the indexes of the exported fields of struct type
// typ that can hold something to intern.
func internFields(typ reflect.Type) []int {
	if f, ok := internFieldsByType.Load(typ); ok {
		return f.([]int)
	}
	var fields []int
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.IsExported() && canIntern(f.Type, map[reflect.Type]bool{typ: true}) {
			fields = append(fields, i)
		}
	}
	internFieldsByType.Store(typ, fields)
	return fields
}

// canIntern tells whether a value of typ can hold a string, a byte string
// or a map of strings in exported fields; seen breaks cycles.
func canIntern(typ reflect.Type, seen map[reflect.Type]bool) bool {
	switch typ.Kind() {
	case reflect.String:
		return true
	case reflect.Map:
		return typ == stringMapType
	case reflect.Slice:
		return typ.Elem().Kind() == reflect.Uint8 || canIntern(typ.Elem(), seen)
	case reflect.Pointer:
		return canIntern(typ.Elem(), seen)
	case reflect.Struct:
		if seen[typ] {
			return true
		}
		seen[typ] = true
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() && canIntern(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// internDecoder is a storage codec whose Decode interns what it decodes.
type internDecoder struct {
	runtime.Codec
	table *internTable
}

// newInternDecoder wraps codec; encoding is left as it is.
func newInternDecoder(codec runtime.Codec) runtime.Codec {
	return internDecoder{Codec: codec, table: newInternTable()}
}

// Decode decodes data with the wrapped codec and interns the object.
func (d internDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := d.Codec.Decode(data, defaults, into)
	if err == nil && obj != nil {
		d.table.object(obj)
	}
	return obj, gvk, err
}
