// Package explore is a seeded, in-process explorer of the plugin's decisions. On one fake clock
// it drives the plugin's jobs (ebs.Handoff, tracking.Snapshotter and Tracker, deleting.Deleter,
// restoring.Restorer and VolumeWatcher) through interleavings of Velero core (ItemBlock workers,
// reconciles in fresh plugin processes, Cancel at the item-operation timeout, deletions by the
// source cluster, a recovery cluster and garbage collection, restores, a server restart), the
// user's drill and orphan deletion (internal/drill, internal/audit), other installs and tools in
// the same account, and a faulty EC2
// (the simulator internal/testkit/ec2sim, reached through an in-memory transport that also
// injects throttling, 5xx answers, lost answers, IAM refusals and regions going down). After
// every step it checks the promises users rely on (see invariants.go).
//
// The scheduler is pgregory.net/rapid: it draws every choice, shrinks a failing run to a short
// trace and replays it from its seed (-rapid.seed). See internal/testkit/README.md, The explorer.
package explore
