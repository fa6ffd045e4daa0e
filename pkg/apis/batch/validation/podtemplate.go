package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The pod template rules below are the part of kube-apiserver's core
// ValidatePodTemplateSpec that Job validation depends on, with the same field
// paths, error types and messages: containers, their names, images, ports,
// resources and defaulted enums, the pod's restart and DNS policies, labels,
// annotations and node selector. The rest of core pod validation (volumes,
// probes, env, security contexts, affinity, ...) is not reproduced here.

var (
	supportedPodRestartPolicies = []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}
	// In the order upstream prints them.
	supportedPortProtocols              = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}
	supportedDNSPolicies                = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	supportedPullPolicies               = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	supportedTerminationMessagePolicies = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}

	standardResourceNames = sets.New[corev1.ResourceName](
		corev1.ResourceCPU,
		corev1.ResourceMemory,
		corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU,
		corev1.ResourceRequestsMemory,
		corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU,
		corev1.ResourceLimitsMemory,
		corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods,
		corev1.ResourceQuotas,
		corev1.ResourceServices,
		corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets,
		corev1.ResourceConfigMaps,
		corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceStorage,
		corev1.ResourceRequestsStorage,
		corev1.ResourceServicesNodePorts,
		corev1.ResourceServicesLoadBalancers,
	)
	standardContainerResourceNames = sets.New[corev1.ResourceName](
		corev1.ResourceCPU,
		corev1.ResourceMemory,
		corev1.ResourceEphemeralStorage,
	)
	integerResourceNames = sets.New[corev1.ResourceName](
		corev1.ResourcePods,
		corev1.ResourceQuotas,
		corev1.ResourceServices,
		corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets,
		corev1.ResourceConfigMaps,
		corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceServicesNodePorts,
		corev1.ResourceServicesLoadBalancers,
	)
)

// validatePodTemplateSpec validates the pod template of a Job. fldPath is the
// template's path (spec.template).
func validatePodTemplateSpec(template *corev1.PodTemplateSpec, fldPath *field.Path, _ PodTemplateValidationOptions) field.ErrorList {
	allErrs := metav1validation.ValidateLabels(template.Labels, fldPath.Child("labels"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(template.Annotations, fldPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodSpec(&template.Spec, fldPath.Child("spec"))...)
	if len(template.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return allErrs
}

func validatePodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	allErrs = append(allErrs, validateContainers(spec.Containers, fldPath.Child("containers"))...)
	allErrs = append(allErrs, validateInitContainers(spec.InitContainers, spec.Containers, fldPath.Child("initContainers"))...)
	allErrs = append(allErrs, validatePodRestartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	allErrs = append(allErrs, validateEnum(spec.DNSPolicy, supportedDNSPolicies, fldPath.Child("dnsPolicy"))...)
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	return allErrs
}

// validatePodRestartPolicy is the pod's own rule; the Job narrows it further.
func validatePodRestartPolicy(policy corev1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	return validateEnum(policy, supportedPodRestartPolicies, fldPath)
}

// validateEnum is core's rule for a defaulted enum field: Required when
// empty, NotSupported when not one of the values.
func validateEnum[T ~string](value T, supported []T, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !slices.Contains(supported, value) {
		return field.ErrorList{field.NotSupported(fldPath, value, supported)}
	}
	return nil
}

func validateContainers(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		ctr := &containers[i]
		path := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(ctr, path)...)
		// Collisions with init container names are reported on the init container.
		if names.Has(ctr.Name) {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), ctr.Name))
		} else {
			names.Insert(ctr.Name)
		}
	}
	// Host ports must not collide across the regular containers, which run together.
	allErrs = append(allErrs, checkHostPortConflicts(containers, fldPath)...)
	return allErrs
}

func validateInitContainers(containers, regular []corev1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range regular {
		names.Insert(regular[i].Name)
	}
	for i := range containers {
		ctr := &containers[i]
		path := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(ctr, path)...)
		if names.Has(ctr.Name) {
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), ctr.Name))
		} else if ctr.Name != "" {
			names.Insert(ctr.Name)
		}
		// Init containers run one by one, so only ports within one can collide.
		allErrs = append(allErrs, checkHostPortConflicts(containers[i:i+1], fldPath)...)
	}
	return allErrs
}

func validateContainerCommon(ctr *corev1.Container, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	namePath := path.Child("name")
	if ctr.Name == "" {
		allErrs = append(allErrs, field.Required(namePath, ""))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Label(ctr.Name) {
			allErrs = append(allErrs, field.Invalid(namePath, ctr.Name, msg))
		}
	}
	// Upstream checks the length only: " " is a meaningful image in some templates.
	if len(ctr.Image) == 0 {
		allErrs = append(allErrs, field.Required(path.Child("image"), ""))
	}
	allErrs = append(allErrs, validateEnum(ctr.TerminationMessagePolicy, supportedTerminationMessagePolicies, path.Child("terminationMessagePolicy"))...)
	allErrs = append(allErrs, validateContainerPorts(ctr.Ports, path.Child("ports"))...)
	allErrs = append(allErrs, validateEnum(ctr.ImagePullPolicy, supportedPullPolicies, path.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validateResourceRequirements(&ctr.Resources, path.Child("resources"))...)
	return allErrs
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		idxPath := fldPath.Index(i)
		if port.Name != "" {
			if msgs := utilvalidation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("hostPort"), port.HostPort, msg))
			}
		}
		allErrs = append(allErrs, validateEnum(port.Protocol, supportedPortProtocols, idxPath.Child("protocol"))...)
	}
	return allErrs
}

func checkHostPortConflicts(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for ci := range containers {
		portsPath := fldPath.Index(ci).Child("ports")
		for pi, port := range containers[ci].Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				allErrs = append(allErrs, field.Duplicate(portsPath.Index(pi).Child("hostPort"), key))
			} else {
				seen.Insert(key)
			}
		}
	}
	return allErrs
}

func validateResourceRequirements(req *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath := fldPath.Child("limits")
	reqPath := fldPath.Child("requests")
	var limCPUOrMemory, reqCPUOrMemory, limHugePages, reqHugePages bool
	for name, quantity := range req.Limits {
		path := limPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, path)...)
		allErrs = append(allErrs, validateResourceQuantityValue(name, quantity, path)...)
		limHugePages = limHugePages || isHugePageResourceName(name)
		limCPUOrMemory = limCPUOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
	}
	for name, quantity := range req.Requests {
		path := reqPath.Key(string(name))
		allErrs = append(allErrs, validateContainerResourceName(name, path)...)
		allErrs = append(allErrs, validateResourceQuantityValue(name, quantity, path)...)
		if limit, ok := req.Limits[name]; ok {
			// Resources that cannot be overcommitted need requests equal to limits.
			if quantity.Cmp(limit) != 0 && !isOvercommitAllowed(name) {
				allErrs = append(allErrs, field.Invalid(reqPath, quantity.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			} else if quantity.Cmp(limit) > 0 {
				allErrs = append(allErrs, field.Invalid(reqPath, quantity.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !isOvercommitAllowed(name) {
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		reqHugePages = reqHugePages || isHugePageResourceName(name)
		reqCPUOrMemory = reqCPUOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
	}
	if !limCPUOrMemory && !reqCPUOrMemory && (limHugePages || reqHugePages) {
		allErrs = append(allErrs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return allErrs
}

func validateResourceQuantityValue(name corev1.ResourceName, value resource.Quantity, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if value.Cmp(resource.Quantity{}) < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, value.String(), apimachineryvalidation.IsNegativeErrorMsg))
	}
	if isIntegerResourceName(name) && value.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, value, "must be an integer"))
	}
	return allErrs
}

func validateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(string(name)) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	qualified := strings.Contains(string(name), "/")
	if len(allErrs) == 0 && !qualified && !standardResourceNames.Has(name) && !isQuotaHugePageResourceName(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
	}
	if !qualified {
		if !standardContainerResourceNames.Has(name) && !isHugePageResourceName(name) {
			allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNativeResource(name) && !isExtendedResourceName(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return allErrs
}

func isHugePageResourceName(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isQuotaHugePageResourceName(name corev1.ResourceName) bool {
	return isHugePageResourceName(name) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// isNativeResource reports whether name is in the kubernetes.io/ namespace;
// unprefixed names implicitly are.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

func isExtendedResourceName(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	// The quota name derived from it must be a qualified name too.
	return len(utilvalidation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePageResourceName(name)
}

func isIntegerResourceName(name corev1.ResourceName) bool {
	return integerResourceNames.Has(name) || isExtendedResourceName(name)
}

// validatePodResourceUpdatesOnly allows a suspended Job's template to change
// only the resources of its containers and init containers (matched by
// position and name).
func validatePodResourceUpdatesOnly(spec, oldSpec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	merged := oldSpec.DeepCopy()
	if len(spec.Containers) == len(merged.Containers) {
		for i := range spec.Containers {
			if merged.Containers[i].Name == spec.Containers[i].Name {
				merged.Containers[i].Resources = spec.Containers[i].Resources
			}
		}
	}
	if len(spec.InitContainers) == len(merged.InitContainers) {
		for i := range spec.InitContainers {
			if merged.InitContainers[i].Name == spec.InitContainers[i].Name {
				merged.InitContainers[i].Resources = spec.InitContainers[i].Resources
			}
		}
	}
	return apimachineryvalidation.ValidateImmutableField(*spec, *merged, fldPath)
}
