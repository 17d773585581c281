package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket is the name of the key-value bucket the leases live in when the
// store's bucket is natsstore's default, vigil: LeaseBucket("vigil").
const Bucket = "vigil_leases"

// LeaseBucket names the leases bucket of the cluster whose store is the
// key-value bucket store: store + "_leases". Two clusters sharing one
// NATS system through different store buckets hold their leases apart;
// one name for all would let a node of one hold another's partitions.
func LeaseBucket(store string) string { return store + "_leases" }

// BucketConfig is the leases bucket's shape. Name is its name (Bucket
// when empty; LeaseBucket of the store's bucket on a node). TTL is every
// lease's: a key not renewed within it expires in the server, which tells
// every watcher.
type BucketConfig struct {
	Name     string
	TTL      time.Duration
	Replicas int
}

// MinTTL is the shortest lease TTL: the server's expiry and the renewals
// (a third of the TTL apart) need room beside a network round trip.
const MinTTL = time.Second

// MismatchError says that the bucket found differs from the one asked for,
// and in what; starting on it would mix two clusters' ideas of a lease.
type MismatchError struct {
	Bucket    string
	Field     string
	Want, Got string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("cluster: the %s bucket has %s %s, this node wants %s", e.Bucket, e.Field, e.Got, e.Want)
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
	name := c.Name
	if name == "" {
		name = Bucket
	}
	kv, err := js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:         name,
			Description:    "vigil: which node holds each partition and cluster-wide job",
			History:        1,
			TTL:            c.TTL,
			LimitMarkerTTL: c.TTL,
			Replicas:       c.Replicas,
			Storage:        jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			// Another node created it first: verify theirs.
			kv, err = js.KeyValue(ctx, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: open the %s bucket: %w", name, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: read the %s bucket: %w", name, err)
	}
	if st.TTL() != c.TTL {
		return nil, &MismatchError{Bucket: name, Field: "lease ttl", Want: c.TTL.String(), Got: st.TTL().String()}
	}
	if kvs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		if r := kvs.StreamInfo().Config.Replicas; r != c.Replicas {
			return nil, &MismatchError{Bucket: name, Field: "replicas", Want: fmt.Sprint(c.Replicas), Got: fmt.Sprint(r)}
		}
	}
	if st.LimitMarkerTTL() == 0 {
		return nil, &MismatchError{Bucket: name, Field: "limit marker ttl", Want: c.TTL.String(), Got: "none"}
	}
	return kv, nil
}
