package api

// Agent is an entry of the agent table.
type Agent struct {
	Name     string   `json:"name"`
	Command  []string `json:"command"`
	Secrets  []string `json:"secrets,omitempty"`
	Required []string `json:"required,omitempty"`
}

// BoxAgent is what one box has of an agent: whether it is installed, and
// where its credentials would come from (never their values).
type BoxAgent struct {
	Name      string `json:"name"`
	Installed bool   `json:"installed"`
	// Credentials: "secret NAME" (a secret of the box's owner is set),
	// "brokered secret NAME" (set, and the box gets a stand-in for it),
	// "env NAME" (the box's own environment has it), "login" (the
	// agent's own login files are in the box), or "".
	Credentials string `json:"credentials"`
	// Missing are required secrets that are not set: a prompt is refused.
	Missing []string `json:"missing,omitempty"`
	// Hint, when set, is why a prompt to this agent would be refused and
	// what to do (not installed, a secret missing, no credentials).
	Hint string `json:"hint,omitempty"`
}

// PromptPost hands an agent a task in a box.
type PromptPost struct {
	Agent   string `json:"agent,omitempty"`
	Task    string `json:"task"`
	WorkDir string `json:"workdir,omitempty"`
}
