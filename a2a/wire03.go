package a2a

import "strconv"

// Protocol 0.3 request parameters and parts: "kind" discriminators, file
// parts, TaskIdParams with pushNotificationConfigId.

// dataPartCompat is the part metadata flag with which the official Go SDK
// marks a 0.3 data part that wraps a non-object value as {"value": v}
// (0.3 data parts hold objects only). Both directions follow it.
const dataPartCompat = "data_part_compat"

type part03 struct {
	Kind     string         `json:"kind"`
	Text     *string        `json:"text"`
	File     *file03        `json:"file"`
	Data     jsonValue      `json:"data"`
	Metadata map[string]any `json:"metadata"`
}

type file03 struct {
	Bytes    *string `json:"bytes"`
	URI      *string `json:"uri"`
	MimeType string  `json:"mimeType"`
	Name     string  `json:"name"`
}

func (w part03) model() (Part, *Error) {
	switch w.Kind {
	case "text", "file", "data":
	case "": // the 0.3 schema requires it; guessing would hide a client's mistake
		return Part{}, InvalidParams("kind", `is required: "text", "file" or "data"`)
	default:
		return Part{}, InvalidParams("kind", `must be "text", "file" or "data", got `+strconv.Quote(w.Kind))
	}
	n := 0
	kind := ""
	if w.Text != nil {
		n, kind = n+1, "text"
	}
	if w.File != nil {
		n, kind = n+1, "file"
	}
	if w.Data.set {
		n, kind = n+1, "data"
	}
	switch {
	case n == 0:
		return Part{}, InvalidParams("", "must hold one of text, file or data")
	case n > 1:
		return Part{}, InvalidParams("", "must hold only one of text, file or data")
	case w.Kind != kind:
		return Part{}, InvalidParams("kind", "is "+w.Kind+" but the part holds "+kind)
	}
	part := Part{Metadata: w.Metadata}
	switch kind {
	case "text":
		part.Kind, part.Text = PartText, *w.Text
	case "data":
		part.Kind, part.Data = PartData, w.Data.v
		if wrapped, ok := w.Data.v.(map[string]any); ok && w.Metadata[dataPartCompat] == true {
			part.Data = wrapped["value"]
			delete(part.Metadata, dataPartCompat)
			if len(part.Metadata) == 0 {
				part.Metadata = nil
			}
		}
	case "file":
		f := w.File
		part.MediaType, part.Filename = f.MimeType, f.Name
		switch {
		case (f.Bytes == nil) == (f.URI == nil):
			return Part{}, InvalidParams("file", "must hold exactly one of bytes or uri")
		case f.Bytes != nil:
			raw, err := decodeBase64(*f.Bytes)
			if err != nil {
				return Part{}, InvalidParams("file.bytes", "must be base64: "+err.Error())
			}
			part.Kind, part.Raw = PartRaw, raw
		default:
			part.Kind, part.URL = PartURL, *f.URI
		}
	}
	return part, nil
}

// params03 holds the members of every 0.3 method's params (see params10).
// TaskIdParams and the params that extend it (TaskQueryParams, the push
// config get/list/delete params) share id and metadata.
type params03 struct {
	Message                  *wireMessage[part03] `json:"message"`
	Configuration            *sendConfiguration03 `json:"configuration"`
	Metadata                 map[string]any       `json:"metadata"`
	ID                       string               `json:"id"`
	HistoryLength            *int32               `json:"historyLength"`
	PushNotificationConfigID string               `json:"pushNotificationConfigId"`
	TaskID                   string               `json:"taskId"`
	PushConfig               *pushConfig03        `json:"pushNotificationConfig"`
}

type sendConfiguration03 struct {
	AcceptedOutputModes []string      `json:"acceptedOutputModes"`
	HistoryLength       *int32        `json:"historyLength"`
	PushConfig          *pushConfig03 `json:"pushNotificationConfig"`
	Blocking            *bool         `json:"blocking"`
}

type pushConfig03 struct {
	ID             string `json:"id"`
	URL            string `json:"url"`
	Token          string `json:"token"`
	Authentication *struct {
		Schemes     []string `json:"schemes"`
		Credentials string   `json:"credentials"`
	} `json:"authentication"`
}

// model checks the params of 0.3 method m and converts them; error fields
// are relative to params.
func (w *params03) model(m Method) (any, *Error) {
	switch m {
	case MethodSendMessage, MethodSendStreamingMessage:
		if w.Message == nil {
			return nil, InvalidParams("message", "is required")
		}
		req := &SendMessageRequest{Metadata: w.Metadata}
		if err := decodeMessage(decoder{v: V03, strict: true}, w.Message, &req.Message); err != nil {
			return nil, within(err, "message")
		}
		if c := w.Configuration; c != nil {
			conf, err := c.model()
			if err != nil {
				return nil, within(err, "configuration")
			}
			req.Configuration = conf
		}
		return req, nil
	case MethodCreatePushConfig:
		if w.TaskID == "" {
			return nil, InvalidParams("taskId", "is required")
		}
		if w.PushConfig == nil {
			return nil, InvalidParams("pushNotificationConfig", "is required")
		}
		c, err := decodePushConfig03(w.PushConfig)
		if err != nil {
			return nil, within(err, "pushNotificationConfig")
		}
		c.TaskID = w.TaskID
		return c, nil
	case MethodGetExtendedAgentCard:
		return nil, nil
	}
	if w.ID == "" {
		return nil, InvalidParams("id", "is required")
	}
	switch m {
	case MethodGetTask:
		if err := checkHistoryLength(w.HistoryLength); err != nil {
			return nil, err
		}
		return &GetTaskRequest{ID: w.ID, HistoryLength: w.HistoryLength}, nil
	case MethodCancelTask, MethodSubscribeToTask:
		return &TaskIDRequest{ID: w.ID, Metadata: w.Metadata}, nil
	case MethodDeletePushConfig:
		if w.PushNotificationConfigID == "" {
			return nil, InvalidParams("pushNotificationConfigId", "is required")
		}
	}
	// push config get, list, delete
	return &TaskPushNotificationConfig{TaskID: w.ID, ID: w.PushNotificationConfigID}, nil
}

func (c *sendConfiguration03) model() (*SendMessageConfiguration, *Error) {
	if err := checkHistoryLength(c.HistoryLength); err != nil {
		return nil, err
	}
	conf := &SendMessageConfiguration{
		AcceptedOutputModes: c.AcceptedOutputModes,
		HistoryLength:       c.HistoryLength,
		// An absent "blocking" means blocking.
		ReturnImmediately: c.Blocking != nil && !*c.Blocking,
	}
	if c.PushConfig != nil {
		pc, err := decodePushConfig03(c.PushConfig)
		if err != nil {
			return nil, within(err, "pushNotificationConfig")
		}
		conf.PushNotification = pc
	}
	return conf, nil
}

func decodePushConfig03(w *pushConfig03) (*TaskPushNotificationConfig, *Error) {
	if w.URL == "" {
		return nil, InvalidParams("url", "is required")
	}
	c := &TaskPushNotificationConfig{ID: w.ID, URL: w.URL, Token: w.Token}
	if a := w.Authentication; a != nil {
		if len(a.Schemes) == 0 {
			return nil, InvalidParams("authentication.schemes", "at least one scheme is required")
		}
		// The model holds one scheme, as 1.0 does; the first is preferred.
		c.Authentication = &AuthenticationInfo{Scheme: a.Schemes[0], Credentials: a.Credentials}
	}
	if err := checkPushConfig(c); err != nil {
		return nil, err
	}
	return c, nil
}
