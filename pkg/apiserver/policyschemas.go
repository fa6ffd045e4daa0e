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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/spec3"
	openapiutil "k8s.io/kube-openapi/pkg/util"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	generatedopenapi "github.com/batch-apiserver/batch-apiserver/pkg/generated/openapi"
)

// PolicySchemas hands the MutatingAdmissionPolicy admission plugin the
// schemas of this server's kinds from the OpenAPI definitions compiled into
// the binary.
//
// The plugin applies a policy's mutations through a type converter that it
// builds from the schema of the request's kind. Upstream, it finds that
// schema in the OpenAPI v3 of the cluster its client talks to, which it
// lists in the background every 5 s; a kind missing from the last listing
// gets a 503 ("Resource kind ... not found"). Our plugin's client talks to
// the host cluster, and the host has our schemas only once our APIService
// is available and its aggregator has downloaded our OpenAPI; the plugin
// has them only at its next listing after that. Every create a policy
// matched was refused until then, for seconds after /readyz passed.
//
// This server admits requests for its own kinds only, so the plugin gets an
// OpenAPI client that lists this server's group-versions and answers them
// in process, without asking anyone.
type PolicySchemas struct {
	// doc is the OpenAPI v3 document (JSON) with the schemas of our Job in
	// every served version, and their dependencies.
	doc []byte
	// url keys the plugin's cache of type converters; it names the
	// document's hash, as a server's /openapi/v3 listing does.
	url string

	// wanted is set when the plugin is in the admission chain and on;
	// listed when the plugin has listed our group-versions.
	wanted, listed atomic.Bool
}

// NewPolicySchemas builds the schemas of the batch.jobs.dev kinds from the
// generated OpenAPI definitions, as the generic apiserver builds the ones
// server-side apply uses.
func NewPolicySchemas() (*PolicySchemas, error) {
	cfg := genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, openapinamer.NewDefinitionNamer(Scheme))
	var names []string
	for _, gv := range Scheme.PrioritizedVersionsForGroup(batch.GroupName) {
		obj, err := Scheme.New(gv.WithKind("Job"))
		if err != nil {
			return nil, fmt.Errorf("building the admission policy schemas: %w", err)
		}
		names = append(names, openapiutil.GetCanonicalTypeName(obj))
	}
	defs, err := builder3.BuildOpenAPIDefinitionsForResources(cfg, names...)
	if err != nil {
		return nil, fmt.Errorf("building the admission policy schemas: %w", err)
	}
	doc, err := json.Marshal(&spec3.OpenAPI{Version: "3.0.0", Components: &spec3.Components{Schemas: defs}})
	if err != nil {
		return nil, fmt.Errorf("encoding the admission policy schemas: %w", err)
	}
	sum := sha256.Sum256(doc)
	return &PolicySchemas{doc: doc, url: "?hash=" + hex.EncodeToString(sum[:])}, nil
}

// Paths lists the served versions of batch.jobs.dev under the names a
// server's /openapi/v3 uses (apis/<group>/<version>). It implements
// openapi.Client.
func (s *PolicySchemas) Paths() (map[string]openapi.GroupVersion, error) {
	paths := map[string]openapi.GroupVersion{}
	for _, gv := range Scheme.PrioritizedVersionsForGroup(batch.GroupName) {
		p := "apis/" + gv.Group + "/" + gv.Version
		paths[p] = schemaDoc{s: s, path: "/openapi/v3/" + p}
	}
	s.listed.Store(true)
	return paths, nil
}

// schemaDoc is one group-version of PolicySchemas.
type schemaDoc struct {
	s    *PolicySchemas
	path string
}

func (d schemaDoc) Schema(contentType string) ([]byte, error) {
	if contentType != runtime.ContentTypeJSON {
		return nil, fmt.Errorf("schema of %s: only %s is served, not %q", d.path, runtime.ContentTypeJSON, contentType)
	}
	return d.s.doc, nil
}

func (d schemaDoc) ServerRelativeURL() string { return d.path + d.s.url }

// Initializer returns the admission plugin initializer that gives the
// MutatingAdmissionPolicy plugin client, whose OpenAPI v3 is s. It must
// come after the generic initializer, whose client it replaces for that
// plugin alone; featureEnabled says whether the plugin is on.
func (s *PolicySchemas) Initializer(client kubernetes.Interface, featureEnabled bool) admission.PluginInitializer {
	return policySchemaInitializer{s: s, client: client, featureEnabled: featureEnabled}
}

type policySchemaInitializer struct {
	s              *PolicySchemas
	client         kubernetes.Interface
	featureEnabled bool
}

func (i policySchemaInitializer) Initialize(plugin admission.Interface) {
	p, ok := plugin.(*mutating.Plugin)
	if !ok {
		return
	}
	p.SetExternalKubeClientSet(clientWithSchemas{Interface: i.client, schemas: i.s})
	if i.featureEnabled {
		i.s.wanted.Store(true)
	}
}

// clientWithSchemas is a clientset whose discovery answers OpenAPI v3 from
// PolicySchemas; everything else goes to the host.
type clientWithSchemas struct {
	kubernetes.Interface
	schemas *PolicySchemas
}

func (c clientWithSchemas) Discovery() discovery.DiscoveryInterfaces {
	return discoveryWithSchemas{DiscoveryInterfaces: c.Interface.Discovery(), schemas: c.schemas}
}

type discoveryWithSchemas struct {
	discovery.DiscoveryInterfaces
	schemas *PolicySchemas
}

func (d discoveryWithSchemas) OpenAPIV3() openapi.Client { return d.schemas }

func (d discoveryWithSchemas) OpenAPIV3WithContext(context.Context) openapi.ClientWithContext {
	return openapi.ToClientWithContext(d.schemas)
}

// ReadyzCheck fails until the plugin, when it is on, has listed our
// group-versions. It lists them once as it starts, before the server
// serves, so the check only makes sure of what is already so in practice.
func (s *PolicySchemas) ReadyzCheck() healthz.HealthChecker {
	return healthz.NamedCheck("admission-policy-schemas", func(*http.Request) error {
		if s.wanted.Load() && !s.listed.Load() {
			return errors.New("the MutatingAdmissionPolicy plugin has not listed the schemas of " + batch.GroupName + " yet")
		}
		return nil
	})
}
