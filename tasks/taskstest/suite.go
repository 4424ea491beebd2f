// Package taskstest is the conformance suite of tasks.Store: every store
// runs the same tests, so that a Manager behaves the same on any of them.
// It is imported only by tests:
//
//	func TestStore(t *testing.T) {
//		taskstest.Run(t, func(t testing.TB, limits tasks.Limits) tasks.Store {
//			s := mystore.New(limits)
//			t.Cleanup(s.Close)
//			return s
//		})
//	}
//
// A store that replicas share runs RunShared instead, which gives the tests
// of replicas a Store for each.
//
// The suite is the Manager's behaviour (lifecycle, limits, ages, listing,
// streams) on the store under test, and direct tests of the Store contract.
// Time is a fake clock that moves only when a test says so, far from the
// wall clock: a store must take "now" only from its arguments (Sweep's now,
// Record.Updated). Events may reach subscribers after Update returns; the
// tests wait for them and never sleep.
package taskstest

import (
	"slices"
	"testing"

	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// Factory returns a new, empty store within limits for one test, and
// registers its own cleanup on t.
type Factory func(t testing.TB, limits tasks.Limits) tasks.Store

// Replicas returns n Stores on one new, empty store within limits, one for
// each of n replicas that share it (for Redis: n Stores on the same keys),
// and registers their cleanup on t.
type Replicas func(t testing.TB, limits tasks.Limits, n int) []tasks.Store

// Run runs every conformance test as a subtest of t, each on stores made by
// newStore: stores that live in one process, so that the tests of
// replicas give each replica's Manager the same store.
func Run(t *testing.T, newStore Factory) {
	RunShared(t, func(t testing.TB, limits tasks.Limits, n int) []tasks.Store {
		return slices.Repeat([]tasks.Store{newStore(t, limits)}, n)
	})
}

// RunShared runs every conformance test as a subtest of t, on a store that
// replicas share, each replica's Manager on a Store of its own made by
// newReplicas.
func RunShared(t *testing.T, newReplicas Replicas) {
	s := &suite{newReplicas: newReplicas}
	for _, test := range []struct {
		name string
		fn   func(*testing.T)
	}{
		// The Manager's lifecycle (manager.go).
		{"StartNewTask", s.TestStartNewTask},
		{"SetStatusTransitions", s.TestSetStatusTransitions},
		{"SetStatusUnknownTask", s.TestSetStatusUnknownTask},
		{"SetStatusMessageAndTimestamp", s.TestSetStatusMessageAndTimestamp},
		{"Continue", s.TestContinue},
		{"HistoryLength", s.TestHistoryLength},
		{"SnapshotIsolation", s.TestSnapshotIsolation},
		{"AddArtifact", s.TestAddArtifact},
		{"ArtifactChunks", s.TestArtifactChunks},
		{"OwnerIsolation", s.TestOwnerIsolation},
		{"ContextsPerOwner", s.TestContextsPerOwner},
		{"CancelDuringRun", s.TestCancelDuringRun},
		{"CancelStates", s.TestCancelStates},
		{"FinishEndsRun", s.TestFinishEndsRun},
		{"RunsOfOneTask", s.TestRunsOfOneTask},
		// Messages sent again (resend.go).
		{"ResentNewTask", s.TestResentNewTask},
		{"ResentOtherContent", s.TestResentOtherContent},
		{"ResentFollowUp", s.TestResentFollowUp},
		{"ResentScopes", s.TestResentScopes},
		{"ResentConcurrently", s.TestResentConcurrently},
		{"ResentForgottenWithTask", s.TestResentForgottenWithTask},
		{"ResentAfterEviction", s.TestResentAfterEviction},
		{"ResentKeysPerCaller", s.TestResentKeysPerCaller},
		{"ResentWindowSetting", s.TestResentWindowSetting},
		// Push notification configs (push.go).
		{"PushConfigs", s.TestPushConfigs},
		{"PushConfigsOnEndedTasks", s.TestPushConfigsOnEndedTasks},
		{"PushConfigBytesGivenBack", s.TestPushConfigBytesGivenBack},
		{"PushNotices", s.TestPushNotices},
		{"PushExpiryOnce", s.TestPushExpiryOnce},
		{"PushOrderOfConcurrentChanges", s.TestPushOrderOfConcurrentChanges},
		// Leaving service (drain.go).
		{"Drain", s.TestDrain},
		{"DrainIdleAndClose", s.TestDrainIdleAndClose},
		// Counts and ages (store.go).
		{"EvictionOrder", s.TestEvictionOrder},
		{"AgeExpiry", s.TestAgeExpiry},
		{"Janitor", s.TestJanitor},
		{"LiveTasksPerOwner", s.TestLiveTasksPerOwner},
		{"HistoryLimit", s.TestHistoryLimit},
		{"InputWait", s.TestInputWait},
		// Bytes (budget.go).
		{"TaskBytesLimit", s.TestTaskBytesLimit},
		{"OutcomeTooLarge", s.TestOutcomeTooLarge},
		{"StoreBytesBudget", s.TestStoreBytesBudget},
		{"ListPagesByBytes", s.TestListPagesByBytes},
		// ListTasks (list.go).
		{"ListFilters", s.TestListFilters},
		{"ListHistoryAndArtifacts", s.TestListHistoryAndArtifacts},
		{"ListPagination", s.TestListPagination},
		{"ListPaginationTies", s.TestListPaginationTies},
		{"ListTokenSurvivesInserts", s.TestListTokenSurvivesInserts},
		{"ListInvalidParams", s.TestListInvalidParams},
		// Streams (bus.go).
		{"BusFanOut", s.TestBusFanOut},
		{"SubscribeInterrupted", s.TestSubscribeInterrupted},
		{"SlowConsumer", s.TestSlowConsumer},
		{"FinalEventFitsFullBuffer", s.TestFinalEventFitsFullBuffer},
		{"SubscriptionClose", s.TestSubscriptionClose},
		{"SubscribeErrors", s.TestSubscribeErrors},
		{"SubscribeAtomic", s.TestSubscribeAtomic},
		// The Store contract itself (contract.go).
		{"GetReturnsInserted", s.TestGetReturnsInserted},
		{"UnknownTask", s.TestUnknownTask},
		{"ScanSeesOnlyTheOwner", s.TestScanSeesOnlyTheOwner},
		{"InsertResent", s.TestInsertResent},
		{"InsertResentDropped", s.TestInsertResentDropped},
		{"InsertLimits", s.TestInsertLimits},
		{"AnonymousShare", s.TestAnonymousShare},
		{"TakeRefusesPastBudget", s.TestTakeRefusesPastBudget},
		{"EvictionSparesTheTaskItMakesRoomFor", s.TestEvictionSparesTheTaskItMakesRoomFor},
		{"TakeGivesBack", s.TestTakeGivesBack},
		{"UpdateErrorChangesNothing", s.TestUpdateErrorChangesNothing},
		{"UpdateEventsInOrder", s.TestUpdateEventsInOrder},
		{"OnEndThroughUpdate", s.TestOnEndThroughUpdate},
		{"OnEndThroughSweep", s.TestOnEndThroughSweep},
		{"SweepByItsArguments", s.TestSweepByItsArguments},
		{"SubscribeConcurrentWriters", s.TestSubscribeConcurrentWriters},
		// What a store may count on (turns.go).
		{"UpdatesOfOneTaskTakeTurns", s.TestUpdatesOfOneTaskTakeTurns},
	} {
		t.Run(test.name, test.fn)
	}
}

// suite holds the tests, as methods, and the store they run on.
type suite struct {
	newReplicas Replicas
}

// newStore returns a new, empty store within limits, for one replica.
func (s *suite) newStore(t testing.TB, limits tasks.Limits) tasks.Store {
	return s.newReplicas(t, limits, 1)[0]
}
