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
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unsafe"

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
//
// Sharing whole values.
//
// Strings and maps are not all that repeats. The Jobs of one workload
// decode into equal container lists, security contexts, tolerations and
// pointers to the same numbers; Jobs finished by one writer within one
// second have equal conditions and managedFields; and the watch cache keeps
// recent old versions of a Job beside the current one, equal to it but for
// the status. So the decoder also shares pointers and slices: walking the
// object depth first, it writes a canonical encoding of each value it
// leaves, and at each pointer and non-empty slice it looks the encoding of
// what that one holds up in a table of its own, keyed with the type. A hit
// points the field at the table's value, as for maps. The encoding stands
// for a string the table interned, a byte string and a string map by their
// address (equal ones are one by then), and for any reference behind an
// unexported field (a time's location) by its address too: equal
// encodings mean equal values, though some equal values are missed. The
// same rule as above makes this safe, and one more: a shared slice has no
// room past its length, so that appending to it copies.

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
	// internValueGeneration is the same for pointers and slices; most of
	// one object's are unique (its selector, its timestamps), so a
	// generation spans a few thousand objects.
	internValueGeneration = 1 << 14
)

// internTable hands out one shared copy of each string and byte string it
// is given, keeping what it has seen in two generations.
type internTable struct {
	mu                    sync.Mutex
	strings, oldStrings   map[string]string
	byteStrs, oldByteStrs map[string][]byte
	maps, oldMaps         map[string]map[string]string
	// values are the shared pointers and slices, keyed by their type's
	// number in types and their encoding.
	values, oldValues map[string]reflect.Value
	types             map[reflect.Type]uint64
	// keys and key are scratch space for mapKey and share, enc for the
	// encoding of the object being walked.
	keys     []string
	key, enc []byte
}

func newInternTable() *internTable {
	return &internTable{
		strings: map[string]string{}, byteStrs: map[string][]byte{}, maps: map[string]map[string]string{},
		values: map[string]reflect.Value{}, types: map[reflect.Type]uint64{},
	}
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

// object points the strings, byte strings, string maps and shareable
// values of obj at the table's copies.
func (t *internTable) object(obj runtime.Object) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.enc = t.enc[:0]
	t.value(v.Elem())
}

var stringMapType = reflect.TypeFor[map[string]string]()

// value interns what v holds and appends v's canonical encoding to t.enc
// (see "Sharing whole values"). It returns false when v holds something
// the encoding cannot stand for, an interface or a map with keys other
// than strings: such a value, and every value holding it, is not shared.
// Decoded objects are trees, so the walk ends.
func (t *internTable) value(v reflect.Value) bool {
	// Behind an unexported field, references are told apart by address
	// (a time's location, a quantity's big decimal): what they point at
	// is read by methods, not by this walk.
	opaque := !v.CanInterface()
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if s != "" && v.CanSet() {
			s = t.str(s)
			v.SetString(s)
			t.enc = appendRef(t.enc, unsafe.Pointer(unsafe.StringData(s)), len(s))
			return true
		}
		t.enc = appendBytes(t.enc, s)
		return true
	case reflect.Bool:
		if v.Bool() {
			t.enc = append(t.enc, 1)
		} else {
			t.enc = append(t.enc, 0)
		}
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		t.enc = binary.AppendVarint(t.enc, v.Int())
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		t.enc = binary.AppendUvarint(t.enc, v.Uint())
		return true
	case reflect.Float32, reflect.Float64:
		t.enc = binary.AppendUvarint(t.enc, math.Float64bits(v.Float()))
		return true
	case reflect.Struct:
		ok := true
		for i := range v.NumField() {
			ok = t.value(v.Field(i)) && ok
		}
		return ok
	case reflect.Array:
		ok := true
		for i := range v.Len() {
			ok = t.value(v.Index(i)) && ok
		}
		return ok
	case reflect.Pointer:
		if v.IsNil() || opaque {
			t.enc = appendRef(t.enc, v.UnsafePointer(), 0)
			return true
		}
		start := len(t.enc)
		t.enc = append(t.enc, 1)
		ok := t.value(v.Elem())
		if ok && v.CanSet() {
			t.share(v, start)
		}
		return ok
	case reflect.Slice:
		if v.IsNil() || opaque {
			t.enc = appendRef(t.enc, v.UnsafePointer(), v.Len())
			return true
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := v.Bytes()
			if v.CanSet() {
				b = t.bytes(b)
				v.SetBytes(b)
			}
			t.enc = appendRef(t.enc, unsafe.Pointer(unsafe.SliceData(b)), len(b))
			return true
		}
		start := len(t.enc)
		t.enc = binary.AppendUvarint(append(t.enc, 1), uint64(v.Len()))
		ok := true
		for i := range v.Len() {
			ok = t.value(v.Index(i)) && ok
		}
		if ok && v.Len() > 0 && v.CanSet() {
			t.share(v, start)
		}
		return ok
	case reflect.Map:
		if v.IsNil() || opaque {
			t.enc = appendRef(t.enc, v.UnsafePointer(), 0)
			return true
		}
		if v.Type() == stringMapType {
			if v.Len() > 0 && v.CanSet() {
				// The decoded map is left to the collector.
				v.Set(reflect.ValueOf(t.stringMap(v.Interface().(map[string]string))))
			}
			// Equal maps are one map now, or else not shared.
			t.enc = appendRef(t.enc, v.UnsafePointer(), v.Len())
			return true
		}
		return t.mapValue(v)
	default:
		// Interfaces, channels, functions.
		return false
	}
}

// mapValue appends the encoding of map v, entries in key order; its
// values cannot be set, so they are encoded and not shared.
func (t *internTable) mapValue(v reflect.Value) bool {
	if v.Type().Key().Kind() != reflect.String {
		return false
	}
	keys := v.MapKeys()
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	t.enc = binary.AppendUvarint(append(t.enc, 1), uint64(len(keys)))
	ok := true
	for _, k := range keys {
		t.enc = appendBytes(t.enc, k.String())
		ok = t.value(v.MapIndex(k)) && ok
	}
	return ok
}

// share points v, a pointer or a non-empty slice whose encoding starts at
// t.enc[start], at the table's equal value of its type, or else makes v
// that value. A shared slice gets its length as capacity, so that an
// append to it copies rather than writing past the end into the others'.
func (t *internTable) share(v reflect.Value, start int) {
	t.key = binary.AppendUvarint(t.key[:0], t.typeID(v.Type()))
	t.key = append(t.key, t.enc[start:]...)
	if c, ok := t.values[string(t.key)]; ok {
		v.Set(c)
		return
	}
	c, ok := t.oldValues[string(t.key)]
	if ok {
		v.Set(c)
	} else {
		// Only a value the table takes in needs trimming: the table's
		// own are trimmed already.
		if v.Kind() == reflect.Slice && v.Cap() != v.Len() {
			v.Set(v.Slice3(0, v.Len(), v.Len()))
		}
		// A copy of the field's value, not the field: v addresses the
		// object being decoded, which the table must not keep alive.
		c = reflect.ValueOf(v.Interface())
	}
	if len(t.values) >= internValueGeneration {
		t.oldValues, t.values = t.values, make(map[string]reflect.Value, len(t.values))
	}
	t.values[string(t.key)] = c
}

// typeID numbers the types the table shares values of. The caller holds
// t.mu.
func (t *internTable) typeID(typ reflect.Type) uint64 {
	id, ok := t.types[typ]
	if !ok {
		id = uint64(len(t.types))
		t.types[typ] = id
	}
	return id
}

// appendBytes appends s after its length.
func appendBytes(enc []byte, s string) []byte {
	return append(binary.AppendUvarint(enc, uint64(len(s))), s...)
}

// appendRef appends a reference by address and length: what the table
// interned, or nil.
func appendRef(enc []byte, p unsafe.Pointer, n int) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(enc, uint64(uintptr(p))), uint64(n))
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
