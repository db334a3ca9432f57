// Package childproc starts child processes that die with the process that started them, for
// test harnesses that run servers and operators beside the tests (database servers, the
// operator binary under fault injection).
package childproc

import (
	"os/exec"
	"runtime"
	"sync"
)

// starts feed the one OS thread that starts children. Linux sends the parent-death signal
// (SysProcAttr.Pdeathsig) when the thread that forked a child ends, not when its process does,
// and Go may end threads; this one is locked and never ends, so a child dies with its parent
// process and no sooner.
var (
	once   sync.Once
	starts = make(chan start)
)

type start struct {
	cmd  *exec.Cmd
	done chan error
}

// Start starts cmd from the locked thread. cmd.SysProcAttr.Pdeathsig says what the child gets
// when this process ends.
func Start(cmd *exec.Cmd) error {
	once.Do(func() {
		go func() {
			runtime.LockOSThread()
			for s := range starts {
				s.done <- s.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	starts <- start{cmd: cmd, done: done}
	return <-done
}
