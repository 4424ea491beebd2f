package tasks

import (
	"container/heap"
	"encoding/binary"
	"hash/maphash"
	"time"
)

// droppedKeys remembers, for a MemoryStore, the messages of the tasks it
// dropped to make room before their resend window ended: each by a hash of
// its MessageKey's parts, with the id of the task it made, until its window
// ends, so that the message sent again is told its task is gone instead of
// running again. It holds at most max keys, anonymous callers' at most
// maxAnonymous, whatever the tasks hold: a table over a bound drops the
// oldest key of the holder (an authenticated owner, or an anonymous
// client) that holds the most keys, among those the newcomer may displace
// (an anonymous caller: anonymous ones only), and the newcomer's own on a
// tie. So one caller's traffic takes no key of a caller that holds fewer,
// and anonymous callers none of an authenticated caller's. The store's
// lock guards it.
type droppedKeys struct {
	seed  maphash.Seed
	byKey map[uint64]*droppedKey
	// all holds every key, the first dropped first: their windows end in
	// about that order, since tasks are dropped oldest first.
	all     keyList
	holders map[keyHolderID]*keyHolder
	// The holders of each kind, the one holding the most first.
	anonymous, owners holderHeap
	nAnonymous        int // keys of anonymous holders
	max, maxAnonymous int
}

// droppedKey is one remembered message: tens of bytes, whatever the task
// held.
type droppedKey struct {
	key     uint64
	taskID  string
	expires int64 // Unix nanoseconds: the end of its window
	holder  *keyHolder
	// in droppedKeys.all, and in the holder's keys
	inAll, inHolder keyLinks
}

type keyHolderID struct {
	quota     string
	anonymous bool
}

// keyHolder holds the keys of one quota (see Record.Quota), the first
// dropped first.
type keyHolder struct {
	id    keyHolderID
	keys  keyList
	n     int
	index int // in its heap
}

func newDroppedKeys(limits Limits) droppedKeys {
	all, anonymous := limits.ResendKeyBounds()
	return droppedKeys{seed: maphash.MakeSeed(), byKey: make(map[uint64]*droppedKey),
		holders: make(map[keyHolderID]*keyHolder), max: all, maxAnonymous: min(anonymous, all)}
}

// keyOf hashes what MessageKey hashes, with this process's seed: 64 bits
// that nobody outside can make two messages share.
func (d *droppedKeys) keyOf(sent sentMessage) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	var n [binary.MaxVarintLen64]byte
	for _, s := range [...]string{sent.owner, sent.quota, sent.id} {
		h.Write(binary.AppendUvarint(n[:0], uint64(len(s))))
		h.WriteString(s)
	}
	return h.Sum64()
}

// find returns the task of the message with key k, remembered at now; a
// key whose window ended is forgotten.
func (d *droppedKeys) find(k uint64, now time.Time) (taskID string, ok bool) {
	e := d.byKey[k]
	if e == nil {
		return "", false
	}
	if e.expires < now.UnixNano() {
		d.remove(e)
		return "", false
	}
	return e.taskID, true
}

// add remembers the message with key k, which made task taskID, until
// expires, as holder's; then keeps the bounds.
func (d *droppedKeys) add(k uint64, taskID string, expires time.Time, holder keyHolderID) {
	if old := d.byKey[k]; old != nil {
		d.remove(old)
	}
	h := d.holders[holder]
	if h == nil {
		h = &keyHolder{id: holder}
		d.holders[holder] = h
		heap.Push(d.heapOf(h), h)
	}
	e := &droppedKey{key: k, taskID: taskID, expires: expires.UnixNano(), holder: h}
	d.byKey[k] = e
	d.all.pushBack(e, inAll)
	h.keys.pushBack(e, inHolder)
	d.count(h, 1)
	for (holder.anonymous && d.nAnonymous > d.maxAnonymous) || len(d.byKey) > d.max {
		victim := h
		if top := d.anonymous.top(); top != nil && top.n > victim.n {
			victim = top
		}
		if top := d.owners.top(); !holder.anonymous && top != nil && top.n > victim.n {
			victim = top
		}
		d.remove(victim.keys.head)
	}
}

// sweep forgets the keys whose window ended before now.
func (d *droppedKeys) sweep(now time.Time) {
	cutoff := now.UnixNano()
	for e := d.all.head; e != nil && e.expires < cutoff; e = d.all.head {
		d.remove(e)
	}
}

func (d *droppedKeys) remove(e *droppedKey) {
	delete(d.byKey, e.key)
	d.all.remove(e, inAll)
	e.holder.keys.remove(e, inHolder)
	d.count(e.holder, -1)
}

// count adds delta to holder h's keys; a holder with none goes.
func (d *droppedKeys) count(h *keyHolder, delta int) {
	h.n += delta
	if h.id.anonymous {
		d.nAnonymous += delta
	}
	if h.n > 0 {
		heap.Fix(d.heapOf(h), h.index)
		return
	}
	heap.Remove(d.heapOf(h), h.index)
	delete(d.holders, h.id)
}

func (d *droppedKeys) heapOf(h *keyHolder) *holderHeap {
	if h.id.anonymous {
		return &d.anonymous
	}
	return &d.owners
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

// holderHeap orders holders by how many keys they hold, most first
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
