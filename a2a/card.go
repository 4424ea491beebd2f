package a2a

// Protocol bindings named in AgentInterface.ProtocolBinding.
const (
	BindingJSONRPC  = "JSONRPC"
	BindingGRPC     = "GRPC"
	BindingHTTPJSON = "HTTP+JSON"
)

// AgentCard describes an agent: who it is, where and how to reach it, what
// it can do and how callers authenticate.
type AgentCard struct {
	Name                string
	Description         string
	SupportedInterfaces []AgentInterface
	Provider            *AgentProvider
	Version             string
	DocumentationURL    string
	Capabilities        AgentCapabilities
	// SecuritySchemes is keyed by scheme name; requirements refer to it.
	SecuritySchemes      map[string]SecurityScheme
	SecurityRequirements []SecurityRequirement
	DefaultInputModes    []string
	DefaultOutputModes   []string
	Skills               []AgentSkill
	Signatures           []AgentCardSignature
	IconURL              string
}

// AgentInterface is one URL and binding at which the agent answers.
type AgentInterface struct {
	URL             string
	ProtocolBinding string
	Tenant          string
	ProtocolVersion string
}

// AgentProvider is the organization behind the agent.
type AgentProvider struct {
	URL          string
	Organization string
}

// AgentCapabilities lists the optional features the agent supports. Nil
// pointers are omitted from the card.
type AgentCapabilities struct {
	Streaming         *bool
	PushNotifications *bool
	Extensions        []AgentExtension
	ExtendedAgentCard *bool
}

// AgentExtension declares a protocol extension the agent supports.
type AgentExtension struct {
	URI         string
	Description string
	Required    bool
	Params      map[string]any
}

// AgentSkill is one capability the agent offers.
type AgentSkill struct {
	ID                   string
	Name                 string
	Description          string
	Tags                 []string
	Examples             []string
	InputModes           []string
	OutputModes          []string
	SecurityRequirements []SecurityRequirement
}

// AgentCardSignature is a JWS over the canonical card, payload detached.
type AgentCardSignature struct {
	Protected string
	Signature string
	Header    map[string]any
}

// SecurityRequirement is one alternative of an OR-of-ANDs: every scheme it
// names (with the scopes listed) must be satisfied.
type SecurityRequirement map[string][]string

// SecuritySchemeType names which field of a SecurityScheme is set.
type SecuritySchemeType uint8

const (
	SchemeAPIKey SecuritySchemeType = iota + 1
	SchemeHTTPAuth
	SchemeOAuth2
	SchemeOpenIDConnect
	SchemeMutualTLS
)

// SecurityScheme is one way a caller can authenticate. Type says which
// fields apply.
type SecurityScheme struct {
	Type        SecuritySchemeType
	Description string

	// apiKey: Location is "header", "query" or "cookie"; Name is the header,
	// parameter or cookie name.
	Location string
	Name     string

	// http: Scheme is "basic" or "bearer".
	Scheme       string
	BearerFormat string

	// oauth2
	Flows             OAuthFlows
	OAuth2MetadataURL string

	// openIdConnect
	OpenIDConnectURL string
}
