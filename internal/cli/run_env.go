package cli

import "strings"

// dbSecrets are the environment variables that may carry leasetop's database
// credentials: leasetop run removes them from its command's environment
// unless --pass-db-env asks for them.
var dbSecrets = []string{"DATABASE_URL", "LEASETOP_LISTEN_DSN", "PGPASSWORD", "PGSSLPASSWORD"}

// childEnv is environ (NAME=value entries) for leasetop run's command:
// without dbSecrets unless pass, then with the lease token.
func childEnv(environ []string, pass bool, token []string) []string {
	out := make([]string, 0, len(environ)+len(token))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !pass && isDBSecret(name) {
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
