package server

import (
	"encoding/json"
	"net/http"

	"github.com/caddy-a2a/caddy-a2a/a2a"
)

// wire is the form of one request's answers in version v: JSON-RPC
// responses to request id, or (rest) the HTTP+JSON binding's bare objects
// and google.rpc.Status errors, as mediaType.
type wire struct {
	v         a2a.Version
	id        json.RawMessage
	rest      bool
	mediaType string
}

// contentType is the Content-Type of a JSON answer.
func (f wire) contentType() string {
	if f.rest {
		return f.mediaType
	}
	return "application/json"
}

// appendResult appends a whole answer, or one stream event, in the form.
func (f wire) appendResult(dst []byte, result any) ([]byte, error) {
	if f.rest {
		return a2a.AppendRESTResult(dst, f.v, result)
	}
	return a2a.AppendResult(dst, f.v, f.id, result)
}

// appendList appends a ListTasks answer, flushed as it grows.
func (f wire) appendList(dst []byte, list *a2a.ListTasksResponse, flush func([]byte) ([]byte, error)) ([]byte, error) {
	if f.rest {
		return a2a.AppendRESTListTasks(dst, list, flush)
	}
	return a2a.AppendListTasksResult(dst, f.id, list, flush)
}

// appendError appends an error answer, or error event, in the form; status
// is the answer's HTTP status (0 for a stream's event), which the
// HTTP+JSON error repeats.
func (f wire) appendError(dst []byte, status int, e *a2a.Error) []byte {
	if f.rest {
		if status == 0 || status == 200 {
			status, _ = a2a.RESTStatus(e)
		}
		return a2a.AppendRESTError(dst, status, e)
	}
	return a2a.AppendError(dst, f.v, f.id, e)
}

// errorStatus is the HTTP status of an error answer: JSON-RPC errors
// travel with 200, HTTP+JSON ones with their own.
func (f wire) errorStatus(e *a2a.Error) int {
	if f.rest {
		status, _ := a2a.RESTStatus(e)
		return status
	}
	return http.StatusOK
}

// errorEvent opens a stream's error event: an HTTP+JSON one is of type
// error, as @a2a-js/sdk reads it (a2a-go reads its data either way); a
// JSON-RPC one is a response like any other.
func (f wire) errorEvent() string {
	if f.rest {
		return "event: error\ndata: "
	}
	return "data: "
}
