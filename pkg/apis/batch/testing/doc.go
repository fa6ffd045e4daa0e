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

// Package batchtesting holds the fixture builders the tests of this module
// build their Jobs, Job statuses and Pods with, one builder per type:
//
//	batchtesting.MakeJob("j").Indexed(3).BackoffLimitPerIndex(1).Obj()
//
// The builders build the v1 types; JobBuilder.Internal converts the Job to
// the internal type through the generated conversion, for the tests of
// validation and of the registry. Only tests import this package.
package batchtesting
