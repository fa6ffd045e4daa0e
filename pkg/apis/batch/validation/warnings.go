package validation

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

const (
	warnCompletionsSoftLimit                        = 100_000
	warnParallelismSoftLimitForUnlimitedCompletions = 10_000
)

// deprecatedNodeLabels are the node labels kube-apiserver warns about in a
// pod template's node selection.
var deprecatedNodeLabels = map[string]string{
	`beta.kubernetes.io/arch`:                       `deprecated since v1.14; use "kubernetes.io/arch" instead`,
	`beta.kubernetes.io/os`:                         `deprecated since v1.14; use "kubernetes.io/os" instead`,
	`failure-domain.beta.kubernetes.io/region`:      `deprecated since v1.17; use "topology.kubernetes.io/region" instead`,
	`failure-domain.beta.kubernetes.io/zone`:        `deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
	`beta.kubernetes.io/instance-type`:              `deprecated since v1.17; use "node.kubernetes.io/instance-type" instead`,
	`app.kubernetes.io/created-by`:                  `deprecated since v1.9`,
	`scheduler.alpha.kubernetes.io/preferAvoidPods`: `deprecated since v1.22; use Taints and Tolerations instead`,
	`node-role.kubernetes.io/master`:                `use "node-role.kubernetes.io/control-plane" instead`,
}

var deprecatedTemplateAnnotations = []struct{ key, message string }{
	{`scheduler.alpha.kubernetes.io/critical-pod`, `non-functional in v1.16+; use the "priorityClassName" field instead`},
	{`security.alpha.kubernetes.io/sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
	{`security.alpha.kubernetes.io/unsafe-sysctls`, `non-functional in v1.11+; use the "sysctls" field instead`},
}

// WarningsForJob returns the warnings kube-apiserver gives for a Job on create
// (oldJob nil) or on an update that changed the spec (the generation moved).
// Updates that leave the generation alone get none, as upstream.
func WarningsForJob(job, oldJob *batch.Job) []string {
	var warnings []string
	var oldSpec *batch.JobSpec
	if oldJob == nil {
		if msgs := utilvalidation.IsDNS1123Label(job.Name); len(msgs) != 0 {
			warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
		}
	} else {
		if job.Generation == oldJob.Generation {
			return nil
		}
		oldSpec = &oldJob.Spec
	}
	return append(warnings, warningsForJobSpec(field.NewPath("spec"), &job.Spec, oldSpec)...)
}

func warningsForJobSpec(path *field.Path, spec, _ *batch.JobSpec) []string {
	var warnings []string
	if isIndexed(spec) {
		completions := ptr.Deref(spec.Completions, 0)
		parallelism := ptr.Deref(spec.Parallelism, 0)
		if completions > warnCompletionsSoftLimit && parallelism > warnParallelismSoftLimitForUnlimitedCompletions {
			warnings = append(warnings, fmt.Sprintf("%s: %s", path, "In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail"))
		}
	}
	return append(warnings, warningsForPodTemplate(path.Child("template"), &spec.Template)...)
}

// warningsForPodTemplate reproduces the pod template warnings of
// kube-apiserver that concern fields a Job template commonly carries: node
// selection with deprecated labels, deprecated annotations, null label
// selectors, fractional byte quantities, duplicated env vars, ports and image
// pull secrets, and a negative grace period. Volume plugin and IP format
// warnings are not reproduced.
func warningsForPodTemplate(path *field.Path, template *corev1.PodTemplateSpec) []string {
	var warnings []string
	spec := &template.Spec
	specPath := path.Child("spec")

	for _, k := range sortedKeys(spec.NodeSelector) {
		if msg, deprecated := deprecatedNodeLabels[k]; deprecated {
			warnings = append(warnings, fmt.Sprintf("%s: %s", specPath.Child("nodeSelector").Key(k), msg))
		}
	}
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		n := spec.Affinity.NodeAffinity
		if n.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			termsPath := specPath.Child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			for i, term := range n.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				warnings = append(warnings, warningsForNodeSelectorTerm(term, termsPath.Index(i))...)
			}
		}
		preferredPath := specPath.Child("affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
		for i, term := range n.PreferredDuringSchedulingIgnoredDuringExecution {
			warnings = append(warnings, warningsForNodeSelectorTerm(term.Preference, preferredPath.Index(i).Child("preference"))...)
		}
	}
	for i, c := range spec.TopologySpreadConstraints {
		tscPath := specPath.Child("topologySpreadConstraints").Index(i)
		if msg, deprecated := deprecatedNodeLabels[c.TopologyKey]; deprecated {
			warnings = append(warnings, fmt.Sprintf("%s: %s is %s", tscPath.Child("topologyKey"), c.TopologyKey, msg))
		}
		if c.LabelSelector == nil {
			warnings = append(warnings, fmt.Sprintf("%s: a null labelSelector results in matching no pod", tscPath.Child("labelSelector")))
		}
	}
	for _, d := range deprecatedTemplateAnnotations {
		if _, ok := template.Annotations[d.key]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s", path.Child("metadata", "annotations").Key(d.key), d.message))
		}
	}

	warnings = append(warnings, warningsForImagePullSecrets(spec.ImagePullSecrets, specPath.Child("imagePullSecrets"))...)
	visitContainers(spec, specPath, func(c *corev1.Container, p *field.Path) {
		warnings = append(warnings, warningsForContainer(c, p)...)
	})
	warnings = append(warnings, warningsForPorts(spec, specPath)...)

	if spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds < 0 {
		warnings = append(warnings, fmt.Sprintf("%s: must be >= 0; negative values are invalid and will be treated as 1", specPath.Child("terminationGracePeriodSeconds")))
	}
	if spec.Affinity != nil {
		if a := spec.Affinity.PodAffinity; a != nil {
			p := specPath.Child("affinity", "podAffinity")
			warnings = append(warnings, warningsForPodAffinityTerms(a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
		}
		if a := spec.Affinity.PodAntiAffinity; a != nil {
			p := specPath.Child("affinity", "podAntiAffinity")
			warnings = append(warnings, warningsForPodAffinityTerms(a.RequiredDuringSchedulingIgnoredDuringExecution, a.PreferredDuringSchedulingIgnoredDuringExecution, p)...)
		}
	}
	return warnings
}

func warningsForNodeSelectorTerm(term corev1.NodeSelectorTerm, path *field.Path) []string {
	var warnings []string
	for i, e := range term.MatchExpressions {
		if msg, deprecated := deprecatedNodeLabels[e.Key]; deprecated {
			warnings = append(warnings, fmt.Sprintf("%s: %s is %s", path.Child("matchExpressions").Index(i).Child("key"), e.Key, msg))
		}
	}
	return warnings
}

func warningsForImagePullSecrets(secrets []corev1.LocalObjectReference, path *field.Path) []string {
	var warnings []string
	if len(secrets) > 1 {
		seen := map[string]bool{}
		for i, s := range secrets {
			if seen[s.Name] {
				warnings = append(warnings, fmt.Sprintf("%s: duplicate name %q", path.Index(i).Child("name"), s.Name))
			}
			seen[s.Name] = true
		}
	}
	for i, s := range secrets {
		if s.Name == "" {
			warnings = append(warnings, fmt.Sprintf("%s: invalid empty name %q", path.Index(i).Child("name"), s.Name))
		}
	}
	return warnings
}

// visitContainers walks init containers, then containers, as upstream does.
func visitContainers(spec *corev1.PodSpec, specPath *field.Path, visit func(*corev1.Container, *field.Path)) {
	for i := range spec.InitContainers {
		visit(&spec.InitContainers[i], specPath.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		visit(&spec.Containers[i], specPath.Child("containers").Index(i))
	}
}

func warningsForContainer(c *corev1.Container, p *field.Path) []string {
	var warnings []string
	for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if v, ok := c.Resources.Limits[name]; ok && v.MilliValue()%1000 != 0 {
			warnings = append(warnings, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", p.Child("resources", "limits").Key(string(name)), v.String()))
		}
		if v, ok := c.Resources.Requests[name]; ok && v.MilliValue()%1000 != 0 {
			warnings = append(warnings, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", p.Child("resources", "requests").Key(string(name)), v.String()))
		}
	}
	if len(c.Env) > 1 {
		seen := map[string]bool{}
		for i, e := range c.Env {
			if !seen[e.Name] {
				seen[e.Name] = true
				continue
			}
			// Redefining a variable is fine only when the new value builds on the old one.
			ref := fmt.Sprintf("$(%s)", e.Name)
			if e.ValueFrom != nil || e.Value == ref || !strings.Contains(e.Value, ref) {
				warnings = append(warnings, fmt.Sprintf("%s: hides previous definition of %q, which may be dropped when using apply", p.Child("env").Index(i), e.Name))
			}
		}
	}
	return warnings
}

func warningsForPorts(spec *corev1.PodSpec, specPath *field.Path) []string {
	type portBlock struct {
		path *field.Path
		port corev1.ContainerPort
	}
	var warnings []string
	byPort := map[string][]portBlock{}
	visitContainers(spec, specPath, func(c *corev1.Container, p *field.Path) {
		for i, port := range c.Ports {
			portPath := p.Child("ports").Index(i)
			if port.HostIP != "" && port.HostPort == 0 {
				warnings = append(warnings, fmt.Sprintf("%s: hostIP set without hostPort: %+v", portPath, port))
			}
			key := fmt.Sprintf("%d/%s", port.ContainerPort, port.Protocol)
			for _, other := range byPort[key] {
				a, b := port.HostIP == "", other.port.HostIP == ""
				switch {
				case port.HostIP == other.port.HostIP && port.HostPort == other.port.HostPort:
					warnings = append(warnings, fmt.Sprintf("%s: duplicate port definition with %s", portPath, other.path))
				case port.HostPort == 0 || other.port.HostPort == 0:
					warnings = append(warnings, fmt.Sprintf("%s: overlapping port definition with %s", portPath, other.path))
				case port.HostPort == other.port.HostPort && (a || b) && !(a && b):
					warnings = append(warnings, fmt.Sprintf("%s: dangerously ambiguous port definition with %s", portPath, other.path))
				}
			}
			byPort[key] = append(byPort[key], portBlock{path: portPath, port: port})
		}
	})
	names := map[string]*field.Path{}
	visitContainers(spec, specPath, func(c *corev1.Container, p *field.Path) {
		for i, port := range c.Ports {
			if port.Name == "" {
				continue
			}
			portPath := p.Child("ports").Index(i)
			if other, found := names[port.Name]; found {
				warnings = append(warnings, fmt.Sprintf("%s: duplicate port name %q with %s, services and probes that select ports by name will use %s", portPath, port.Name, other, other))
			} else {
				names[port.Name] = portPath
			}
		}
	})
	return warnings
}

func warningsForPodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, path *field.Path) []string {
	var warnings []string
	for i, t := range required {
		if t.LabelSelector == nil {
			warnings = append(warnings, fmt.Sprintf("%s: a null labelSelector results in matching no pod", path.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i).Child("labelSelector")))
		}
	}
	for i, t := range preferred {
		if t.PodAffinityTerm.LabelSelector == nil {
			warnings = append(warnings, fmt.Sprintf("%s: a null labelSelector results in matching no pod", path.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm", "labelSelector")))
		}
	}
	return warnings
}

// sortedKeys makes warnings deterministic; upstream iterates the map directly.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
