package supervise

import "strings"

// dbSecrets are the environment variables that may carry leasetop's database
// credentials: leasetop run removes them from its command's environment
// unless --pass-db-env asks for them.
var dbSecrets = []string{"DATABASE_URL", "LEASETOP_LISTEN_DSN", "PGPASSWORD", "PGSSLPASSWORD"}

// Env is environ (NAME=value entries) for leasetop run's command: without
// its database credentials (DATABASE_URL, LEASETOP_LISTEN_DSN, PGPASSWORD,
// PGSSLPASSWORD) unless pass, then with the lease token.
func Env(environ []string, pass bool, token []string) []string {
	out := make([]string, 0, len(environ)+len(token))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if (!pass && isDBSecret(name)) || name == guardianMarker {
			continue
		}
		out = append(out, kv)
	}
	return append(out, token...)
}

func isDBSecret(name string) bool {
	for _, s := range dbSecrets {
		if name == s {
			return true
		}
	}
	return false
}

// guardianEnv is environ for the guardian of leasetop run's command: without
// dbSecrets, whatever --pass-db-env says (the command's own environment goes
// to the guardian over its socket, not through its environment).
func guardianEnv(environ []string) []string { return Env(environ, false, nil) }
