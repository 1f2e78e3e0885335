package puller

// What the tests in package puller_test need of the package's insides. They are an external
// test package because they use internal/testbed, which imports this package.

// ErrAttemptTimeout is errAttemptTimeout.
var ErrAttemptTimeout = errAttemptTimeout

// SetOnAttempt replaces the puller's Options.OnAttempt.
func (p *Puller) SetOnAttempt(f func(Attempt)) { p.opts.OnAttempt = f }
