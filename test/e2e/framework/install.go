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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// DeployDir is the kustomize base `kubectl apply -k` installs.
const DeployDir = "artifacts/deploy"

// RenderDeploy returns `kubectl kustomize artifacts/deploy`: what
// `kubectl apply -k` would apply.
func (c *Cluster) RenderDeploy() (string, error) {
	res, err := c.Kubectl().Run("kustomize", c.Artifact(DeployDir))
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("kubectl kustomize %s: %s", DeployDir, res.Combined())
	}
	return res.Stdout, nil
}

// DeployedContainer is the batch-apiserver container of the rendered
// Deployment.
type DeployedContainer struct {
	Namespace string
	Args      []string
	// Env holds the container's variables, a fieldRef to
	// metadata.namespace resolved to the Deployment's namespace.
	Env []string
	// EmptyDirMounts are the mount paths of the container's emptyDir
	// volumes.
	EmptyDirMounts []string
}

// DeployedBatchAPIServer finds Deployment batch-system/batch-apiserver in
// rendered and returns its container.
func DeployedBatchAPIServer(rendered string) (*DeployedContainer, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no Deployment %s/%s in the rendered %s", Namespace, ServiceName, DeployDir)
		} else if err != nil {
			return nil, err
		}
		var meta metav1.TypeMeta
		if err := json.Unmarshal(raw, &meta); err != nil || meta.Kind != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, err
		}
		if d.Namespace != Namespace || d.Name != ServiceName {
			continue
		}
		return deployedContainer(&d)
	}
}

func deployedContainer(d *appsv1.Deployment) (*DeployedContainer, error) {
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		return nil, fmt.Errorf("deployment %s/%s has %d containers, want 1", d.Namespace, d.Name, len(spec.Containers))
	}
	ctr := spec.Containers[0]
	out := &DeployedContainer{Namespace: d.Namespace, Args: ctr.Args}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			out.Env = append(out.Env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			out.Env = append(out.Env, e.Name+"="+d.Namespace)
		default:
			return nil, fmt.Errorf("env %s: only values and the namespace fieldRef can be run as a process", e.Name)
		}
	}
	emptyDirs := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			emptyDirs[v.Name] = true
		}
	}
	for _, m := range ctr.VolumeMounts {
		if !emptyDirs[m.Name] {
			return nil, fmt.Errorf("volume %s: only emptyDir volumes can be run as a process", m.Name)
		}
		out.EmptyDirMounts = append(out.EmptyDirMounts, m.MountPath)
	}
	return out, nil
}

// ServiceAccountKubeconfig writes, once, a kubeconfig of the
// ServiceAccount the Deployment runs as and returns its path: what a Pod
// gets as its in-cluster configuration.
func (c *Cluster) ServiceAccountKubeconfig() (string, error) {
	if c.batchKubeconfig != "" {
		return c.batchKubeconfig, nil
	}
	res, err := c.Kubectl().Run("create", "token", ServiceAccountName, "-n", Namespace, "--duration=24h")
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("creating a token for %s/%s: %s", Namespace, ServiceAccountName, res.Combined())
	}
	path := filepath.Join(c.Dir, "batch-apiserver-sa.kubeconfig")
	if err := c.writeHostKubeconfig(path, clientcmdapi.AuthInfo{Token: strings.TrimSpace(res.Stdout)}); err != nil {
		return "", err
	}
	c.batchKubeconfig = path
	return path, nil
}

// ProcessArgs turns the container's arguments into those of a local
// process on this host, changing only what a Pod has and a process here
// has not, and says nothing else:
//   - --etcd-servers: etcdServers, an etcd the test runs in its own process
//     (no container runtime runs the etcd StatefulSet);
//   - --bind-address and --secure-port: 127.0.0.1 and the port the
//     ExternalName Service stands for (no Pod network);
//   - a path under an emptyDir mount: the same path under root;
//   - --kubeconfig, --authentication-kubeconfig, --authorization-kubeconfig:
//     the ServiceAccount's kubeconfig, in place of the in-cluster
//     configuration a Pod gets.
func (c *Cluster) ProcessArgs(ctr *DeployedContainer, root string, etcdServers []string) ([]string, error) {
	kubeconfig, err := c.ServiceAccountKubeconfig()
	if err != nil {
		return nil, err
	}
	var args []string
	for _, a := range ctr.Args {
		name, value, hasValue := strings.Cut(a, "=")
		if !hasValue { // a bare boolean flag
			args = append(args, a)
			continue
		}
		switch name {
		case "--etcd-servers":
			value = strings.Join(etcdServers, ",")
		case "--bind-address":
			value = "127.0.0.1"
		case "--secure-port":
			value = strconv.Itoa(c.BatchPort)
		default:
			for _, mount := range ctr.EmptyDirMounts {
				if value == mount || strings.HasPrefix(value, mount+"/") {
					value = filepath.Join(root, value)
				}
			}
		}
		args = append(args, name+"="+value)
	}
	for _, flag := range []string{"--kubeconfig", "--authentication-kubeconfig", "--authorization-kubeconfig"} {
		args = append(args, flag+"="+kubeconfig)
	}
	return args, nil
}

// StartDeployedBatchAPIServer starts batch-apiserver as a process with
// args (ProcessArgs) and env, as the ServiceAccount. It does not wait:
// the caller waits for what it wants to see (the APIServices Available).
func (c *Cluster) StartDeployedBatchAPIServer(name string, args, env []string) (*Process, error) {
	p, err := StartProcessEnv(c.LogDir, name, c.Bins.BatchAPIServer, env, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// PointServiceAtLocalHost replaces the installed Service by the
// ExternalName Service of 127.0.0.1 and the APIServices' port by the local
// server's: the host has no Pod network to reach a Deployment through. It
// touches nothing else of the APIServices, their caBundle least of all.
func (c *Cluster) PointServiceAtLocalHost(ctx context.Context) error {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: Namespace},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "127.0.0.1",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(c.BatchPort)}},
		},
	}
	services := c.AdminClient.CoreV1().Services(Namespace)
	if err := services.Delete(ctx, ServiceName, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("deleting the installed Service: %w", err)
	}
	if _, err := services.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the ExternalName Service: %w", err)
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"service":{"port":%d}}}`, c.BatchPort))
	for _, name := range APIServiceNames {
		if _, err := c.Dynamic.Resource(apiServiceGVR).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("pointing APIService %s at port %d: %w", name, c.BatchPort, err)
		}
	}
	return nil
}

// WaitAPIServicesAvailable waits until both APIServices are Available.
func (c *Cluster) WaitAPIServicesAvailable(ctx context.Context) error {
	return c.waitAPIServicesAvailable(ctx)
}

// APIServiceCABundle returns the decoded caBundle of an APIService.
func (c *Cluster) APIServiceCABundle(ctx context.Context, name string) ([]byte, error) {
	obj, err := c.Dynamic.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(obj.Object["spec"])
	if err != nil {
		return nil, err
	}
	var spec struct {
		CABundle []byte `json:"caBundle"`
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&spec); err != nil {
		return nil, err
	}
	return spec.CABundle, nil
}

// FreePort returns a TCP port of 127.0.0.1 that nothing listens on.
func FreePort() (int, error) { return freePort() }

// TLSEtcd is a single etcd member in the test process serving clients over
// mutual TLS, as the StatefulSet's members do, from the certificate files
// in pki (ca.crt, tls.crt, tls.key: where the members mount the Secret).
type TLSEtcd struct {
	URL  string
	etcd *embed.Etcd
}

// StartTLSEtcd starts the member on 127.0.0.1:port with its data in dir.
func StartTLSEtcd(dir, pki string, port int) (*TLSEtcd, error) {
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "https", Host: "127.0.0.1:" + strconv.Itoa(port)}
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(peerPort)}
	cfg := embed.NewConfig()
	cfg.Name = "etcd-0"
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile:       filepath.Join(pki, "tls.crt"),
		KeyFile:        filepath.Join(pki, "tls.key"),
		TrustedCAFile:  filepath.Join(pki, "ca.crt"),
		ClientCertAuth: true,
	}
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the TLS etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		return nil, errors.New("the TLS etcd did not become ready within a minute")
	}
	return &TLSEtcd{URL: clientURL.String(), etcd: e}, nil
}

// Stop stops the member.
func (e *TLSEtcd) Stop() { e.etcd.Close() }
