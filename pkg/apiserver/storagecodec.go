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
	"k8s.io/apimachinery/pkg/runtime"
	serverstorage "k8s.io/apiserver/pkg/server/storage"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// DefaultStorageMediaType is the media type objects are stored in unless
// --storage-media-type says otherwise: protobuf, as kube-apiserver stores
// its built-in types.
const DefaultStorageMediaType = runtime.ContentTypeProtobuf

// NewStorageCodec returns the codec objects are stored with, as
// kube-apiserver's storage factory builds it: it encodes v1 (the storage
// version) in mediaType and decodes whatever is stored, JSON, YAML or
// protobuf, to the internal version; and the versioner of what it encodes.
// The generic EtcdOptions store with StorageConfig.Codec as given and read
// --storage-media-type only in kube-apiserver's own storage factory, so the
// server sets the codec from the flag itself. Unlike kube-apiserver's, what
// the codec decodes shares its repeated strings (see intern.go).
func NewStorageCodec(mediaType string) (runtime.Codec, runtime.GroupVersioner, error) {
	codec, versioner, err := serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
		StorageMediaType:  mediaType,
		StorageSerializer: Codecs,
		StorageVersion:    batchv1.SchemeGroupVersion,
		MemoryVersion:     batch.SchemeGroupVersion,
	})
	if err != nil {
		return nil, nil, err
	}
	return newInternDecoder(codec), versioner, nil
}
