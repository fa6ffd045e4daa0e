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

package embeddedetcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	grpccodes "google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
)

// ClientSendLimit is the largest request the API server's etcd client
// sends over gRPC (clientv3's default MaxCallSendMsgSize). The in-process
// client keeps it, so that what can be stored does not depend on how the
// server reaches its etcd.
const ClientSendLimit = 2 << 20

// InProcessStorage wraps getter so that the storage it configures talks
// to this member through function calls (etcd's v3client) instead of gRPC
// over the member's socket: no HTTP/2 framing, no protobuf marshalling of
// requests and responses, no second copy of every watch event. Everything
// else is what getter builds: the same codec, prefix, transformer, watch
// cache and compaction. watchCache says whether getter's storage is
// cached (--watch-cache).
//
// The member must outlive the server: a member that stops takes the
// storage with it, where a gRPC client would wait for it to come back.
func (s *Server) InProcessStorage(getter generic.RESTOptionsGetter, watchCache func(schema.GroupResource) bool) generic.RESTOptionsGetter {
	return &inProcessGetter{RESTOptionsGetter: getter, member: s, watchCache: watchCache}
}

// InProcessClient returns an etcd client that calls this member through
// function calls, as InProcessStorage's storage does, for the server's own
// keys outside the API's storage. The caller closes it; the member must
// outlive it.
func (s *Server) InProcessClient() *clientv3.Client {
	return v3client.New(s.etcd.Server)
}

type inProcessGetter struct {
	generic.RESTOptionsGetter
	member     *Server
	watchCache func(schema.GroupResource) bool

	mu        sync.Mutex
	client    *kubernetes.Client
	compactor stoppableCompactor
	users     int
}

// stoppableCompactor is what etcd3.StartCompactorPerEndpoint returns.
type stoppableCompactor interface {
	etcd3.Compactor
	Stop()
}

// GetRESTOptions returns getter's options with a decorator that builds the
// storage on the in-process client.
func (g *inProcessGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	cached := g.watchCache(resource)
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
		getAttrsFunc storage.AttrFunc, triggerFuncs storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		raw, destroyRaw, err := g.rawStorage(config, newFunc, newListFunc, resourcePrefix)
		if err != nil || !cached {
			return raw, destroyRaw, err
		}
		// What genericregistry.StorageWithCacher does on the storage it
		// dials itself.
		cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:             raw,
			Versioner:           storage.APIObjectVersioner{},
			GroupResource:       config.GroupResource,
			EventsHistoryWindow: config.EventsHistoryWindow,
			ResourcePrefix:      resourcePrefix,
			KeyFunc:             keyFunc,
			NewFunc:             newFunc,
			NewListFunc:         newListFunc,
			GetAttrsFunc:        getAttrsFunc,
			IndexerFuncs:        triggerFuncs,
			Indexers:            indexers,
			Codec:               config.Codec,
		})
		if err != nil {
			destroyRaw()
			return nil, func() {}, err
		}
		delegator := cacherstorage.NewCacheDelegator(cacher, raw)
		var once sync.Once
		return delegator, func() {
			once.Do(func() {
				delegator.Stop()
				cacher.Stop()
				destroyRaw()
			})
		}, nil
	}
	return opts, nil
}

// rawStorage is factory.Create's etcd3 storage on the in-process client.
func (g *inProcessGetter) rawStorage(c *storagebackend.ConfigForResource, newFunc, newListFunc func() runtime.Object, resourcePrefix string) (storage.Interface, factory.DestroyFunc, error) {
	client, compactor := g.acquire(c.CompactionInterval)
	transformer := c.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	decoder := etcd3.NewDefaultDecoder(c.Codec, versioner)
	unsafeDeletion := utilfeature.DefaultFeatureGate.Enabled(genericfeatures.AllowUnsafeMalformedObjectDeletion)
	if unsafeDeletion {
		transformer = etcd3.WithCorruptObjErrorHandlingTransformer(transformer)
		decoder = etcd3.WithCorruptObjErrorHandlingDecoder(decoder)
	}
	var comp etcd3.Compactor
	if compactor != nil {
		comp = compactor
	}
	store, err := etcd3.New(client, comp, c.Codec, newFunc, newListFunc, c.Prefix, resourcePrefix, c.GroupResource, transformer, c.LeaseManagerConfig, decoder, versioner)
	if err != nil {
		g.release()
		return nil, nil, fmt.Errorf("etcd3 storage for %s: %w", c.GroupResource, err)
	}
	var once sync.Once
	destroy := func() {
		once.Do(func() {
			store.Close()
			g.release()
		})
	}
	var s storage.Interface = store
	if unsafeDeletion {
		s = etcd3.NewStoreWithUnsafeCorruptObjectDeletion(s, c.GroupResource)
	}
	return s, destroy, nil
}

// acquire returns the shared in-process client and compactor, creating
// them for the first storage.
func (g *inProcessGetter) acquire(compactionInterval time.Duration) (*kubernetes.Client, stoppableCompactor) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.client == nil {
		g.client = newInProcessClient(v3client.New(g.member.etcd.Server))
		// The storage checks RequestWatchProgress (which streaming lists
		// need) per endpoint; the in-process client has none.
		etcdfeature.DefaultFeatureSupportChecker.CheckClient(g.client.Ctx(), inProcessEndpoint{g.client.Client}, storage.RequestWatchProgress)
		if compactionInterval > 0 {
			g.compactor = etcd3.StartCompactorPerEndpoint(g.client.Client, compactionInterval)
		}
	}
	g.users++
	return g.client, g.compactor
}

// release stops the client and compactor when the last storage is gone.
func (g *inProcessGetter) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.users--
	if g.users > 0 || g.client == nil {
		return
	}
	if g.compactor != nil {
		g.compactor.Stop()
		g.compactor = nil
	}
	_ = g.client.Close()
	g.client = nil
}

// inProcessEndpoint names the in-process client's only endpoint for the
// storage's feature checks.
type inProcessEndpoint struct{ *clientv3.Client }

// Endpoints returns the one name Status answers for.
func (e inProcessEndpoint) Endpoints() []string { return []string{"in-process"} }

// newInProcessClient is kubernetes.New on an existing client, with the
// latency metrics of factory.Create and ClientSendLimit.
func newInProcessClient(c *clientv3.Client) *kubernetes.Client {
	c.KV = etcd3.NewETCDLatencyTracker(c.KV)
	kc := &kubernetes.Client{Client: c}
	kc.Kubernetes = sendLimited{Interface: kc, limit: ClientSendLimit}
	return kc
}

// sendLimited refuses a put larger than limit as clientv3 over gRPC does,
// with the same error.
type sendLimited struct {
	kubernetes.Interface
	limit int
}

// OptimisticPut puts value under key unless the transaction would be
// larger than the limit.
func (s sendLimited) OptimisticPut(ctx context.Context, key string, value []byte, expectedRevision int64, opts kubernetes.PutOptions) (kubernetes.PutResponse, error) {
	if size := optimisticPutSize(key, value, expectedRevision, opts); size > s.limit {
		return kubernetes.PutResponse{}, grpcstatus.Errorf(grpccodes.ResourceExhausted, "trying to send message larger than max (%d vs. %d)", size, s.limit)
	}
	return s.Interface.OptimisticPut(ctx, key, value, expectedRevision, opts)
}

// optimisticPutSize is the size of the TxnRequest kubernetes.Client's
// OptimisticPut sends.
func optimisticPutSize(key string, value []byte, expectedRevision int64, opts kubernetes.PutOptions) int {
	txn := &pb.TxnRequest{
		Compare: []*pb.Compare{{
			Key: []byte(key), Target: pb.Compare_MOD, Result: pb.Compare_EQUAL,
			TargetUnion: &pb.Compare_ModRevision{ModRevision: expectedRevision},
		}},
		Success: []*pb.RequestOp{{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{
			Key: []byte(key), Value: value, Lease: int64(opts.LeaseID),
		}}}},
	}
	if opts.GetOnFailure {
		txn.Failure = []*pb.RequestOp{{Request: &pb.RequestOp_RequestRange{RequestRange: &pb.RangeRequest{Key: []byte(key)}}}}
	}
	return proto.Size(txn)
}
