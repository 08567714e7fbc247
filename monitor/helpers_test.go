package monitor

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

func mustAcquire(t *testing.T, s *data.Store, k data.Key, run uuid.UUID, ttl time.Duration) data.Grant {
	t.Helper()
	g, err := s.Acquire(context.Background(), k, run, ttl, "dev-"+run.String()[:4])
	if err != nil {
		t.Fatalf("Acquire(%v) err = %v", k, err)
	}
	return g
}
