// Package clock owns the one clock interface of the module and its wall
// implementation. Every component that reads the time or waits takes a
// Clock in its config (nil: Wall), so a test moves time with
// internal/fakeclock, the one fake, and no component reads time.Now in
// its logic.
//
// It must never grow a second implementation in product code, nor import
// anything of the module: store/natsstore and every host package import
// it.
//
// Rejected: a Clock per component holding only what that component reads
// (twelve of them existed, eight wall clocks beside them). Each was one
// method short of the next, so a fake had to be written per package and
// a component that started to wait had to grow its own interface again;
// one interface with four methods costs each component nothing.
package clock
