package cli

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// passwordWarning is the line printed when a connection flag (--dsn,
// --listen-dsn) carries a password; flag names it.
func passwordWarning(flag string) string {
	return "leasetop: warning: " + flag + " carries a password, which every user of this machine can read in the process list " +
		"(ps, /proc/PID/cmdline); put it in PGPASSFILE (~/.pgpass), or in PGPASSWORD or DATABASE_URL in the environment"
}

// warnPassword prints passwordWarning on stderr when dsn, given with the
// command-line flag named flag, carries a password. The password itself is
// never printed.
func warnPassword(env Env, flag, dsn string) {
	if dsnHasPassword(dsn) {
		fmt.Fprintln(env.Stderr, passwordWarning(flag))
	}
}

// kvPassword finds a password in a keyword/value connection string.
var kvPassword = regexp.MustCompile(`(^|\s)password\s*=`)

// dsnHasPassword reports whether a URL or keyword/value connection string
// carries a password, also when it is otherwise malformed.
func dsnHasPassword(dsn string) bool {
	scheme, rest, isURL := strings.Cut(dsn, "://")
	if !isURL || (scheme != "postgres" && scheme != "postgresql") {
		return kvPassword.MatchString(dsn)
	}
	if u, err := url.Parse(dsn); err == nil {
		_, set := u.User.Password()
		return set || u.Query().Has("password")
	}
	// Malformed: look at the user info by hand.
	authority, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(authority, "@"); at >= 0 && strings.Contains(authority[:at], ":") {
		return true
	}
	return strings.Contains(rest, "password=")
}
