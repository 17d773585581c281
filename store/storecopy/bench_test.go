package storecopy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
	"github.com/vigilhq/vigil/store/natsstore"
	"github.com/vigilhq/vigil/store/storecopy"
)

// BenchmarkCopyToNATS copies a badger store of 10,000 pending rows (four
// records each) into JetStream (R1, one embedded server) and reports
// records per second, verification and the second read included.
func BenchmarkCopyToNATS(b *testing.B) {
	ctx := context.Background()
	src, err := badger.OpenStore(b.TempDir(), badger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	ids := rand.NewChaCha8([32]byte{3})
	if _, _, err := src.PutRecipient(ctx, store.RecipientRecord{ID: "a", Status: store.StatusRunning, CreatedAt: t0, UpdatedAt: t0}); err != nil {
		b.Fatal(err)
	}
	for i := range 10_000 {
		id, err := store.NewID(t0.Add(time.Duration(i)*time.Millisecond), ids)
		if err != nil {
			b.Fatal(err)
		}
		exp := t0.Add(time.Hour)
		if err := src.Create(ctx, store.Watch{
			ID: id, Kind: "timer", Params: json.RawMessage(`{"at":"2026-11-30T13:00:00Z"}`),
			Recipient: store.Recipient{ID: "a"}, State: store.Pending, Receipt: store.ReceiptNone,
			Every: store.Duration(time.Minute), CreatedAt: t0, ExpiresAt: &exp,
		}); err != nil {
			b.Fatal(err)
		}
	}
	srv := natstest.Start(b)
	b.ResetTimer()
	total := 0
	for i := 0; b.Loop(); i++ {
		dst, err := natsstore.OpenStore(ctx, natsstore.Config{URLs: []string{srv.ClientURL()}, Bucket: fmt.Sprint("bench", i)})
		if err != nil {
			b.Fatal(err)
		}
		sum, err := storecopy.Copy(ctx, src, dst, storecopy.Options{})
		_ = dst.Close()
		if err != nil {
			b.Fatal(err)
		}
		total += sum.Copied.Total()
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
}
