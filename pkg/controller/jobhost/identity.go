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

package jobhost

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path"
	"regexp"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
)

// The server identity names one batch-apiserver: one storage (an etcd and
// a prefix in it), shared by the replicas of one deployment. Its Job
// controller labels the Pods it creates with it and touches no other Pods,
// and its Lease is named after it, so that two servers on one host cluster
// leave each other alone.
const (
	// serverIdentityKeyName is the identity's key under the storage
	// prefix, beside the API's own keys (<prefix>/batch.jobs.dev/jobs/...).
	serverIdentityKeyName = "batch.jobs.dev/server-identity"

	// identityAttemptTimeout bounds one attempt to read or create the
	// identity; identityTimeout bounds all of them, after which the server
	// fails to start.
	identityAttemptTimeout = 10 * time.Second
	identityTimeout        = time.Minute
	identityRetryInterval  = time.Second
	// etcdDialTimeout is how long the client waits for a connection.
	etcdDialTimeout = 20 * time.Second
)

// errBadServerIdentity is wrapped by the error about a stored identity
// that is not one: trying again would not help.
var errBadServerIdentity = errors.New("bad server identity")

// serverIdentityRE is the form of an identity: a lowercase UUID, which is
// a valid label value and fits in a Lease name.
var serverIdentityRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// serverIdentityKey is the etcd key of the identity under the storage
// prefix, joined as the storage joins its own keys.
func serverIdentityKey(prefix string) string {
	return path.Join("/", prefix, serverIdentityKeyName)
}

// ensureServerIdentity returns the identity stored at key, first storing
// a new random one if there is none. It reads and creates in one
// transaction, so that replicas starting together on the same etcd agree
// on the first one written. created says whether this call stored it.
func ensureServerIdentity(ctx context.Context, kv clientv3.KV, key string) (identity string, created bool, err error) {
	fresh := string(uuid.NewUUID())
	resp, err := kv.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, fresh)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return "", false, fmt.Errorf("reading or creating the server identity at etcd key %s: %w", key, err)
	}
	if resp.Succeeded {
		return fresh, true, nil
	}
	if len(resp.Responses) != 1 || resp.Responses[0].GetResponseRange() == nil || len(resp.Responses[0].GetResponseRange().Kvs) != 1 {
		return "", false, fmt.Errorf("reading the server identity at etcd key %s: the key exists but could not be read", key)
	}
	stored := string(resp.Responses[0].GetResponseRange().Kvs[0].Value)
	if !serverIdentityRE.MatchString(stored) {
		return "", false, fmt.Errorf("%w: etcd key %s holds %q, not a lowercase UUID; delete the key to get a new identity "+
			"(the Pods of running Jobs, labelled with the old one, are then no longer seen)", errBadServerIdentity, key, stored)
	}
	return stored, false, nil
}

// newEtcdClient returns a client of the etcd the storage uses: member in
// process when set, else the servers and TLS files of transportConfig, as
// the storage dials them.
func newEtcdClient(member *embeddedetcd.Server, transportConfig storagebackend.TransportConfig) (*clientv3.Client, error) {
	if member != nil {
		return member.InProcessClient(), nil
	}
	if len(transportConfig.ServerList) == 0 {
		return nil, errors.New("no etcd servers")
	}
	var tlsConfig *tls.Config
	// Without any TLS file the connection is plain, as the storage's.
	if transportConfig.CertFile != "" || transportConfig.KeyFile != "" || transportConfig.TrustedCAFile != "" {
		info := transport.TLSInfo{CertFile: transportConfig.CertFile, KeyFile: transportConfig.KeyFile, TrustedCAFile: transportConfig.TrustedCAFile}
		var err error
		if tlsConfig, err = info.ClientConfig(); err != nil {
			return nil, fmt.Errorf("loading the etcd client TLS files: %w", err)
		}
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   transportConfig.ServerList,
		DialTimeout: etcdDialTimeout,
		TLS:         tlsConfig,
		// The errors come back to the caller; etcd's client would log
		// each failed connection attempt as well.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating etcd client for %v: %w", transportConfig.ServerList, err)
	}
	return client, nil
}

// ServerIdentity reads (creating it on first start) the identity of the
// server from its storage, retrying for up to identityTimeout while etcd
// cannot be reached. It reaches etcd through member, the embedded etcd, when
// set, else as storage does.
func ServerIdentity(ctx context.Context, member *embeddedetcd.Server, storage storagebackend.Config) (string, error) {
	logger := klog.FromContext(ctx)
	client, err := newEtcdClient(member, storage.Transport)
	if err != nil {
		return "", fmt.Errorf("reading the server identity: %w", err)
	}
	defer func() {
		if err := client.Close(); err != nil {
			logger.V(2).Info("Closing the etcd client of the server identity", "err", err)
		}
	}()
	key := serverIdentityKey(storage.Prefix)
	var identity string
	var created bool
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, identityRetryInterval, identityTimeout, true, func(ctx context.Context) (bool, error) {
		attemptCtx, cancel := context.WithTimeout(ctx, identityAttemptTimeout)
		defer cancel()
		identity, created, lastErr = ensureServerIdentity(attemptCtx, client, key)
		if errors.Is(lastErr, errBadServerIdentity) {
			return false, lastErr
		}
		if lastErr != nil {
			logger.Info("Reading the server identity from etcd; retrying", "err", lastErr)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if lastErr != nil {
			err = lastErr
		}
		return "", fmt.Errorf("reading the server identity: %w", err)
	}
	logger.Info("Server identity", "identity", identity, "etcdKey", key, "new", created)
	return identity, nil
}
