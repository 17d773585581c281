// Package natstest is test support: NATS servers with JetStream, embedded
// through the server's Go package on 127.0.0.1 with their stores in the
// test's temporary directory, one alone or three in a cluster (Cluster
// waits for their meta leader; Form plans one whose servers the test
// starts one at a time, a cluster still forming, and starts again on
// their ports and stores after a shutdown, a server restarted). It owns the
// servers it starts and shuts them down when the test ends; it must never
// be used by product code, which connects to servers an operator runs.
//
// Rejected: running the nats-server binary as a child process, which a
// fresh machine does not have and Debian packages too old a release of.
package natstest
