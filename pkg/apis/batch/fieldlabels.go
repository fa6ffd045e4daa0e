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
