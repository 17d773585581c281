package recipients

import (
	"context"

	"github.com/vigilhq/vigil/store"
)

// Listed is a recipient with its pending watches, counted up to the
// recipient bound (Capped: at least Pending).
type Listed struct {
	store.RecipientRecord
	Pending int
	Capped  bool
}

// List is every recipient, by id, with its pending watches: what a pause
// or a stop would cancel. Each count reads the recipient's own index (or
// the count the commits keep), never every row.
func (s *Service) List(ctx context.Context) ([]Listed, error) {
	recs, err := s.store.ListRecipients(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Listed, 0, len(recs))
	for _, r := range recs {
		n, err := s.store.CountPending(ctx, r.ID, s.limits.MaxPending)
		if err != nil {
			return nil, err
		}
		out = append(out, Listed{RecipientRecord: r, Pending: n, Capped: s.limits.MaxPending > 0 && n >= s.limits.MaxPending})
	}
	return out, nil
}
