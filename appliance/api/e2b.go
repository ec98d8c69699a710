package api

// Where a server serves E2B's API (package e2b): E2B_API_URL is the
// server's address and E2BPath, E2B_SANDBOX_URL that and E2BEnvdPath.
const (
	E2BPath     = "/e2b"
	E2BEnvdPath = "/e2b/envd"
)
