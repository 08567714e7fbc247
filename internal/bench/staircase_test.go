package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestStairsAddOnePartEach: every step's SQL (its tables, functions and
// calls) differs from the step before it, each step has the parts of the
// ones before, and the last has them all.
func TestStairsAddOnePartEach(t *testing.T) {
	t.Parallel()
	text := func(i int) string {
		q := stairSQL{s: `"lease_bench_x"`, t: strings.ReplaceAll(stairs[i].name, "-", "_"), channel: "lease_bench_x", p: partsOf(i)}
		ddl, err := q.ddl()
		if err != nil {
			t.Fatalf("%s: %v", stairs[i].name, err)
		}
		a, r := q.calls()
		// Named alike, so that only what the step adds differs.
		return strings.ReplaceAll(strings.Join(ddl, "\n")+a.Setup+a.Call.SQL+a.Notify.SQL+r.Call.SQL, q.t, "step")
	}
	prev := text(0)
	for i := 1; i < len(stairs); i++ {
		cur := text(i)
		if cur == prev {
			t.Errorf("%s adds nothing to %s", stairs[i].name, stairs[i-1].name)
		}
		prev = cur
	}
	if all := partsOf(len(stairs) - 1); all != (stairParts{true, true, true, true, true, true, true, true, true, true, true, true, true, true}) {
		t.Errorf("the last step's parts %+v, want every part", all)
	}
}

// TestStaircaseRuns runs the floor and every step briefly beside the
// seed's cycle and leasetop's, as `leasetop bench --only
// seed-cycle,floor,stair,cycle` does, and checks each reports its cycles,
// its server CPU and its ratios to the seed's, never their speed.
func TestStaircaseRuns(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	rep, err := Run(context.Background(), Config{
		DSN: db.URL, Clients: 2, Keys: 8, Duration: 200 * time.Millisecond, Warmup: 20 * time.Millisecond,
		Only: []string{"seed-cycle", "floor", "stair", "cycle"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var names []string
	for _, res := range rep.Results {
		names = append(names, res.Name)
		if res.Error != "" || res.Ops == 0 || res.ServerCPUus <= 0 && !strings.HasPrefix(res.Name, "seed-") && res.Name != "acquire-fresh" && res.Name != "release" {
			t.Errorf("%s: error %q, ops %d, server CPU %v us; want ops and the server's CPU", res.Name, res.Error, res.Ops, res.ServerCPUus)
		}
	}
	for _, st := range stairs {
		if !slices.Contains(names, st.name) {
			t.Errorf("results %v lack %s", names, st.name)
		}
	}
	ratios := map[string]bool{}
	for _, r := range rep.Ratios {
		ratios[r.Name] = r.Error == "" && r.Value > 0
	}
	for _, want := range []string{"the lean floor's cycles/s / the seed's", "acquire+release cycles/s / the lean floor's",
		"staircase, stair-setof: cycles/s / the seed's", "staircase, stair-row: server CPU per cycle / the seed's"} {
		if !ratios[want] {
			t.Errorf("ratio %q missing or without a value", want)
		}
	}
}
