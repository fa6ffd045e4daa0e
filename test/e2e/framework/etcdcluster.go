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
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
)

// EnvEtcdMember, when set, makes the e2e test binary run one etcd member
// (described by the JSON EtcdMemberSpec in it) instead of the tests: the
// HA tests need etcd members in processes of their own, and the etcd
// server module is what the binary already links.
const EnvEtcdMember = "E2E_ETCD_MEMBER"

// EtcdMemberSpec is one member of a multi-member etcd cluster.
type EtcdMemberSpec struct {
	Name           string
	Dir            string
	ClientURL      string
	PeerURL        string
	InitialCluster string
	// Fsync keeps etcd's fsync (tests turn it off; the benchmark keeps it,
	// as a production etcd and the standalone server's embedded one do).
	Fsync bool
	// QuotaBackendBytes is the backend quota; zero means 256 MiB.
	QuotaBackendBytes int64
}

// EtcdClusterOptions change the members StartEtcdClusterWith starts.
type EtcdClusterOptions struct {
	Fsync             bool
	QuotaBackendBytes int64
}

// RunEtcdMemberIfAsked runs the member EnvEtcdMember describes until
// SIGTERM or SIGINT and returns true, or returns false at once when the
// variable is not set. TestMain calls it first.
func RunEtcdMemberIfAsked() (ran bool, exitCode int) {
	raw := os.Getenv(EnvEtcdMember)
	if raw == "" {
		return false, 0
	}
	var spec EtcdMemberSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "etcd member: %s: %v\n", EnvEtcdMember, err)
		return true, 2
	}
	cfg := embed.NewConfig()
	cfg.Name = spec.Name
	cfg.Dir = spec.Dir
	client, _ := url.Parse(spec.ClientURL)
	peer, _ := url.Parse(spec.PeerURL)
	cfg.ListenClientUrls = []url.URL{*client}
	cfg.AdvertiseClientUrls = []url.URL{*client}
	cfg.ListenPeerUrls = []url.URL{*peer}
	cfg.AdvertisePeerUrls = []url.URL{*peer}
	cfg.InitialCluster = spec.InitialCluster
	cfg.InitialClusterToken = "e2e-ha"
	cfg.UnsafeNoFsync = !spec.Fsync
	cfg.LogLevel = "error"
	cfg.QuotaBackendBytes = 256 << 20
	if spec.QuotaBackendBytes > 0 {
		cfg.QuotaBackendBytes = spec.QuotaBackendBytes
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd member %s: %v\n", spec.Name, err)
		return true, 1
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-signals:
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd member %s: %v\n", spec.Name, err)
	}
	e.Close()
	return true, 0
}

// EtcdCluster is a multi-member etcd, one process per member, on loopback
// TCP.
type EtcdCluster struct {
	Members   []*Process
	Endpoints []string
}

// StartEtcdCluster starts n members (the running test binary with
// EnvEtcdMember) under dir, logs in logDir, and waits until the cluster
// serves a write. Ports are chosen free but can be taken by another
// process before a member binds them; then it starts over on new ports.
func StartEtcdCluster(ctx context.Context, dir, logDir string, n int) (*EtcdCluster, error) {
	return StartEtcdClusterWith(ctx, dir, logDir, n, EtcdClusterOptions{})
}

// StartEtcdClusterWith is StartEtcdCluster with opts.
func StartEtcdClusterWith(ctx context.Context, dir, logDir string, n int, opts EtcdClusterOptions) (*EtcdCluster, error) {
	var err error
	for attempt := range 3 {
		var c *EtcdCluster
		c, err = startEtcdCluster(ctx, filepath.Join(dir, strconv.Itoa(attempt)), logDir, n, opts)
		if err == nil {
			return c, nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
	return nil, err
}

func startEtcdCluster(ctx context.Context, dir, logDir string, n int, opts EtcdClusterOptions) (*EtcdCluster, error) {
	specs := make([]EtcdMemberSpec, n)
	var initial []string
	for i := range specs {
		clientPort, err := freePort()
		if err != nil {
			return nil, err
		}
		peerPort, err := freePort()
		if err != nil {
			return nil, err
		}
		specs[i] = EtcdMemberSpec{
			Name:      "m" + strconv.Itoa(i),
			Dir:       filepath.Join(dir, "m"+strconv.Itoa(i)),
			ClientURL: "http://127.0.0.1:" + strconv.Itoa(clientPort),
			PeerURL:   "http://127.0.0.1:" + strconv.Itoa(peerPort),
			Fsync:     opts.Fsync,

			QuotaBackendBytes: opts.QuotaBackendBytes,
		}
		initial = append(initial, specs[i].Name+"="+specs[i].PeerURL)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &EtcdCluster{}
	for i := range specs {
		specs[i].InitialCluster = strings.Join(initial, ",")
		raw, err := json.Marshal(specs[i])
		if err != nil {
			return nil, err
		}
		p, err := StartProcessEnv(logDir, "etcd-"+specs[i].Name, self, []string{EnvEtcdMember + "=" + string(raw)})
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Members = append(c.Members, p)
		c.Endpoints = append(c.Endpoints, specs[i].ClientURL)
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.Stop()
		return nil, err
	}
	defer client.Close()
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, p := range c.Members {
			if err := p.Exited(); err != nil {
				return false, err
			}
		}
		putCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, last = client.Put(putCtx, "/e2e-ha-ready", "yes")
		return last == nil, nil
	})
	if err != nil {
		c.Stop()
		return nil, fmt.Errorf("waiting for the %d-member etcd cluster: %w (last: %v)", n, err, last)
	}
	// Every member must see the same cluster of n.
	for _, ep := range c.Endpoints {
		one, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			c.Stop()
			return nil, err
		}
		resp, err := one.MemberList(ctx)
		one.Close()
		if err != nil || len(resp.Members) != n {
			c.Stop()
			return nil, fmt.Errorf("etcd member at %s: member list %v (%v), want %d members", ep, resp, err, n)
		}
	}
	return c, nil
}

// Stop stops every member.
func (c *EtcdCluster) Stop() {
	for _, p := range c.Members {
		p.Stop()
	}
}
