package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is the name of the key-value bucket the leases live in.
const Bucket = "vigil_leases"

// BucketConfig is the leases bucket's shape. TTL is every lease's: a key
// not renewed within it expires in the server, which tells every watcher.
type BucketConfig struct {
	TTL      time.Duration
	Replicas int
}

// MinTTL is the shortest lease TTL: the server's expiry and the renewals
// (a third of the TTL apart) need room beside a network round trip.
const MinTTL = time.Second

// MismatchError says that the bucket found differs from the one asked for,
// and in what; starting on it would mix two clusters' ideas of a lease.
type MismatchError struct {
	Field     string
	Want, Got string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("cluster: the %s bucket has %s %s, this node wants %s", Bucket, e.Field, e.Got, e.Want)
}

// OpenBucket creates the leases bucket on first start and verifies it on
// later ones: a bucket with another TTL or replica count is a
// *MismatchError, not silently adopted.
func OpenBucket(ctx context.Context, js jetstream.JetStream, c BucketConfig) (jetstream.KeyValue, error) {
	if c.TTL < MinTTL {
		return nil, fmt.Errorf("cluster: lease ttl %s is under the minimum %s", c.TTL, MinTTL)
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:         Bucket,
			Description:    "vigil: which node holds each partition and cluster-wide job",
			History:        1,
			TTL:            c.TTL,
			LimitMarkerTTL: c.TTL,
			Replicas:       c.Replicas,
			Storage:        jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			// Another node created it first: verify theirs.
			kv, err = js.KeyValue(ctx, Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: open the %s bucket: %w", Bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: read the %s bucket: %w", Bucket, err)
	}
	if st.TTL() != c.TTL {
		return nil, &MismatchError{Field: "lease ttl", Want: c.TTL.String(), Got: st.TTL().String()}
	}
	if kvs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		if r := kvs.StreamInfo().Config.Replicas; r != c.Replicas {
			return nil, &MismatchError{Field: "replicas", Want: fmt.Sprint(c.Replicas), Got: fmt.Sprint(r)}
		}
	}
	if st.LimitMarkerTTL() == 0 {
		return nil, &MismatchError{Field: "limit marker ttl", Want: c.TTL.String(), Got: "none"}
	}
	return kv, nil
}
