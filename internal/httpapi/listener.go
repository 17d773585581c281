package httpapi

import (
	"bytes"
	"net"
)

// Listener wraps ln so that a request line too long for the read buffer
// answers 414 uri_too_long rather than 431 headers_too_large. fasthttp
// reports only that its buffer filled before the headers ended; each
// connection of this listener counts the bytes it has read since its last
// line feed, and fasthttp's buffer then holds exactly the last HeaderLimit
// bytes read, so a count of at least HeaderLimit means the request line
// itself did not end inside it. Serve the app on it:
//
//	app.Listener(httpapi.Listener(ln))
//
// On any other listener such a request is 431, as every request line and
// headers over the buffer are.
func Listener(ln net.Listener) net.Listener { return lineListener{ln} }

type lineListener struct{ net.Listener }

func (l lineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lineConn{Conn: c}, nil
}

// lineConn is a connection that knows how far back its last line feed
// was.
type lineConn struct {
	net.Conn
	// sinceLF is the bytes read since the last '\n', capped past
	// HeaderLimit. Only the connection's serving goroutine reads the
	// connection, and the error handler that asks runs on it.
	sinceLF int
}

func (c *lineConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		c.sinceLF = n - 1 - i
	} else {
		c.sinceLF = min(c.sinceLF+n, 2*HeaderLimit)
	}
	return n, err
}

// requestLineOverflowed reports whether conn, when fasthttp's buffer
// filled, had read a whole buffer without a line feed: the request line
// was longer than the buffer.
func requestLineOverflowed(conn net.Conn) bool {
	c, ok := conn.(*lineConn)
	return ok && c.sinceLF >= HeaderLimit
}
