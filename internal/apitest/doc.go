// Package apitest assembles, for tests, the host behind the REST API the
// way vigil serve does (a real badger store in a temporary directory,
// delivery, the scheduler, the recipients service), and serves a fiber app
// on a loopback listener for the length of a test.
//
// It is test support and must never be imported by the product. It does
// not import host/httpapi, so httpapi's own tests can use it too.
package apitest
