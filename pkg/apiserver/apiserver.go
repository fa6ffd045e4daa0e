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

// Package apiserver assembles the batch.jobs.dev API group on a generic
// apiserver: the scheme and codecs, the configuration and the server.
package apiserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	baseversion "k8s.io/component-base/version"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/install"
	jobregistry "github.com/batch-apiserver/batch-apiserver/pkg/registry/batch/job"
)

var (
	// Scheme holds the batch.jobs.dev types and the meta types the server speaks.
	Scheme = runtime.NewScheme()
	// Codecs encodes and decodes the objects of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
)

// coreV1 is the group-less version under which an apiserver registers the
// meta/v1 option types and its unversioned discovery and Status types.
var coreV1 = schema.GroupVersion{Version: "v1"}

func init() {
	install.Install(Scheme)
	metav1.AddToGroupVersion(Scheme, coreV1)
	Scheme.AddUnversionedTypes(coreV1, []runtime.Object{
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{},
	}...)
}

// Config is the configuration of the batch apiserver.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
}

// CompletedConfig is a Config whose defaults are filled in; only it can build a Server.
type CompletedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
}

// Complete fills in the defaults of the generic configuration.
func (cfg *Config) Complete() CompletedConfig {
	return CompletedConfig{GenericConfig: cfg.GenericConfig.Complete()}
}

// Server is the batch apiserver: a generic apiserver with the batch.jobs.dev group installed.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// New builds the server and installs the API group with its storage.
func (c CompletedConfig) New() (*Server, error) {
	if ev := c.GenericConfig.EffectiveVersion; ev != nil {
		if err := checkVersionStamp(baseversion.Get(), ev.BinaryVersion()); err != nil {
			return nil, err
		}
	}
	genericServer, err := c.GenericConfig.New("batch-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("building generic apiserver: %w", err)
	}

	apiGroupInfo := genericapiserver.NewDefaultAPIGroupInfo(batch.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	// Its NegotiatedSerializer is the group's own codec factory, with the
	// streaming LIST encoders; it offers JSON, YAML and protobuf (our
	// external types have generated protobuf encodings). Long JobLists in
	// JSON are encoded on every core (listencoder.go).
	apiGroupInfo.NegotiatedSerializer = newParallelListSerializer(apiGroupInfo.NegotiatedSerializer)
	jobStorage, jobStatusStorage, err := jobregistry.NewREST(Scheme, c.GenericConfig.RESTOptionsGetter)
	if err != nil {
		return nil, fmt.Errorf("creating job storage: %w", err)
	}
	// Both versions share one storage: objects convert through the hub and are
	// stored as v1.
	storage := map[string]rest.Storage{
		"jobs":        jobStorage,
		"jobs/status": jobStatusStorage,
	}
	apiGroupInfo.VersionedResourcesStorageMap["v1"] = storage
	apiGroupInfo.VersionedResourcesStorageMap["v1beta1"] = storage

	if err := genericServer.InstallAPIGroup(&apiGroupInfo); err != nil {
		return nil, fmt.Errorf("installing API group %s: %w", batch.GroupName, err)
	}
	// /readyz stays failing until the watch cache of every installed
	// resource is initialized, as kube-apiserver does with the same hook
	// (WatchCacheInitializationPostStartHook, GA in 1.37). Without it the
	// server reported ready while watches still got 429 "storage is
	// (re)initializing".
	if utilfeature.DefaultFeatureGate.Enabled(apiserverfeatures.WatchCacheInitializationPostStartHook) {
		if err := genericServer.AddPostStartHook("storage-readiness", genericServer.StorageReadinessHook.Hook); err != nil {
			return nil, fmt.Errorf("adding the storage-readiness hook: %w", err)
		}
	}
	return &Server{GenericAPIServer: genericServer}, nil
}
