package testbed

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A hub's folder records the pid of the process that started it. A run killed before Stop (as
// `go test -timeout` does, or SIGKILL) leaves its etcd and kube-apiserver running with nobody to
// stop them; the next Start finds such folders, whose owner is gone, ends the processes whose
// command line names the folder, and removes it. Linux only: it reads /proc.

const ownerFile = "owner"

func writeOwner(dir string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// ReapStale ends the etcd and kube-apiserver of hubs whose owner exited without stopping them
// and removes their folders. Start calls it; hack/hub-down.sh calls it through localhub -reap
// after a localhub that had to be killed.
func ReapStale() {
	if runtime.GOOS != "linux" {
		return
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // still being created, or not a hub's folder
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || alive(owner) {
			continue
		}
		for _, pid := range processesNaming(dir) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for deadline := time.Now().Add(5 * time.Second); len(processesNaming(dir)) > 0 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		_ = os.RemoveAll(dir)
	}
}

// alive tells whether pid runs; a zombie, killed but not yet reaped by its parent, does not.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) state ...", where comm may itself contain ") ".
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// processesNaming lists the etcd and kube-apiserver processes with an argument inside dir
// (etcd's --data-dir, kube-apiserver's --cert-dir).
func processesNaming(dir string) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	needle := []byte(dir + string(filepath.Separator))
	var pids []int
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmdline, needle) {
			continue
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		if name := filepath.Base(string(argv0)); name != "etcd" && name != "kube-apiserver" {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
