package cli

// helpGroups is 'paddock help': the commands in groups, as gh and docker
// show theirs, each with one line. A command's own help (paddock CMD
// --help) has its whole description, its flags and examples.
var helpGroups = []struct {
	title string
	cmds  []helpLine
}{
	{"Boxes", []helpLine{
		{"new", "create a box; it becomes current"},
		{"ls", "list boxes"},
		{"show", "show one box"},
		{"use", "make a box the current box"},
		{"current", "print the current box"},
		{"stop", "snapshot a box's filesystem, then stop it"},
		{"ttl", "set how long a box runs before it stops"},
		{"start", "start a stopped box"},
		{"resume", "same as start"},
		{"rm", "remove boxes (their drives are kept)"},
		{"fork", "a new box from a snapshot of another"},
		{"snapshot", "snapshot a box's filesystem now"},
		{"snapshots", "list a box's snapshots"},
		{"restore", "bring back a snapshot"},
		{"top", "what running boxes use, live"},
		{"share", "share a box with a user or group, or list who has it"},
		{"unshare", "stop sharing a box with a user"},
	}},
	{"Work in a box", []helpLine{
		{"exec", "run a command in a box, or start it as a job"},
		{"jobs", "list, signal or send input to a box's jobs"},
		{"logs", "print a job's output"},
		{"wait", "wait for a job to end and print its exit code"},
		{"prompt", "hand a coding agent a task"},
		{"agents", "the agents the server knows, and a box's"},
		{"run", "run code in a box's code interpreter"},
		{"contexts", "the code interpreter's contexts"},
		{"watch", "print a box folder's changes as they happen"},
	}},
	{"Files and drives", []helpLine{
		{"push", "copy a local file or folder into a box"},
		{"pull", "copy a file or folder out of a box"},
		{"drive", "drives: volumes that outlive boxes"},
	}},
	{"Desktop, previews and remote access", []helpLine{
		{"desktop", "open a box's desktop, or use its mouse and keyboard"},
		{"screenshot", "save a PNG of a box's desktop"},
		{"preview", "what listens in a box, and its preview URLs"},
		{"dashboard", "sign a browser in to the web dashboard"},
		{"ssh", "ssh into a box through the server"},
		{"ssh-config", "Host entries for ssh and editors"},
		{"code", "open VS Code on a box"},
	}},
	{"Projects (Boxfiles)", []helpLine{
		{"plan", "show what applying the Boxfile would change"},
		{"apply", "make the project match its Boxfile"},
		{"destroy", "remove the project's boxes"},
		{"validate", "check a Boxfile without the server"},
		{"fmt", "rewrite Boxfiles in canonical form"},
	}},
	{"Policies and secrets", []helpLine{
		{"policy", "egress policies: allow-all, deny-all, allowlists"},
		{"secret", "secrets for agents; brokered ones never enter a box"},
	}},
	{"Images", []helpLine{
		{"images", "the images you may make boxes from"},
		{"image", "build, list, share and remove your own images"},
	}},
	{"Servers", []helpLine{
		{"nodes", "list the servers boxes are placed on"},
		{"node", "add, label, drain or remove a server"},
		{"move", "move boxes and their drives to another server"},
	}},
	{"Access", []helpLine{
		{"login", "log in to a paddockd"},
		{"logout", "revoke the token and forget the server"},
		{"whoami", "show the user, server and token in use"},
		{"user", "users: invite, remove, set quotas"},
		{"group", "groups of users and their quotas"},
		{"token", "API tokens for automation"},
		{"e2b", "point E2B's SDKs at this server"},
		{"key", "SSH public keys"},
		{"audit", "who did what: the audit log"},
	}},
	{"Tools", []helpLine{
		{"version", "the client's version and the server's"},
		{"skill", "the skill that teaches agents this CLI"},
		{"mcp", "serve the Model Context Protocol to an agent"},
		{"completion", "a shell completion script"},
		{"help", "this help, or a command's"},
	}},
}

type helpLine struct{ name, summary string }
