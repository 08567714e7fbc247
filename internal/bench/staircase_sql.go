package bench

import (
	"fmt"
	"strings"
	"text/template"

	leasesql "github.com/leasetop/leasetop/sql"
)

// stairTmpl writes a step's functions (see staircase.go). Each {{if}} is one
// of leasetop's parts, written as lease.acquire and lease.release write it.
// A step has the parts of the steps before it, so the combinations that
// occur are the cumulative ones: Event comes with Row, OptOut with Event.
var stairTmpl = template.Must(template.New("stair").Parse(`
{{- define "keep" -}}
{{- if .P.Event}}
    {{- if .P.OptOut}}
    IF pg_catalog.current_setting('lease.caller_notifies', true) IS DISTINCT FROM extract(epoch FROM pg_catalog.now())::text THEN
        PERFORM pg_catalog.pg_notify({{.Chan}}, lease.event_json(ev));
    ELSE
    {{- end}}
    PERFORM pg_catalog.set_config('lease.pending_event', pg_catalog.row_to_json(ev)::text, false),
            pg_catalog.set_config('lease.pending_for', lease.pending_key(ev.account_id, ev.session_id, ev.run_id), false);
    {{- if .P.OptOut}}
    END IF;
    {{- end}}
{{- else}}
    PERFORM pg_catalog.set_config('floor.event', eid::text, false);
{{- end}}
{{- end -}}

{{- define "acquire" -}}
CREATE FUNCTION {{.Fn "acquire"}}(account_id text, session_id text, run_id uuid, ttl interval, holder text)
RETURNS {{if .P.SetOf}}SETOF lease.grant{{else}}bigint{{end}}
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
{{- if .P.Settings}}
SET lock_timeout = '5s'
SET enable_seqscan = 'off'
SET plan_cache_mode = 'force_generic_plan'
{{- end}}
AS $fn$
#variable_conflict use_column
DECLARE
    now_ timestamptz := {{if .P.Row}}clock_timestamp(){{else}}now(){{end}};
    pub uuid;
    g lease.grant;
    inserted boolean;
    latest timestamptz;
    eid bigint;
    ev lease.event;
BEGIN
{{- if .P.Validate}}
    IF NOT coalesce(lease.grant_ok(a.account_id, a.session_id, a.run_id, a.ttl, a.holder, now_), false) THEN
        PERFORM lease.refuse_grant(a.account_id, a.session_id, a.run_id, a.ttl, a.holder, now_);
    END IF;
{{- end}}
    pub := {{if .P.Public}}lease.public_run_id(a.run_id){{else}}a.run_id{{end}};
{{- if .P.Read}}
    SELECT l.run_id, l.fence, l.expires_at INTO g FROM {{.Tab}} l
     WHERE l.account_id = a.account_id AND l.session_id = a.session_id;
    IF FOUND AND g.expires_at > now_ THEN
        IF g.run_id = pub THEN
            g.run_id := a.run_id;
            {{if .P.SetOf}}RETURN NEXT g;{{else}}RETURN g.fence;{{end}}
        END IF;
        RETURN {{.Ret}};
    END IF;
{{- end}}
{{- if .P.Queue}}
    SELECT max(q.expires_at) INTO latest FROM lease.queue_ticket q
     WHERE q.account_id = a.account_id AND q.session_id = a.session_id;
    IF coalesce(latest > now_, false) AND NOT lease.queue_admits(a.account_id, a.session_id, pub, now_) THEN
        RETURN {{.Ret}};
    END IF;
{{- end}}
{{- if .P.Failover}}
    IF lease.follow_failover() THEN NULL; END IF;
{{- end}}
    INSERT INTO {{.Tab}} AS l (account_id, session_id, run_id, {{if .P.Row}}holder, {{end}}fence, {{if .P.Row}}acquired_at, renewed_at, {{end}}expires_at)
    VALUES (a.account_id, a.session_id, pub, {{if .P.Row}}coalesce(a.holder, ''), {{end}}nextval({{.Seq}}), {{if .P.Row}}now_, now_, {{end}}now_ + a.ttl)
    ON CONFLICT (account_id, session_id) DO UPDATE
        SET run_id = EXCLUDED.run_id, {{if .P.Row}}holder = EXCLUDED.holder, {{end}}fence = {{if .P.Fence}}nextval({{.Seq}}){{else}}EXCLUDED.fence{{end}},
            {{if .P.Row}}acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at, preemptible = true, attachment = NULL, {{end}}expires_at = EXCLUDED.expires_at
        WHERE l.expires_at <= now_
    RETURNING l.run_id, l.fence, l.expires_at, l.xmax = 0 INTO g.run_id, g.fence, g.expires_at, inserted;
    IF NOT FOUND THEN
        RETURN {{.Ret}};
    END IF;
{{- if .P.Fence}}
    IF inserted AND pg_catalog.pg_sequence_last_value({{.Seq}}::regclass) IS DISTINCT FROM g.fence THEN
        IF EXISTS (SELECT FROM (SELECT e.fence FROM {{.Ev}} e
                                 WHERE e.account_id = a.account_id AND e.session_id = a.session_id
                                   AND e.at >= now_ - interval '1 hour' AND e.at <= clock_timestamp() + interval '1 hour'
                                   AND e.kind::text <> ALL (ARRAY['renew_rejected', 'queue_joined', 'queue_left',
                                       'handover_asked', 'handover_declined', 'handover_expired'])
                                 ORDER BY e.id DESC LIMIT 2) h
                    WHERE h.fence > g.fence) THEN
            RAISE EXCEPTION 'fence race; retry' USING ERRCODE = '40001';
        END IF;
    END IF;
{{- end}}
{{- if not .P.Trigger}}
    INSERT INTO {{.Ev}} (at, kind, account_id, session_id, run_id, fence{{if .P.Event}}, expires_at, holder{{end}})
    VALUES (now_, CASE WHEN inserted THEN 'acquired' ELSE 'taken_over' END, a.account_id, a.session_id, pub, g.fence{{if .P.Event}}, g.expires_at, coalesce(a.holder, ''){{end}})
    RETURNING {{if .P.Event}}* INTO ev{{else}}id INTO eid{{end}};
    {{- template "keep" .}}
{{- end}}
    g.run_id := a.run_id;
    {{if .P.SetOf}}RETURN NEXT g;
    RETURN;{{else}}RETURN g.fence;{{end}}
END
$fn$
{{- end -}}

{{- define "release" -}}
CREATE FUNCTION {{.Fn "release"}}(account_id text, session_id text, run_id uuid)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, lease, pg_temp
{{- if .P.Settings}}
SET lock_timeout = '5s'
SET enable_seqscan = 'off'
{{- end}}
AS $fn$
#variable_conflict use_column
DECLARE
    old {{.Tab}};
    eid bigint;
    ev lease.event;
BEGIN
{{- if .P.Validate}}
    IF NOT coalesce(lease.key_ok(r.account_id, r.session_id), false) THEN
        PERFORM lease.check_key(r.account_id, r.session_id);
    END IF;
{{- end}}
{{- if .P.Trigger}}
    PERFORM set_config('lease.op', '', true);
    PERFORM set_config('lease.reason', '', true);
{{- end}}
    DELETE FROM {{.Tab}} l
     WHERE l.account_id = r.account_id AND l.session_id = r.session_id
       AND l.run_id = {{if .P.Public}}lease.public_run_id(r.run_id){{else}}r.run_id{{end}}
{{- if .P.Trigger}};
    RETURN FOUND;
{{- else}}
    RETURNING l.* INTO old;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    {{- if .P.Failover}}
    IF lease.follow_failover() THEN NULL; END IF;
    {{- end}}
    INSERT INTO {{.Ev}} (at, kind, account_id, session_id, run_id, fence{{if .P.Event}}, expires_at, holder{{end}})
    VALUES (clock_timestamp(), 'released', old.account_id, old.session_id, old.run_id, old.fence{{if .P.Event}}, old.expires_at, old.holder{{end}})
    RETURNING {{if .P.Event}}* INTO ev{{else}}id INTO eid{{end}};
    {{- template "keep" .}}
    RETURN true;
{{- end}}
END
$fn$
{{- end -}}
`))

// stairView is what stairTmpl reads.
type stairView struct {
	P    stairParts
	q    stairSQL
	Tab  string // the lease table
	Ev   string // the event table
	Seq  string // the fence sequence, as a literal
	Chan string // the notification channel, as a literal
	Ret  string // what a refusal returns: "NULL", or "" for a set
}

// Fn is the step's function obj, its parameters qualified by "a" (acquire)
// or "r" (release): the body says a.account_id.
func (v stairView) Fn(obj string) string { return v.q.name(obj) }

// ddl returns the step's statements, but the partitions of its history
// (partitions).
func (q stairSQL) ddl() ([]string, error) {
	p := q.p
	stmts := []string{`CREATE SEQUENCE ` + q.name("fence") + ` AS bigint`}
	if p.Row {
		stmts = append(stmts, `CREATE TABLE `+q.name("lease")+` (LIKE lease.session_lease INCLUDING ALL)`)
	} else {
		stmts = append(stmts, `CREATE TABLE `+q.name("lease")+` (account_id text NOT NULL, session_id text NOT NULL,
			run_id uuid NOT NULL, fence bigint NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (account_id, session_id))`)
	}
	switch {
	case p.History:
		stmts = append(stmts, `CREATE TABLE `+q.name("event")+` (LIKE lease.event INCLUDING DEFAULTS INCLUDING IDENTITY) PARTITION BY RANGE (at)`,
			`CREATE INDEX ON `+q.name("event")+` (account_id, session_id, id)`,
			`CREATE INDEX ON `+q.name("event")+` (at)`,
			`CREATE INDEX ON `+q.name("event")+` (account_id, session_id, at, id)`)
	case p.Event:
		stmts = append(stmts, `CREATE TABLE `+q.name("event")+` (LIKE lease.event INCLUDING DEFAULTS INCLUDING IDENTITY)`,
			`CREATE INDEX ON `+q.name("event")+` (account_id, session_id, id)`)
	default:
		stmts = append(stmts, `CREATE TABLE `+q.name("event")+` (id bigint GENERATED ALWAYS AS IDENTITY, at timestamptz NOT NULL,
			kind text NOT NULL, account_id text NOT NULL, session_id text NOT NULL, run_id uuid, fence bigint)`,
			`CREATE INDEX ON `+q.name("event")+` (account_id, session_id, id)`)
	}
	v := stairView{P: p, q: q, Tab: q.name("lease"), Ev: q.name("event"), Seq: quoteLiteral(q.name("fence")),
		Chan: quoteLiteral(q.channel), Ret: "NULL"}
	if p.SetOf {
		v.Ret = ""
	}
	for _, fn := range []struct{ tmpl, obj, alias string }{{"acquire", "acquire", "a"}, {"release", "release", "r"}} {
		var b strings.Builder
		if err := stairTmpl.ExecuteTemplate(&b, fn.tmpl, v); err != nil {
			return nil, fmt.Errorf("bench: staircase template %s: %w", fn.tmpl, err)
		}
		// The body names its parameters a.x (r.x); PL/pgSQL qualifies them by
		// the function's name.
		body := strings.NewReplacer(" a.", " "+q.t+"_acquire.", "(a.", "("+q.t+"_acquire.",
			" r.", " "+q.t+"_release.", "(r.", "("+q.t+"_release.").Replace(b.String())
		stmts = append(stmts, body)
	}
	if p.Trigger {
		trig, err := q.triggerDDL()
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, trig...)
	}
	return stmts, nil
}

// partitions returns the statements that give the step's history the
// partitions lease.event has (bounds), each with its unique index on id.
func (q stairSQL) partitions(bounds []string) []string {
	var stmts []string
	for i, b := range bounds {
		part := q.name(fmt.Sprintf("event_p%d", i))
		stmts = append(stmts, `CREATE TABLE `+part+` PARTITION OF `+q.name("event")+` `+b,
			`CREATE UNIQUE INDEX ON `+part+` (id)`)
	}
	return stmts
}

// triggerDDL returns the step's copy of lease.on_session_lease_change and
// its three ownership triggers, made from the embedded SQL.
func (q stairSQL) triggerDDL() ([]string, error) {
	var src string
	for _, f := range leasesql.Files() {
		if strings.Contains(f.SQL, "FUNCTION lease.on_session_lease_change(") {
			src = f.SQL
		}
	}
	schema := q.s
	fn, err := copyFunction(src, copySpec{name: "on_session_lease_change", as: q.t + "_on_change",
		table: q.t + "_lease", events: q.t + "_event"}, schema, q.channel)
	if err != nil {
		return nil, err
	}
	trigs := ownershipTrig.FindAllString(src, -1)
	if len(trigs) != 3 {
		return nil, fmt.Errorf("bench: found %d ownership triggers, want 3: update staircase_sql.go", len(trigs))
	}
	// The copy's ev has the scratch table's row type: the same payload
	// without lease.event_json, which takes lease.event's.
	stmts := []string{strings.ReplaceAll(fn, "lease.event_json(ev)", "pg_catalog.row_to_json(ev)::pg_catalog.text")}
	for _, t := range trigs {
		t = sessionLeaseRef.ReplaceAllString(t, q.name("lease"))
		t = strings.ReplaceAll(t, "lease.on_session_lease_change()", q.name("on_change")+"()")
		stmts = append(stmts, t)
	}
	return stmts, nil
}
