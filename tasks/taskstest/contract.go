package taskstest

import (
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
	"github.com/caddy-a2a/caddy-a2a/tasks"
)

// The Store contract, tested on the store's own methods where the Manager
// cannot reach a case, and through the Manager where it is the caller.

// smallLimits are small bounds for the direct tests: a full store, a full
// quota and a full budget take a few records.
var smallLimits = tasks.Limits{
	MaxTasks: 10, MaxLivePerOwner: 10, MaxBytes: 1000, MaxLiveBytesPerOwner: 600,
	MaxAge: time.Hour, MaxInputWait: time.Minute, StreamBuffer: 16,
}

// record is a new record of task id, owned by owner, in state since at,
// holding bytes.
func record(id, owner string, state a2a.TaskState, at time.Time, bytes int64) tasks.Record {
	contextID := "ctx-" + id
	return tasks.Record{
		Owner:   owner,
		Updated: at,
		Bytes:   bytes,
		Task: a2a.Task{
			ID:        id,
			ContextID: contextID,
			Status:    a2a.TaskStatus{State: state, Timestamp: at},
			History: []a2a.Message{{
				MessageID: "msg-" + id, Role: a2a.RoleUser, TaskID: id, ContextID: contextID,
				Parts: []a2a.Part{a2a.TextPart("task " + id)},
			}},
		},
	}
}

func mustInsert(t testing.TB, store tasks.Store, recs ...tasks.Record) {
	t.Helper()
	for _, rec := range recs {
		if err := store.Insert(t.Context(), rec); err != nil {
			t.Fatalf("Insert(%s): %v", rec.Task.ID, err)
		}
	}
}

func mustGetRecord(t testing.TB, store tasks.Store, id string) tasks.Record {
	t.Helper()
	rec, err := store.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return rec
}

// storeSubscribe subscribes to task id on store until the test ends.
func storeSubscribe(t testing.TB, store tasks.Store, id string) (tasks.Record, *tasks.Subscription) {
	t.Helper()
	rec, sub, err := store.Subscribe(t.Context(), id)
	if err != nil {
		t.Fatalf("Subscribe(%s): %v", id, err)
	}
	t.Cleanup(sub.Close)
	return rec, sub
}

func mustUpdate(t testing.TB, store tasks.Store, id string, fn func(rec *tasks.Record, tx tasks.Tx) error) {
	t.Helper()
	if err := store.Update(t.Context(), id, fn); err != nil {
		t.Fatalf("Update(%s): %v", id, err)
	}
}

// say is an Update callback that moves the record to state at time at,
// with an agent message text, and publishes the status update as the
// Manager does.
func say(state a2a.TaskState, text string, at time.Time) func(rec *tasks.Record, tx tasks.Tx) error {
	return func(rec *tasks.Record, tx tasks.Tx) error {
		rec.Task.Status = a2a.TaskStatus{State: state, Timestamp: at, Message: &a2a.Message{
			MessageID: "msg-" + text, Role: a2a.RoleAgent, TaskID: rec.Task.ID, ContextID: rec.Task.ContextID,
			Parts: []a2a.Part{a2a.TextPart(text)},
		}}
		rec.Updated = at
		tx.Publish(statusEvent(rec))
		return nil
	}
}

// setState is an Update callback that moves the record to state at time
// at, and publishes nothing.
func setState(state a2a.TaskState, at time.Time) func(rec *tasks.Record, tx tasks.Tx) error {
	return func(rec *tasks.Record, _ tasks.Tx) error {
		rec.Task.Status = a2a.TaskStatus{State: state, Timestamp: at}
		rec.Updated = at
		return nil
	}
}

// statusEvent is the status update of rec's task as it now is.
func statusEvent(rec *tasks.Record) a2a.StreamResponse {
	st := rec.Task.Status
	return a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{
		TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Status: st,
		Final: st.State.Terminal() || st.State.Interrupted(),
	}}
}

// eventText names an event: its status message's text, or its artifact's
// id.
func eventText(ev a2a.StreamResponse) string {
	switch {
	case ev.StatusUpdate != nil && ev.StatusUpdate.Status.Message != nil:
		return ev.StatusUpdate.Status.Message.Parts[0].Text
	case ev.StatusUpdate != nil:
		return ev.StatusUpdate.Status.State.String()
	case ev.ArtifactUpdate != nil:
		return ev.ArtifactUpdate.Artifact.ArtifactID
	}
	return fmt.Sprintf("%+v", ev)
}

// refused tells whether err is the store's refusal for want of short
// under limits: word for word the error every store gives.
func refused(err error, limits tasks.Limits, short tasks.Shortage) bool {
	var e *a2a.Error
	return errors.As(err, &e) && reflect.DeepEqual(e, limits.Refusal(short))
}

// storedBytes is what owner's records in store hold, by their Bytes.
func storedBytes(t testing.TB, store tasks.Store, owner string) int64 {
	t.Helper()
	var n int64
	err := store.Scan(t.Context(), owner, func(records iter.Seq[*tasks.Record]) {
		for rec := range records {
			n += rec.Bytes
		}
	})
	if err != nil {
		t.Fatalf("Scan(%q): %v", owner, err)
	}
	return n
}

// ending is one call of an OnEnd hook.
type ending struct {
	id    string
	state a2a.TaskState
}

// endings are the calls of an OnEnd hook, in order.
type endings chan ending

// watchEnds registers an OnEnd hook on store, before it is used.
func watchEnds(store tasks.Store) endings {
	ch := make(endings, 64)
	store.OnEnd(func(id string, state a2a.TaskState) {
		select {
		case ch <- ending{id, state}:
		default: // far more than any test expects: the next call to next fails
		}
	})
	return ch
}

// next is the next call of the hook, which must be for task id in state:
// a call for a change that did not end a task, or a second call for one,
// comes first and fails the test.
func (e endings) next(t testing.TB, id string, state a2a.TaskState) {
	t.Helper()
	select {
	case got := <-e:
		if want := (ending{id, state}); got != want {
			t.Errorf("OnEnd(%s, %s), want OnEnd(%s, %s)", got.id, got.state, want.id, want.state)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("no OnEnd(%s, %s) within 10s", id, state)
	}
}

// Get returns the record as it was inserted, and as the last Update left
// it: every field, the task's parts and metadata in the shapes the codecs
// decode.
func (s *suite) TestGetReturnsInserted(t *testing.T) {
	store := s.newStore(t, smallLimits)
	at := newClock().Now()
	rec := record("t1", "alice", a2a.TaskStateInputRequired, at, 321)
	rec.Quota = "192.0.2.1"
	rec.Task.Metadata = map[string]any{"skill": "weather"}
	answer := a2a.Message{
		MessageID: "msg-answer", Role: a2a.RoleAgent, TaskID: "t1", ContextID: rec.Task.ContextID,
		Parts: []a2a.Part{a2a.DataPart(map[string]any{"city": "Paris", "celsius": 21.5, "clear": true, "hours": []any{"9", 10.0}})},
	}
	rec.Task.History = append(rec.Task.History, answer)
	rec.Task.Status.Message = &answer
	rec.Task.Artifacts = []a2a.Artifact{{ArtifactID: "art-1", Name: "forecast", Parts: []a2a.Part{a2a.TextPart("clear")}}}
	mustInsert(t, store, rec)
	if got := mustGetRecord(t, store, "t1"); !reflect.DeepEqual(got, rec) {
		t.Fatalf("Get after Insert:\n%+v\nwant\n%+v", got, rec)
	}

	want := rec
	want.Task.Artifacts = append(slices.Clone(rec.Task.Artifacts), a2a.Artifact{ArtifactID: "art-2", Parts: []a2a.Part{a2a.TextPart("more")}})
	want.Task.Status = a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: at.Add(time.Second)}
	want.Updated = at.Add(time.Second)
	want.Bytes += 100
	mustUpdate(t, store, "t1", func(rec *tasks.Record, tx tasks.Tx) error {
		if err := tx.Take(100); err != nil {
			return err
		}
		rec.Task.Artifacts = want.Task.Artifacts
		rec.Task.Status, rec.Updated = want.Task.Status, want.Updated
		return nil
	})
	if got := mustGetRecord(t, store, "t1"); !reflect.DeepEqual(got, want) {
		t.Errorf("Get after Update:\n%+v\nwant\n%+v", got, want)
	}
}

// An unknown task, and one the store dropped, is TaskNotFound to Get,
// Update (whose callback does not run) and Subscribe.
func (s *suite) TestUnknownTask(t *testing.T) {
	store := s.newStore(t, smallLimits)
	at := newClock().Now()
	mustInsert(t, store, record("old", "", a2a.TaskStateWorking, at, 10))
	mustUpdate(t, store, "old", setState(a2a.TaskStateCompleted, at))
	if err := store.Sweep(t.Context(), at.Add(smallLimits.MaxAge+time.Second), func(*tasks.Record, tasks.Tx, tasks.Expiry) {}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"nope", "old"} {
		want := error(a2a.TaskNotFound(id))
		if _, err := store.Get(t.Context(), id); !reflect.DeepEqual(err, want) {
			t.Errorf("Get(%s): err = %#v, want %#v", id, err, want)
		}
		ran := false
		err := store.Update(t.Context(), id, func(*tasks.Record, tasks.Tx) error { ran = true; return nil })
		if !reflect.DeepEqual(err, want) || ran {
			t.Errorf("Update(%s): err = %#v, callback ran %v; want %#v and no call", id, err, ran, want)
		}
		if _, sub, err := store.Subscribe(t.Context(), id); !reflect.DeepEqual(err, want) || sub != nil {
			t.Errorf("Subscribe(%s): err = %#v, subscription %v; want %#v and none", id, err, sub, want)
		}
	}
}

// Scan calls its function once, with every record of the owner and no
// other.
func (s *suite) TestScanSeesOnlyTheOwner(t *testing.T) {
	store := s.newStore(t, smallLimits)
	at := newClock().Now()
	owned := map[string][]string{"alice": {"a1", "a2", "a3"}, "bob": {"b1", "b2"}, "": {"anon"}, "carol": nil}
	for owner, ids := range owned {
		for _, id := range ids {
			mustInsert(t, store, record(id, owner, a2a.TaskStateWorking, at, 10))
		}
	}
	for owner, want := range owned {
		var got []string
		calls := 0
		err := store.Scan(t.Context(), owner, func(records iter.Seq[*tasks.Record]) {
			calls++
			for rec := range records {
				got = append(got, rec.Task.ID)
				if stored := mustGetRecord(t, store, rec.Task.ID); rec.Owner != owner || !reflect.DeepEqual(*rec, stored) {
					t.Errorf("Scan(%q) gave %+v, want %s's record %+v", owner, *rec, owner, stored)
				}
			}
		})
		slices.Sort(got)
		if err != nil || calls != 1 || !slices.Equal(got, want) {
			t.Errorf("Scan(%q): %v in %d calls, err %v; want %v in one call", owner, got, calls, err, want)
		}
	}
}

// Insert refuses, asking to retry later, a live task past its quota's
// share of tasks or bytes, and a task past the store's room in tasks or
// bytes when no terminal task can make room; a terminal task makes room.
// Anonymous callers of different quotas do not share a share.
func (s *suite) TestInsertLimits(t *testing.T) {
	at := newClock().Now()
	in := func(id, owner, quota string, bytes int64) tasks.Record {
		rec := record(id, owner, a2a.TaskStateWorking, at, bytes)
		rec.Quota = quota
		return rec
	}

	counts := smallLimits
	counts.MaxTasks, counts.MaxLivePerOwner = 3, 2
	store := s.newStore(t, counts)
	mustInsert(t, store, in("q1-a", "", "192.0.2.1", 10), in("q1-b", "", "192.0.2.1", 10))
	if err := store.Insert(t.Context(), in("q1-c", "", "192.0.2.1", 10)); !refused(err, counts, tasks.ClientTasks) {
		t.Errorf("a third live task of a quota of two: err = %#v, want %#v", err, counts.Refusal(tasks.ClientTasks))
	}
	mustInsert(t, store, in("q2-a", "", "192.0.2.2", 10)) // another quota of the same owner
	if err := store.Insert(t.Context(), in("bob-1", "bob", "", 10)); !refused(err, counts, tasks.StoreTasks) {
		t.Errorf("a task past MaxTasks, all live: err = %#v, want %#v", err, counts.Refusal(tasks.StoreTasks))
	}
	mustUpdate(t, store, "q1-a", setState(a2a.TaskStateCompleted, at))
	mustInsert(t, store, in("q1-c", "", "192.0.2.1", 10)) // the quota has room, the store evicts q1-a
	if _, err := store.Get(t.Context(), "q1-a"); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("the terminal task is still there (err %v), want it evicted", err)
	}
	if err := store.Insert(t.Context(), in("bob-1", "bob", "", 10)); !refused(err, counts, tasks.StoreTasks) {
		t.Errorf("a task past MaxTasks, all live again: err = %#v, want %#v", err, counts.Refusal(tasks.StoreTasks))
	}
	if n, err := store.Len(t.Context()); n != 3 || err != nil {
		t.Errorf("Len = %d, %v; want the 3 tasks kept, the evicted and the refused not counted", n, err)
	}

	bytes := smallLimits
	bytes.MaxLiveBytesPerOwner = 500
	store = s.newStore(t, bytes)
	mustInsert(t, store, in("alice-1", "alice", "", 300))
	if err := store.Insert(t.Context(), in("alice-2", "alice", "", 300)); !refused(err, bytes, tasks.OwnerBytes) {
		t.Errorf("an owner past its bytes: err = %#v, want %#v", err, bytes.Refusal(tasks.OwnerBytes))
	}
	mustInsert(t, store, in("bob-1", "bob", "", 400))
	if err := store.Insert(t.Context(), in("carol-1", "carol", "", 400)); !refused(err, bytes, tasks.StoreBytes) {
		t.Errorf("a task past MaxBytes, all live: err = %#v, want %#v", err, bytes.Refusal(tasks.StoreBytes))
	}
	mustUpdate(t, store, "bob-1", setState(a2a.TaskStateCompleted, at))
	mustInsert(t, store, in("carol-1", "carol", "", 400))
	if _, err := store.Get(t.Context(), "bob-1"); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("the terminal task is still there (err %v), want it evicted for the bytes", err)
	}
	if _, err := store.Get(t.Context(), "alice-2"); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("the refused task was stored (err %v)", err)
	}
}

// Anonymous callers together hold no more than their share, whatever
// their quotas, and authenticated callers still get in; each anonymous
// client holds no more than its own bound; bytes alike, for Insert and
// Take.
func (s *suite) TestAnonymousShare(t *testing.T) {
	at := newClock().Now()
	in := func(id, owner, quota string, bytes int64) tasks.Record {
		rec := record(id, owner, a2a.TaskStateWorking, at, bytes)
		rec.Quota = quota
		return rec
	}
	limits := smallLimits // 10 tasks, 1000 bytes
	limits.MaxLivePerClient, limits.MaxLiveAnonymous = 2, 4
	limits.MaxLiveBytesPerClient, limits.MaxLiveBytesAnonymous = 300, 500
	store := s.newStore(t, limits)
	mustInsert(t, store, in("a-1", "", "192.0.2.1", 10), in("a-2", "", "192.0.2.1", 10))
	if err := store.Insert(t.Context(), in("a-3", "", "192.0.2.1", 10)); !refused(err, limits, tasks.ClientTasks) {
		t.Errorf("a client past its tasks: err = %#v, want %#v", err, limits.Refusal(tasks.ClientTasks))
	}
	mustInsert(t, store, in("b-1", "", "192.0.2.2", 10), in("b-2", "", "192.0.2.2", 10))
	if err := store.Insert(t.Context(), in("c-1", "", "192.0.2.3", 10)); !refused(err, limits, tasks.AnonymousTasks) {
		t.Errorf("a new client past the anonymous share: err = %#v, want %#v", err, limits.Refusal(tasks.AnonymousTasks))
	}
	mustInsert(t, store, in("alice-1", "alice", "", 10)) // authenticated callers are not held back
	// An anonymous task that ends frees its place in the share.
	mustUpdate(t, store, "a-1", setState(a2a.TaskStateCompleted, at))
	mustInsert(t, store, in("c-1", "", "192.0.2.3", 290))
	if err := store.Insert(t.Context(), in("c-2", "", "192.0.2.3", 20)); !refused(err, limits, tasks.ClientBytes) {
		t.Errorf("a client past its bytes: err = %#v, want %#v", err, limits.Refusal(tasks.ClientBytes))
	}
	// The share's bytes: a-2, b-1, b-2 and c-1 hold 320 of 500.
	err := store.Update(t.Context(), "b-1", func(rec *tasks.Record, tx tasks.Tx) error { return tx.Take(200) })
	if !refused(err, limits, tasks.AnonymousBytes) {
		t.Errorf("Take past the anonymous share's bytes: err = %#v, want %#v", err, limits.Refusal(tasks.AnonymousBytes))
	}
	mustUpdate(t, store, "b-1", func(rec *tasks.Record, tx tasks.Tx) error { return tx.Take(170) })
	// a-2, b-1 and c-1 now hold 480 bytes in three tasks, one place left.
	mustUpdate(t, store, "b-2", setState(a2a.TaskStateCompleted, at))
	if err := store.Insert(t.Context(), in("d-1", "", "192.0.2.4", 30)); !refused(err, limits, tasks.AnonymousBytes) {
		t.Errorf("a new client past the anonymous share's bytes: err = %#v, want %#v", err, limits.Refusal(tasks.AnonymousBytes))
	}
	mustInsert(t, store, in("alice-2", "alice", "", 100))
}

// Tx.Take refuses more bytes than the owner's share or the store's budget
// leaves, and then reserves nothing: the record keeps its Bytes, whether
// the callback gives up or commits something else. Taking evicts terminal
// tasks to make room.
func (s *suite) TestTakeRefusesPastBudget(t *testing.T) {
	store := s.newStore(t, smallLimits) // 1000 bytes, 600 an owner
	at := newClock().Now()
	mustInsert(t, store, record("a", "alice", a2a.TaskStateWorking, at, 500), record("b", "bob", a2a.TaskStateWorking, at, 300))
	// take takes delta bytes for task id, which the store must refuse for
	// want of short (or take, when short is 0).
	take := func(id string, delta int64, short tasks.Shortage, onRefusal func(rec *tasks.Record) error) error {
		return store.Update(t.Context(), id, func(rec *tasks.Record, tx tasks.Tx) error {
			before := rec.Bytes
			if err := tx.Take(delta); err != nil {
				if short == 0 || !refused(err, smallLimits, short) {
					t.Errorf("Take(%d) of %s: err = %#v, want %#v", delta, id, err, smallLimits.Refusal(short))
				}
				if rec.Bytes != before {
					t.Errorf("a refused Take(%d) changed %s's Bytes from %d to %d", delta, id, before, rec.Bytes)
				}
				return onRefusal(rec)
			}
			return nil
		})
	}
	giveUp := func(*tasks.Record) error { return errors.New("taskstest: gave up") }

	for _, c := range []struct {
		what  string
		id    string
		delta int64
		short tasks.Shortage
	}{
		{"past the store's budget", "b", 300, tasks.StoreBytes},
		{"past the owner's share", "a", 200, tasks.OwnerBytes},
	} {
		before := mustGetRecord(t, store, c.id)
		if err := take(c.id, c.delta, c.short, giveUp); err == nil {
			t.Errorf("Take %s: the update was made", c.what)
		}
		if got := mustGetRecord(t, store, c.id); !reflect.DeepEqual(got, before) {
			t.Errorf("Take %s changed the record:\n%+v\nwas\n%+v", c.what, got, before)
		}
	}

	// Refused, the callback fails the task instead, as Run.Finish does.
	err := take("a", 200, tasks.OwnerBytes, func(rec *tasks.Record) error {
		rec.Task.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Timestamp: at}
		return nil
	})
	if got := mustGetRecord(t, store, "a"); err != nil || got.Bytes != 500 || got.Task.Status.State != a2a.TaskStateFailed {
		t.Errorf("after a refused Take and a commit: %d bytes, %s (err %v); want 500, failed", got.Bytes, got.Task.Status.State, err)
	}

	// Now "a" is terminal, and goes to make room.
	if err := take("b", 300, 0, giveUp); err != nil {
		t.Fatalf("Take with a terminal task to evict: %v", err)
	}
	if got := mustGetRecord(t, store, "b"); got.Bytes != 600 {
		t.Errorf("after Take(300): %d bytes, want 600", got.Bytes)
	}
	if _, err := store.Get(t.Context(), "a"); a2aCode(err) != a2a.CodeTaskNotFound {
		t.Errorf("the terminal task is still there (err %v), want it evicted", err)
	}
}

// A negative Take gives bytes back to the owner's share and the store's
// budget, without refusal: what it gave back fits again.
func (s *suite) TestTakeGivesBack(t *testing.T) {
	store := s.newStore(t, smallLimits) // 1000 bytes, 600 an owner
	at := newClock().Now()
	mustInsert(t, store, record("a", "alice", a2a.TaskStateWorking, at, 600), record("b", "bob", a2a.TaskStateWorking, at, 400))
	take := func(id string, delta int64) error {
		return store.Update(t.Context(), id, func(_ *tasks.Record, tx tasks.Tx) error { return tx.Take(delta) })
	}
	for _, c := range []struct {
		what  string
		id    string
		short tasks.Shortage
	}{
		{"the owner's share", "a", tasks.OwnerBytes},
		{"the store's budget", "b", tasks.StoreBytes},
	} {
		if err := take(c.id, 1); !refused(err, smallLimits, c.short) {
			t.Fatalf("%s is full, yet Take(1) of %s: err = %#v", c.what, c.id, err)
		}
		before := mustGetRecord(t, store, c.id).Bytes
		if err := take(c.id, -100); err != nil {
			t.Errorf("Take(-100) of %s: %v", c.id, err)
		}
		if got := mustGetRecord(t, store, c.id).Bytes; got != before-100 {
			t.Errorf("after Take(-100), %s holds %d bytes, want %d", c.id, got, before-100)
		}
		if err := take(c.id, 100); err != nil {
			t.Errorf("the 100 bytes %s gave back to %s do not fit again: %v", c.id, c.what, err)
		}
	}
}

// An Update whose callback returns an error returns that error, leaves the
// record as it was and publishes nothing of what the callback published.
func (s *suite) TestUpdateErrorChangesNothing(t *testing.T) {
	store := s.newStore(t, smallLimits)
	at := newClock().Now()
	mustInsert(t, store, record("a", "", a2a.TaskStateWorking, at, 100))
	_, sub := storeSubscribe(t, store, "a")
	before := mustGetRecord(t, store, "a")

	refusal := errors.New("taskstest: refused")
	err := store.Update(t.Context(), "a", func(rec *tasks.Record, tx tasks.Tx) error {
		if err := tx.Take(50); err != nil {
			return err
		}
		if err := say(a2a.TaskStateCanceled, "never", at.Add(time.Second))(rec, tx); err != nil {
			return err
		}
		return refusal
	})
	if !errors.Is(err, refusal) {
		t.Errorf("Update: err = %v, want the callback's", err)
	}
	if got := mustGetRecord(t, store, "a"); !reflect.DeepEqual(got, before) {
		t.Errorf("a refused Update changed the record:\n%+v\nwas\n%+v", got, before)
	}
	mustUpdate(t, store, "a", say(a2a.TaskStateWorking, "after", at.Add(2*time.Second)))
	if got := eventText(recv(t, sub)); got != "after" {
		t.Errorf("first event %q, want %q: the refused Update published", got, "after")
	}
}

// The events published in committed Updates reach a subscriber in order,
// those of one Update in the order published, and the subscription ends
// after the final one. A subscription taken later gets the record as it
// then is and only the events after it. Listening says yes while someone
// subscribes.
func (s *suite) TestUpdateEventsInOrder(t *testing.T) {
	store := s.newStore(t, smallLimits)
	at := newClock().Now()
	mustInsert(t, store, record("a", "", a2a.TaskStateWorking, at, 100))
	_, early := storeSubscribe(t, store, "a")

	mustUpdate(t, store, "a", func(rec *tasks.Record, tx tasks.Tx) error {
		if !tx.Listening() {
			t.Error("Listening says no to a subscribed task")
		}
		if err := say(a2a.TaskStateWorking, "1", at)(rec, tx); err != nil {
			return err
		}
		art := a2a.Artifact{ArtifactID: "art", Parts: []a2a.Part{a2a.TextPart("result")}}
		rec.Task.Artifacts = append(slices.Clone(rec.Task.Artifacts), art)
		tx.Publish(a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{
			TaskID: rec.Task.ID, ContextID: rec.Task.ContextID, Artifact: art, LastChunk: true,
		}})
		return say(a2a.TaskStateWorking, "2", at)(rec, tx)
	})
	snap, late := storeSubscribe(t, store, "a")
	if got := eventText(statusEvent(&snap)); got != "2" || len(snap.Task.Artifacts) != 1 {
		t.Errorf("the later subscription's record: status %q, %d artifacts; want %q, 1", got, len(snap.Task.Artifacts), "2")
	}
	mustUpdate(t, store, "a", say(a2a.TaskStateWorking, "3", at))
	mustUpdate(t, store, "a", say(a2a.TaskStateCompleted, "4", at))

	for _, c := range []struct {
		name string
		sub  *tasks.Subscription
		want []string
	}{
		{"early", early, []string{"1", "art", "2", "3", "4"}},
		{"late", late, []string{"3", "4"}},
	} {
		var got []string
		for range c.want {
			got = append(got, eventText(recv(t, c.sub)))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("the %s subscriber got %v, want %v", c.name, got, c.want)
		}
		if n, closed := drain(c.sub); n != 0 || !closed || c.sub.Err() != nil {
			t.Errorf("the %s subscriber after the final event: %d more, closed %v, Err %v", c.name, n, closed, c.sub.Err())
		}
	}
}

// The OnEnd hooks run once for each task that becomes terminal through an
// Update, whether or not it published an event, and for no other change:
// not for a live task's changes, not for a refused one, not for a change
// of a task already terminal.
func (s *suite) TestOnEndThroughUpdate(t *testing.T) {
	opts := tasks.Options{}
	store := s.newStore(t, opts.StoreLimits())
	ends := watchEnds(store)
	opts.Store = store
	m, clk := s.newManager(t, opts)

	task := mustCreate(t, m, "alice", userMsg("book"))
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: agentMsg("looking")})
	if err := m.AddArtifact(task.ID, a2a.Artifact{ArtifactID: "draft"}); err != nil {
		t.Fatal(err)
	}
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: agentMsg("how many?")})
	if _, err := followUp(m, "alice", task.ID, userMsg("four")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Cancel("alice", task.ID); err != nil {
		t.Fatal(err)
	}
	ends.next(t, task.ID, a2a.TaskStateCanceled)
	if _, err := m.Cancel("alice", task.ID); a2aCode(err) != a2a.CodeTaskNotCancelable {
		t.Errorf("second Cancel: err = %v, want TaskNotCancelable", err)
	}
	mustUpdate(t, store, task.ID, func(rec *tasks.Record, _ tasks.Tx) error { // terminal already
		rec.Task.Metadata = map[string]any{"note": "seen"}
		return nil
	})

	quiet := mustCreate(t, m, "alice", userMsg("quiet"))
	mustUpdate(t, store, quiet.ID, setState(a2a.TaskStateRejected, clk.Now())) // no event
	ends.next(t, quiet.ID, a2a.TaskStateRejected)

	last := mustStart(t, m, "bob", userMsg("last"))
	if _, err := last.Finish(a2a.TaskStatus{State: a2a.TaskStateCompleted}, nil); err != nil {
		t.Fatal(err)
	}
	ends.next(t, last.Task.ID, a2a.TaskStateCompleted)
}

// The OnEnd hooks run once for each task that a Sweep expires (an
// interrupted one after MaxInputWait, a running one after MaxAge), and not
// for the terminal tasks it drops.
func (s *suite) TestOnEndThroughSweep(t *testing.T) {
	opts := tasks.Options{MaxAge: time.Hour, MaxInputWait: time.Minute}
	store := s.newStore(t, opts.StoreLimits())
	ends := watchEnds(store)
	opts.Store = store
	m, clk := s.newManager(t, opts)

	done := mustCreate(t, m, "", userMsg("done"))
	mustSetStatus(t, m, done.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted})
	ends.next(t, done.ID, a2a.TaskStateCompleted)
	running := mustCreate(t, m, "", userMsg("running"))
	waiting := mustCreate(t, m, "", userMsg("waiting"))
	mustSetStatus(t, m, waiting.ID, a2a.TaskStatus{State: a2a.TaskStateInputRequired})

	clk.Advance(time.Minute + time.Second)
	tick := mustCreate(t, m, "", userMsg("tick")) // sweeps
	ends.next(t, waiting.ID, a2a.TaskStateFailed)

	clk.Advance(time.Hour - time.Minute)
	mustCreate(t, m, "", userMsg("tick")) // sweeps: done goes, running expires
	ends.next(t, running.ID, a2a.TaskStateFailed)
	if exists(m, done.ID) {
		t.Error("the terminal task older than MaxAge is still there")
	}
	if _, err := m.Cancel("", tick.ID); err != nil {
		t.Fatal(err)
	}
	ends.next(t, tick.ID, a2a.TaskStateCanceled)
}

// Sweep judges ages by its now and the records' Updated alone, never by
// the wall clock (the suite's clock is months away from it): it drops
// terminal records older than MaxAge, and hands to expire the running ones
// that old and the interrupted ones that waited longer than MaxInputWait,
// whose end then runs the OnEnd hooks.
func (s *suite) TestSweepByItsArguments(t *testing.T) {
	store := s.newStore(t, smallLimits) // MaxAge 1h, MaxInputWait 1m
	ends := watchEnds(store)
	base := newClock().Now()
	mustInsert(t, store,
		record("done", "", a2a.TaskStateWorking, base, 10),
		record("running", "", a2a.TaskStateWorking, base, 10),
		record("waiting", "", a2a.TaskStateInputRequired, base, 10),
		record("fresh", "", a2a.TaskStateWorking, base.Add(30*time.Minute), 10))
	mustUpdate(t, store, "done", setState(a2a.TaskStateCompleted, base))
	ends.next(t, "done", a2a.TaskStateCompleted)

	state := func(id string) string {
		rec, err := store.Get(t.Context(), id)
		if err != nil {
			return "gone"
		}
		return rec.Task.Status.State.String()
	}
	for _, step := range []struct {
		after time.Duration
		want  map[string]string
	}{
		{time.Minute, map[string]string{"done": "completed", "running": "working", "waiting": "input-required", "fresh": "working"}},
		{time.Minute + time.Second, map[string]string{"done": "completed", "running": "working", "waiting": "failed", "fresh": "working"}},
		{time.Hour, map[string]string{"done": "completed", "running": "working", "waiting": "failed", "fresh": "working"}},
		{time.Hour + time.Second, map[string]string{"done": "gone", "running": "failed", "waiting": "failed", "fresh": "working"}},
	} {
		now := base.Add(step.after)
		err := store.Sweep(t.Context(), now, func(rec *tasks.Record, _ tasks.Tx, _ tasks.Expiry) {
			rec.Task.Status = a2a.TaskStatus{State: a2a.TaskStateFailed, Timestamp: now}
			rec.Updated = now
		})
		if err != nil {
			t.Fatal(err)
		}
		for id, want := range step.want {
			if got := state(id); got != want {
				t.Errorf("after a Sweep at base+%s: %s is %s, want %s", step.after, id, got, want)
			}
		}
		switch step.after {
		case time.Minute + time.Second:
			ends.next(t, "waiting", a2a.TaskStateFailed)
			if got := mustGetRecord(t, store, "waiting"); !got.Updated.Equal(now) {
				t.Errorf("the expired task was updated at %v, want the Sweep's now %v", got.Updated, now)
			}
		case time.Hour + time.Second:
			ends.next(t, "running", a2a.TaskStateFailed)
		}
	}
	mustUpdate(t, store, "fresh", setState(a2a.TaskStateCanceled, base.Add(2*time.Hour)))
	ends.next(t, "fresh", a2a.TaskStateCanceled)
}

// Several writers update one task while subscribers come and go: no update
// is lost, each writer's land in its order, and every subscriber's
// snapshot plus its events is the task's whole history, each message once.
func (s *suite) TestSubscribeConcurrentWriters(t *testing.T) {
	const writers, updates = 4, 50
	m, _ := s.newManager(t, tasks.Options{StreamBuffer: writers*updates + 1})
	task := mustCreate(t, m, "", userMsg("start"))

	results := make(chan []string, updates)
	var subscribers, writing sync.WaitGroup
	subscribe := func() {
		subscribers.Go(func() {
			snap, sub, err := m.Subscribe("", task.ID)
			if err != nil { // subscribed after the end
				results <- nil
				return
			}
			var texts []string
			for _, msg := range snap.History {
				texts = append(texts, msg.Parts[0].Text)
			}
			evs, closed := readAll(sub)
			if !closed {
				t.Error("a stream is open 10s after the final event")
			}
			for _, ev := range evs {
				texts = append(texts, eventText(ev))
			}
			results <- texts
		})
	}
	subscribe()
	for w := range writers {
		writing.Go(func() {
			for i := range updates {
				if w == 0 && i%8 == 4 {
					subscribe() // while the others write
				}
				msg := agentMsg(fmt.Sprintf("%d-%d", w, i))
				if _, err := m.SetStatus(task.ID, a2a.TaskStatus{State: a2a.TaskStateWorking, Message: msg}); err != nil {
					t.Errorf("writer %d, update %d: %v", w, i, err)
					return
				}
			}
		})
	}
	writing.Wait()
	mustSetStatus(t, m, task.ID, a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: agentMsg("end")})
	subscribers.Wait()
	close(results)

	var history []string
	for _, msg := range mustGet(t, m, "", task.ID).History {
		history = append(history, msg.Parts[0].Text)
	}
	if len(history) != writers*updates+2 {
		t.Fatalf("the task holds %d messages, want %d: updates were lost", len(history), writers*updates+2)
	}
	next := make([]int, writers)
	for _, text := range history[1 : len(history)-1] {
		var w, i int
		if _, err := fmt.Sscanf(text, "%d-%d", &w, &i); err != nil || w >= writers || i != next[w] {
			t.Fatalf("history %v: %q out of its writer's order", history, text)
		}
		next[w]++
	}
	for texts := range results {
		if texts != nil && !slices.Equal(texts, history) {
			t.Errorf("a subscriber's snapshot and events:\n%v\nwant the history\n%v", texts, history)
		}
	}
}
