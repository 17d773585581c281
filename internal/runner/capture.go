package runner

// capped keeps the first max bytes written to it and discards the rest,
// always answering the whole write, so the child never blocks on a full
// pipe. over says something was discarded.
type capped struct {
	buf  []byte
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - len(c.buf)
	switch {
	case len(p) <= room:
		c.buf = append(c.buf, p...)
	case room > 0:
		c.buf = append(c.buf, p[:room]...)
		c.over = true
	case len(p) > 0:
		c.over = true
	}
	return len(p), nil
}

func (c *capped) String() string { return string(c.buf) }
