package lifecycle

import (
	"context"
	"sync"
)

// Group runs each fn on its own goroutine with a context that ends when
// ctx does or when any fn returns, and returns once every fn has: the
// first error one returned, or nil.
func Group(ctx context.Context, fns ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, fn := range fns {
		wg.Go(func() {
			err := fn(ctx)
			if err != nil {
				once.Do(func() { first = err })
			}
			cancel()
		})
	}
	wg.Wait()
	return first
}

// Go runs fn on its own goroutine until ctx ends or stop is called; stop
// ends fn's context, waits for fn to return and returns its error. Stop
// may be called more than once.
func Go(ctx context.Context, fn func(context.Context) error) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = fn(ctx)
	}()
	return func() error {
		cancel()
		<-done
		return err
	}
}
