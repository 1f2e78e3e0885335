package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"sync"
	"syscall"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/umkim/terraform-provider-fleet/internal/ocichain"
	"github.com/umkim/terraform-provider-fleet/internal/puller"
	"github.com/umkim/terraform-provider-fleet/internal/registrysecret"
)

// runPull implements `fleet-controller pull`: it prints the final pull status as JSON on stdout
// and exits 1 unless the artifact was pulled.
func runPull(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		chainFile = fs.String("chain", "", "JSON or YAML `file` listing the registries to pull from, in order")
		artifact  = fs.String("artifact", "", "`repository@digest` or repository:tag to pull")
		dest      = fs.String("dest", "", "`directory` holding the OCI image layout to pull into")
		wait      = fs.Duration("replication-wait", 0, "how long a registry may lack the artifact before the next one is tried, e.g. 2m")
		progress  = fs.Bool("progress", false, "draw a progress bar even when stderr is not a terminal")
		attempt   = fs.Duration("attempt-timeout", puller.DefaultAttemptTimeout, "how long one attempt at a registry, downloads included, may take before the next registry is tried; negative for no limit")
		idle      = fs.Duration("idle-timeout", puller.DefaultIdleTimeout, "how long a registry may send nothing before the next registry is tried; negative for no limit")
	)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fleet-controller pull --chain <file> --artifact <repo>@<digest>|<repo>:<tag> --dest <dir> [--replication-wait 2m] [--attempt-timeout 10m] [--idle-timeout 30s]")
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	if *chainFile == "" || *artifact == "" || *dest == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	a, err := puller.ParseArtifact(*artifact)
	if err != nil {
		fmt.Fprintln(stderr, "fleet-controller pull:", err)
		return 2
	}
	chain, err := loadChain(*chainFile)
	if err != nil {
		fmt.Fprintln(stderr, "fleet-controller pull:", err)
		return 2
	}

	opts := puller.Options{
		ReplicationWait: *wait,
		AttemptTimeout:  *attempt,
		IdleTimeout:     *idle,
		UserAgent:       "fleet-controller/" + version,
		OnAttempt: func(at puller.Attempt) {
			if at.Class != "" {
				fmt.Fprintf(stderr, "fleet-controller pull: %s: %s: %v\n", at.Registry, at.Class, at.Err)
			}
		},
	}
	if opts.Verify, err = chainVerify(*chainFile); err != nil {
		fmt.Fprintln(stderr, "fleet-controller pull:", err)
		return 2
	}
	var bar *progressBar
	if f, ok := stderr.(*os.File); *progress || ok && term.IsTerminal(int(f.Fd())) {
		bar = &progressBar{w: stderr, start: time.Now()}
		opts.OnRead = bar.onRead
	}
	p, err := puller.New(chain, *dest, opts)
	if err != nil {
		fmt.Fprintln(stderr, "fleet-controller pull:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	status, err := p.Pull(ctx, a)
	bar.finish()
	out, _ := json.MarshalIndent(status, "", "  ")
	fmt.Fprintln(stdout, string(out))
	if err != nil {
		fmt.Fprintln(stderr, "fleet-controller pull:", err)
		return 1
	}
	desc, err := p.Resolve(ctx, a)
	if err != nil {
		fmt.Fprintln(stderr, "fleet-controller pull:", err)
		return 1
	}
	fmt.Fprintf(stderr, "fleet-controller pull: %s is %s in %s\n", a, desc.Digest, *dest)
	return 0
}

// envRef is a credential given as a reference to an environment variable, "${NAME}".
var envRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// loadChain reads a chain file (an ocichain document, as the hub controller delivers it) and resolves the credentials given as "${NAME}" from the
// environment, so that they stay out of files and shell history.
func loadChain(path string) ([]puller.Registry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the chain file: %w", err)
	}
	f, err := ocichain.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("chain file %s: %w", path, err)
	}
	for i := range f.Registries {
		r := &f.Registries[i]
		for _, c := range []struct {
			key   string
			value *string
		}{
			{registrysecret.KeyUsername, &r.Username},
			{registrysecret.KeyPassword, (*string)(&r.Password)},
			{registrysecret.KeyAgentUsername, &r.AgentUsername},
			{registrysecret.KeyAgentPassword, (*string)(&r.AgentPassword)},
		} {
			m := envRef.FindStringSubmatch(*c.value)
			if m == nil {
				continue
			}
			v, ok := os.LookupEnv(m[1])
			if !ok {
				return nil, fmt.Errorf("chain file %s: registry %q: %s refers to environment variable %s, which is not set", path, r.Name, c.key, m[1])
			}
			*c.value = v
		}
	}
	return f.Registries, nil
}

// progressBar draws a bar on stderr once a pull has taken more than a second.
type progressBar struct {
	w           io.Writer
	start       time.Time
	mu          sync.Mutex
	total, done int64
	bar         *progressbar.ProgressBar
}

func (p *progressBar) onRead(desc ocispec.Descriptor, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n == 0 {
		p.total += desc.Size
	} else {
		p.done += int64(n)
	}
	switch {
	case p.bar == nil && time.Since(p.start) > time.Second:
		p.bar = progressbar.NewOptions64(p.total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription("pulling"),
			progressbar.OptionShowBytes(true), progressbar.OptionUseIECUnits(true), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
		_ = p.bar.Set64(p.done)
	case p.bar != nil && n == 0:
		p.bar.AddMax64(desc.Size)
	case p.bar != nil:
		_ = p.bar.Add64(int64(n))
	}
}

// finish clears the bar, if one was drawn.
func (p *progressBar) finish() {
	if p == nil || p.bar == nil {
		return
	}
	_ = p.bar.Finish()
}
