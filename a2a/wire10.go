package a2a

// Protocol 1.0 request parameters and parts, as ProtoJSON writes them.

type part10 struct {
	Text      *string        `json:"text"`
	Raw       *string        `json:"raw"`
	URL       *string        `json:"url"`
	Data      jsonValue      `json:"data"`
	Metadata  map[string]any `json:"metadata"`
	Filename  string         `json:"filename"`
	MediaType string         `json:"mediaType"`
}

func (w part10) model() (Part, *Error) {
	part := Part{Metadata: w.Metadata, Filename: w.Filename, MediaType: w.MediaType}
	n := 0
	if w.Text != nil {
		n++
		part.Kind, part.Text = PartText, *w.Text
	}
	if w.Raw != nil {
		n++
		raw, err := decodeBase64(*w.Raw)
		if err != nil {
			return Part{}, InvalidParams("raw", "must be base64: "+err.Error())
		}
		part.Kind, part.Raw = PartRaw, raw
	}
	if w.URL != nil {
		n++
		part.Kind, part.URL = PartURL, *w.URL
	}
	if w.Data.set {
		n++
		part.Kind, part.Data = PartData, w.Data.v
	}
	switch {
	case n == 0:
		return Part{}, InvalidParams("", "must hold one of text, raw, url or data")
	case n > 1:
		return Part{}, InvalidParams("", "must hold only one of text, raw, url or data")
	}
	return part, nil
}

// params10 holds the members of every 1.0 method's params. A member name
// has one type in every method, so a request decodes in a single pass
// before its method is known; model then keeps what the method uses.
type params10 struct {
	Tenant               string               `json:"tenant"`
	Message              *wireMessage[part10] `json:"message"`
	Configuration        *sendConfiguration10 `json:"configuration"`
	Metadata             map[string]any       `json:"metadata"`
	ID                   string               `json:"id"`
	TaskID               string               `json:"taskId"`
	ContextID            string               `json:"contextId"`
	HistoryLength        *int32               `json:"historyLength"`
	Status               string               `json:"status"`
	PageSize             *int32               `json:"pageSize"`
	PageToken            string               `json:"pageToken"`
	StatusTimestampAfter string               `json:"statusTimestampAfter"`
	IncludeArtifacts     *bool                `json:"includeArtifacts"`
	URL                  string               `json:"url"`
	Token                string               `json:"token"`
	Authentication       *authInfo10          `json:"authentication"`
}

type sendConfiguration10 struct {
	AcceptedOutputModes []string      `json:"acceptedOutputModes"`
	PushConfig          *pushConfig10 `json:"taskPushNotificationConfig"`
	HistoryLength       *int32        `json:"historyLength"`
	ReturnImmediately   bool          `json:"returnImmediately"`
}

type pushConfig10 struct {
	Tenant         string      `json:"tenant"`
	ID             string      `json:"id"`
	TaskID         string      `json:"taskId"`
	URL            string      `json:"url"`
	Token          string      `json:"token"`
	Authentication *authInfo10 `json:"authentication"`
}

type authInfo10 struct {
	Scheme      string `json:"scheme"`
	Credentials string `json:"credentials"`
}

// model checks the params of 1.0 method m and converts them; error fields
// are relative to params.
func (w *params10) model(m Method) (any, *Error) {
	switch m {
	case MethodSendMessage, MethodSendStreamingMessage:
		if w.Message == nil {
			return nil, InvalidParams("message", "is required")
		}
		req := &SendMessageRequest{Tenant: w.Tenant, Metadata: w.Metadata}
		if err := decodeMessage(decoder{v: V10, strict: true}, w.Message, &req.Message); err != nil {
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
	case MethodGetTask:
		if w.ID == "" {
			return nil, InvalidParams("id", "is required")
		}
		if err := checkHistoryLength(w.HistoryLength); err != nil {
			return nil, err
		}
		return &GetTaskRequest{Tenant: w.Tenant, ID: w.ID, HistoryLength: w.HistoryLength}, nil
	case MethodCancelTask, MethodSubscribeToTask:
		if w.ID == "" {
			return nil, InvalidParams("id", "is required")
		}
		return &TaskIDRequest{Tenant: w.Tenant, ID: w.ID, Metadata: w.Metadata}, nil
	case MethodListTasks:
		return w.listTasks()
	case MethodCreatePushConfig:
		if w.TaskID == "" {
			return nil, InvalidParams("taskId", "is required")
		}
		return decodePushConfig10(&pushConfig10{Tenant: w.Tenant, ID: w.ID, TaskID: w.TaskID, URL: w.URL,
			Token: w.Token, Authentication: w.Authentication})
	case MethodGetPushConfig, MethodDeletePushConfig, MethodListPushConfigs:
		if w.TaskID == "" {
			return nil, InvalidParams("taskId", "is required")
		}
		if w.ID == "" && m != MethodListPushConfigs {
			return nil, InvalidParams("id", "is required")
		}
		return &TaskPushNotificationConfig{Tenant: w.Tenant, ID: w.ID, TaskID: w.TaskID}, nil
	}
	return nil, nil // GetExtendedAgentCard: only a tenant, which one endpoint ignores
}

func (c *sendConfiguration10) model() (*SendMessageConfiguration, *Error) {
	if err := checkHistoryLength(c.HistoryLength); err != nil {
		return nil, err
	}
	conf := &SendMessageConfiguration{
		AcceptedOutputModes: c.AcceptedOutputModes,
		HistoryLength:       c.HistoryLength,
		ReturnImmediately:   c.ReturnImmediately,
	}
	if c.PushConfig != nil {
		pc, err := decodePushConfig10(c.PushConfig)
		if err != nil {
			return nil, within(err, "taskPushNotificationConfig")
		}
		conf.PushNotification = pc
	}
	return conf, nil
}

func (w *params10) listTasks() (*ListTasksRequest, *Error) {
	req := &ListTasksRequest{
		Tenant:           w.Tenant,
		ContextID:        w.ContextID,
		PageSize:         w.PageSize,
		PageToken:        w.PageToken,
		HistoryLength:    w.HistoryLength,
		IncludeArtifacts: w.IncludeArtifacts,
	}
	var ok bool
	if req.Status, ok = parseState(V10, w.Status); !ok {
		return nil, InvalidParams("status", stateChoices[V10])
	}
	// spec 1.0 §3.1.4
	if w.PageSize != nil && (*w.PageSize < 1 || *w.PageSize > 100) {
		return nil, InvalidParams("pageSize", "must be between 1 and 100")
	}
	if err := checkHistoryLength(w.HistoryLength); err != nil {
		return nil, err
	}
	if w.StatusTimestampAfter != "" {
		if req.StatusTimestampAfter, ok = parseTime(w.StatusTimestampAfter); !ok {
			return nil, InvalidParams("statusTimestampAfter", "must be an ISO 8601 timestamp")
		}
	}
	return req, nil
}

func decodePushConfig10(w *pushConfig10) (*TaskPushNotificationConfig, *Error) {
	if w.URL == "" {
		return nil, InvalidParams("url", "is required")
	}
	c := &TaskPushNotificationConfig{Tenant: w.Tenant, ID: w.ID, TaskID: w.TaskID, URL: w.URL, Token: w.Token}
	if a := w.Authentication; a != nil {
		if a.Scheme == "" {
			return nil, InvalidParams("authentication.scheme", "is required")
		}
		c.Authentication = &AuthenticationInfo{Scheme: a.Scheme, Credentials: a.Credentials}
	}
	if err := checkPushConfig(c); err != nil {
		return nil, err
	}
	return c, nil
}
