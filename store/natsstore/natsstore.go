package natsstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/store"
)

// Version is the store version this build writes and reads, kept in the
// bucket's metadata key.
const Version = 1

// DefaultPartitions is the partition count a new store is created with
// when Config.Partitions is zero.
const DefaultPartitions = 64

// DefaultBucket is the key-value bucket's name when Config.Bucket is
// empty: its stream is KV_vigil.
const DefaultBucket = "vigil"

// Sentinel errors of this backend. Everything the core reads (not found,
// not pending, exists, not running, busy, …) is package store's: a
// transition that lost its race 16 times is store.ErrBusy.
var (
	// ErrMismatch: the bucket exists and differs from what Config asks
	// (partitions, replicas, a stream setting the rules rely on). The
	// error returned is a *MismatchError.
	ErrMismatch = errors.New("natsstore: the store differs from its configuration")
	// ErrBadConfig: Config itself is invalid (no URL, a negative count,
	// half a client certificate).
	ErrBadConfig = errors.New("natsstore: bad configuration")
	// ErrStartTimeout: JetStream did not answer within
	// Config.StartTimeout (no server reachable, or no meta leader: a
	// cluster with too few of its servers up). The error wraps the last
	// attempt's too.
	ErrStartTimeout = errors.New("natsstore: JetStream did not answer within the start timeout")
	// ErrNoBucket: Config.Existing asked for a bucket that is not there.
	ErrNoBucket = errors.New("natsstore: no such bucket")
)

// MismatchError says what differs between the stored bucket and Config.
type MismatchError struct {
	What   string // "partitions", "replicas", "allow_atomic", "metadata", …
	Stored string
	Wanted string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("natsstore: %s is %s in the store, %s in the configuration", e.What, e.Stored, e.Wanted)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// TLS names the PEM files of a TLS connection to the servers. CA alone
// verifies the servers; Cert and Key, both or neither, identify vigil.
type TLS struct {
	CA   string
	Cert string
	Key  string
}

// Config configures Open.
type Config struct {
	// URLs are the servers, nats://host:port each; at least one.
	URLs []string
	// CredsFile is a NATS credentials file (a user JWT and its nkey
	// seed); empty: none.
	CredsFile string
	TLS       TLS
	// Replicas is the bucket's replica count (1, 3 or 5). Zero: 1 when
	// creating, whatever the bucket has when opening.
	Replicas int
	// Partitions is the cluster's partition count, fixed when the store
	// is created. Zero: DefaultPartitions when creating, whatever the
	// store has when opening.
	Partitions int
	// Bucket names the key-value bucket (DefaultBucket when empty), so
	// two vigil clusters can share one NATS system.
	Bucket string
	// Existing opens only a bucket that is already there (ErrNoBucket
	// otherwise), for reading one: a copy's source, where creating it
	// would leave an empty bucket behind a mistyped name.
	Existing bool
	// Timeout bounds one JetStream request (default 5 s).
	Timeout time.Duration
	// StartTimeout bounds how long Open waits for JetStream to answer: a
	// cluster still forming (no server up yet, or too few for a meta
	// leader) is waited on, attempt after attempt, until it answers or
	// this has passed (default DefaultStartTimeout); then Open fails with
	// ErrStartTimeout. Negative is ErrBadConfig.
	StartTimeout time.Duration
	// Clock paces Open's waiting and a commit's between tries the servers
	// refused as too many in flight (nil: the wall clock and its timers).
	Clock clock.Clock
	// Logger receives connection events. Nil discards them.
	Logger *slog.Logger
}

// DefaultStartTimeout is Config.StartTimeout when it is zero: long
// enough for a cluster whose servers start together to elect a meta
// leader, short enough that a node pointed at the wrong servers says so.
const DefaultStartTimeout = time.Minute

// Store is vigil's store on NATS JetStream. See the package doc.
type Store struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	kv     jetstream.KeyValue
	bucket string
	// subj is the subject prefix of the bucket's keys: "$KV.<bucket>.".
	subj       string
	partitions int
	replicas   int
	// inflight bounds this Store's batches in flight below the server's
	// 50 open atomic batches per stream.
	inflight chan struct{}
	// timeout bounds one request: a read or a commit sent while the
	// stream has no leader gets no answer, whatever the caller's context.
	timeout time.Duration
	// clock paces a commit's waits between tries (Config.Clock).
	clock clock.Clock
	log   *slog.Logger
	// stripes serialise this process's transitions that share a hint
	// (store.Tx.Serialise): a recipient's mail and count of pending rows,
	// an event stream's appends; each held across a commit and the then
	// after it, so the thens of one hint come in commit order. Without
	// them commits of one hint would refuse each other round after round
	// (they all write its sequence or count key); across nodes they
	// contend as they must.
	stripes [64]sync.Mutex
	// fences is each partition's fence this Store holds (fence.go), by
	// partition: set when the node gains one, lost when it lets it go.
	fenceMu sync.Mutex
	fences  map[int]fenceState
	// failpoint, set only by this package's tests, is called before a
	// commit is sent, with the commit's kind; an error from it aborts the
	// commit, and it may write through another Store meanwhile.
	failpoint func(at string) error
	// loseAnswer, set only by this package's tests, says whether to treat
	// a commit the server stored as unanswered (a timeout).
	loseAnswer func() bool
}

// meta is the metadata key's value.
type meta struct {
	V          int `json:"v"`
	Partitions int `json:"partitions"`
}

const metaKey = "meta"

// Open connects to the servers and opens the store, creating its bucket
// on first start and verifying it on later ones.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.URLs) == 0 {
		return nil, fmt.Errorf("%w: no server URL", ErrBadConfig)
	}
	if cfg.Replicas < 0 || cfg.Partitions < 0 || cfg.Replicas > 5 {
		return nil, fmt.Errorf("%w: replicas %d, partitions %d", ErrBadConfig, cfg.Replicas, cfg.Partitions)
	}
	if (cfg.TLS.Cert == "") != (cfg.TLS.Key == "") {
		return nil, fmt.Errorf("%w: a TLS certificate needs its key and a key its certificate", ErrBadConfig)
	}
	if cfg.StartTimeout < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: start timeout %s, timeout %s", ErrBadConfig, cfg.StartTimeout, cfg.Timeout)
	}
	bucket := cfg.Bucket
	if bucket == "" {
		bucket = DefaultBucket
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "natsstore")
	opts := []nats.Option{
		nats.Name("vigil"),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
			if err == nil {
				err = c.LastError() // a close on a server's -ERR leaves it here
			}
			if err == nil { // closed here: Close, or an attempt of Open given up
				log.Debug("connection closed")
				return
			}
			log.Warn("disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("reconnected", "url", c.ConnectedUrlRedacted()) }),
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.TLS.CA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLS.CA))
	}
	if cfg.TLS.Cert != "" {
		opts = append(opts, nats.ClientCert(cfg.TLS.Cert, cfg.TLS.Key))
	}
	url := cfg.URLs[0]
	for _, u := range cfg.URLs[1:] {
		url += "," + u
	}
	clk := clock.Or(cfg.Clock)
	startTimeout := cfg.StartTimeout
	if startTimeout == 0 {
		startTimeout = DefaultStartTimeout
	}
	deadline := clk.Now().Add(startTimeout)
	for attempt := 1; ; attempt++ {
		s, err := open(ctx, cfg, url, opts, bucket, timeout, log)
		if err == nil {
			s.clock = clk
			if attempt > 1 {
				log.Info("JetStream answered", "attempt", attempt)
			}
			return s, nil
		}
		if ctx.Err() != nil || !unanswered(err) {
			return nil, err
		}
		wait := startBackoff(attempt)
		if left := deadline.Sub(clk.Now()); left < wait {
			if left <= 0 {
				return nil, fmt.Errorf("%w (store.nats.start_timeout %s, %d attempts; %s): %w",
					ErrStartTimeout, startTimeout, attempt, startHint(err, url), err)
			}
			wait = left
		}
		log.Warn(fmt.Sprintf("waiting for JetStream: %s (attempt %d)", waitingFor(err), attempt), "attempt", attempt, "retry_in", wait, "err", err)
		if err := clk.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// OpenStore is the store (store.New) over the bucket Open opens.
func OpenStore(ctx context.Context, cfg Config) (*store.Store, error) {
	kv, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	st, err := store.New(ctx, kv)
	if err != nil {
		_ = kv.Close()
		return nil, err
	}
	return st, nil
}

// waitingFor says what an unanswered attempt waits for: a server to
// connect to, when none could be reached (a wrong address, or none up
// yet), else a meta leader (a server that takes the connection and does
// not answer JetStream's API).
func waitingFor(err error) string {
	if errors.Is(err, nats.ErrNoServers) {
		return "no server reachable"
	}
	return "no meta leader yet"
}

// startHint is what ErrStartTimeout tells the operator to check, after
// the last attempt's err.
func startHint(err error, url string) string {
	if errors.Is(err, nats.ErrNoServers) {
		return fmt.Sprintf("check that the servers %s run and that this node can reach them", url)
	}
	return fmt.Sprintf("check that enough of the servers %s run for a meta leader", url)
}

// startBackoff is the wait after Open's attempt-th unanswered attempt:
// 250 ms doubling to 5 s. Each attempt already waited up to
// Config.Timeout for its answer.
func startBackoff(attempt int) time.Duration {
	return min(250*time.Millisecond<<min(attempt-1, 5), 5*time.Second)
}

// unanswered says whether an attempt to open failed only because
// JetStream gave no answer yet: no server reachable, a request that
// timed out (what a server without a meta leader gives: it does not
// answer JetStream's API at all), no responders, or the server's own
// "temporarily unavailable" and "no suitable peers" of a cluster still
// forming. Anything else (a refusal, a mismatch, bad credentials) is
// final.
func unanswered(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode == codeClusterNotAvailable || apiErr.ErrorCode == codeClusterNoPeers
	case errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, jetstream.ErrNoStreamResponse):
		return true
	}
	return false
}

// open is one attempt: connect, then create or verify the bucket.
func open(ctx context.Context, cfg Config, url string, opts []nats.Option, bucket string, timeout time.Duration, log *slog.Logger) (*Store, error) {
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("natsstore: connecting to %s: %w", url, err)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(timeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("natsstore: %w", err)
	}
	s := &Store{nc: nc, js: js, bucket: bucket, subj: "$KV." + bucket + ".", timeout: timeout, log: log,
		clock: clock.Wall{}, inflight: make(chan struct{}, maxInflight), fences: map[int]fenceState{}}
	if err := s.openBucket(ctx, cfg); err != nil {
		nc.Close()
		return nil, err
	}
	return s, nil
}

// streamConfig is the bucket's stream: a key-value bucket (its keys are
// the subjects $KV.<bucket>.<key>, one message each) that also takes
// atomic batches and per-message TTLs.
func streamConfig(bucket string, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:               "KV_" + bucket,
		Subjects:           []string{"$KV." + bucket + ".>"},
		MaxMsgsPerSubject:  1,
		Discard:            jetstream.DiscardNew,
		Storage:            jetstream.FileStorage,
		Replicas:           replicas,
		AllowRollup:        true,
		DenyDelete:         true,
		AllowDirect:        false,
		AllowMsgTTL:        true,
		AllowAtomicPublish: true,
		Duplicates:         2 * time.Minute,
	}
}

func (s *Store) openBucket(ctx context.Context, cfg Config) error {
	name := "KV_" + s.bucket
	// Each management request is bounded by the request timeout whatever
	// ctx's deadline: a server without a meta leader never answers.
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	stream, err := s.js.Stream(rctx, name)
	cancel()
	created := false
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound) && cfg.Existing:
		return fmt.Errorf("%w: %s (stream %s)", ErrNoBucket, s.bucket, name)
	case errors.Is(err, jetstream.ErrStreamNotFound):
		replicas := max(cfg.Replicas, 1)
		rctx, cancel := context.WithTimeout(ctx, s.timeout)
		stream, err = s.js.CreateStream(rctx, streamConfig(s.bucket, replicas))
		cancel()
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("natsstore: creating stream %s: %w", name, err)
		}
		if err != nil { // another node created it first: verify theirs
			rctx, cancel := context.WithTimeout(ctx, s.timeout)
			stream, err = s.js.Stream(rctx, name)
			cancel()
			if err != nil {
				return fmt.Errorf("natsstore: reading stream %s: %w", name, err)
			}
		} else {
			created = true
		}
	case err != nil:
		return fmt.Errorf("natsstore: reading stream %s: %w", name, err)
	}
	sc := stream.CachedInfo().Config
	if err := verifyStream(sc, cfg); err != nil {
		return err
	}
	s.stream, s.replicas = stream, sc.Replicas
	rctx, cancel = context.WithTimeout(ctx, s.timeout)
	s.kv, err = s.js.KeyValue(rctx, s.bucket)
	cancel()
	if err != nil {
		return fmt.Errorf("natsstore: binding bucket %s: %w", s.bucket, err)
	}
	return s.checkMeta(ctx, cfg, created)
}

// verifyStream compares an existing stream with what this build and cfg
// need.
func verifyStream(sc jetstream.StreamConfig, cfg Config) error {
	want := streamConfig("", 1)
	switch {
	case cfg.Replicas != 0 && sc.Replicas != cfg.Replicas:
		return &MismatchError{What: "replicas", Stored: strconv.Itoa(sc.Replicas), Wanted: strconv.Itoa(cfg.Replicas)}
	case !sc.AllowAtomicPublish:
		return &MismatchError{What: "allow_atomic", Stored: "false", Wanted: "true"}
	case !sc.AllowMsgTTL:
		return &MismatchError{What: "allow_msg_ttl", Stored: "false", Wanted: "true"}
	case sc.MaxMsgsPerSubject != want.MaxMsgsPerSubject:
		return &MismatchError{What: "max_msgs_per_subject", Stored: strconv.FormatInt(sc.MaxMsgsPerSubject, 10), Wanted: "1"}
	case sc.AllowDirect:
		return &MismatchError{What: "allow_direct", Stored: "true", Wanted: "false (reads go to the stream leader)"}
	case sc.Duplicates <= 0:
		return &MismatchError{What: "duplicate_window", Stored: sc.Duplicates.String(), Wanted: want.Duplicates.String()}
	}
	return nil
}

// checkMeta reads the metadata key, writing it into a new bucket.
func (s *Store) checkMeta(ctx context.Context, cfg Config, created bool) error {
	e, err := s.last(ctx, metaKey)
	if err != nil {
		return err
	}
	if !e.exists {
		if !created {
			if n, err := s.countKeys(ctx, ">"); err != nil {
				return err
			} else if n > 0 {
				return &MismatchError{What: "metadata", Stored: "missing from a bucket with " + strconv.Itoa(n) + " keys", Wanted: "present"}
			}
		}
		m := meta{V: Version, Partitions: cfg.Partitions}
		if m.Partitions == 0 {
			m.Partitions = DefaultPartitions
		}
		b, _ := json.Marshal(m)
		err := s.update(ctx, "meta", func(t *txn) error {
			cur, err := t.get(metaKey)
			if err != nil || cur.exists {
				return err // another node wrote it: verified below
			}
			t.put(metaKey, b)
			return nil
		})
		if err != nil {
			return err
		}
		if e, err = s.last(ctx, metaKey); err != nil {
			return err
		}
	}
	var m meta
	if err := json.Unmarshal(e.val, &m); err != nil || m.Partitions < 1 {
		return fmt.Errorf("%w: metadata %q", store.ErrCorrupt, e.val)
	}
	switch {
	case m.V > Version:
		return fmt.Errorf("%w: store version %d, this build reads up to %d", store.ErrStoreTooNew, m.V, Version)
	case cfg.Partitions != 0 && m.Partitions != cfg.Partitions:
		return &MismatchError{What: "partitions", Stored: strconv.Itoa(m.Partitions), Wanted: strconv.Itoa(cfg.Partitions)}
	}
	s.partitions = m.Partitions
	return nil
}

// Partitions is the store's partition count.
func (s *Store) Partitions() int { return s.partitions }

// Replicas is the bucket's replica count.
func (s *Store) Replicas() int { return s.replicas }

// Close closes the connection; calls in flight fail. Every commit that
// returned before it is in the bucket already: nothing is buffered here.
func (s *Store) Close() error {
	s.nc.Close()
	return nil
}

// stripe is key's stripe among n: its slot (store.SlotOf, the hash a
// watch's partition key gets too) modulo n, so one recipient's commits
// always take the same mail lock.
func stripe(key string, n int) int {
	if n <= 1 {
		return 0
	}
	return int(store.SlotOf(key)) % n
}

// tok encodes a free-form string (a recipient, a stream, a thread key) as
// one subject token: unpadded base64url, which uses only characters a key
// may hold; a long one (over 160 characters encoded) is "=h" and the
// base64url of its SHA-256, so no key outgrows a protocol line. The empty
// string is "=".
func tok(s string) string {
	if s == "" {
		return "="
	}
	b := base64.RawURLEncoding.EncodeToString([]byte(s))
	if len(b) <= 160 {
		return b
	}
	h := sha256.Sum256([]byte(s))
	return "=h" + base64.RawURLEncoding.EncodeToString(h[:])
}

// hex16 is a number as 16 hex digits, which sort as the numbers do.
func hex16(n uint64) string { return fmt.Sprintf("%016x", n) }

func parseHex16(s string) (uint64, bool) {
	if len(s) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 16, 64)
	return n, err == nil
}

// timeTok is a time's nanoseconds as 16 hex digits that sort as the
// times do.
func timeTok(nanos int64) string { return hex16(uint64(nanos) ^ (1 << 63)) }

func parseTimeTok(s string) (int64, bool) {
	n, ok := parseHex16(s)
	return int64(n ^ (1 << 63)), ok
}

// untok reads a tok back; false for a hashed one, which is one way.
func untok(t string) (string, bool) {
	if t == "=" {
		return "", true
	}
	if strings.HasPrefix(t, "=h") {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(t)
	return string(b), err == nil
}
