package probeshare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// DefaultTimeout bounds Ask when Config.Timeout is zero.
const DefaultTimeout = 250 * time.Millisecond

// ErrNoAnswer: the node asked did not answer within the bound, has no
// responder, or answered with an error. The caller shows what is stored.
var ErrNoAnswer = errors.New("probeshare: no answer from the owner")

// Seer is what a node answers from: its scheduler.
type Seer interface {
	Seen(id store.ID) (scheduler.Seen, bool)
}

// Config is a node's.
type Config struct {
	// Conn is the store's connection to the servers.
	Conn *nats.Conn
	// Namespace is the cluster's store bucket, which every subject names.
	Namespace string
	// Node is this node's name (internal/cluster's), unique in the cluster.
	Node string
	// Seen answers the other nodes' requests.
	Seen Seer
	// Changed is told of each watch another node changed: it wakes this
	// node's waiters on it (Scheduler.Notify). It must not block.
	Changed func(store.ID)
	// Poked, when set, is told of each poke by partition key another node
	// took an event for (PublishPoke): it pokes this node's watches of
	// the keys (Scheduler.PokeKeys), those of the partitions it holds.
	// It must not block for long: the reader waits for it.
	Poked func(kind string, keys []string)
	// Timeout bounds Ask (default DefaultTimeout).
	Timeout time.Duration
	Logger  *slog.Logger
}

// token is what a subject token of ours may be: a bucket or a node name.
var token = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Share is one node's end of the sharing. Listen subscribes, Run reads the
// subscriptions until its context ends; Ask and Publish may be called from
// any goroutine once Listen returned.
type Share struct {
	cfg     Config
	log     *slog.Logger
	prefix  string // vigil.<bucket>.
	changed string // vigil.<bucket>.changed.<node>.
	requests,
	changes,
	pokes *nats.Subscription // nil without Config.Poked

	// mu guards closed.
	mu     sync.Mutex
	closed bool
}

// Listen checks cfg and subscribes to this node's request subject and to
// every node's changes; nothing is read until Run.
func Listen(cfg Config) (*Share, error) {
	if cfg.Conn == nil || cfg.Seen == nil || cfg.Changed == nil {
		return nil, errors.New("probeshare: a share needs the connection, a Seer and Changed")
	}
	if !token.MatchString(cfg.Namespace) || !token.MatchString(cfg.Node) {
		return nil, fmt.Errorf("probeshare: namespace %q and node %q: want 1 to 64 of A-Z a-z 0-9 _ -", cfg.Namespace, cfg.Node)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Share{cfg: cfg, log: cfg.Logger.With("component", "probeshare"), prefix: "vigil." + cfg.Namespace + "."}
	s.changed = s.prefix + "changed." + cfg.Node + "."
	var err error
	if s.requests, err = cfg.Conn.SubscribeSync(s.seenSubject(cfg.Node)); err != nil {
		return nil, fmt.Errorf("probeshare: subscribe to requests: %w", err)
	}
	if s.changes, err = cfg.Conn.SubscribeSync(s.prefix + "changed.*.*"); err != nil {
		_ = s.requests.Unsubscribe()
		return nil, fmt.Errorf("probeshare: subscribe to changes: %w", err)
	}
	if cfg.Poked != nil {
		if s.pokes, err = cfg.Conn.SubscribeSync(s.prefix + "poke.*"); err != nil {
			_ = s.requests.Unsubscribe()
			_ = s.changes.Unsubscribe()
			return nil, fmt.Errorf("probeshare: subscribe to pokes: %w", err)
		}
	}
	return s, nil
}

func (s *Share) seenSubject(node string) string { return s.prefix + "seen." + node }

// Run answers requests and hears of changes until ctx ends (or the
// connection closes), and returns nil once both readers have stopped.
// The subscriptions are Listen's, and Close's to end. Run once.
func (s *Share) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { s.read(ctx, s.requests, s.answer) })
	wg.Go(func() { s.read(ctx, s.changes, s.hear) })
	if s.pokes != nil {
		wg.Go(func() { s.read(ctx, s.pokes, s.hearPoke) })
	}
	wg.Wait()
	return nil
}

// closeFlush bounds how long Close waits for the servers to have its
// unsubscriptions.
const closeFlush = time.Second

// Close unsubscribes and waits (a second at most) until the servers have
// it: from then on this node answers nothing (an asker hears no responder
// at once) and hears of no change. Safe more than once.
func (s *Share) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	_ = s.requests.Unsubscribe()
	_ = s.changes.Unsubscribe()
	if s.pokes != nil {
		_ = s.pokes.Unsubscribe()
	}
	_ = s.cfg.Conn.FlushTimeout(closeFlush)
}

// read hands each message of sub to fn until ctx ends or sub is closed.
func (s *Share) read(ctx context.Context, sub *nats.Subscription, fn func(*nats.Msg)) {
	for {
		m, err := sub.NextMsgWithContext(ctx)
		switch {
		case err == nil:
			fn(m)
		case ctx.Err() != nil:
			return
		case errors.Is(err, nats.ErrSlowConsumer):
			// Messages were dropped: some waits run to their bound.
			s.log.Warn("probeshare: messages dropped, reading too slowly", "subject", sub.Subject)
		default:
			return // unsubscribed, or the connection closed
		}
	}
}

// answer replies to one request with what this node's scheduler holds.
func (s *Share) answer(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	var out []byte
	ids, err := parseRequest(m.Data)
	if err != nil {
		out = encodeError(err)
	} else {
		seen := make(map[store.ID]scheduler.Seen, len(ids))
		for _, id := range ids {
			if v, ok := s.cfg.Seen.Seen(id); ok {
				seen[id] = v
			}
		}
		out = encodeReply(seen)
	}
	if err := m.Respond(out); err != nil {
		s.log.Debug("probeshare: answering a request failed", "err", err)
	}
}

// hear wakes this node's waiters on a watch another node changed.
func (s *Share) hear(m *nats.Msg) {
	rest, ok := strings.CutPrefix(m.Subject, s.prefix+"changed.")
	if !ok {
		return
	}
	node, id, ok := strings.Cut(rest, ".")
	if !ok || node == s.cfg.Node {
		return // ours: the scheduler woke its waiters itself
	}
	wid, err := store.ParseID(id)
	if err != nil {
		return
	}
	s.cfg.Changed(wid)
}

// Publish tells every node that this node changed watch id. It never
// blocks on the servers (the connection buffers it); an error is logged,
// and costs the other nodes' waiters their wake only.
func (s *Share) Publish(id store.ID) {
	var b [128]byte
	subj := append(append(b[:0], s.changed...), id.String()...)
	if err := s.cfg.Conn.Publish(string(subj), nil); err != nil {
		s.log.Debug("probeshare: publishing a change failed", "watch", id, "err", err)
	}
}

// poke is a poke's message: the kind and the partition keys an event
// named (at most abi.MaxWakeKeys).
type poke struct {
	Kind string   `json:"kind"`
	Keys []string `json:"keys"`
}

// PublishPoke tells every other node that an event this node took named
// keys of kind, so each pokes the watches of them in the partitions it
// holds: the poke reaches the owner of each key's partition, wherever
// the event came in. Like Publish it never blocks on the servers; an
// error is logged, and costs those watches their look until their
// cadence.
func (s *Share) PublishPoke(kind string, keys []string) {
	b, err := json.Marshal(poke{Kind: kind, Keys: keys})
	if err == nil {
		err = s.cfg.Conn.Publish(s.prefix+"poke."+s.cfg.Node, b)
	}
	if err != nil {
		s.log.Warn("probeshare: publishing a poke failed", "kind", kind, "keys", len(keys), "err", err)
	}
}

// hearPoke pokes this node's watches of another node's event.
func (s *Share) hearPoke(m *nats.Msg) {
	node, ok := strings.CutPrefix(m.Subject, s.prefix+"poke.")
	if !ok || node == s.cfg.Node {
		return // ours: this node poked its own already
	}
	var p poke
	if err := json.Unmarshal(m.Data, &p); err != nil || p.Kind == "" || len(p.Keys) == 0 || len(p.Keys) > abi.MaxWakeKeys {
		s.log.Debug("probeshare: a malformed poke", "from", node)
		return
	}
	s.cfg.Poked(p.Kind, p.Keys)
}

// Ask asks node for what it holds in memory of the watches ids (at most
// MaxIDs), within Config.Timeout or ctx, whichever ends first: the
// watches it holds, by id; one it does not is absent. ErrNoAnswer (with
// the cause) when it did not answer.
func (s *Share) Ask(ctx context.Context, node string, ids []store.ID) (map[store.ID]scheduler.Seen, error) {
	if len(ids) == 0 {
		return map[store.ID]scheduler.Seen{}, nil
	}
	if len(ids) > MaxIDs {
		return nil, fmt.Errorf("%w: %d ids asked, at most %d", ErrBadRequest, len(ids), MaxIDs)
	}
	if !token.MatchString(node) {
		return nil, fmt.Errorf("%w: node name %q", ErrBadRequest, node)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	m, err := s.cfg.Conn.RequestWithContext(ctx, s.seenSubject(node), encodeRequest(ids))
	if err != nil {
		return nil, fmt.Errorf("%w: node %s: %w", ErrNoAnswer, node, err)
	}
	seen, err := parseReply(m.Data)
	if err != nil {
		return nil, fmt.Errorf("%w: node %s: %w", ErrNoAnswer, node, err)
	}
	return seen, nil
}
