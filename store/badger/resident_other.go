//go:build !linux

package badger

// TrimMapped is Linux's only: elsewhere it answers ErrTrimUnsupported.
func (s *KV) TrimMapped(int64) (MappedTrim, error) { return MappedTrim{}, ErrTrimUnsupported }
