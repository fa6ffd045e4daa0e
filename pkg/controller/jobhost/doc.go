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

// Package jobhost hosts the embedded Job controller in a batch-apiserver
// process: what the server does around the controller rather than in it,
// as kube-controller-manager's command keeps the hosting of its controllers
// apart from pkg/controller/job. It holds
//
//   - the controller's flags (Options) and the decision whether it runs
//     (NewPlan);
//   - the server identity, kept in the server's own storage, that labels
//     the controller's Pods and names its Lease (ServerIdentity);
//   - the runner (Start): the host cluster's clients and their budgets,
//     the informers, leader election, and the post-start hook that starts
//     the controller against the server's own API in process;
//   - the migration from servers before the server identity (the shared
//     legacy Lease, Pods without the identity label).
package jobhost
