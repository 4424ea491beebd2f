package redisstore

import (
	"context"
	"net"
	"time"
)

// Dialer returns a dial function for the go-redis client of a Store, for
// plain TCP (a client with a TLS configuration dials its own).
//
// go-redis peeks at a pooled connection with a system call before each
// command, unless the connection hides its descriptor, as a TLS connection
// does. The connections made here hide it too: on the request path that
// peek costs a system call and allocations per command, twice per task,
// while a connection Redis closed is found on use all the same, and the
// command retried on a new one (the client's MaxRetries).
func Dialer(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return opaqueConn{c}, nil
	}
}

// opaqueConn is a net.Conn without SyscallConn.
type opaqueConn struct{ net.Conn }
