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

package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Names KWOK and the scale tests agree on: a Node with the annotation is
// one KWOK plays the kubelet of; the taint keeps every other Pod off it.
const (
	KWOKNodeAnnotation = "kwok.x-k8s.io/node"
	KWOKNodeValue      = "fake"
	KWOKNodeLabel      = "type"
	KWOKNodeLabelValue = "kwok"
)

// KWOKToleration lets a Pod onto the simulated nodes.
var KWOKToleration = corev1.Toleration{Key: KWOKNodeAnnotation, Operator: corev1.TolerationOpEqual, Value: KWOKNodeValue, Effect: corev1.TaintEffectNoSchedule}

// ScaleBinaries are kube-scheduler (hack/build-e2e-bins.sh) and kwok
// (hack/build-scale-bins.sh), next to the other host binaries.
type ScaleBinaries struct {
	KubeScheduler string
	KWOK          string
}

// FindScaleBinaries locates kube-scheduler and kwok in E2E_BIN_DIR
// (default <repo>/_output/bin) and fails with the command that builds a
// missing one. An older host's own kube-scheduler (E2E_HOST_BIN_DIR, make
// compat-bins) is taken when it is there: a newer one waits for informers
// of APIs the host does not serve and never places a Pod.
func FindScaleBinaries(bins *Binaries) (*ScaleBinaries, error) {
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		dir = filepath.Join(bins.RepoRoot, "_output", "bin")
	}
	s := &ScaleBinaries{KubeScheduler: filepath.Join(dir, "kube-scheduler"), KWOK: filepath.Join(dir, "kwok")}
	if host := os.Getenv(EnvHostBinDir); host != "" {
		if st, err := os.Stat(filepath.Join(host, "kube-scheduler")); err == nil && !st.IsDir() {
			s.KubeScheduler = filepath.Join(host, "kube-scheduler")
		}
	}
	for bin, cmd := range map[string]string{s.KubeScheduler: "make e2e-bins", s.KWOK: "bash hack/build-scale-bins.sh"} {
		if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("%s is missing: build it with `%s`", bin, cmd)
		}
	}
	return s, nil
}

// StartKubeScheduler starts kube-scheduler as the admin user with the
// given client rate and further flags (e.g. --feature-gates) and waits
// until it is healthy. Stop stops it with the rest of the cluster.
func (c *Cluster) StartKubeScheduler(ctx context.Context, bin string, qps, burst int, extra ...string) (*Process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p, err := c.start("kube-scheduler", bin, append([]string{
		"--kubeconfig=" + c.AdminKubeconfig,
		"--authentication-kubeconfig=" + c.AdminKubeconfig,
		"--authorization-kubeconfig=" + c.AdminKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.Dir, "kube-scheduler"),
		"--leader-elect=false",
		"--kube-api-qps=" + strconv.Itoa(qps),
		"--kube-api-burst=" + strconv.Itoa(burst),
	}, extra...)...)
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{Host: "https://127.0.0.1:" + strconv.Itoa(port), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	if err := c.waitHealthy(ctx, p, cfg, cfg.Host+"/healthz", 2*time.Minute); err != nil {
		return nil, err
	}
	return p, nil
}

// StartKWOK starts kwok as the admin user with the given Stage files,
// managing the Nodes annotated KWOKNodeAnnotation=KWOKNodeValue. kwok's
// own clients have no rate limit.
func (c *Cluster) StartKWOK(bin string, stageFiles []string) (*Process, error) {
	args := []string{
		"--kubeconfig=" + c.AdminKubeconfig,
		"--manage-nodes-with-annotation-selector=" + KWOKNodeAnnotation + "=" + KWOKNodeValue,
		// One address per running Pod: a /24 would run out at 254.
		"--cidr=10.128.0.0/9",
	}
	for _, f := range stageFiles {
		args = append(args, "--config="+f)
	}
	return c.start("kwok", bin, args...)
}

// CreateKWOKNodes creates n simulated Nodes kwok-node-0…n-1 with room for
// any number of Pods, and waits until kwok has made every one Ready.
func (c *Cluster) CreateKWOKNodes(ctx context.Context, n int) error {
	// Two writes a Node: at the admin client's default rate (5 QPS) a
	// thousand Nodes would take minutes.
	unlimited := rest.CopyConfig(c.Admin)
	unlimited.QPS, unlimited.Burst = -1, 0
	client, err := kubernetes.NewForConfig(unlimited)
	if err != nil {
		return fmt.Errorf("creating the node client: %w", err)
	}
	for i := range n {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        "kwok-node-" + strconv.Itoa(i),
				Annotations: map[string]string{KWOKNodeAnnotation: KWOKNodeValue},
				Labels:      map[string]string{KWOKNodeLabel: KWOKNodeLabelValue, corev1.LabelHostname: "kwok-node-" + strconv.Itoa(i)},
			},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: KWOKNodeAnnotation, Value: KWOKNodeValue, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1k"), corev1.ResourceMemory: resource.MustParse("1Ti"), corev1.ResourcePods: resource.MustParse("1M")},
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1k"), corev1.ResourceMemory: resource.MustParse("1Ti"), corev1.ResourcePods: resource.MustParse("1M")},
			},
		}
		if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return fmt.Errorf("creating node %s: %w", node.Name, err)
		}
		// kube-apiserver's TaintNodesByCondition admission taints a new
		// Node not-ready; the node lifecycle controller, which would lift
		// it, does not run here (nor the heartbeats it would need). A
		// merge patch replaces the list whatever kwok writes meanwhile.
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": node.Spec.Taints}})
		if err != nil {
			return err
		}
		if _, err := client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("lifting the not-ready taint of node %s: %w", node.Name, err)
		}
	}
	var ready int
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Healthy(); err != nil {
			return false, err
		}
		nodes, err := c.AdminClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: KWOKNodeLabel + "=" + KWOKNodeLabelValue})
		if err != nil {
			return false, nil
		}
		ready = 0
		for _, node := range nodes.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d kwok nodes to be Ready (%d are): %w", n, ready, err)
	}
	return nil
}

// KWOKModuleDir is the directory of the KWOK module (at the version
// hack/tools/kwok/go.mod pins) in the module cache, which holds KWOK's own
// Stage files.
func KWOKModuleDir(root string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok")
	cmd.Dir = filepath.Join(root, "hack", "tools", "kwok")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return "", fmt.Errorf("locating sigs.k8s.io/kwok in the module cache (run hack/build-scale-bins.sh): %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}
