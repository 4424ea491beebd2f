package tasks

import (
	"container/heap"
	"hash/maphash"
	"time"
)

// messageIndex finds, for a MemoryStore, the task a message made (see
// MessageKey), by a hash of its key's parts: the stored task, or, once the
// task was dropped to make room before its resend window ended, the
// message remembered without it, with the task's id, until the window
// ends; so that the message sent again is told its task is gone instead
// of running again. Those remembered messages are at most max,
// anonymous callers' at most maxAnonymous, whatever the tasks hold: past a
// bound, the holder (an authenticated owner, or an anonymous client) that
// holds the most loses its oldest, among those the newcomer may displace
// (an anonymous caller: anonymous ones only), the newcomer itself on a
// tie. So one caller's traffic takes no message of a caller that holds
// fewer, and anonymous callers none of an authenticated caller's. The
// store's lock guards it.
type messageIndex struct {
	seed  maphash.Seed
	byKey map[uint64]messageRef
	// all holds the remembered messages, the first dropped first: their
	// windows end in about that order, since tasks are dropped oldest
	// first.
	all     keyList
	holders map[keyHolderID]*keyHolder
	// The holders of each kind, the one holding the most first.
	anonymous, owners        holderHeap
	nDropped, nAnonymous     int // remembered messages, and anonymous holders' of them
	maxDropped, maxAnonymous int
	// spare is the remembered message last forgotten, for the next: a
	// full index forgets one for each it remembers.
	spare *droppedKey
}

// messageRef is what a message's key finds: the task it made, or the
// message remembered once that task was dropped.
type messageRef struct {
	task    *memEntry
	dropped *droppedKey
}

// droppedKey is a message remembered without its task: tens of bytes,
// whatever the task held.
type droppedKey struct {
	key     uint64
	taskID  string
	expires int64 // Unix nanoseconds: the end of its window
	holder  *keyHolder
	// in messageIndex.all, and in the holder's keys
	inAll, inHolder keyLinks
}

type keyHolderID struct {
	quota     string
	anonymous bool
}

// keyHolder holds the remembered messages of one quota (see
// Record.Quota), the first dropped first.
type keyHolder struct {
	id    keyHolderID
	keys  keyList
	n     int
	index int // in its heap
}

func newMessageIndex(limits Limits) messageIndex {
	all, anonymous := limits.ResendKeyBounds()
	return messageIndex{seed: maphash.MakeSeed(), byKey: make(map[uint64]messageRef),
		holders: make(map[keyHolderID]*keyHolder), maxDropped: all, maxAnonymous: anonymous}
}

// keyOf hashes what MessageKey hashes, with this process's seed: 64 bits
// that nobody outside can make two messages share.
func (x *messageIndex) keyOf(sent sentMessage) uint64 { return maphash.Comparable(x.seed, sent) }

// drop remembers the message with key k, whose task taskID is dropped,
// until expires, as holder's; then keeps the bounds.
func (x *messageIndex) drop(k uint64, taskID string, expires time.Time, holder keyHolderID) {
	h := x.holders[holder]
	if h == nil {
		h = &keyHolder{id: holder}
		x.holders[holder] = h
		heap.Push(x.heapOf(h), h)
	}
	e := x.spare
	if e == nil {
		e = new(droppedKey)
	}
	x.spare = nil
	*e = droppedKey{key: k, taskID: taskID, expires: expires.UnixNano(), holder: h}
	x.byKey[k] = messageRef{dropped: e}
	x.all.pushBack(e, inAll)
	h.keys.pushBack(e, inHolder)
	x.count(h, 1)
	for (holder.anonymous && x.nAnonymous > x.maxAnonymous) || x.nDropped > x.maxDropped {
		victim := h
		if top := x.anonymous.top(); top != nil && top.n > victim.n {
			victim = top
		}
		if top := x.owners.top(); !holder.anonymous && top != nil && top.n > victim.n {
			victim = top
		}
		x.forget(victim.keys.head)
	}
}

// sweep forgets the remembered messages whose window ended before now.
func (x *messageIndex) sweep(now time.Time) {
	cutoff := now.UnixNano()
	for e := x.all.head; e != nil && e.expires < cutoff; e = x.all.head {
		x.forget(e)
	}
}

// forget forgets a remembered message.
func (x *messageIndex) forget(e *droppedKey) {
	delete(x.byKey, e.key)
	x.all.remove(e, inAll)
	e.holder.keys.remove(e, inHolder)
	x.count(e.holder, -1)
	*e = droppedKey{}
	x.spare = e
}

// count adds delta to holder h's remembered messages; a holder with none
// goes.
func (x *messageIndex) count(h *keyHolder, delta int) {
	h.n += delta
	x.nDropped += delta
	if h.id.anonymous {
		x.nAnonymous += delta
	}
	if h.n > 0 {
		heap.Fix(x.heapOf(h), h.index)
		return
	}
	heap.Remove(x.heapOf(h), h.index)
	delete(x.holders, h.id)
}

func (x *messageIndex) heapOf(h *keyHolder) *holderHeap {
	if h.id.anonymous {
		return &x.anonymous
	}
	return &x.owners
}

// keyLinks are a droppedKey's neighbours in one of its lists.
type keyLinks struct{ prev, next *droppedKey }

// keyList is an intrusive doubly linked list of droppedKeys, through the
// links that at picks.
type keyList struct{ head, tail *droppedKey }

func (l *keyList) pushBack(e *droppedKey, at func(*droppedKey) *keyLinks) {
	*at(e) = keyLinks{prev: l.tail}
	if l.tail != nil {
		at(l.tail).next = e
	} else {
		l.head = e
	}
	l.tail = e
}

func (l *keyList) remove(e *droppedKey, at func(*droppedKey) *keyLinks) {
	links := at(e)
	if links.prev != nil {
		at(links.prev).next = links.next
	} else {
		l.head = links.next
	}
	if links.next != nil {
		at(links.next).prev = links.prev
	} else {
		l.tail = links.prev
	}
	*links = keyLinks{}
}

func inAll(e *droppedKey) *keyLinks    { return &e.inAll }
func inHolder(e *droppedKey) *keyLinks { return &e.inHolder }

// holderHeap orders holders by how many messages they hold, most first
// (container/heap).
type holderHeap []*keyHolder

func (h holderHeap) top() *keyHolder {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

func (h holderHeap) Len() int           { return len(h) }
func (h holderHeap) Less(i, j int) bool { return h[i].n > h[j].n }
func (h holderHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *holderHeap) Push(x any) {
	k := x.(*keyHolder)
	k.index = len(*h)
	*h = append(*h, k)
}

func (h *holderHeap) Pop() any {
	old := *h
	k := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return k
}
