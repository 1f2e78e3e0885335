package agent

// WithFixedRetry makes the agent's release reconciler behave as before back-off: every attempt
// writes Installing, and a failure is retried after 30 s. It is the fixed-retry baseline that
// internal/e2e's BenchmarkFaultsFailingReleases measures in the same run as the back-off.
func WithFixedRetry(o *Options) { o.fixedRetry = true }
