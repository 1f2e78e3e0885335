package testbed

import (
	"os/exec"
	"syscall"
	"time"
)

// Process is a child process the test bed started (a registry, a work agent, an agent), and when
// it exited.
type Process struct {
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartProcess starts cmd; onExit, if set, runs once it has exited (e.g. to close its log).
func StartProcess(cmd *exec.Cmd, onExit func()) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		if onExit != nil {
			onExit()
		}
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has exited; Err is then its exit status.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit status, once Done is closed.
func (p *Process) Err() error { return p.err }

// Running tells whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM, waits up to timeout for the process to exit, then kills it; it reports
// whether it had to kill.
func (p *Process) Stop(timeout time.Duration) (killed bool) {
	if !p.Running() {
		return false
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(timeout):
		_ = p.Cmd.Process.Kill()
		<-p.done
		return true
	}
}
