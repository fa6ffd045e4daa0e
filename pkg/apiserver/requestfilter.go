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
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// BuildHandlerChain is genericapiserver.DefaultBuildHandlerChain with
// WithRequestValidation innermost, so it runs after authentication and
// authorization (an anonymous client learns nothing from it) and sees the
// request info those filters parsed.
func BuildHandlerChain(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
	return genericapiserver.DefaultBuildHandlerChain(WithRequestValidation(apiHandler, c.Serializer), c)
}

// WithRequestValidation answers 400 Bad Request to resource requests the
// generic apiserver would turn into a 500: a namespace path segment of "."
// or ".." (the storage layer refuses the key built from it, and its error
// names the storage key), and a watch whose resourceVersion is not an
// unsigned integer (the watch cache reports the strconv error as an internal
// error). A list with such a resourceVersion is left alone: the generic code
// already answers it with 400, as kube-apiserver does.
func WithRequestValidation(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := request.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest {
			handler.ServeHTTP(w, req)
			return
		}
		if err := validateRequest(info, req); err != nil {
			gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
			responsewriters.ErrorNegotiated(err, s, gv, w, req)
			return
		}
		handler.ServeHTTP(w, req)
	})
}

// validateRequest returns a BadRequest error for a request the storage layer
// would fail with an internal error, and nil otherwise.
func validateRequest(info *request.RequestInfo, req *http.Request) error {
	// Only "." and ".." are refused: the storage layer turns them into a key
	// it will not use. Any other bad namespace already gets the answer
	// kube-apiserver gives (404 on get, an empty list, 422 on create).
	if info.Namespace == "." || info.Namespace == ".." {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid namespace %q: may not be '.' or '..'", info.Namespace))
	}
	if info.Verb == "watch" {
		rv := req.URL.Query().Get("resourceVersion")
		if rv != "" {
			if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
				return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q: must be a non-negative integer", rv))
			}
		}
	}
	return nil
}
