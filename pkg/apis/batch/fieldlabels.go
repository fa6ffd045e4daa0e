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

package batch

import "fmt"

// JobFieldLabelConversion accepts the field labels a Job can be selected by
// (metadata.name, metadata.namespace, status.successful) in every served
// version; they have the same name in each.
func JobFieldLabelConversion(label, value string) (string, string, error) {
	switch label {
	case "metadata.name", "metadata.namespace", "status.successful":
		return label, value, nil
	default:
		return "", "", fmt.Errorf("field label %q not supported for Job", label)
	}
}
