package tasks

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

const (
	defaultPageSize = 50
	maxPageSize     = 100
	// tokenVersion leads every page token, so that a later format can tell
	// its tokens from these.
	tokenVersion = 1
	// maxTokenBytes bounds what a page token may hold: the version, the
	// timestamp and a task id.
	maxTokenBytes = 1 + 8 + 128
)

// List returns a page of the caller's tasks that match req's filters
// (contextId, status, statusTimestampAfter), the most recent status change
// first (spec 1.0 §3.1.4), with their last historyLength messages and,
// only if includeArtifacts, their artifacts.
//
// The page token is the sort key (status timestamp, task id) of the last
// task returned, so a page continues right after that task whatever was
// inserted or evicted meanwhile; a task whose status changes between two
// calls moves to the front and so is not returned again. TotalSize counts
// every match, PageSize is the page size used (as asked, or the default:
// "the page size used for this response", as the spec's examples show it),
// and NextPageToken is "" on the
// last page. A page also stops before its tasks hold more than
// MaxTaskBytes, so that no answer grows with the store. Invalid parameters
// are *a2a.Error InvalidParams.
func (m *Manager) List(owner string, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	if req == nil {
		req = new(a2a.ListTasksRequest)
	}
	q, err := parseQuery(req)
	if err != nil {
		return nil, err
	}
	resp := &a2a.ListTasksResponse{}
	err = m.store.Scan(context.Background(), owner, func(records iter.Seq[*Record]) {
		top := topK{k: q.pageSize}
		rest := 0 // matches after the cursor
		for rec := range records {
			if !q.match(rec) {
				continue
			}
			resp.TotalSize++
			k := keyOf(rec)
			if q.cursor != nil && !k.less(*q.cursor) {
				continue
			}
			rest++
			top.offer(candidate{k, rec})
		}
		page := top.sorted()
		// A page holds at most MaxTaskBytes of tasks, and at least one.
		var bytes int64
		for i, c := range page {
			if bytes += c.rec.Bytes; i > 0 && bytes > m.maxTaskBytes {
				page = page[:i]
				break
			}
		}
		resp.Tasks = make([]a2a.Task, len(page))
		for i, c := range page {
			snapshotInto(&resp.Tasks[i], c.rec, q.historyLength, q.artifacts)
		}
		if rest > len(page) {
			resp.NextPageToken = page[len(page)-1].key.token()
		}
	})
	if err != nil {
		return nil, err
	}
	resp.PageSize = int32(q.pageSize)
	return resp, nil
}

// query is a validated ListTasksRequest.
type query struct {
	contextID     string
	status        a2a.TaskState
	after         time.Time
	pageSize      int
	cursor        *pageKey
	historyLength int
	artifacts     bool
}

func parseQuery(req *a2a.ListTasksRequest) (query, error) {
	q := query{contextID: req.ContextID, status: req.Status, after: req.StatusTimestampAfter, pageSize: defaultPageSize}
	if req.Status > a2a.TaskStateAuthRequired {
		return query{}, a2a.InvalidParams("params.status", fmt.Sprintf("unknown task state %d", req.Status))
	}
	if p := req.PageSize; p != nil {
		if *p < 1 || *p > maxPageSize {
			return query{}, a2a.InvalidParams("params.pageSize",
				fmt.Sprintf("must be between 1 and %d inclusive, got %d", maxPageSize, *p))
		}
		q.pageSize = int(*p)
	}
	if req.PageToken != "" {
		k, ok := parseToken(req.PageToken)
		if !ok {
			return query{}, a2a.InvalidParams("params.pageToken", "not a page token returned by ListTasks")
		}
		q.cursor = &k
	}
	hl, err := historyLimit(req.HistoryLength)
	if err != nil {
		return query{}, err
	}
	q.historyLength = hl
	q.artifacts = req.IncludeArtifacts != nil && *req.IncludeArtifacts
	return q, nil
}

func (q *query) match(rec *Record) bool {
	return (q.contextID == "" || rec.Task.ContextID == q.contextID) &&
		(q.status == a2a.TaskStateUnspecified || rec.Task.Status.State == q.status) &&
		(q.after.IsZero() || !rec.Task.Status.Timestamp.Before(q.after))
}

// pageKey orders tasks for List: by status timestamp, ties broken by id.
type pageKey struct {
	ts int64 // status timestamp, Unix nanoseconds
	id string
}

func keyOf(rec *Record) pageKey {
	return pageKey{rec.Task.Status.Timestamp.UnixNano(), rec.Task.ID}
}

func (k pageKey) less(o pageKey) bool {
	return k.ts < o.ts || k.ts == o.ts && k.id < o.id
}

func (k pageKey) token() string {
	b := make([]byte, 9, 9+len(k.id))
	b[0] = tokenVersion
	binary.BigEndian.PutUint64(b[1:], uint64(k.ts))
	return base64.RawURLEncoding.EncodeToString(append(b, k.id...))
}

func parseToken(s string) (pageKey, bool) {
	if base64.RawURLEncoding.DecodedLen(len(s)) > maxTokenBytes {
		return pageKey{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 10 || b[0] != tokenVersion {
		return pageKey{}, false
	}
	return pageKey{int64(binary.BigEndian.Uint64(b[1:9])), string(b[9:])}, true
}

type candidate struct {
	key pageKey
	rec *Record
}

// topK keeps the k greatest candidates offered, in a min-heap, so that
// choosing a page costs O(n log k) over n matches rather than a full sort.
type topK struct {
	k     int
	items []candidate
}

func (h *topK) offer(c candidate) {
	if len(h.items) < h.k {
		h.items = append(h.items, c)
		for i := len(h.items) - 1; i > 0; {
			p := (i - 1) / 2
			if !h.items[i].key.less(h.items[p].key) {
				break
			}
			h.items[i], h.items[p] = h.items[p], h.items[i]
			i = p
		}
		return
	}
	if !h.items[0].key.less(c.key) {
		return
	}
	h.items[0] = c
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(h.items) && h.items[l].key.less(h.items[least].key) {
			least = l
		}
		if r < len(h.items) && h.items[r].key.less(h.items[least].key) {
			least = r
		}
		if least == i {
			return
		}
		h.items[i], h.items[least] = h.items[least], h.items[i]
		i = least
	}
}

// sorted returns the kept candidates, greatest first.
func (h *topK) sorted() []candidate {
	slices.SortFunc(h.items, func(a, b candidate) int {
		return -cmp.Or(cmp.Compare(a.key.ts, b.key.ts), cmp.Compare(a.key.id, b.key.id))
	})
	return h.items
}
